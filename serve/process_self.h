// The agent's own cost, read from /proc/self: CPU seconds (utime + stime) and resident memory,
// exposed as Prometheus' standard process_cpu_seconds_total and process_resident_memory_bytes.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace sb::serve {

struct SelfUsage {
  double cpu_seconds = 0;
  uint64_t resident_bytes = 0;
  double start_time_seconds = 0;  // unix time the process started
};

Result<SelfUsage> ReadSelfUsage();

// Parses the text of /proc/PID/stat (split out for tests): fields 14/15 utime/stime, 22
// starttime (clock ticks since boot), 24 rss (pages).
Result<SelfUsage> ParseProcStat(const std::string& stat, long ticks_per_second, long page_size,
                                double boot_time_seconds);

}  // namespace sb::serve
