// Everything the unwinder needs to know about one Go executable, found once per binary and
// shared by all processes that run it. Addresses are link-time; processes add their bias.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "ebpf/unwind/delta_index.h"
#include "ebpf/unwind/unwind_types.h"
#include "symbolizer/binary.h"
#include "unwinder/clone_child.h"
#include "unwinder/gogo_window.h"
#include "unwinder/mcall_callees.h"
#include "unwinder/runtime_offsets.h"
#include "unwinder/switch_paths.h"
#include "unwinder/systemstack_window.h"

namespace sb::unwinder {

struct FuncRange {
  std::string name;
  uint64_t start = 0;
  uint64_t end = 0;
  sb_func_kind kind = SB_FN_NONE;
  int32_t slot_offset = 0;  // SB_FN_MCALL_SPILLER: the g slot's offset from g0.sched.sp
  std::string slot_source;  // SB_FN_MCALL_SPILLER: "prologue" or "prologue, proven by DWARF (...)"
};

struct GoBinaryFacts {
  std::string path;
  std::string build_id;
  sym::Arch arch = sym::Arch::kUnknown;
  std::string go_version;  // "go1.19.8", "" when unknown
  std::string go_version_source;  // ".go.buildinfo", or how runtime.buildVersion was found
  int go_minor = 0;        // 19
  bool pie = false;

  uint64_t text_start = 0;  // first Go function entry
  uint64_t text_end = 0;

  bool has_offsets = false;
  sb_go_offsets offsets{};
  std::string offsets_source;              // summary: how many fields from which source, or why none
  std::vector<FieldChoice> offset_fields;  // every field with each source's value (inspect)
  std::vector<std::string> asm_conflicts;  // runtime functions that disagreed on a field

  bool has_tls = false;
  int64_t tls_g_offset = 0;  // amd64: from fs_base; arm64: from TPIDR_EL0
  std::string tls_source;
  // arm64: the runtime writes g's TLS slot only while the byte runtime.iscgo is 1, so the
  // unwinder reads that byte before trusting the slot.
  bool has_iscgo = false;
  uint64_t iscgo_addr = 0;  // link-time address
  std::string iscgo_source;

  // Goroutine pprof labels: SB_PI_LABELS_HMAP (Go 1.19-1.23) or SB_PI_LABELS_SLICE (1.24+),
  // 0 when the version or g.labels is unknown (samples then say no_fact, never a guess).
  uint32_t labels_layout = 0;
  std::string labels_source;  // "g.labels +352 (dwarf), sorted slice (go1.24+)" or why none
  bool systemstack_sched_recipe = false;  // amd64 before Go 1.21
  bool switch_sched_bp_recipe = false;    // arm64 before Go 1.25
  // amd64 Go 1.19 and 1.21-1.24: SB_PI_MCALL_LINK_BP or _FRAME, how mcall's callee's saved frame
  // pointer on g0 names the gobuf mcall saved (0: nothing to compare: arm64, Go 1.25+, unknown).
  uint32_t mcall_link = 0;
  std::vector<FuncRange> ranges;          // roots and switch functions
  // The save points a resumed goroutine's sched.pc must be (link-time; 0 / empty: not found,
  // and a goroutine with that save is then not crossed): the return sites of the calls to
  // runtime.mcall, morestack's two entries (it saves the pc after f's call), and the range
  // of systemstack_switch (gosave_systemstack_switch's save).
  std::vector<uint64_t> mcall_return_sites;
  // Beside each site, the function it passes to mcall (fn_end 0: not decoded, not checked).
  std::vector<McallCallee> mcall_callees;
  uint64_t morestack = 0;
  uint64_t morestack_noctxt = 0;
  uint64_t systemstack_switch_start = 0;
  uint64_t systemstack_switch_end = 0;
  // newstack's local `morebuf` after it preempted the goroutine (see sb_proc_info.newstack_lo):
  // link-time [lo, hi) of newstack where DWARF puts it at CFA + morebuf_cfa_off; hi 0 when not
  // proven (then such goroutines are not recovered).
  uint64_t newstack_morebuf_lo = 0, newstack_morebuf_hi = 0;
  int32_t morebuf_cfa_off = 0;
  uint16_t gobuf_g = 0;
  std::string morebuf_source;  // how it was proven, or why not
  // What newstack's code alone proves (newstack_morebuf.h), also where DWARF is used.
  bool morebuf_code_found = false;
  int32_t morebuf_code_cfa_off = 0;
  uint16_t morebuf_code_gobuf_g = 0;
  std::string morebuf_code_source;
  GogoWindow gogo;             // gogo's windows (amd64, arm64), link-time
  SystemstackWindow systemstack;  // systemstack's windows (amd64, arm64), link-time
  SystemstackWindow asmcgocall;   // asmcgocall's windows of the same kind (amd64), link-time
  // systemstack / asmcgocall: the switched path and the direct one (a frame of theirs on g0
  // is crossed only in the switched path), link-time, amd64 and arm64
  SwitchPaths systemstack_paths, asmcgocall_paths;
  CloneChild clone;            // runtime.clone's child (a new thread's root; amd64 also the shared part), link-time
  std::vector<std::string> missing;       // facts we looked for and did not find
  std::vector<sb_sp_delta> sp_deltas;     // pcsp runs, pc_off relative to text_start
  // What the sp_deltas array of the BPF programs (and coredump replay's table) holds for this
  // binary from sb_proc_info.delta_first on: sp_deltas, then their bucket index.
  unwind::PcspTable pcsp;
};

// Analyses a Go executable. Errors only when it is not a Go binary at all; missing facts are
// listed in `missing` and the corresponding flags stay off. `path` names it in messages;
// `local_file` is where its bytes can be opened here for DWARF (default: path).
Result<std::shared_ptr<const GoBinaryFacts>> AnalyzeGoBinary(const sym::Binary& bin,
                                                             const std::string& path,
                                                             const std::string& local_file = "");

// sb_proc_info for a process running `facts` with load bias `bias` (0 for non-PIE).
// delta_first is where the binary's pcsp table (facts.pcsp.cells) starts in the BPF sp_deltas array.
sb_proc_info MakeProcInfo(const GoBinaryFacts& facts, uint64_t bias, uint32_t delta_first);

}  // namespace sb::unwinder
