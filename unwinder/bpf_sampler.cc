#include "unwinder/bpf_sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <filesystem>

#include "base/bpf_percpu.h"
#include "sampler.h"
#include "sampler.skel.h"
#include "unwinder/sample_record.h"

namespace sb::unwinder {
namespace {

int SilentPrint(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_WARN && getenv("SWITCHBACK_BPF_DEBUG")) return vfprintf(stderr, fmt, args);
  if (getenv("SWITCHBACK_BPF_DEBUG")) return vfprintf(stderr, fmt, args);
  return 0;
}

std::string Errno(int err) { return std::strerror(err < 0 ? -err : err); }

// Capability numbers (linux/capability.h; the system header may predate CAP_BPF).
constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

// This process's effective capability set (CapEff in /proc/self/status), 0 if unreadable.
uint64_t EffectiveCapabilities() {
  FILE* f = fopen("/proc/self/status", "re");
  if (f == nullptr) return 0;
  char line[256];
  uint64_t caps = 0;
  while (fgets(line, sizeof line, f) != nullptr)
    if (strncmp(line, "CapEff:", 7) == 0) caps = strtoull(line + 7, nullptr, 16);
  fclose(f);
  return caps;
}

}  // namespace

std::string BpfUnavailableReason() {
  // A perf_event BPF program that reads user memory needs CAP_BPF and CAP_PERFMON (kernel 5.8+),
  // or CAP_SYS_ADMIN, which covers both; so does the system-wide perf event per CPU. Root
  // without them (a container, capsh --drop) fails the same way as a plain user.
  uint64_t caps = EffectiveCapabilities();
  auto has = [caps](int cap) { return (caps >> cap) & 1; };
  if (!has(kCapSysAdmin) && !(has(kCapBpf) && has(kCapPerfmon))) {
    std::string missing;
    for (auto [cap, name] : {std::pair{kCapBpf, "CAP_BPF"}, std::pair{kCapPerfmon, "CAP_PERFMON"}})
      if (!has(cap)) missing += std::string(missing.empty() ? "" : " and ") + name;
    return "cannot load the BPF sampler without CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN): missing " +
           missing + (geteuid() != 0 ? " (run it as root)" : "");
  }
  if (!std::filesystem::exists("/sys/kernel/btf/vmlinux"))
    return "the kernel has no BTF (/sys/kernel/btf/vmlinux missing): CONFIG_DEBUG_INFO_BTF is needed";
  return "";
}

Result<std::unique_ptr<BpfSampler>> BpfSampler::Open(const SamplerOptions& opts) {
  if (auto why = BpfUnavailableReason(); !why.empty()) return MakeError(why);
  libbpf_set_print(SilentPrint);
  std::unique_ptr<BpfSampler> s(new BpfSampler());
  s->skel_ = sampler_bpf__open();
  if (!s->skel_) return MakeError("cannot open the BPF sampler: " + Errno(errno));
  s->skel_->rodata->self_tgid = static_cast<uint32_t>(getpid());
  s->skel_->rodata->track_all = opts.track_all ? 1 : 0;
  s->skel_->rodata->compare_fp_walk = static_cast<uint8_t>(opts.compare);
  if (opts.max_frames < 1 || opts.max_frames > SB_MAX_FRAMES)
    return MakeError("max frames must be 1.." + std::to_string(SB_MAX_FRAMES) + ", not " +
                     std::to_string(opts.max_frames));
  s->max_frames_ = opts.max_frames;
  s->pcsp_space_ = PcspTableSpace(bpf_map__max_entries(s->skel_->maps.sp_deltas));
  // SWITCHBACK_BPF_VERIFIER_LOG=PATH: the verifier's whole log of a successful load, for
  // tools/bench/verifier_cost.py (what each global function of the unwind core costs it).
  static std::vector<char> verifier_log;
  const char* log_path = getenv("SWITCHBACK_BPF_VERIFIER_LOG");
  if (log_path != nullptr) {
    verifier_log.assign(size_t{256} << 20, '\0');
    bpf_program__set_log_buf(s->skel_->progs.sample_cpu, verifier_log.data(), verifier_log.size());
    bpf_program__set_log_level(s->skel_->progs.sample_cpu, 2);  // every instruction
  }
  // SWITCHBACK_TEST_PROCESS_RING=PATH (tests only): the process ring one page (256 events),
  // left unread while PATH exists, so that a test can fill it and see lost events retried.
  if (const char* hold = getenv("SWITCHBACK_TEST_PROCESS_RING")) {
    bpf_map__set_max_entries(s->skel_->maps.new_processes, static_cast<uint32_t>(sysconf(_SC_PAGESIZE)));
    s->procs_hold_path_ = hold;
  }
  s->skel_->rodata->read_labels = opts.read_labels ? 1 : 0;
  s->skel_->rodata->kernel_stacks = opts.kernel_stacks ? 1 : 0;
  int load_err = sampler_bpf__load(s->skel_);
  if (log_path != nullptr) {
    if (FILE* f = fopen(log_path, "w")) {
      fputs(verifier_log.data(), f);
      fclose(f);
    }
    std::vector<char>().swap(verifier_log);
  }
  if (int err = load_err; err != 0)
    return MakeError("cannot load the BPF sampler (verifier or permissions): " + Errno(err) +
                     " (set SWITCHBACK_BPF_DEBUG=1 for the verifier log)");
  if (auto st = s->Attach(opts.frequency_hz); !st.ok()) return MakeError(st.error());
  return s;
}

