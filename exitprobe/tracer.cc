#include "exitprobe/tracer.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "base/bpf_percpu.h"
#include "exitprobe.skel.h"
#include "exitprobe/stack_record.h"

namespace sb::exitprobe {
namespace {

int QuietPrint(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (getenv("SWITCHBACK_BPF_DEBUG")) return vfprintf(stderr, fmt, args);
  return 0;
}

std::string Errno(int err) { return std::strerror(err < 0 ? -err : err); }

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Opens the skeleton and sizes its maps; `multi` decides whether xp_site_multi is loaded.
Result<exitprobe_bpf*> OpenAndLoad(const TracePlan& plan, const TraceOptions& opts, bool multi) {
  exitprobe_bpf* skel = exitprobe_bpf__open();
  if (!skel) return MakeError("cannot open the exit-probe BPF program: " + Errno(errno));
  sb_xp_config cfg = plan.config;
  cfg.target_tgid = opts.pid;
  std::memcpy(const_cast<sb_xp_config*>(&skel->rodata->cfg), &cfg, sizeof(cfg));
  uint32_t nfuncs = std::max<uint32_t>(1, static_cast<uint32_t>(plan.funcs.size()));
  skel->rodata->max_funcs = nfuncs;
  bpf_map__set_max_entries(skel->maps.funcs, nfuncs);
  bpf_map__set_max_entries(skel->maps.stats, nfuncs);
  bpf_map__set_max_entries(skel->maps.pending, std::max<uint32_t>(16, opts.max_pending));
  bpf_map__set_max_entries(skel->maps.gstate, std::max<uint32_t>(16, opts.max_goroutines));
  skel->rodata->want_stacks = opts.stacks ? 1 : 0;
  skel->rodata->slower_than_ns = opts.slower_than_ns;
  skel->rodata->want_labels = opts.labels ? 1 : 0;
  skel->rodata->per_process_bias = opts.stacks && opts.proc_template ? 1 : 0;
  // The pcsp array only as large as this binary's runs (the sampler's holds several binaries).
  bpf_map__set_max_entries(skel->maps.sp_deltas,
                           std::max<uint32_t>(1, opts.stacks ? static_cast<uint32_t>(opts.sp_deltas.size()) : 1));
  if (!opts.stacks) bpf_map__set_max_entries(skel->maps.stacks, 4096);
  if (multi) {
    bpf_program__set_expected_attach_type(skel->progs.xp_site_multi,
                                          static_cast<enum bpf_attach_type>(kBpfTraceUprobeMulti));
    bpf_program__set_expected_attach_type(skel->progs.xp_stack_multi,
                                          static_cast<enum bpf_attach_type>(kBpfTraceUprobeMulti));
    bpf_program__set_autoload(skel->progs.xp_stack, false);
    // The plain-uprobe probe is unused with a multi link, and it must not be loaded: both
    // probes hold the tail-call array stack_progs (also without --stacks), and one prog array
    // serves one attach type, so the kernel refused the whole load (EINVAL after verifying it)
    // and every trace fell back to perf-event uprobes, with their slow detach.
    bpf_program__set_autoload(skel->progs.xp_site, false);
  } else {
    bpf_program__set_autoload(skel->progs.xp_site_multi, false);
    bpf_program__set_autoload(skel->progs.xp_stack_multi, false);
  }
  // The unwinding program is loaded (and verified) only for --stacks.
  if (!opts.stacks) {
    bpf_program__set_autoload(skel->progs.xp_stack, false);
    bpf_program__set_autoload(skel->progs.xp_stack_multi, false);
  }
  if (int err = exitprobe_bpf__load(skel); err != 0) {
    exitprobe_bpf__destroy(skel);
    return MakeError("cannot load the exit-probe BPF program: " + Errno(err) +
                     " (set SWITCHBACK_BPF_DEBUG=1 for the verifier log)");
  }
  return skel;
}

}  // namespace

std::string BpfUnavailableReason() {
  if (geteuid() != 0) return "switchback trace needs root (or CAP_BPF and CAP_PERFMON) to load BPF programs";
  if (!std::filesystem::exists("/sys/kernel/btf/vmlinux"))
    return "the kernel has no BTF (/sys/kernel/btf/vmlinux missing): CONFIG_DEBUG_INFO_BTF is needed";
  return "";
}

Result<std::unique_ptr<Tracer>> Tracer::Load(const TracePlan& plan, const TraceOptions& opts) {
  if (auto why = BpfUnavailableReason(); !why.empty()) return MakeError(why);
  if (plan.funcs.size() >= SB_XP_NO_FUNC)
    return MakeError(fmt::format("{} functions: at most {} fit in a probe cookie", plan.funcs.size(), SB_XP_NO_FUNC - 1));
  libbpf_set_print(QuietPrint);
  std::unique_ptr<Tracer> t(new Tracer());
  t->plan_ = &plan;
  t->opts_ = opts;
  // uprobe_multi needs kernel 6.6+; an older kernel rejects the attach type at load.
  Result<exitprobe_bpf*> skel = MakeError("");
  if (!opts.force_perf_event) skel = OpenAndLoad(plan, opts, true);
  if (skel.ok()) {
    t->method_ = AttachMethod::kUprobeMulti;
  } else {
    skel = OpenAndLoad(plan, opts, false);
    if (!skel.ok()) return skel.take_error();
    t->method_ = AttachMethod::kPerfEvent;
  }
  t->skel_ = *skel;
  if (opts.stacks) {
    bpf_program* sp = t->method_ == AttachMethod::kUprobeMulti ? t->skel_->progs.xp_stack_multi : t->skel_->progs.xp_stack;
    uint32_t slot = 0;
    int prog_fd = bpf_program__fd(sp);
    if (bpf_map_update_elem(bpf_map__fd(t->skel_->maps.stack_progs), &slot, &prog_fd, BPF_ANY) != 0)
      return MakeError("cannot install the call-path program: " + Errno(errno));
    int dfd = bpf_map__fd(t->skel_->maps.sp_deltas);
    for (uint32_t i = 0; i < opts.sp_deltas.size(); i++)
      if (bpf_map_update_elem(dfd, &i, &opts.sp_deltas[i], BPF_ANY) != 0)
        return MakeError("cannot fill the pcsp map: " + Errno(errno));
    int pfd = bpf_map__fd(t->skel_->maps.proc_info);
    for (const auto& [tgid, info] : opts.procs)
      if (bpf_map_update_elem(pfd, &tgid, &info, BPF_ANY) != 0)
        return MakeError("cannot fill the process map: " + Errno(errno));
    if (opts.proc_template) {
      uint32_t zero = 0;
      if (bpf_map_update_elem(bpf_map__fd(t->skel_->maps.proc_template), &zero, &*opts.proc_template, BPF_ANY) != 0)
        return MakeError("cannot fill the process template: " + Errno(errno));
    }
    auto on_stack = [](void* ctx, void* data, size_t size) -> int {
      auto* self = static_cast<Tracer*>(ctx);
      // One reused record (nothing allocated per record: the reader must keep up with bursts of
      // deep unwinds), unpacked from the packed one the ring holds.
      sb_xp_stack* ev = self->stack_scratch_.get();
      if (std::string why = UnpackXpStackRecord(data, size, ev); !why.empty()) {
        if (self->malformed_++ == 0) self->first_malformed_ = why;
        return 0;
      }
      if (self->cur_stack_fn_) (*self->cur_stack_fn_)(*ev);
      self->delivered_++;
      return 0;
    };
    t->stacks_rb_ = ring_buffer__new(bpf_map__fd(t->skel_->maps.stacks), on_stack, t.get(), nullptr);
    if (!t->stacks_rb_) return MakeError("cannot open the call-path ring buffer: " + Errno(errno));
  }
  int fd = bpf_map__fd(t->skel_->maps.funcs);
  for (uint32_t i = 0; i < plan.funcs.size(); i++) {
    const auto& f = plan.funcs[i];
    sb_xp_func fi{f.start, f.end, f.entry.code.vaddr};
    if (bpf_map_update_elem(fd, &i, &fi, BPF_ANY) != 0)
      return MakeError("cannot fill the function map: " + Errno(errno));
  }
  return t;
}

Tracer::~Tracer() {
  Detach();
  if (stacks_rb_) ring_buffer__free(stacks_rb_);
  if (skel_) exitprobe_bpf__destroy(skel_);
}

bpf_program* Tracer::noop_program() const { return skel_->progs.xp_noop; }

std::vector<UprobeSite> Tracer::FuncSites(uint32_t index) const {
  const auto& f = plan_->funcs[index];
  uint32_t g = f.g_in_reg ? SB_XP_G_IN_REG : 0;
  std::vector<UprobeSite> out;
  out.push_back({f.entry.file_offset, SB_XP_COOKIE(index, SB_XP_ENTRY | g), false});
  if (plan_->uretprobe) {
    // A uretprobe fires in the caller's context: nothing is known about its registers.
    out.push_back({f.first.file_offset, SB_XP_COOKIE(index, SB_XP_RETPROBE), true});
  } else {
    // Each RET's cookie holds its offset in the function: its link-time address, from which
    // the exit probe knows the process's load bias exactly (trace --stacks of a PIE binary).
    for (const auto& r : f.rets)
      out.push_back({r.file_offset, SB_XP_COOKIE_AT(index, SB_XP_EXIT | g, r.code.vaddr - f.start), false});
  }
  return out;
}

std::vector<UprobeSite> Tracer::HookSites() const {
  std::vector<UprobeSite> out;
  for (const auto& h : plan_->hooks)
    out.push_back({h.site.file_offset, SB_XP_COOKIE(SB_XP_NO_FUNC, h.kind | (h.g_in_reg ? SB_XP_G_IN_REG : 0)), false});
  return out;
}

Result<AttachReport> Tracer::Attach() {
  AttachReport rep;
  rep.method = method_;
  auto t0 = std::chrono::steady_clock::now();
  bpf_program* prog = method_ == AttachMethod::kUprobeMulti ? skel_->progs.xp_site_multi : skel_->progs.xp_site;
  uint32_t pid = opts_.pid;
  if (method_ == AttachMethod::kUprobeMulti) {
    // Everything in one link; if the kernel refuses it, find out which functions it refuses.
    std::vector<UprobeSite> all = HookSites();
    for (uint32_t i = 0; i < plan_->funcs.size(); i++) {
      auto s = FuncSites(i);
      all.insert(all.end(), s.begin(), s.end());
    }
    auto links = std::make_unique<UprobeLinks>();
    if (links->Attach(prog, method_, plan_->path, pid, all).ok()) {
      rep.sites = links->sites();
      links_.push_back(std::move(links));
      rep.seconds = SecondsSince(t0);
      return rep;
    }
  }
  // One function at a time (perf events, or uprobe_multi after a refused batch).
  for (uint32_t i = 0; i < plan_->funcs.size(); i++) {
    auto links = std::make_unique<UprobeLinks>();
    if (auto st = links->Attach(prog, method_, plan_->path, pid, FuncSites(i)); !st.ok()) {
      rep.failed.push_back({plan_->funcs[i].name, st.error()});
      continue;
    }
    rep.sites += links->sites();
    links_.push_back(std::move(links));
  }
  auto hooks = std::make_unique<UprobeLinks>();
  if (auto st = hooks->Attach(prog, method_, plan_->path, pid, HookSites()); st.ok()) {
    rep.sites += hooks->sites();
    links_.push_back(std::move(hooks));
  } else {
    rep.failed.push_back({"(runtime hooks deferreturn/goexit1)", st.error()});
  }
  rep.seconds = SecondsSince(t0);
  if (rep.failed.size() >= plan_->funcs.size() && !plan_->funcs.empty())
    return MakeError("no function could be attached; first error: " + rep.failed.front().reason);
  return rep;
}

double Tracer::Detach() {
  auto t0 = std::chrono::steady_clock::now();
  for (auto& l : links_) l->Detach();
  links_.clear();
  return SecondsSince(t0);
}

std::vector<FuncCounts> Tracer::ReadCounts() const {
  std::vector<FuncCounts> out(plan_->funcs.size());
  int fd = bpf_map__fd(skel_->maps.stats);
  for (uint32_t i = 0; i < out.size(); i++) {
    auto per_cpu = ReadPerCpu<sb_xp_stats>(fd, i);
    if (per_cpu.empty()) continue;
    FuncCounts& c = out[i];
    c.hist.assign(SB_XP_BUCKETS, 0);
    for (const auto& s : per_cpu) {
      c.calls += s.calls;
      c.exits += s.exits;
      c.aborted += s.aborted;
      c.dropped += s.dropped;
      c.unmatched += s.unmatched;
      c.restarts += s.restarts;
      c.sum_ns += s.sum_ns;
      if (s.min_ns && (c.min_ns == 0 || s.min_ns < c.min_ns)) c.min_ns = s.min_ns;
      c.max_ns = std::max(c.max_ns, s.max_ns);
      for (int b = 0; b < SB_XP_BUCKETS; b++) c.hist[b] += s.hist[b];
    }
  }
  return out;
}

sb_xp_counters Tracer::ReadCounters() const {
  sb_xp_counters total{};
  for (const auto& c : ReadPerCpu<sb_xp_counters>(bpf_map__fd(skel_->maps.counters), 0)) {
    total.events += c.events;
    total.no_g += c.no_g;
    total.pending_full += c.pending_full;
    total.gstate_full += c.gstate_full;
    total.pop_limit += c.pop_limit;
    total.sweeps += c.sweeps;
    total.stack_sent += c.stack_sent;
    total.stack_fast += c.stack_fast;
    total.stack_lost += c.stack_lost;
    total.stack_no_proc += c.stack_no_proc;
  }
  return total;
}

int Tracer::PollStacks(int timeout_ms, const StackFn& on_stack) {
  if (!stacks_rb_) return 0;
  cur_stack_fn_ = &on_stack;
  delivered_ = 0;
  ring_buffer__poll(stacks_rb_, timeout_ms);
  ring_buffer__consume(stacks_rb_);
  cur_stack_fn_ = nullptr;
  return delivered_;
}

sb_counters Tracer::ReadUnwindCounters() const {
  sb_counters total{};
  for (const auto& c : ReadPerCpu<sb_counters>(bpf_map__fd(skel_->maps.unwind_counters), 0)) {
    total.samples += c.samples;
    total.unwind_frames += c.unwind_frames;
    for (int i = 0; i < SB_STOP_MAX; i++) total.stop[i] += c.stop[i];
    for (int i = 0; i < SB_LABELS_MAX; i++) total.labels[i] += c.labels[i];
    for (int i = 0; i < SB_CROSS_MAX; i++)
      for (int k = 0; k < 3; k++) total.crossing[i][k] += c.crossing[i][k];
  }
  return total;
}

std::vector<std::pair<std::string, uint32_t>> Tracer::VerifiedInsns() const {
  std::vector<std::pair<std::string, uint32_t>> out;
  bpf_program* progs[] = {skel_->progs.xp_site_multi, skel_->progs.xp_site, skel_->progs.xp_stack_multi,
                          skel_->progs.xp_stack};
  for (bpf_program* p : progs) {
    int fd = bpf_program__fd(p);
    if (fd < 0) continue;  // not loaded
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) out.push_back({bpf_program__name(p), info.verified_insns});
  }
  return out;
}

size_t Tracer::ForgetProcesses(const std::function<bool(uint32_t)>& gone) {
  if (!skel_ || !opts_.stacks) return 0;
  int fd = bpf_map__fd(skel_->maps.proc_info);
  std::vector<uint32_t> dead;
  uint32_t key = 0, next = 0;
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    if (next != 0 && next != opts_.pid && gone(next)) dead.push_back(next);
    key = next;
    prev = &key;
  }
  for (uint32_t pid : dead) bpf_map_delete_elem(fd, &pid);
  return dead.size();
}

std::vector<PendingCall> Tracer::ReadPending() const {
  std::vector<PendingCall> out;
  int fd = bpf_map__fd(skel_->maps.pending);
  sb_xp_pending_key key{}, next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    sb_xp_pending rec{};
    if (bpf_map_lookup_elem(fd, &next, &rec) == 0)
      out.push_back({rec.func, next.tgid, next.g, next.depth});
    key = next;
    prev = &key;
  }
  return out;
}

}  // namespace sb::exitprobe
