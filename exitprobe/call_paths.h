// trace --stacks: the call paths of traced calls. Each exit sends the caller's stack, unwound
// in BPF by the shared unwind core at the RET (exitprobe.bpf.c); here they are aggregated per
// (function, path, goroutine labels): calls, total and max nanoseconds and a latency histogram,
// then symbolized like `record`'s samples (recorder/stack_symbolizer.h) into a pprof profile
// with sample types calls/count, total/nanoseconds and max/nanoseconds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ebpf/exitprobe.h"
#include "profile/profile_data.h"
#include "recorder/process_tracker.h"
#include "recorder/sample_aggregator.h"

namespace sb::exitprobe {

struct PathStats {
  uint64_t calls = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
  std::vector<uint64_t> hist;  // latency_histogram.h buckets
};

class CallPathAggregator {
 public:
  void Add(const sb_xp_stack& ev);
  // Per function index: path key (thread and goroutine ids cleared, so paths of all goroutines
  // merge; labels kept) -> stats.
  const std::map<uint32_t, std::map<recorder::StackKey, PathStats>>& paths() const { return paths_; }
  uint64_t events() const { return events_; }
  const std::map<uint32_t, uint64_t>& pids() const { return pids_; }

 private:
  std::map<uint32_t, std::map<recorder::StackKey, PathStats>> paths_;
  std::map<uint32_t, uint64_t> pids_;
  uint64_t events_ = 0;
};

struct CallPath {
  std::string function;             // the traced function
  uint32_t pid = 0;                 // the process (paths of different processes stay apart)
  std::vector<std::string> frames;  // leaf first (the traced function first), inline expanded
  std::map<std::string, std::string> labels;  // goroutine pprof labels
  std::string stop;                 // "" when the path reached a root, else the stop reason
  PathStats stats;
};

struct CallPathReport {
  std::vector<CallPath> paths;  // by function name, then total time, largest first
  profile::ProfileData profile;
};

// names[i]: the name of function index i (TracePlan order).
CallPathReport BuildCallPaths(const CallPathAggregator& agg, recorder::ProcessTracker& tracker,
                              const std::vector<std::string>& names);

nlohmann::json CallPathsJson(const CallPathReport& r);
// The top `per_function` paths of each function by total time.
std::string CallPathsText(const CallPathReport& r, size_t per_function);

}  // namespace sb::exitprobe
