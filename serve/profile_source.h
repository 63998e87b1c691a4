// What the HTTP server needs from whoever samples (the agent): the followed processes, the
// counters behind /metrics, and a capture of the next N seconds. serve/ defines this narrow
// interface itself, so it builds and is tested without the agent; tools/switchback adapts the
// agent to it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "profile/profile_data.h"

namespace sb::serve {

struct ProcessInfo {
  uint32_t pid = 0;
  std::string exe;
  std::string go_version;
  std::string facts_source;      // where the runtime facts came from (dwarf, code, table, ...)
  uint64_t samples = 0;          // samples so far
  uint64_t whole_samples = 0;    // of those, stacks that reached a root
  std::string latest_window_file;
  std::map<std::string, std::string> labels;
  bool exited = false;
};

struct SourceCounters {
  std::map<std::string, uint64_t> samples_by_stop_reason;  // "root", "bad_fp", ...
  uint64_t lost_samples = 0;
  uint64_t process_events_lost = 0;  // new-process/exec events that found their ring full (retried)
  std::map<std::string, uint64_t> crossings_taken;         // "systemstack", "mcall", ...
  uint64_t processes_followed = 0;  // followed now (a gauge)
  uint64_t windows_written = 0;
  uint64_t window_write_failures = 0;
  uint64_t retention_deletions = 0;
  uint64_t bpf_run_ns = 0;
  uint64_t bpf_run_count = 0;
  uint64_t binary_cache_bytes = 0;  // the agent's binary cache (mapped file bytes)
  uint64_t pcsp_table_cells = 0;    // the sampler's pcsp tables: cells held, of the capacity
  uint64_t pcsp_table_capacity = 0;
};

// Which processes a capture covers: one pid, or every process whose executable path matches
// exe_regex (POSIX extended, searched anywhere in the path), merged. Exactly one is set.
struct CaptureFilter {
  uint32_t pid = 0;
  std::string exe_regex;
};

// Implementations must be thread-safe: the server calls them from several request threads.
class ProfileSource {
 public:
  virtual ~ProfileSource() = default;
  virtual std::vector<ProcessInfo> Processes() const = 0;
  virtual SourceCounters Counters() const = 0;
  // The samples of the next DURATION from the running sampler. Returns early (with what it
  // has, or an error) once *cancel becomes true.
  virtual Result<profile::ProfileData> Capture(const CaptureFilter& filter, std::chrono::milliseconds duration,
                                               const std::atomic<bool>* cancel) = 0;
};

}  // namespace sb::serve
