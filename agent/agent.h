// `switchback agent`: a continuous profiling session. It follows the selected Go processes
// (all of them by default, including those that start later), cuts their samples into windows
// of --interval, writes one pprof file per process per window (DIR/YYYY-MM-DD/
// HHMMSSZ-EXE-PID.pb.gz, whole or not at all), appends them to DIR/index.jsonl and keeps DIR
// within --keep and --max-disk. Other threads may watch it and take captures while it runs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/process_selection.h"
#include "agent/retention.h"
#include "base/result.h"
#include "profile/profile_data.h"

namespace sb::agent {

struct FollowedProcess {
  uint32_t pid = 0;
  std::string exe;
  std::string go_version;
  std::string facts_source;  // where the runtime facts came from
  uint64_t samples = 0;        // since it was followed
  uint64_t whole_samples = 0;  // of those, whole stacks (recorder::IsWhole: a root, and the kernel stack)
  std::string latest_window_file;  // absolute path, "" before its first window
  std::map<std::string, std::string> labels;  // host, exe, pid, go_version, build_id, container_id, unit
  bool exited = false;  // exited; forgotten after its last window is written
};

// Counters since the agent started (monotonic, except processes_followed).
struct AgentCounters {
  std::map<std::string, uint64_t> samples_by_stop_reason;  // unwound samples by stop reason
  uint64_t lost_samples = 0;                               // ring buffer full (or a record that did not unpack)
  uint64_t process_events_lost = 0;  // new-process/exec events that found their ring full (retried)
  std::map<std::string, uint64_t> crossings_taken;         // stack switches crossed, by kind
  uint64_t processes_followed = 0;  // processes followed now (a gauge)
  uint64_t windows_written = 0;     // window files renamed into place
  uint64_t window_write_failures = 0;  // window files not written (full disk, I/O error)
  uint64_t retention_deletions = 0;    // window files deleted by --keep / --max-disk
  uint64_t bpf_run_ns = 0;     // the sampler program's run time (needs kernel.bpf_stats_enabled)
  uint64_t bpf_run_count = 0;
  // Kernel frames (--kernel): samples that interrupted the kernel, with a kernel stack, and
  // bpf_get_stack failures.
  uint64_t kernel_in_kernel = 0;
  uint64_t kernel_stacks = 0;
  uint64_t kernel_stack_errors = 0;
  // The binary cache (--binary-cache): its size now (mapped file bytes), entries, evictions.
  uint64_t binary_cache_bytes = 0;
  uint64_t binary_cache_entries = 0;
  uint64_t binary_cache_evictions = 0;
  // The sampler's pcsp tables (one per followed binary, freed with its last process): cells
  // held now, binaries, and the array's capacity.
  uint64_t pcsp_table_cells = 0;
  uint64_t pcsp_tables = 0;
  uint64_t pcsp_table_capacity = 0;
};

struct WindowFile {
  std::string path;  // absolute
  uint32_t pid = 0;
  std::string exe;
  std::map<std::string, std::string> labels;
  int64_t start_unix_ns = 0;
  int64_t duration_ns = 0;
  uint64_t samples = 0;
};

struct CaptureFilter {
  uint32_t pid = 0;
  std::string exe_regex;  // POSIX extended, searched in the executable path
};  // exactly one set

struct AgentOptions {
  std::string dir;
  int frequency_hz = 19;
  uint32_t max_frames = 128;  // frames kept per stack (leaf side), 1..1024 (SB_MAX_FRAMES)
  std::chrono::milliseconds interval{60000};
  SelectionOptions selection;
  bool goroutine_labels = false;
  bool kernel = true;  // kernel frames above the user stacks (--no-kernel: off)
  // Bound of the binary cache in mapped file bytes (sym::BinaryCache); 0: none.
  uint64_t binary_cache_bytes = 256ull << 20;
  RetentionPolicy retention;
  std::string host;  // the `host` label; "" for gethostname()
  // One line per operator event (start, process followed / exited / forgotten, window written,
  // retention deletion, errors); null: stderr.
  std::function<void(const std::string&)> log;
  // Called on the agent thread after each window file is renamed into place.
  std::function<void(const WindowFile&)> on_window_written;
  std::function<void()> on_started;  // sampling attached, first window begun
};

class Agent {
 public:
  // Checks the options and DIR, removes temporaries a killed agent left, applies retention,
  // loads the sampler and follows the --pid processes. Fails with a one-line reason.
  static Result<std::unique_ptr<Agent>> Open(const AgentOptions& opts);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Runs until *stop becomes true (the current window is then cut short and written), or,
  // with --pid, until every followed process has exited. The methods below may be called
  // from other threads meanwhile (and before and after).
  Status Run(const std::atomic<bool>* stop);

  std::vector<FollowedProcess> Processes() const;
  AgentCounters Counters() const;
  // The samples of the matching followed processes from now for `duration`, taken from the
  // running sampler (no second BPF program), symbolized like a window file; several calls may
  // run at once from other threads. Returns early when *cancel becomes true. Errors: no
  // matching followed process (one-line Status).
  Result<profile::ProfileData> Capture(const CaptureFilter& f, std::chrono::milliseconds duration,
                                       const std::atomic<bool>* cancel);

  struct Impl;

 private:
  explicit Agent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sb::agent
