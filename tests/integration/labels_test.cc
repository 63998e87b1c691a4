// Goroutine pprof labels on live samples: the labels workload (goroutines with
// different label sets and known work, one changing its labels every 100 ms, one without any,
// one allocating large objects on g0 under systemstack) recorded with `switchback record`, for
// Go 1.19 (Debian's) and 1.21 to 1.27 (tools/fetch-go.sh, fetched when missing). The label sets
// must be those runtime/pprof of the same run shows (`go tool pprof -tags`; their shares are
// printed); unlabelled goroutines have none; samples crossed from g0 carry the goroutine's
// labels; --no-labels turns them off.
#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/label_shares.h"
#include "tests/common/shell_util.h"
#include "tests/integration/go_toolchains.h"
#include "tests/integration/record_harness.h"

namespace {

using namespace sb::itest;  // NOLINT: the harness is this file's vocabulary

// Label sets compared: at least this share of either profile's samples.
constexpr double kMinShare = 0.03;

// switchback's own labels, not the goroutine's.
const std::set<std::string> kOwnLabels = {"pid", "tid", "goroutine", "thread", "switches", "cpu_mode"};

std::map<std::string, std::string> GoroutineLabels(const Sample& s) { return sb::test::LabelsExcept(s, kOwnLabels); }
std::string SetKey(const std::map<std::string, std::string>& l) { return sb::test::LabelSetKey(l); }
std::map<std::string, double> SetShares(const ProfileData& p, int64_t* total) {
  return sb::test::LabelSetShares(p, kOwnLabels, total);
}

bool Has(const std::vector<std::string>& frames, const std::string& fn) {
  return std::find(frames.begin(), frames.end(), fn) != frames.end();
}

class LabelsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string why;
    if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback record needs BPF (root and BTF): " << why;
  }
};

