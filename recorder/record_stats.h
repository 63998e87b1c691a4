// What a recording saw, for the end-of-run summary, --stats JSON and tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sb::recorder {

struct ProcessStats {
  uint32_t pid = 0;
  std::string exe;
  std::string go_version;
  std::string offsets_source;
  std::string tls_source;
  std::string labels_source;  // how goroutine labels are read, or why not
  std::vector<std::string> missing;
  std::vector<std::string> warnings;  // e.g. the executable changed on disk
  uint64_t samples = 0;
  bool exited = false;
  bool ran_exec = false;  // ended by exec: the pid went on as another program
};

struct CrossingStats {
  uint64_t attempts = 0;
  uint64_t crossed = 0;
  uint64_t stopped = 0;
};

// --compare-fp-walk: both walks on the samples taken in one place (sb_cmp_kind: a goroutine's
// own stack, g0 crossed by morestack, g0 otherwise, as the unwinder found). In the floor modes
// unwind_* are the floor's (RecordStats::floor_walk).
struct WalkComparison {
  uint64_t samples = 0;
  uint64_t unwind_ns = 0;
  uint64_t unwind_frames = 0;
  uint64_t fp_walk_ns = 0;
  uint64_t fp_walk_frames = 0;
};

struct RecordStats {
  double duration_s = 0;
  int frequency_hz = 0;
  uint64_t samples = 0;        // samples received and kept
  uint64_t lost = 0;           // dropped by a full ring buffer
  uint64_t unknown_pid = 0;    // samples of processes not followed
  uint64_t exiting = 0;        // samples of tasks tearing down (no user memory left): not unwound
  uint64_t in_exec = 0;        // samples of tasks inside execve (image being replaced): not unwound
  uint64_t process_events_lost = 0;  // new-process and exec events that found their ring full (retried)
  uint64_t from_template = 0;  // processes followed from their exec, made from their executable's template
  // Samples of processes whose executable was still being analysed (part of unknown_pid), and
  // by executable (its path once analysed, else "dev:inode").
  uint64_t not_analyzed = 0;
  std::map<std::string, uint64_t> not_analyzed_by_exe;
  uint64_t ended_at_root = 0;    // whole stacks: at a root, goroutine_exited or goroutine_left, with their kernel
                                 // stack where they interrupted the kernel (recorder::IsWhole)
  std::map<std::string, uint64_t> stop_reasons;
  std::map<std::string, CrossingStats> crossings;
  std::vector<ProcessStats> processes;
  uint64_t bpf_run_count = 0;
  uint64_t bpf_run_time_ns = 0;
  uint64_t bpf_verified_insns = 0;  // the verifier's work to load the sampler (limit 1M)
  uint64_t unwound = 0;        // samples unwound in BPF (tracked processes)
  uint64_t unwind_ns = 0;      // BPF time spent in those unwinds
  uint64_t unwind_frames = 0;  // frames they produced
  uint64_t fp_walk_ns = 0;     // --compare-fp-walk: a plain frame-pointer walk of the same samples
  uint64_t fp_walk_frames = 0;
  // --compare-floor: that walk plus the reads naming the goroutine; --compare-crossing-floor:
  // and the crossing into curg (fp_walk_baseline.h). floor_walk names which ran ("floor",
  // "crossing_floor"; empty: none).
  uint64_t floor_ns = 0;
  uint64_t floor_frames = 0;
  std::string floor_walk;
  // The benchmark modes: the two walks by where the sample was taken ("goroutine",
  // "g0_morestack", "g0_other"); empty otherwise.
  std::map<std::string, WalkComparison> compare_by_kind;
  uint64_t pcsp_lookups = 0;     // pcsp values the BPF unwinder looked up
  uint64_t pcsp_cache_hits = 0;  // of which its per-CPU cache answered
  // Goroutine pprof labels: samples by how their labels were read (LabelsStatusName), and the
  // BPF time spent reading them.
  std::map<std::string, uint64_t> labels;
  uint64_t labels_ns = 0;
  // Kernel frames (--kernel): samples that interrupted the kernel, those with a kernel stack,
  // bpf_get_stack failures (counted by the BPF program), and the samples kept with kernel frames.
  bool kernel = false;
  uint64_t kernel_in_kernel = 0;
  uint64_t kernel_stacks = 0;
  uint64_t kernel_errors = 0;
  uint64_t kernel_samples = 0;
};

nlohmann::json StatsToJson(const RecordStats& s);
// Human summary for the terminal at the end of a recording.
std::string StatsSummary(const RecordStats& s);

}  // namespace sb::recorder