Status BpfSampler::Attach(int frequency_hz) {
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return MakeError("cannot count CPUs: " + Errno(ncpu));
  for (int cpu = 0; cpu < ncpu; cpu++) {
    perf_event_attr attr{};
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.freq = 1;
    attr.sample_freq = static_cast<uint64_t>(frequency_hz);
    int fd = static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) {
      if (errno == ENODEV) continue;  // CPU offline
      return MakeError("perf_event_open on CPU " + std::to_string(cpu) + ": " + Errno(errno) +
                       (errno == EACCES || errno == EPERM ? " (CAP_PERFMON needed)" : ""));
    }
    bpf_link* link = bpf_program__attach_perf_event(skel_->progs.sample_cpu, fd);
    if (!link) {
      int err = errno;
      close(fd);
      return MakeError("cannot attach the sampler to CPU " + std::to_string(cpu) + ": " + Errno(err));
    }
    links_.push_back(link);  // the link owns fd and closes it on destroy
  }
  // Before the first process is tracked, so no exec can leave stale facts behind.
  bpf_link* exec_link = bpf_program__attach(skel_->progs.on_exec);
  if (!exec_link) return MakeError("cannot attach the exec tracepoint (sched_process_exec): " + Errno(errno));
  links_.push_back(exec_link);
  auto on_sample = [](void* ctx, void* data, size_t size) -> int {
    auto* self = static_cast<BpfSampler*>(ctx);
    // One record per sample, unpacked into the fixed form (sample_record.h). A record that does
    // not unpack (which the BPF program never sends) counts as lost: nothing vanishes uncounted.
    if (!UnpackSampleRecord(data, size, &self->unpacked_).empty()) {
      self->malformed_++;
      return 0;
    }
    if (self->cur_sample_fn_) (*self->cur_sample_fn_)(self->unpacked_);
    self->delivered_++;
    return 0;
  };
  auto on_proc = [](void* ctx, void* data, size_t size) -> int {
    auto* self = static_cast<BpfSampler*>(ctx);
    if (size < sizeof(sb_new_process)) return 0;
    auto* ev = static_cast<const sb_new_process*>(data);
    if (self->cur_proc_fn_) (*self->cur_proc_fn_)(ev->pid, ev->kind);
    return 0;
  };
  samples_rb_ = ring_buffer__new(bpf_map__fd(skel_->maps.samples), on_sample, this, nullptr);
  if (!samples_rb_) return MakeError("cannot open the sample ring buffer: " + Errno(errno));
  procs_rb_ = ring_buffer__new(bpf_map__fd(skel_->maps.new_processes), on_proc, this, nullptr);
  if (!procs_rb_) return MakeError("cannot open the process ring buffer: " + Errno(errno));
  return Status::Ok();
}

BpfSampler::~BpfSampler() {
  // Detach first, so no program runs while the maps go away.
  for (auto* l : links_) bpf_link__destroy(l);
  links_.clear();
  if (samples_rb_) ring_buffer__free(samples_rb_);
  if (procs_rb_) ring_buffer__free(procs_rb_);
  if (skel_) sampler_bpf__destroy(skel_);
}

Status BpfSampler::WriteCells(uint32_t first, const std::vector<sb_sp_delta>& d) {
  int fd = bpf_map__fd(skel_->maps.sp_deltas);
  // Batched update: one syscall per 64k entries instead of one per entry.
  constexpr size_t kBatch = 65536;
  std::vector<uint32_t> keys;
  for (size_t i = 0; i < d.size(); i += kBatch) {
    size_t n = std::min(kBatch, d.size() - i);
    keys.resize(n);
    for (size_t j = 0; j < n; j++) keys[j] = first + static_cast<uint32_t>(i + j);
    uint32_t count = static_cast<uint32_t>(n);
    LIBBPF_OPTS(bpf_map_batch_opts, opts);
    if (bpf_map_update_batch(fd, keys.data(), &d[i], &count, &opts) != 0) {
      for (size_t j = 0; j < n; j++)  // older kernels: one by one
        if (bpf_map_update_elem(fd, &keys[j], &d[i + j], BPF_ANY) != 0)
          return MakeError("cannot fill the pcsp map: " + Errno(errno));
    }
  }
  return Status::Ok();
}

