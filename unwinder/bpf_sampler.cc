#include "unwinder/bpf_sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/epoll.h>
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
#include "unwinder/process_maps.h"
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
  // Every process of this kernel's architecture has the same [vdso] image: its size, for the
  // processes the BPF program makes from templates (it reads where each one's starts).
  if (auto maps = ReadProcessMaps(static_cast<int>(getpid())); maps.ok())
    for (const auto& m : *maps)
      if (m.path == "[vdso]") s->vdso_size_ = m.end - m.start;
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
    // A sample of a process not handed over from here was made from a template at its exec:
    // the event saying so was queued before this sample, and is read first, so that whoever
    // takes the sample knows its process.
    if (!self->tracked_.count(self->unpacked_.s.pid)) self->ConsumeProcessEvents();
    if (self->cur_sample_fn_) (*self->cur_sample_fn_)(self->unpacked_);
    self->delivered_++;
    return 0;
  };
  auto on_proc = [](void* ctx, void* data, size_t size) -> int {
    auto* self = static_cast<BpfSampler*>(ctx);
    if (size < sizeof(sb_new_process)) return 0;
    auto* ev = static_cast<const sb_new_process*>(data);
    if (self->cur_proc_fn_) (*self->cur_proc_fn_)(*ev);
    return 0;
  };
  samples_rb_ = ring_buffer__new(bpf_map__fd(skel_->maps.samples), on_sample, this, nullptr);
  if (!samples_rb_) return MakeError("cannot open the sample ring buffer: " + Errno(errno));
  procs_rb_ = ring_buffer__new(bpf_map__fd(skel_->maps.new_processes), on_proc, this, nullptr);
  if (!procs_rb_) return MakeError("cannot open the process ring buffer: " + Errno(errno));
  // One wait on both rings: a process event (sent with a wake-up) ends the wait at once, so a
  // new executable's analysis starts within microseconds of its exec, while samples (sent
  // without one) are read every poll interval.
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return MakeError("epoll_create1: " + Errno(errno));
  for (::ring_buffer* rb : {procs_rb_, samples_rb_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, ring_buffer__epoll_fd(rb), &ev) != 0)
      return MakeError("epoll_ctl: " + Errno(errno));
  }
  return Status::Ok();
}

void BpfSampler::StopSampling() {
  for (auto* l : links_) bpf_link__destroy(l);
  links_.clear();
}

BpfSampler::~BpfSampler() {
  // Detach first, so no program runs while the maps go away.
  for (auto* l : links_) bpf_link__destroy(l);
  links_.clear();
  if (samples_rb_) ring_buffer__free(samples_rb_);
  if (procs_rb_) ring_buffer__free(procs_rb_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
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

Result<PcspTableSpace::Table> BpfSampler::AcquireTable(const std::string& binary_key,
                                                        const std::vector<sb_sp_delta>& cells,
                                                        PcspTableSpace::Clock::time_point now) {
  auto table = pcsp_space_.Acquire(binary_key, static_cast<uint32_t>(cells.size()), now);
  if (!table.ok()) return table;
  if (table->fresh) {
    if (auto s = WriteCells(table->first, cells); !s.ok()) {
      pcsp_space_.Release(binary_key, now);
      return MakeError(s.error());
    }
  }
  return table;
}

Status BpfSampler::TrackProcess(uint32_t pid, const sb_proc_info& in, const std::string& binary_key,
                                const std::vector<sb_sp_delta>& pcsp_cells, const sb_exe_key* exe) {
  UntrackProcess(pid);  // a pid tracked again (exec): its old table reference goes first
  auto now = PcspTableSpace::Clock::now();
  auto table = AcquireTable(binary_key, pcsp_cells, now);
  if (!table.ok()) return MakeError(table.error());
  sb_proc_info info = in;
  info.max_frames = max_frames_;
  info.delta_first = table->first;
  info.delta_table = table->id;
  // Its file first, so the exec hook never sees these facts without it.
  if (exe != nullptr) bpf_map_update_elem(bpf_map__fd(skel_->maps.proc_exe), &pid, exe, BPF_ANY);
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.proc_info), &pid, &info, BPF_ANY) != 0) {
    pcsp_space_.Release(binary_key, now);
    return MakeError("cannot track process " + std::to_string(pid) + ": " + Errno(errno));
  }
  tracked_[pid] = binary_key;
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.exec_pending), &pid);
  return Status::Ok();
}

void BpfSampler::UntrackProcess(uint32_t pid) {
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.reported), &pid);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.exec_pending), &pid);
  // Also when not tracked here: the BPF program may have made it from a template that
  // userspace has not adopted (not wanted, or its template went meanwhile).
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.proc_info), &pid);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.proc_exe), &pid);
  auto it = tracked_.find(pid);
  if (it == tracked_.end()) return;
  pcsp_space_.Release(it->second, PcspTableSpace::Clock::now());
  tracked_.erase(it);
}

