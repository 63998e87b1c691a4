// The live sampler: loads sampler.bpf.c (libbpf skeleton), opens one cpu-clock perf event per
// CPU, keeps per-process facts and pcsp runs in BPF maps, and delivers samples.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "ebpf/sampler.h"
#include "ebpf/unwind/unwind_types.h"
#include "unwinder/compare_walk.h"
#include "unwinder/pcsp_table_space.h"

struct sampler_bpf;
struct bpf_link;
struct ring_buffer;

namespace sb::unwinder {

struct SamplerOptions {
  int frequency_hz = 99;
  bool track_all = false;  // report samples of unknown processes (for --all)
  // Benchmark: also time a plain frame-pointer walk of every sample (sb_counters.fp_walk_*),
  // against the unwinder or a floor (compare_walk.h).
  CompareWalk compare = CompareWalk::kNone;
  // Frames per stack (1..SB_MAX_FRAMES): every tracked process's sb_proc_info.max_frames.
  uint32_t max_frames = SB_DEFAULT_MAX_FRAMES;
  bool read_labels = true;  // goroutine pprof labels on each sample (goroutine_labels.h)
  bool kernel_stacks = false;  // each sample's kernel stack (bpf_get_stack) in sb_cpu_sample.kernel
};

struct BpfProgramStats {
  uint64_t run_count = 0;
  uint64_t run_time_ns = 0;  // needs kernel.bpf_stats_enabled=1
  // Instructions the verifier processed to load the sampler (its limit is 1,000,000): the
  // headroom left for new crossings. 0 when the kernel does not report it (before 5.16).
  uint32_t verified_insns = 0;
};

// Says why BPF cannot be used here (missing privilege, no BTF, ...), or "" when it can.
std::string BpfUnavailableReason();

class BpfSampler {
 public:
  static Result<std::unique_ptr<BpfSampler>> Open(const SamplerOptions& opts);
  ~BpfSampler();
  BpfSampler(const BpfSampler&) = delete;
  BpfSampler& operator=(const BpfSampler&) = delete;

  // Hands PID to the BPF program: its facts, with its binary's pcsp table (pcsp_cells, shared
  // by the processes of binary_key: written once, its space freed with the last of them;
  // delta_first and delta_table are set here). Tracking a tracked pid again replaces it.
  // EXE names the file whose facts these are: an exec of that very file that the sampler sees
  // after this (the process was read while its execve was still under way) keeps them.
  Status TrackProcess(uint32_t pid, const sb_proc_info& info, const std::string& binary_key,
                      const std::vector<sb_sp_delta>& pcsp_cells, const sb_exe_key* exe = nullptr);
  // Drops PID from the BPF program, and forgets that it was reported: a pid still running
  // (a new program after exec, say) is reported again at its next sample.
  void UntrackProcess(uint32_t pid);

  // Templates (--all): the facts of an executable at its link-time addresses, from which the
  // BPF program makes the proc_info of each process that execs it (SB_PROCESS_FROM_TEMPLATE),
  // so that process is followed from its first sample. The template holds its own reference on
  // the binary's pcsp table. Returns the template's id (never 0).
  Result<uint32_t> AddTemplate(const sb_exe_key& key, const sb_proc_info& at_bias0, uint64_t exec_vaddr,
                               const std::string& binary_key, const std::vector<sb_sp_delta>& pcsp_cells);
  void RemoveTemplate(uint32_t id);
  // PID was made from template ID by the BPF program: it is tracked as if TrackProcess had
  // handed it over. Fails (and drops it from the BPF program) when the template is gone.
  Status AdoptFromTemplate(uint32_t pid, uint32_t id);
  // The executable KEY is not a Go program: its processes are not reported again.
  void MarkNotGo(const sb_exe_key& key);
  // Samples of processes whose executable was still being analysed, by executable.
  std::vector<std::pair<sb_exe_key, uint64_t>> NotAnalyzed() const;
  // PID's executable was analysed (or found not Go): its samples are no longer counted as
  // waiting for that.
  void ClearPending(uint32_t pid);
  size_t templates() const { return templates_.size(); }
  uint64_t vdso_size() const { return vdso_size_; }
  const PcspTableSpace& pcsp_space() const { return pcsp_space_; }

  // One sample: the kernel stack and the user sample, unpacked from its ring record
  // (sample_record.h).
  using SampleFn = std::function<void(const sb_cpu_sample&)>;
  // KIND (sb_process_event): SB_PROCESS_SAMPLED, an untracked process was sampled (--all;
  // once per process image); SB_PROCESS_EXEC, a tracked process ran exec and the BPF program
  // has dropped it already.
  // SB_PROCESS_FROM_TEMPLATE and SB_PROCESS_EXEC_NEW: see AddTemplate and enum
  // sb_process_event.
  using NewProcessFn = std::function<void(const sb_new_process& ev)>;
  // Waits up to timeout_ms for data, then delivers what is there. Returns samples delivered.
  int Poll(int timeout_ms, const SampleFn& on_sample, const NewProcessFn& on_new_process);

  // Detaches the sampler from the CPUs and the exec tracepoint: no sample or process event is
  // made after it; what is in the rings is still delivered by Poll.
  void StopSampling();

  sb_counters Counters() const;  // summed over CPUs
  sb_kernel_counters KernelCounters() const;  // summed over CPUs
  BpfProgramStats ProgramStats() const;

 private:
  BpfSampler() = default;
  Status Attach(int frequency_hz);

  sampler_bpf* skel_ = nullptr;
  std::vector<::bpf_link*> links_;
  ::ring_buffer* samples_rb_ = nullptr;
  ::ring_buffer* procs_rb_ = nullptr;
  Status WriteCells(uint32_t first, const std::vector<sb_sp_delta>& cells);
  // One more reference on BINARY_KEY's pcsp table, placed and written if it is new.
  Result<PcspTableSpace::Table> AcquireTable(const std::string& binary_key, const std::vector<sb_sp_delta>& cells,
                                             PcspTableSpace::Clock::time_point now);
  void ConsumeProcessEvents();  // within Poll only (it delivers to the poll's callbacks)
  int epoll_fd_ = -1;           // waits on both rings

  PcspTableSpace pcsp_space_{0};  // sized by the sp_deltas map once opened
  std::map<uint32_t, std::string> tracked_;  // pid -> the binary whose table it holds
  struct Template {
    sb_exe_key key;
    std::string binary_key;
  };
  std::map<uint32_t, Template> templates_;  // id -> its executable and pcsp table
  uint32_t next_template_ = 1;
  uint64_t vdso_size_ = 0;  // this kernel's [vdso] size (from our own maps)
  uint32_t max_frames_ = SB_DEFAULT_MAX_FRAMES;
  const SampleFn* cur_sample_fn_ = nullptr;
  const NewProcessFn* cur_proc_fn_ = nullptr;
  int delivered_ = 0;
  uint64_t malformed_ = 0;  // ring records that did not unpack: counted as lost
  sb_cpu_sample unpacked_{};  // the record being delivered (10 KB: not on the stack)
  std::string procs_hold_path_;  // SWITCHBACK_TEST_PROCESS_RING (tests only)
};

}  // namespace sb::unwinder