TEST_P(LabelsTest, SharesMatchRuntimePprof) {
  const std::string v = GetParam();
  // Fetched like go_versions_test's (a clean clone runs this before that test: with the cache
  // only, a CI run would skip the fetched releases here, silently).
  std::string why, go = GoFor(v, /*fetch=*/true, &why);
  ASSERT_FALSE(go.empty()) << why;
  std::string exe = BuildWorkload(go, v, "labels", /*cgo=*/false, &why);
  ASSERT_FALSE(exe.empty()) << why;

  RecordOptions o;
  o.workload = exe;
  o.workload_args = {"-duration=0", "-cpurate=500"};
  o.duration_s = 10;
  o.frequency = 999;
  o.stop_workload_after = true;
  Recording r;
  ASSERT_NO_FATAL_FAILURE(Record(o, &r));
  const ProfileData& ours = *r.ours;
  const ProfileData& oracle = *r.oracle;

  // How labels were read: every sample of a goroutine read them, no fact was missing.
  const auto& lab = r.stats["labels"];
  EXPECT_GT(lab.value("ok", 0), 0) << r.stats.dump();
  EXPECT_EQ(lab.value("no_fact", 0), 0) << r.stats.dump();
  EXPECT_EQ(lab.value("read_fault", 0), 0) << r.stats.dump();

  int64_t n_ours = 0, n_oracle = 0;
  auto s_ours = SetShares(ours, &n_ours);
  auto s_oracle = SetShares(oracle, &n_oracle);
  ASSERT_GT(n_ours, 0) << "no samples";
  ASSERT_GT(n_oracle, 0) << "no runtime/pprof samples";
  std::set<std::string> keys;
  for (const auto& [k, s] : s_ours) if (s >= kMinShare) keys.insert(k);
  for (const auto& [k, s] : s_oracle) if (s >= kMinShare) keys.insert(k);
  std::string table;
  for (const auto& k : keys) table += "  " + k + ": ours " + std::to_string(100 * s_ours[k]) + "%, runtime/pprof " +
                                      std::to_string(100 * s_oracle[k]) + "%\n";
  // The shares depend on the machine (how the CPU was split among the goroutines, how many
  // samples each profiler got, how much time the scheduler spent on g0, which runtime/pprof
  // gives no labels): printed. A set frequent in one profile, where the other is expected to
  // hold it often enough not to miss it by chance, is in the other: no set is made up or lost.
  std::cout << "[ info     ] label sets (" << n_ours << " and " << n_oracle << " samples):\n" << table;
  for (const auto& k : keys) {
    if (s_oracle[k] * static_cast<double>(n_ours) >= kMinExpectedSamples)
      EXPECT_GT(s_ours[k], 0.0) << k << " is runtime/pprof's only\n" << table;
    if (s_ours[k] * static_cast<double>(n_oracle) >= kMinExpectedSamples)
      EXPECT_GT(s_oracle[k], 0.0) << k << " is switchback's only\n" << table;
  }
  // The sets the workload makes are all there, each as a whole.
  for (const char* k : {"endpoint=/api/users,tenant=a", "endpoint=/api/orders", "phase=one", "phase=two",
                        "k1=v1,k2=v2,k3=v3,k4=v4,k5=v5,k6=v6,k7=v7,k8=v8", "(none)"})
    EXPECT_GT(s_ours[k], 0.0) << k << "\n" << table;

  // Per goroutine: the unlabelled one has none; the 8-label one all 8; samples crossed from g0
  // (the allocator's large allocations under systemstack) carry the goroutine's labels.
  int64_t crossed_alloc = 0, oracle_crossed_alloc = 0;
  int64_t no_goroutine = 0, all = 0;
  for (const auto& s : ours.samples) {
    auto frames = LeafFirst(ours, s);
    auto labels = GoroutineLabels(s);
    all += s.count;
    // A sample whose thread's g could not be validated names no goroutine, and so carries no
    // labels (never a guessed goroutine's): rare, and left out of the checks below.
    if (!s.num_labels.count("goroutine")) {
      no_goroutine += s.count;
      EXPECT_TRUE(labels.empty()) << SetKey(labels);
      continue;
    }
    if (Has(frames, "main.unlabelled")) EXPECT_TRUE(labels.empty()) << SetKey(labels);
    if (Has(frames, "main.eight")) EXPECT_EQ(labels.size(), 8u) << SetKey(labels);
    if (Has(frames, "main.users")) EXPECT_EQ(SetKey(labels), "endpoint=/api/users,tenant=a");
    if (Has(frames, "main.allocator")) {
      EXPECT_EQ(SetKey(labels), "alloc=big");
      if (Has(frames, "runtime.systemstack")) crossed_alloc += s.count;
    }
  }
  for (const auto& s : oracle.samples) {
    auto frames = LeafFirst(oracle, s);
    if (Has(frames, "main.allocator") && Has(frames, "runtime.systemstack")) oracle_crossed_alloc += s.count;
  }
  if (oracle_crossed_alloc >= 5) EXPECT_GT(crossed_alloc, 0) << "no g0 sample under main.allocator";
  EXPECT_LE(no_goroutine, all / 50) << "samples without a goroutine";
  // go tool pprof reads the labels (what `-tagfocus endpoint=...` uses).
  auto tags = sb::test::RunCommand(sb::test::Quote(kGo) + " tool pprof -tags " + sb::test::Quote(r.pprof.string()));
  EXPECT_EQ(tags.status, 0) << tags.out;
  EXPECT_NE(tags.out.find("/api/users"), std::string::npos) << tags.out;
}

INSTANTIATE_TEST_SUITE_P(Go, LabelsTest,
                         ::testing::Values("1.19", "1.21", "1.22", "1.23", "1.24", "1.25", "1.26", "1.27"),
                         [](const auto& info) {
                           std::string n = info.param;
                           n.erase(std::remove(n.begin(), n.end(), '.'), n.end());
                           return "go" + n;
                         });

// --no-labels: samples carry switchback's labels only, and the stats say why.
TEST(LabelsOff, NoLabelsFlag) {
  std::string why;
  if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback record needs BPF (root and BTF): " << why;
  RecordOptions o;
  o.workload = "labels";
  o.workload_args = {"-duration=0"};
  o.oracle = false;
  o.duration_s = 3;
  o.frequency = 499;
  o.stop_workload_after = true;
  o.record_args = {"--no-labels"};
  Recording r;
  ASSERT_NO_FATAL_FAILURE(Record(o, &r));
  int64_t n = 0;
  for (const auto& s : r.ours->samples) {
    EXPECT_TRUE(GoroutineLabels(s).empty()) << SetKey(GoroutineLabels(s));
    n += s.count;
  }
  EXPECT_GT(n, 0);
  EXPECT_EQ(r.stats["labels"].value("ok", 0), 0) << r.stats.dump();
  EXPECT_GT(r.stats["labels"].value("off", 0), 0) << r.stats.dump();
}

}  // namespace
