// A live recording: the sampler, the processes it follows, and the aggregated result.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "profile/profile_data.h"
#include "recorder/record_stats.h"
#include "unwinder/compare_walk.h"
#include "ebpf/unwind/unwind_types.h"

namespace sb::recorder {

struct LiveStatus {
  double elapsed_s = 0;
  uint64_t samples = 0;
  uint64_t lost = 0;
  size_t processes = 0;
};

struct RecordOptions {
  std::vector<uint32_t> pids;
  bool all = false;             // every Go process, including those that start later
  double duration_s = 0;        // 0: until *stop becomes true
  int frequency_hz = 99;
  // Benchmark: time a plain frame-pointer walk too, against the unwinder or a floor.
  unwinder::CompareWalk compare = unwinder::CompareWalk::kNone;
  uint32_t max_frames = SB_DEFAULT_MAX_FRAMES;  // frames kept per stack (leaf side), 1..SB_MAX_FRAMES
  bool labels = true;            // goroutine pprof labels on samples (--no-labels: false)
  bool kernel = false;           // kernel frames above the user stack (--kernel)
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const LiveStatus&)> on_status;  // called about 4 times a second
  std::function<void()> on_started;  // sampling is attached (after every check passed)
  std::function<void(const std::string&)> on_warning;  // one line, e.g. a binary changed on disk
};

struct RecordResult {
  profile::ProfileData profile;
  RecordStats stats;
};

// Fails before sampling starts for a bad request (no such process, not Go, no BPF).
Result<RecordResult> Record(const RecordOptions& opts);

}  // namespace sb::recorder
