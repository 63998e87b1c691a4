#include "recorder/record_stats.h"

#include <gtest/gtest.h>

namespace sb::recorder {
namespace {

RecordStats Example() {
  RecordStats s;
  s.duration_s = 2;
  s.frequency_hz = 99;
  s.samples = 200;
  s.ended_at_root = 190;
  s.stop_reasons = {{"root", 190}, {"stale_goroutine", 10}};
  s.crossings["systemstack"] = {5, 4, 1};
  ProcessStats p;
  p.pid = 42;
  p.exe = "/bin/demo";
  p.go_version = "go1.19.8";
  p.samples = 200;
  s.processes.push_back(p);
  return s;
}

TEST(RecordStats, JsonHasTheDocumentedFields) {
  auto j = StatsToJson(Example());
  EXPECT_EQ(j["samples"], 200);
  EXPECT_EQ(j["ended_at_root"], 190);
  EXPECT_EQ(j["stop_reasons"]["stale_goroutine"], 10);
  EXPECT_EQ(j["crossings"]["systemstack"]["crossed"], 4);
  EXPECT_EQ(j["processes"][0]["pid"], 42);
  EXPECT_EQ(j["processes"][0]["go_version"], "go1.19.8");
  EXPECT_TRUE(j.contains("bpf"));
}

TEST(RecordStats, SummaryNamesStopReasonsAndShare) {
  std::string s = StatsSummary(Example());
  EXPECT_NE(s.find("190 of 200 (95.00%)"), std::string::npos) << s;
  EXPECT_NE(s.find("[stopped: stale_goroutine] 10"), std::string::npos) << s;
  EXPECT_NE(s.find("systemstack"), std::string::npos) << s;
  EXPECT_NE(s.find("pid 42"), std::string::npos) << s;
}

TEST(RecordStats, AProcessThatRanExecSaysSo) {
  RecordStats st = Example();
  st.processes[0].exited = true;
  EXPECT_NE(StatsSummary(st).find(" (exited)"), std::string::npos);
  st.processes[0].ran_exec = true;
  std::string s = StatsSummary(st);
  EXPECT_NE(s.find(" (ran exec)"), std::string::npos) << s;
  EXPECT_EQ(s.find(" (exited)"), std::string::npos) << s;
  EXPECT_EQ(StatsToJson(st)["processes"][0]["ran_exec"], true);
}

TEST(RecordStats, GoroutineExitedAndLeftAreListedAsWholeNotAsStops) {
  RecordStats st = Example();
  st.ended_at_root = 197;
  st.stop_reasons = {{"root", 190}, {"goroutine_exited", 5}, {"goroutine_left", 2}, {"stale_goroutine", 3}};
  std::string s = StatsSummary(st);
  EXPECT_NE(s.find("197 of 200 (98.50%)"), std::string::npos) << s;
  EXPECT_NE(s.find("of which goroutine_exited (g0 stack after mcall(goexit0): nothing above it) 5"),
            std::string::npos) << s;
  EXPECT_NE(s.find("of which goroutine_left (scheduler work after dropg"), std::string::npos) << s;
  EXPECT_EQ(s.find("[stopped: goroutine_exited]"), std::string::npos) << s;
  EXPECT_EQ(s.find("[stopped: goroutine_left]"), std::string::npos) << s;
  EXPECT_NE(s.find("[stopped: stale_goroutine] 3"), std::string::npos) << s;
}

TEST(RecordStats, LostSamplesAndWarningsAreReported) {
  RecordStats st = Example();
  st.lost = 50;
  st.processes[0].warnings = {"process 42: /bin/demo was replaced or deleted on disk"};
  auto j = StatsToJson(st);
  EXPECT_EQ(j["lost"], 50);
  EXPECT_EQ(j["processes"][0]["warnings"][0], "process 42: /bin/demo was replaced or deleted on disk");
  std::string s = StatsSummary(st);
  EXPECT_NE(s.find("200 samples, 50 lost"), std::string::npos) << s;
  EXPECT_NE(s.find("20.00% of samples were lost"), std::string::npos) << s;
  EXPECT_NE(s.find("warning: process 42: /bin/demo was replaced"), std::string::npos) << s;
}

}  // namespace
}  // namespace sb::recorder
