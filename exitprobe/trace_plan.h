// What to probe in one binary: the functions whose names match, each with its entry site and
// RET sites as file offsets, the runtime facts the BPF side needs to find g, and the functions
// that cannot be traced with the reason (no RET, no file offset, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "ebpf/exitprobe.h"
#include "exitprobe/code_sites.h"
#include "symbolizer/binary.h"

namespace sb::exitprobe {

struct PlannedSite {
  CodeSite code;
  uint64_t file_offset = 0;
};

struct FuncPlan {
  std::string name;
  uint64_t start = 0;  // link-time [start, end)
  uint64_t end = 0;
  std::string entry_how;
  bool g_in_reg = false;         // Go code checking its stack through g: R14/R28 is g at every site
  PlannedSite first;             // the first instruction (reported by --verbose)
  PlannedSite entry;             // where the entry probe goes
  std::vector<PlannedSite> rets; // empty in uretprobe mode
};

struct SkippedFunc {
  std::string name;
  std::string reason;
};

// Runtime hooks that make orphan detection immediate: runtime.deferreturn (a recovered panic
// resumes its frame there) and runtime.goexit1 (a goroutine ends).
struct HookPlan {
  std::string name;
  uint32_t kind = SB_XP_SWEEP;
  bool g_in_reg = false;
  PlannedSite site;
};

struct PlanOptions {
  std::vector<std::string> patterns;  // ECMAScript regexes, searched in the name
  EntryPlacement placement = EntryPlacement::kAuto;
  bool uretprobe = false;      // exits through uretprobes (forced for non-Go binaries)
  size_t max_funcs = 20000;
};

struct TracePlan {
  std::string path;
  sym::Arch arch = sym::Arch::kUnknown;
  bool go = false;
  bool uretprobe = false;
  std::string go_version;
  sb_xp_config config{};
  uint32_t g_atomicstatus = 0;  // offsetof(g, atomicstatus), to tell dead goroutines at the end
  std::vector<FuncPlan> funcs;  // index = the function number in BPF cookies
  std::vector<SkippedFunc> skipped;
  std::vector<HookPlan> hooks;
  std::vector<std::string> notes;  // facts the user should know (how g is found, ...)
  size_t sites() const;
};

Result<TracePlan> BuildTracePlan(const sym::Binary& bin, const std::string& path, const PlanOptions& opts);

}  // namespace sb::exitprobe
