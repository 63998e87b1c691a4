// A sampling session: the BPF sampler, the processes it follows and the discovery of new ones,
// without any notion of how long it runs or what is done with the samples. `record` runs one
// session for its duration; `agent` runs one for weeks and cuts its samples into windows.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "recorder/process_tracker.h"
#include "symbolizer/binary.h"
#include "symbolizer/kallsyms.h"
#include "unwinder/bpf_sampler.h"

namespace sb::recorder {

struct SessionOptions {
  int frequency_hz = 99;
  bool all = false;  // discover processes: every Go process, including those that start later
  unwinder::CompareWalk compare = unwinder::CompareWalk::kNone;  // benchmark modes
  uint32_t max_frames = SB_DEFAULT_MAX_FRAMES;  // frames kept per stack (leaf side), 1..SB_MAX_FRAMES
  bool read_labels = true;  // goroutine pprof labels on each sample
  // Each sample's kernel stack, symbolized from /proc/kallsyms. When the kernel symbols cannot
  // be read (kptr_restrict), a warning says why and the session goes on without kernel frames.
  bool kernel_stacks = false;
  // With `all`: whether a discovered process is wanted (null: every Go process). Called
  // before the process is analysed, so an unwanted one costs nothing.
  std::function<bool(uint32_t pid)> want;
  std::function<void(const std::string&)> on_warning;  // one line
  std::function<void(const TrackedProcess&)> on_followed;
  // With `all`: one line per executable and outcome (ProcessTracker::OnBinaryEvent).
  std::function<void(const std::string&)> on_binary;
  // Binaries already loaded (by a check before the session, as `record` does); null: its own,
  // bounded by binary_cache_bytes (mapped file bytes, LRU; 0: no bound).
  sym::BinaryCache* cache = nullptr;
  uint64_t binary_cache_bytes = 0;
};

class SamplingSession {
 public:
  static Result<std::unique_ptr<SamplingSession>> Open(const SessionOptions& opts);
  SamplingSession(const SamplingSession&) = delete;
  SamplingSession& operator=(const SamplingSession&) = delete;

  // Follows PID (a Go program); a one-line error otherwise.
  Status Follow(uint32_t pid);
  // With `all`: considers every process in /proc (a process already looked at is skipped),
  // delivering samples meanwhile. Stops early when *stop becomes true.
  void Scan(const sb::unwinder::BpfSampler::SampleFn& on_sample, const std::atomic<bool>* stop);
  // Waits up to timeout_ms for samples and delivers them; processes the sampler reports as new
  // are considered (with `all`). Returns the samples delivered.
  int Poll(int timeout_ms, const sb::unwinder::BpfSampler::SampleFn& on_sample);
  // Marks exited processes (and removes them from the sampler's maps); returns the pids that
  // exited since the last call.
  std::vector<uint32_t> CheckExited();
  // Drops an exited process from the tracker (after its samples were symbolized) and
  // forgets processes that were not wanted and are gone, so churn does not make it grow.
  void Forget(uint32_t pid);
  void ForgetGoneIgnored();
  size_t ignored_count() const { return ignored_.size(); }

  ProcessTracker& tracker() { return *tracker_; }
  unwinder::BpfSampler& sampler() { return *sampler_; }
  int frequency_hz() const { return opts_.frequency_hz; }
  // The kernel's symbols when kernel stacks are on (null when off or unreadable).
  const sym::KernelSymbols* kernel_symbols() const { return kernel_syms_ ? &*kernel_syms_ : nullptr; }

 private:
  explicit SamplingSession(const SessionOptions& opts) : opts_(opts) {}
  // Follows PID if wanted and a Go program. REPORTED: the sampler reported it, which it does
  // once per process image, so an ignored pid is looked at again (it may have run exec).
  // False when it is wanted but could not be followed.
  bool Consider(uint32_t pid, bool reported);
  // A process the sampler made from its executable's template at exec.
  void Adopt(const sb_new_process& ev);

  SessionOptions opts_;
  sym::BinaryCache own_cache_;
  std::unique_ptr<unwinder::BpfSampler> sampler_;
  std::unique_ptr<ProcessTracker> tracker_;
  std::optional<sym::KernelSymbols> kernel_syms_;
  // Not Go, not wanted, or gone: not looked at again by Scan while that process lives (keyed
  // by pid and start time, since pids are reused; a report from the sampler looks again).
  std::map<uint32_t, uint64_t> ignored_;
};

// Every pid in /proc.
std::vector<uint32_t> AllPids();

}  // namespace sb::recorder
