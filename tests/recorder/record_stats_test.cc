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

// --compare-fp-walk: the two walks by where the sample was taken, in the JSON as counted and in
// the summary as per-sample figures, the ratio and the share of the unwinder's time.
TEST(RecordStats, CompareByKindIsReportedPerSample) {
  RecordStats st = Example();
  EXPECT_FALSE(StatsToJson(st)["bpf"].contains("compare_by_kind"));  // not a benchmark run
  st.unwound = 100;
  st.unwind_ns = 500000;
  st.unwind_frames = 1000;
  st.fp_walk_ns = 200000;
  st.fp_walk_frames = 600;
  st.compare_by_kind["goroutine"] = {80, 240000, 640, 192000, 560};
  st.compare_by_kind["g0_morestack"] = {20, 260000, 360, 8000, 40};
  auto j = StatsToJson(st);
  EXPECT_EQ(j["bpf"]["compare_by_kind"]["g0_morestack"]["unwind_ns"], 260000);
  EXPECT_EQ(j["bpf"]["compare_by_kind"]["goroutine"]["fp_walk_frames"], 560);
  std::string s = StatsSummary(st);
  EXPECT_NE(s.find("the unwinder costs 2.50x"), std::string::npos) << s;
  EXPECT_NE(s.find("g0_morestack   20.0% of samples: unwinder 13000 ns (18.0 frames), plain walk 400 ns (2.0 frames),"
                   " 32.50x; 52.0% of the unwinder's time"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("goroutine      80.0% of samples: unwinder 3000 ns (8.0 frames), plain walk 2400 ns (7.0 frames), 1.25x"),
            std::string::npos)
      << s;
}

// --compare-crossing-floor: the floor's figures, named as the floor's (not the unwinder's), in
// the JSON and the summary, by kind too.
TEST(RecordStats, CrossingFloorIsReportedAsTheFloor) {
  RecordStats st = Example();
  st.unwound = 100;
  st.unwind_ns = 900000;  // the unwind ran untimed after both walks: not a figure of this run
  st.fp_walk_ns = 200000;
  st.fp_walk_frames = 600;
  st.floor_ns = 500000;
  st.floor_frames = 900;
  st.floor_walk = "crossing_floor";
  st.compare_by_kind["goroutine"] = {80, 240000, 640, 192000, 560};
  st.compare_by_kind["g0_morestack"] = {20, 260000, 260, 8000, 40};
  auto j = StatsToJson(st);
  EXPECT_EQ(j["bpf"]["floor_walk"], "crossing_floor");
  EXPECT_FALSE(j["bpf"].contains("compare_by_kind")) << j["bpf"].dump();
  EXPECT_EQ(j["bpf"]["floor_by_kind"]["g0_morestack"]["floor_ns"], 260000);
  EXPECT_EQ(j["bpf"]["floor_by_kind"]["g0_morestack"]["floor_frames"], 260);
  EXPECT_FALSE(j["bpf"]["floor_by_kind"]["goroutine"].contains("unwind_ns"));
  std::string s = StatsSummary(st);
  EXPECT_NE(s.find("and the crossing into curg from its gobuf: 5000 ns (9.0 frames), 2.50x"), std::string::npos) << s;
  EXPECT_NE(s.find("g0_morestack   20.0% of samples: floor 13000 ns (13.0 frames), plain walk 400 ns (2.0 frames),"
                   " 32.50x; 52.0% of the floor's time"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("the unwinder costs"), std::string::npos) << s;
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

// Process events that found their ring full are counted, in the JSON and (only then) in the
// summary, which says they were retried (nothing was dropped).
TEST(RecordStats, LostProcessEventsAreReported) {
  RecordStats st = Example();
  EXPECT_EQ(StatsToJson(st)["process_events_lost"], 0);
  EXPECT_EQ(StatsSummary(st).find("process events"), std::string::npos);
  st.process_events_lost = 7;
  EXPECT_EQ(StatsToJson(st)["process_events_lost"], 7);
  std::string s = StatsSummary(st);
  EXPECT_NE(s.find("7 process events found their ring buffer full (userspace busy): each was sent again at the "
                   "process's next sample"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace sb::recorder
