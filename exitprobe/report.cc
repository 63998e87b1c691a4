#include "exitprobe/report.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "exitprobe/latency_histogram.h"

namespace sb::exitprobe {
namespace {

constexpr uint32_t kGdead = 6;  // runtime._Gdead, the same in every Go version

}  // namespace

std::optional<uint32_t> ReadGoroutineStatus(uint32_t tgid, uint64_t g, uint32_t offset) {
  int fd = open(fmt::format("/proc/{}/mem", tgid).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  uint32_t v = 0;
  ssize_t n = pread(fd, &v, sizeof(v), static_cast<off_t>(g + offset));
  close(fd);
  if (n != sizeof(v)) return std::nullopt;
  return v;
}

TraceReport BuildReport(const TracePlan& plan, const std::vector<FuncCounts>& counts,
                        const std::vector<PendingCall>& pending, const GoroutineStatusFn& status) {
  TraceReport r;
  r.binary = plan.path;
  r.go_version = plan.go_version;
  r.uretprobe = plan.uretprobe;
  r.skipped = plan.skipped;
  r.notes = plan.notes;
  for (size_t i = 0; i < plan.funcs.size(); i++) {
    FuncReport f;
    f.name = plan.funcs[i].name;
    if (i < counts.size()) f.counts = counts[i];
    r.funcs.push_back(std::move(f));
  }
  for (const auto& p : pending) {
    if (p.func >= r.funcs.size()) continue;
    std::optional<uint32_t> st;
    if (plan.go && status) st = status(p.tgid, p.g);
    // The status is masked: _Gscan (0x1000) may be or'ed in while the GC looks at it.
    if (st && (*st & ~0x1000u) == kGdead)
      r.funcs[p.func].counts.aborted++;
    else
      r.funcs[p.func].in_flight++;
  }
  for (auto& f : r.funcs) {
    const auto& c = f.counts;
    f.p50 = Percentile(c.hist, 0.50, c.min_ns, c.max_ns);
    f.p90 = Percentile(c.hist, 0.90, c.min_ns, c.max_ns);
    f.p99 = Percentile(c.hist, 0.99, c.min_ns, c.max_ns);
  }
  return r;
}

std::string ReportText(const TraceReport& r, bool histograms) {
  std::string out;
  std::vector<const FuncReport*> order;
  for (const auto& f : r.funcs) order.push_back(&f);
  std::stable_sort(order.begin(), order.end(),
                   [](const FuncReport* a, const FuncReport* b) { return a->counts.calls > b->counts.calls; });
  out += fmt::format("{:<40} {:>9} {:>9} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "function", "calls",
                     "exits", "aborted", "flight", "min", "p50", "p90", "p99", "max");
  // With many functions traced, the ones never called would bury the others: count them instead.
  constexpr size_t kListAll = 30;
  auto idle = [](const FuncReport& f) { return f.counts.calls == 0 && f.counts.exits == 0 && f.counts.unmatched == 0; };
  for (const auto* f : order) {
    const auto& c = f->counts;
    if (r.funcs.size() > kListAll && idle(*f)) continue;
    auto lat = [&](uint64_t v) { return c.exits ? FormatNanos(static_cast<double>(v)) : std::string("-"); };
    out += fmt::format("{:<40} {:>9} {:>9} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}\n", f->name, c.calls, c.exits,
                       c.aborted, f->in_flight, lat(c.min_ns), lat(f->p50), lat(f->p90), lat(f->p99), lat(c.max_ns));
    if (c.dropped || c.unmatched)
      out += fmt::format("{:<40} dropped {} (not tracked), exits without a seen entry {}\n", "", c.dropped,
                         c.unmatched);
  }
  if (r.funcs.size() > kListAll) {
    size_t quiet = std::count_if(r.funcs.begin(), r.funcs.end(), idle);
    if (quiet) out += fmt::format("({} more traced functions were not called)\n", quiet);
  }
  if (histograms) {
    for (const auto* f : order) {
      if (f->counts.exits == 0) continue;
      out += fmt::format("\n{}: {} exits, mean {}\n", f->name, f->counts.exits,
                         FormatNanos(static_cast<double>(f->counts.sum_ns) / static_cast<double>(f->counts.exits)));
      out += Log2HistogramText(f->counts.hist);
    }
  }
  if (!r.skipped.empty()) {
    out += fmt::format("\nNot traced ({}):\n", r.skipped.size());
    for (const auto& s : r.skipped) out += fmt::format("  {}: {}\n", s.name, s.reason);
  }
  for (const auto& s : r.attach.failed) out += fmt::format("attach failed: {}: {}\n", s.name, s.reason);
  const auto& k = r.counters;
  if (k.no_g || k.pending_full || k.gstate_full || k.pop_limit)
    out += fmt::format("\nlost: {} events without a goroutine, {} calls not stored (pending map full), {} "
                       "goroutines not stored, {} pop limits\n",
                       k.no_g, k.pending_full, k.gstate_full, k.pop_limit);
  out += fmt::format("\n{} sites attached with {} in {:.3f}s, detached in {:.3f}s; {} probe hits\n", r.attach.sites,
                     AttachMethodName(r.attach.method), r.attach.seconds, r.detach_s, k.events);
  return out;
}

nlohmann::json ReportJson(const TraceReport& r) {
  nlohmann::json j;
  j["binary"] = r.binary;
  if (r.pid) j["pid"] = r.pid;
  j["go_version"] = r.go_version;
  j["exit_probes"] = r.uretprobe ? "uretprobe" : "ret";
  j["duration_s"] = r.duration_s;
  j["attach"] = {{"method", AttachMethodName(r.attach.method)},
                 {"sites", r.attach.sites},
                 {"seconds", r.attach.seconds},
                 {"detach_seconds", r.detach_s}};
  j["counters"] = {{"events", r.counters.events},         {"no_g", r.counters.no_g},
                   {"pending_full", r.counters.pending_full}, {"gstate_full", r.counters.gstate_full},
                   {"pop_limit", r.counters.pop_limit},   {"sweeps", r.counters.sweeps}};
  nlohmann::json funcs = nlohmann::json::object();
  for (const auto& f : r.funcs) {
    const auto& c = f.counts;
    nlohmann::json buckets = nlohmann::json::array();
    for (size_t i = 0; i < c.hist.size(); i++)
      if (c.hist[i]) buckets.push_back({{"low_ns", BucketLow(i)}, {"high_ns", BucketHigh(i)}, {"count", c.hist[i]}});
    funcs[f.name] = {{"calls", c.calls},       {"exits", c.exits},         {"aborted", c.aborted},
                     {"in_flight", f.in_flight}, {"dropped", c.dropped},     {"unmatched_exits", c.unmatched},
                     {"restarts", c.restarts}, {"sum_ns", c.sum_ns},       {"min_ns", c.min_ns},
                     {"p50_ns", f.p50},        {"p90_ns", f.p90},          {"p99_ns", f.p99},
                     {"max_ns", c.max_ns},     {"buckets", buckets}};
  }
  j["functions"] = funcs;
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& s : r.skipped) skipped.push_back({{"function", s.name}, {"reason", s.reason}});
  for (const auto& s : r.attach.failed) skipped.push_back({{"function", s.name}, {"reason", "attach: " + s.reason}});
  j["not_traced"] = skipped;
  j["notes"] = r.notes;
  return j;
}

profile::ProfileData ReportProfile(const TraceReport& r) {
  profile::ProfileBuilder b;
  for (const auto& f : r.funcs) {
    if (f.counts.exits == 0) continue;
    profile::Location loc;
    loc.lines.push_back({f.name, "", 0});
    profile::Sample s;
    s.locations.push_back(b.AddLocation(loc));
    s.count = static_cast<int64_t>(f.counts.exits);
    s.nanos = static_cast<int64_t>(f.counts.sum_ns);
    b.AddSample(std::move(s));
  }
  profile::ProfileData p = b.Take();
  p.count_type = "calls";
  p.nanos_type = "latency";
  p.period_nanos = 1;
  p.duration_nanos = static_cast<int64_t>(r.duration_s * 1e9);
  p.comments.push_back("switchback trace " + r.binary);
  return p;
}

std::string SitesText(const TracePlan& plan) {
  std::string out;
  for (const auto& f : plan.funcs) {
    out += fmt::format("{} [{:#x}, {:#x}){}\n", f.name, f.start, f.end,
                       f.g_in_reg ? " g in register" : plan.go ? " g checked (register, else TLS)" : "");
    out += fmt::format("  entry  {:#x} (file {:#x}) {:<28} {} [{}]\n", f.entry.code.vaddr, f.entry.file_offset,
                       f.entry.code.text, f.entry.code.emulated ? "emulated" : "single-stepped", f.entry_how);
    if (f.entry.code.vaddr != f.first.code.vaddr)
      out += fmt::format("  first  {:#x} {:<28} {} (not probed)\n", f.first.code.vaddr, f.first.code.text,
                         f.first.code.emulated ? "emulated" : "single-stepped");
    if (plan.uretprobe) out += "  exit   uretprobe\n";
    for (const auto& r : f.rets)
      out += fmt::format("  ret    {:#x} (file {:#x}) {:<28} {}\n", r.code.vaddr, r.file_offset, r.code.text,
                         r.code.emulated ? "emulated" : "single-stepped");
  }
  for (const auto& h : plan.hooks)
    out += fmt::format("hook {} at {:#x} {} ({})\n", h.name, h.site.code.vaddr, h.site.code.text,
                       h.kind == SB_XP_SWEEP_ALL ? "goroutine exit: its pending calls are aborted"
                                                 : "recovered panic: deeper pending calls are aborted");
  return out;
}

}  // namespace sb::exitprobe
