#include "serve/metrics_page.h"

#include <gtest/gtest.h>

#include "base/file_util.h"
#include "serve/prometheus_text.h"
#include "tests/common/shell_util.h"

namespace sb::serve {
namespace {

MetricsInput Sample() {
  MetricsInput in;
  in.source.samples_by_stop_reason = {{"root", 900}, {"bad_fp", 3}};
  in.source.lost_samples = 4;
  in.source.process_events_lost = 9;
  in.source.crossings_taken = {{"systemstack", 10}};
  in.source.processes_followed = 2;
  in.source.windows_written = 6;
  in.source.bpf_run_ns = 2500000000;
  in.source.bpf_run_count = 77;
  in.source.pcsp_table_cells = 30000;
  in.source.pcsp_table_capacity = 2097152;
  PushStats p;
  p.successes = 5;
  p.dropped = 1;
  p.backlog_windows = 2;
  p.backlog_bytes = 4096;
  in.push = p;
  in.serve.profile_requests_by_code = {{200, 3}, {429, 1}};
  in.self = SelfUsage{1.25, 12345678, 1.7e9};
  in.build = BuildInfo{"0.1.0", "v0.1.0-3-gabc1234-dirty", "main", "gcc 12.2.0", "1.1"};
  in.kernel.release = "6.1.0-18-amd64";
  in.kernel.btf = Support::kYes;
  in.kernel.bpf_loop = Support::kYes;
  in.kernel.uprobe_multi = Support::kNo;
  in.kernel.ringbuf = Support::kYes;
  return in;
}

TEST(MetricsPageTest, NamesAndValues) {
  std::string t = RenderMetrics(Sample());
  for (const char* line : {"switchback_samples_total{reason=\"root\"} 900\n", "switchback_samples_total{reason=\"bad_fp\"} 3\n",
                           "switchback_lost_samples_total 4\n", "switchback_process_events_lost_total 9\n",
                           "switchback_crossings_total{switch=\"systemstack\"} 10\n",
                           "switchback_processes_followed 2\n", "switchback_windows_written_total 6\n",
                           "switchback_bpf_run_seconds_total 2.5\n", "switchback_bpf_runs_total 77\n",
                           "switchback_push_successes_total 5\n", "switchback_push_dropped_total 1\n",
                           "switchback_push_backlog_windows 2\n", "switchback_push_backlog_bytes 4096\n",
                           "switchback_profile_requests_total{code=\"429\"} 1\n", "process_cpu_seconds_total 1.25\n",
                           "process_resident_memory_bytes 12345678\n", "# TYPE switchback_samples_total counter\n",
                           "# TYPE switchback_push_backlog_bytes gauge\n", "switchback_pcsp_table_cells 30000\n",
                           "switchback_pcsp_table_capacity_cells 2097152\n"}) {
    EXPECT_NE(t.find(line), std::string::npos) << line << "\nin:\n" << t;
  }
  MetricsInput no_push = Sample();
  no_push.push.reset();
  EXPECT_EQ(RenderMetrics(no_push).find("switchback_push_"), std::string::npos);
}

TEST(MetricsPageTest, BuildInfo) {
  std::string t = RenderMetrics(Sample());
  EXPECT_NE(t.find("# TYPE switchback_build_info gauge\n"), std::string::npos) << t;
  EXPECT_NE(t.find("switchback_build_info{version=\"0.1.0\",revision=\"v0.1.0-3-gabc1234-dirty\",branch=\"main\","
                   "compiler=\"gcc 12.2.0\",libbpf=\"1.1\",kernel=\"6.1.0-18-amd64\",btf=\"true\","
                   "bpf_loop=\"true\",uprobe_multi=\"false\",ringbuf=\"true\"} 1\n"),
            std::string::npos)
      << t;
  // Without the privileges to probe, the BPF features say so rather than guess.
  MetricsInput unprivileged = Sample();
  unprivileged.kernel.bpf_loop = Support::kUnknown;
  unprivileged.kernel.uprobe_multi = Support::kUnknown;
  unprivileged.kernel.ringbuf = Support::kUnknown;
  t = RenderMetrics(unprivileged);
  EXPECT_NE(t.find("btf=\"true\",bpf_loop=\"unknown\",uprobe_multi=\"unknown\",ringbuf=\"unknown\"} 1\n"),
            std::string::npos)
      << t;
}

TEST(MetricsPageTest, LabelValuesEscaped) {
  EXPECT_EQ(PrometheusText::EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  PrometheusText t;
  t.CounterMap("x_total", "help", "reason", {{"we\"ird\n", 1}});
  EXPECT_NE(t.str().find("x_total{reason=\"we\\\"ird\\n\"} 1\n"), std::string::npos) << t.str();
}

TEST(MetricsPageTest, SelfUsageFromProcStat) {
  std::string stat = "123 (a b) c) S 1 1 1 0 -1 0 0 0 0 0 250 150 0 0 20 0 1 0 500 1000 30 0 0";
  auto u = ParseProcStat(stat, 100, 4096, 1000.0);
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_DOUBLE_EQ(u->cpu_seconds, 4.0);
  EXPECT_EQ(u->resident_bytes, 30u * 4096);
  EXPECT_DOUBLE_EQ(u->start_time_seconds, 1005.0);
  EXPECT_FALSE(ParseProcStat("garbage", 100, 4096, 0).ok());
  auto self = ReadSelfUsage();
  ASSERT_TRUE(self.ok()) << self.error();
  EXPECT_GT(self->resident_bytes, 0u);
}

// The real consumer's linter decides whether the exposition is right.
TEST(MetricsPageTest, PromtoolAccepts) {
  if (test::RunCommand("command -v promtool").status != 0) GTEST_SKIP() << "promtool is not installed";
  std::string dir = test::MakeTempDir("/tmp", "sb-metrics");
  std::string path = dir + "/metrics.txt";
  ASSERT_TRUE(WriteFileAtomic(path, RenderMetrics(Sample())).ok());
  auto r = test::RunCommand("promtool check metrics < " + test::Quote(path));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "") << r.out;  // no lint warnings either
  test::RunCommand("rm -rf " + test::Quote(dir));
}

}  // namespace
}  // namespace sb::serve
