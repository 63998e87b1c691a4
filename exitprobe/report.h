// The result of one trace: per function, calls, exits, aborted calls and the latency
// distribution; as text (with funclatency-style histograms), JSON, and a pprof profile whose
// samples are calls and total nanoseconds per function.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exitprobe/trace_plan.h"
#include "exitprobe/tracer.h"
#include "profile/profile_data.h"

namespace sb::exitprobe {

struct FuncReport {
  std::string name;
  FuncCounts counts;
  uint64_t in_flight = 0;  // still running when the trace ended
  uint64_t p50 = 0, p90 = 0, p99 = 0;
};

struct TraceReport {
  std::string binary;
  uint32_t pid = 0;
  std::string go_version;
  bool uretprobe = false;
  double duration_s = 0;
  AttachReport attach;
  double detach_s = 0;
  sb_xp_counters counters{};
  std::vector<FuncReport> funcs;     // like plan.funcs
  std::vector<SkippedFunc> skipped;  // not traced: no RET, no file offset, attach failed
  std::vector<std::string> notes;
};

// Goroutine status (runtime _G* value) of g in process tgid, or nullopt when unreadable.
using GoroutineStatusFn = std::function<std::optional<uint32_t>(uint32_t tgid, uint64_t g)>;

// Reads /proc/TGID/mem at g + offset (the g.atomicstatus field).
std::optional<uint32_t> ReadGoroutineStatus(uint32_t tgid, uint64_t g, uint32_t offset);

// Combines the counts with the calls still pending at the end: a pending call of a goroutine
// that is dead (_Gdead) ended without returning (runtime.Goexit) and is counted as aborted;
// the others are in flight.
TraceReport BuildReport(const TracePlan& plan, const std::vector<FuncCounts>& counts,
                        const std::vector<PendingCall>& pending, const GoroutineStatusFn& status);

std::string ReportText(const TraceReport& r, bool histograms);
nlohmann::json ReportJson(const TraceReport& r);
profile::ProfileData ReportProfile(const TraceReport& r);
// --verbose: every site of every function and whether the kernel emulates it.
std::string SitesText(const TracePlan& plan);

}  // namespace sb::exitprobe