Result<uint32_t> BpfSampler::AddTemplate(const sb_exe_key& key, const sb_proc_info& at_bias0, uint64_t exec_vaddr,
                                         const std::string& binary_key, const std::vector<sb_sp_delta>& cells) {
  auto now = PcspTableSpace::Clock::now();
  auto table = AcquireTable(binary_key, cells, now);
  if (!table.ok()) return MakeError(table.error());
  // 11 KB: not on the stack.
  auto t = std::make_unique<sb_exe_template>();
  t->pi = at_bias0;
  t->pi.max_frames = max_frames_;
  t->pi.delta_first = table->first;
  t->pi.delta_table = table->id;
  t->pi.vdso_start = t->pi.vdso_end = 0;
  t->exec_vaddr = exec_vaddr;
  t->vdso_size = vdso_size_;
  t->id = next_template_++;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.exe_templates), &key, t.get(), BPF_ANY) != 0) {
    int err = errno;
    pcsp_space_.Release(binary_key, now);
    return MakeError("cannot store the template of " + binary_key + ": " + Errno(err));
  }
  templates_[t->id] = Template{key, binary_key};
  return t->id;
}

void BpfSampler::RemoveTemplate(uint32_t id) {
  auto it = templates_.find(id);
  if (it == templates_.end()) return;
  // The map entry first: no exec makes a process from it once its table reference is gone.
  sb_exe_template cur{};
  int fd = bpf_map__fd(skel_->maps.exe_templates);
  if (bpf_map_lookup_elem(fd, &it->second.key, &cur) == 0 && cur.id == id) bpf_map_delete_elem(fd, &it->second.key);
  pcsp_space_.Release(it->second.binary_key, PcspTableSpace::Clock::now());
  templates_.erase(it);
}

Status BpfSampler::AdoptFromTemplate(uint32_t pid, uint32_t id) {
  auto it = templates_.find(id);
  if (it == templates_.end()) {
    UntrackProcess(pid);
    return MakeError("process " + std::to_string(pid) + ": its template is gone");
  }
  if (auto old = tracked_.find(pid); old != tracked_.end()) {  // a stale reference of a reused pid
    pcsp_space_.Release(old->second, PcspTableSpace::Clock::now());
    tracked_.erase(old);
  }
  // The table is placed (the template holds it): one more reference, nothing written.
  auto table = pcsp_space_.Acquire(it->second.binary_key, 0, PcspTableSpace::Clock::now());
  if (!table.ok()) {
    UntrackProcess(pid);
    return MakeError(table.error());
  }
  tracked_[pid] = it->second.binary_key;
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.exec_pending), &pid);
  return Status::Ok();
}

void BpfSampler::MarkNotGo(const sb_exe_key& key) {
  uint8_t one = 1;
  bpf_map_update_elem(bpf_map__fd(skel_->maps.exe_not_go), &key, &one, BPF_ANY);
}

std::vector<std::pair<sb_exe_key, uint64_t>> BpfSampler::NotAnalyzed() const {
  std::vector<std::pair<sb_exe_key, uint64_t>> out;
  int fd = bpf_map__fd(skel_->maps.not_analyzed);
  sb_exe_key key{}, next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    uint64_t n = 0;
    if (bpf_map_lookup_elem(fd, &next, &n) == 0) out.emplace_back(next, n);
    key = next;
    prev = &key;
  }
  return out;
}

void BpfSampler::ClearPending(uint32_t pid) { bpf_map_delete_elem(bpf_map__fd(skel_->maps.exec_pending), &pid); }

int BpfSampler::Poll(int timeout_ms, const SampleFn& on_sample, const NewProcessFn& on_new_process) {
  cur_sample_fn_ = &on_sample;
  cur_proc_fn_ = &on_new_process;
  delivered_ = 0;
  epoll_event ev[2];
  if (timeout_ms != 0) epoll_wait(epoll_fd_, ev, 2, timeout_ms);
  // Process events first: the samples after them may be of the processes they announce.
  ConsumeProcessEvents();
  ring_buffer__consume(samples_rb_);
  ConsumeProcessEvents();
  cur_sample_fn_ = nullptr;
  cur_proc_fn_ = nullptr;
  return delivered_;
}

void BpfSampler::ConsumeProcessEvents() {
  if (cur_proc_fn_ == nullptr) return;
  if (procs_hold_path_.empty() || access(procs_hold_path_.c_str(), F_OK) != 0) ring_buffer__consume(procs_rb_);
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
    total.from_template += c.from_template;
    total.not_analyzed += c.not_analyzed;
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
