#include "recorder/record_stats.h"

#include <fmt/format.h>

namespace sb::recorder {

nlohmann::json StatsToJson(const RecordStats& s) {
  nlohmann::json j;
  j["duration_s"] = s.duration_s;
  j["frequency_hz"] = s.frequency_hz;
  j["samples"] = s.samples;
  j["lost"] = s.lost;
  j["unknown_pid_samples"] = s.unknown_pid;
  j["exiting_samples"] = s.exiting;
  j["in_exec_samples"] = s.in_exec;
  j["process_events_lost"] = s.process_events_lost;
  j["from_template_processes"] = s.from_template;
  j["binary_not_analyzed_yet_samples"] = s.not_analyzed;
  j["binary_not_analyzed_yet"] = s.not_analyzed_by_exe;
  j["ended_at_root"] = s.ended_at_root;
  j["stop_reasons"] = s.stop_reasons;
  nlohmann::json cr = nlohmann::json::object();
  for (const auto& [name, c] : s.crossings)
    cr[name] = {{"attempts", c.attempts}, {"crossed", c.crossed}, {"stopped", c.stopped}};
  j["crossings"] = cr;
  nlohmann::json procs = nlohmann::json::array();
  for (const auto& p : s.processes) {
    procs.push_back({{"pid", p.pid},
                     {"exe", p.exe},
                     {"go_version", p.go_version},
                     {"offsets_source", p.offsets_source},
                     {"tls_source", p.tls_source},
                     {"labels_source", p.labels_source},
                     {"missing", p.missing},
                     {"warnings", p.warnings},
                     {"samples", p.samples},
                     {"exited", p.exited},
                     {"ran_exec", p.ran_exec}});
  }
  j["processes"] = procs;
  j["bpf"] = {{"run_cnt", s.bpf_run_count},
              {"run_time_ns", s.bpf_run_time_ns},
              {"verified_insns", s.bpf_verified_insns},
              {"unwound", s.unwound},
              {"unwind_ns", s.unwind_ns},
              {"unwind_frames", s.unwind_frames},
              {"pcsp_lookups", s.pcsp_lookups},
              {"pcsp_cache_hits", s.pcsp_cache_hits}};
  j["labels"] = s.labels;
  j["bpf"]["labels_ns"] = s.labels_ns;
  j["kernel"] = {{"enabled", s.kernel},
                 {"in_kernel", s.kernel_in_kernel},
                 {"stacks", s.kernel_stacks},
                 {"errors", s.kernel_errors},
                 {"samples_with_kernel_frames", s.kernel_samples}};
  if (s.fp_walk_ns > 0) {
    j["bpf"]["fp_walk_ns"] = s.fp_walk_ns;
    j["bpf"]["fp_walk_frames"] = s.fp_walk_frames;
  }
  bool floor = !s.floor_walk.empty();  // --compare-floor, --compare-crossing-floor
  if (floor) {
    j["bpf"]["floor_walk"] = s.floor_walk;
    j["bpf"]["floor_ns"] = s.floor_ns;
    j["bpf"]["floor_frames"] = s.floor_frames;
  }
  if (!s.compare_by_kind.empty()) {
    nlohmann::json by = nlohmann::json::object();
    for (const auto& [kind, c] : s.compare_by_kind)
      by[kind] = {{"samples", c.samples},
                  {floor ? "floor_ns" : "unwind_ns", c.unwind_ns},
                  {floor ? "floor_frames" : "unwind_frames", c.unwind_frames},
                  {"fp_walk_ns", c.fp_walk_ns},
                  {"fp_walk_frames", c.fp_walk_frames}};
    j["bpf"][floor ? "floor_by_kind" : "compare_by_kind"] = by;
  }
  return j;
}

std::string StatsSummary(const RecordStats& s) {
  std::string out;
  double pct = s.samples ? 100.0 * static_cast<double>(s.ended_at_root) / static_cast<double>(s.samples) : 0;
  out += fmt::format("Recorded {:.1f}s at {} Hz: {} samples, {} lost\n", s.duration_s, s.frequency_hz,
                     s.samples, s.lost);
  if (s.lost > 0)
    out += fmt::format("  {:.2f}% of samples were lost: the ring buffer was full (userspace fell behind)\n",
                       100.0 * static_cast<double>(s.lost) / static_cast<double>(s.lost + s.samples));
  if (s.process_events_lost > 0)
    out += fmt::format("  {} process events found their ring buffer full (userspace busy): each was sent again "
                       "at the process's next sample\n",
                       s.process_events_lost);
  for (const auto& p : s.processes) {
    out += fmt::format("  pid {:<8} {:>8} samples  {} {}{}\n", p.pid, p.samples, p.exe,
                       p.go_version.empty() ? "(Go version unknown)" : p.go_version,
                       p.ran_exec ? " (ran exec)" : p.exited ? " (exited)" : "");
    for (const auto& m : p.missing) out += fmt::format("      missing: {}\n", m);
    for (const auto& w : p.warnings) out += fmt::format("      warning: {}\n", w);
  }
  out += fmt::format("Stacks ending at a root: {} of {} ({:.2f}%)\n", s.ended_at_root, s.samples, pct);
  // Whole (counted above) without reaching a root: the g0 stack is all there is.
  if (auto it = s.stop_reasons.find("goroutine_exited"); it != s.stop_reasons.end())
    out += fmt::format("  of which goroutine_exited (g0 stack after mcall(goexit0): nothing above it) {}\n",
                       it->second);
  if (auto it = s.stop_reasons.find("goroutine_left"); it != s.stop_reasons.end())
    out += fmt::format("  of which goroutine_left (scheduler work after dropg; its goroutine has run elsewhere "
                       "since) {}\n",
                       it->second);
  for (const auto& [reason, n] : s.stop_reasons) {
    if (reason != "root" && reason != "goroutine_exited" && reason != "goroutine_left")
      out += fmt::format("  [stopped: {}] {}\n", reason, n);
  }
  if (s.kernel)
    out += fmt::format("Kernel stacks: {} of {} samples in the kernel ({} failed)\n", s.kernel_stacks,
                       s.kernel_in_kernel, s.kernel_errors);
  bool any = false;
  for (const auto& [name, c] : s.crossings) {
    if (c.attempts == 0) continue;
    if (!any) out += "Switches crossed (attempts / crossed / stopped):\n";
    any = true;
    out += fmt::format("  {:<12} {} / {} / {}\n", name, c.attempts, c.crossed, c.stopped);
  }
  if (s.unwound > 0)
    out += fmt::format("BPF unwind cost: {:.0f} ns per sample over {} samples\n",
                       static_cast<double>(s.unwind_ns) / static_cast<double>(s.unwound), s.unwound);
  if (s.unwound > 0 && s.fp_walk_ns > 0) {
    double n = static_cast<double>(s.unwound);
    bool floor = !s.floor_walk.empty();  // the unwind ran after both walks (warm), not compared
    uint64_t total_ns = floor ? s.floor_ns : s.unwind_ns;
    const char* who = floor ? "floor" : "unwinder";
    if (floor)
      out += fmt::format(
          "Plain frame-pointer walk: {:.0f} ns per sample ({:.1f} frames); the same walk plus the reads"
          " naming the goroutine (TLS g, g.m and goid, m.curg){}: {:.0f} ns ({:.1f} frames), {:.2f}x\n",
          static_cast<double>(s.fp_walk_ns) / n, static_cast<double>(s.fp_walk_frames) / n,
          s.floor_walk == "crossing_floor" ? " and the crossing into curg from its gobuf" : "",
          static_cast<double>(s.floor_ns) / n, static_cast<double>(s.floor_frames) / n,
          static_cast<double>(s.floor_ns) / static_cast<double>(s.fp_walk_ns));
    else
      out += fmt::format(
          "Plain frame-pointer walk of the same samples: {:.0f} ns per sample ({:.1f} frames vs {:.1f});"
          " the unwinder costs {:.2f}x\n",
          static_cast<double>(s.fp_walk_ns) / n, static_cast<double>(s.fp_walk_frames) / n,
          static_cast<double>(s.unwind_frames) / n,
          static_cast<double>(s.unwind_ns) / static_cast<double>(s.fp_walk_ns));
    for (const auto& [kind, c] : s.compare_by_kind) {
      if (c.samples == 0 || c.fp_walk_ns == 0) continue;
      double k = static_cast<double>(c.samples);
      out += fmt::format(
          "  {:<13} {:5.1f}% of samples: {} {:.0f} ns ({:.1f} frames), plain walk {:.0f} ns ({:.1f} frames),"
          " {:.2f}x; {:.1f}% of the {}'s time\n",
          kind, 100.0 * k / n, who, static_cast<double>(c.unwind_ns) / k, static_cast<double>(c.unwind_frames) / k,
          static_cast<double>(c.fp_walk_ns) / k, static_cast<double>(c.fp_walk_frames) / k,
          static_cast<double>(c.unwind_ns) / static_cast<double>(c.fp_walk_ns),
          total_ns ? 100.0 * static_cast<double>(c.unwind_ns) / static_cast<double>(total_ns) : 0.0, who);
    }
  }
  if (!s.labels.empty()) {
    std::string parts;
    for (const auto& [name, n] : s.labels)
      if (n > 0) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", name, n);
    out += fmt::format("Goroutine labels (samples): {}\n", parts);
  }
  if (s.bpf_run_count > 0 && s.bpf_run_time_ns > 0)
    out += fmt::format("BPF program (kernel.bpf_stats_enabled): {:.0f} ns per run over {} runs\n",
                       static_cast<double>(s.bpf_run_time_ns) / static_cast<double>(s.bpf_run_count),
                       s.bpf_run_count);
  return out;
}

}  // namespace sb::recorder