Status BpfSampler::TrackProcess(uint32_t pid, const sb_proc_info& in, const std::string& binary_key,
                                const std::vector<sb_sp_delta>& pcsp_cells) {
  UntrackProcess(pid);  // a pid tracked again (exec): its old table reference goes first
  auto now = PcspTableSpace::Clock::now();
  auto table = pcsp_space_.Acquire(binary_key, static_cast<uint32_t>(pcsp_cells.size()), now);
  if (!table.ok()) return MakeError(table.error());
  if (table->fresh) {
    if (auto s = WriteCells(table->first, pcsp_cells); !s.ok()) {
      pcsp_space_.Release(binary_key, now);
      return s;
    }
  }
  sb_proc_info info = in;
  info.max_frames = max_frames_;
  info.delta_first = table->first;
  info.delta_table = table->id;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.proc_info), &pid, &info, BPF_ANY) != 0) {
    pcsp_space_.Release(binary_key, now);
    return MakeError("cannot track process " + std::to_string(pid) + ": " + Errno(errno));
  }
  tracked_[pid] = binary_key;
  return Status::Ok();
}

void BpfSampler::UntrackProcess(uint32_t pid) {
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.reported), &pid);
  auto it = tracked_.find(pid);
  if (it == tracked_.end()) return;
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.proc_info), &pid);
  pcsp_space_.Release(it->second, PcspTableSpace::Clock::now());
  tracked_.erase(it);
}

int BpfSampler::Poll(int timeout_ms, const SampleFn& on_sample, const NewProcessFn& on_new_process) {
  cur_sample_fn_ = &on_sample;
  cur_proc_fn_ = &on_new_process;
  delivered_ = 0;
  ring_buffer__poll(samples_rb_, timeout_ms);
  ring_buffer__consume(samples_rb_);
  if (procs_hold_path_.empty() || access(procs_hold_path_.c_str(), F_OK) != 0) ring_buffer__consume(procs_rb_);
  cur_sample_fn_ = nullptr;
  cur_proc_fn_ = nullptr;
  return delivered_;
}

sb_counters BpfSampler::Counters() const {
  sb_counters total{};
  for (const auto& c : ReadPerCpu<sb_counters>(bpf_map__fd(skel_->maps.counters), 0)) {
    total.samples += c.samples;
    total.lost += c.lost;
    total.unknown_pid += c.unknown_pid;
    total.exiting += c.exiting;
    total.in_exec += c.in_exec;
    total.process_events_lost += c.process_events_lost;
    total.unwind_ns += c.unwind_ns;
    total.unwind_frames += c.unwind_frames;
    total.fp_walk_ns += c.fp_walk_ns;
    total.fp_walk_frames += c.fp_walk_frames;
    total.floor_ns += c.floor_ns;
    total.floor_frames += c.floor_frames;
    total.labels_ns += c.labels_ns;
    total.pcsp_lookups += c.pcsp_lookups;
    total.pcsp_cache_hits += c.pcsp_cache_hits;
    for (int i = 0; i < SB_LABELS_MAX; i++) total.labels[i] += c.labels[i];
    for (int i = 0; i < SB_STOP_MAX; i++) total.stop[i] += c.stop[i];
    for (int i = 0; i < SB_CROSS_MAX; i++)
      for (int k = 0; k < 3; k++) total.crossing[i][k] += c.crossing[i][k];
    for (int i = 0; i < SB_CMP_KINDS; i++)
      for (int k = 0; k < SB_CMP_FIELDS; k++) total.cmp[i][k] += c.cmp[i][k];
  }
  total.lost += malformed_;  // records that did not unpack (see Attach)
  return total;
}

sb_kernel_counters BpfSampler::KernelCounters() const {
  sb_kernel_counters total{};
  for (const auto& c : ReadPerCpu<sb_kernel_counters>(bpf_map__fd(skel_->maps.kernel_counters), 0)) {
    total.in_kernel += c.in_kernel;
    total.stacks += c.stacks;
    total.errors += c.errors;
  }
  return total;
}

BpfProgramStats BpfSampler::ProgramStats() const {
  BpfProgramStats s;
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(bpf_program__fd(skel_->progs.sample_cpu), &info, &len) == 0) {
    s.run_count = info.run_cnt;
    s.run_time_ns = info.run_time_ns;
    s.verified_insns = info.verified_insns;
  }
  return s;
}

}  // namespace sb::unwinder
