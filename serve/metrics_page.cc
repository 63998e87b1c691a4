#include "serve/metrics_page.h"

#include "serve/prometheus_text.h"

namespace sb::serve {

std::string RenderMetrics(const MetricsInput& in) {
  PrometheusText t;
  // node_exporter's build_info convention (a gauge of 1 whose labels are the facts), so that
  // dashboards can join any series with the version and kernel features of the agent behind it.
  t.Family("switchback_build_info", "gauge",
           "Always 1. Labels: the build (version, revision, branch, compiler, libbpf) and the kernel with its BPF "
           "features probed at start (true, false or unknown when the agent may not probe).");
  const KernelFeatures& k = in.kernel;
  t.Sample(uint64_t{1}, {{"version", in.build.version},
                         {"revision", in.build.revision},
                         {"branch", in.build.branch},
                         {"compiler", in.build.compiler},
                         {"libbpf", in.build.libbpf},
                         {"kernel", k.release},
                         {"btf", SupportLabel(k.btf)},
                         {"bpf_loop", SupportLabel(k.bpf_loop)},
                         {"uprobe_multi", SupportLabel(k.uprobe_multi)},
                         {"ringbuf", SupportLabel(k.ringbuf)}});
  const SourceCounters& c = in.source;
  t.CounterMap("switchback_samples_total", "Stack samples taken, by how the stack ended (root: a whole stack).",
               "reason", c.samples_by_stop_reason);
  t.Family("switchback_lost_samples_total", "counter", "Samples lost before userspace read them (ring buffer full).");
  t.Sample(c.lost_samples);
  t.Family("switchback_process_events_lost_total", "counter",
           "New-process and exec events that found their ring buffer full; each is sent again at the process's next "
           "sample.");
  t.Sample(c.process_events_lost);
  t.CounterMap("switchback_crossings_total", "Go stack switches crossed by the unwinder, by kind.", "switch",
               c.crossings_taken);
  t.Family("switchback_processes_followed", "gauge", "Processes followed now.");
  t.Sample(c.processes_followed);
  t.Family("switchback_windows_written_total", "counter", "Profile window files written.");
  t.Sample(c.windows_written);
  t.Family("switchback_window_write_failures_total", "counter", "Profile window files that could not be written.");
  t.Sample(c.window_write_failures);
  t.Family("switchback_retention_deletions_total", "counter", "Window files deleted by the retention policy.");
  t.Sample(c.retention_deletions);
  t.Family("switchback_bpf_run_seconds_total", "counter", "Time spent in the BPF sampler program (kernel bpf_stats).");
  t.Sample(static_cast<double>(c.bpf_run_ns) / 1e9);
  t.Family("switchback_bpf_runs_total", "counter", "Runs of the BPF sampler program (kernel bpf_stats).");
  t.Sample(c.bpf_run_count);
  t.Family("switchback_binary_cache_bytes", "gauge", "Mapped file bytes of the binaries cached for symbolizing.");
  t.Sample(c.binary_cache_bytes);
  t.Family("switchback_pcsp_table_cells", "gauge",
           "Cells of the BPF pcsp array held by the tables of followed binaries (freed with each binary's last process).");
  t.Sample(c.pcsp_table_cells);
  t.Family("switchback_pcsp_table_capacity_cells", "gauge", "Cells of the BPF pcsp array in all.");
  t.Sample(c.pcsp_table_capacity);

  if (in.push.has_value()) {
    const PushStats& p = *in.push;
    t.Family("switchback_push_successes_total", "counter", "Windows the profile backend accepted.");
    t.Sample(p.successes);
    t.Family("switchback_push_failures_total", "counter", "Push attempts that failed and will be retried.");
    t.Sample(p.failures);
    t.Family("switchback_push_rejected_total", "counter", "Windows the backend refused with a 4xx (not retried).");
    t.Sample(p.rejected);
    t.Family("switchback_push_dropped_total", "counter", "Windows dropped from the full spool, oldest first.");
    t.Sample(p.dropped);
    t.Family("switchback_push_backlog_windows", "gauge", "Windows waiting in the spool.");
    t.Sample(p.backlog_windows);
    t.Family("switchback_push_backlog_bytes", "gauge", "Bytes of profiles waiting in the spool.");
    t.Sample(p.backlog_bytes);
  }

  t.Family("switchback_profile_requests_total", "counter", "Answered /debug/pprof/profile requests, by HTTP status.");
  for (const auto& [code, n] : in.serve.profile_requests_by_code) t.Sample(n, {{"code", std::to_string(code)}});
  t.Family("switchback_profile_requests_in_flight", "gauge", "/debug/pprof/profile requests being served.");
  t.Sample(in.serve.profile_requests_in_flight);

  if (in.self.has_value()) {
    t.Family("process_cpu_seconds_total", "counter", "User and system CPU time of the agent itself.");
    t.Sample(in.self->cpu_seconds);
    t.Family("process_resident_memory_bytes", "gauge", "Resident memory of the agent itself.");
    t.Sample(in.self->resident_bytes);
    if (in.self->start_time_seconds > 0) {
      t.Family("process_start_time_seconds", "gauge", "Start time of the agent, unix seconds.");
      t.Sample(in.self->start_time_seconds);
    }
  }
  return t.str();
}

}  // namespace sb::serve
