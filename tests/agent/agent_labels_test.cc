// Goroutine pprof labels in agent windows: the labels
// workload (goroutines with known label sets and work) followed by `switchback agent` with 2 s
// windows; the window files' samples carry the goroutine label sets beside the agent's own
// process labels, the sets runtime/pprof of the same run shows (-cpuprofile; the shares are
// printed). Needs root and BPF (skips otherwise); about 10 s.
#include <signal.h>

#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "agent/window_index.h"
#include "base/file_util.h"
#include "tests/common/label_shares.h"
#include "tests/integration/cli_runner.h"

namespace sb::itest {
namespace {

const std::string kSwitchback = SB_SWITCHBACK_BIN;
const std::string kLabels = std::string(SB_WORKLOAD_DIR) + "/labels";

constexpr double kMinShare = 0.03;  // label sets compared: at least this share of either profile
// A set is looked for in a profile where it is expected there this many times at least, so it is
// not absent by chance (e^-10 = 5e-5).
constexpr double kMinExpectedSamples = 10;
// The agent's labels (process and thread), not the goroutine's.
const std::set<std::string> kAgentLabels = {"host", "exe",  "pid",      "go_version", "build_id", "container_id",
                                            "unit", "thread", "tid", "switches", "goroutine", "cpu_mode"};

std::string Slurp(const fs::path& p) {
  auto r = ReadFile(p.string());
  return r.ok() ? *r : "";
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) n++;
  return n;
}

TEST(AgentLabelsTest, WindowsCarryGoroutineLabelsWithRuntimePprofShares) {
  std::string why;
  if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback agent needs BPF (root and BTF): " << why;
  fs::path dir = TestDir(SB_TEST_OUT_DIR), data = dir / "data", oracle_path = dir / "oracle.pb.gz";
  Child workload({kLabels, "-duration=0", "-cpurate=500", "-cpuprofile=" + oracle_path.string()}, dir / "labels.out",
                 dir / "labels.err");
  ASSERT_TRUE(WaitCatches(workload.pid(), SIGTERM, seconds(30))) << "the labels workload did not start";
  Child agent({kSwitchback, "agent", "--dir", data.string(), "--pid", std::to_string(workload.pid()), "--interval",
               "2s", "--testing-short-interval", "--frequency", "499"},
              dir / "agent.stdout", dir / "agent.stderr");
  ASSERT_TRUE(WaitAttached(agent.pid(), seconds(60))) << "the agent never attached";
  // Two whole windows, then the one SIGTERM cuts short.
  auto deadline = Clock::now() + seconds(60);
  while (Clock::now() < deadline && Count(Slurp(dir / "agent.stderr"), "wrote ") < 2)
    std::this_thread::sleep_for(milliseconds(100));
  agent.Signal(SIGTERM);
  RunResult ar = agent.Wait(seconds(60));
  workload.Signal(SIGTERM);
  RunResult wr = workload.Wait(seconds(60));
  ASSERT_TRUE(ar.exited_ok()) << Describe(ar) << Slurp(dir / "agent.stderr");
  ASSERT_TRUE(wr.exited_ok()) << Describe(wr);

  // Every window of the run, as one profile.
  size_t bad = 0;
  auto index = agent::ReadIndex(data.string(), &bad);
  EXPECT_EQ(bad, 0u);
  ASSERT_GE(index.size(), 2u) << Slurp(dir / "agent.stderr");
  profile::ProfileData ours;
  for (const auto& e : index) {
    std::string err;
    auto p = LoadPprof(data / e.path, &err);
    ASSERT_TRUE(p) << err;
    for (const auto& s : p->samples) {
      EXPECT_EQ(s.labels.at("pid"), std::to_string(workload.pid()));  // the agent's labels are there too
      EXPECT_TRUE(s.labels.count("build_id"));
      ours.samples.push_back(s);
    }
  }
  std::string err;
  auto oracle = LoadPprof(oracle_path, &err);
  ASSERT_TRUE(oracle) << err;

  int64_t n_ours = 0, n_oracle = 0;
  auto s_ours = sb::test::LabelSetShares(ours, kAgentLabels, &n_ours);
  auto s_oracle = sb::test::LabelSetShares(*oracle, kAgentLabels, &n_oracle);
  ASSERT_GT(n_ours, 0) << "no samples in the windows";
  ASSERT_GT(n_oracle, 0) << "no runtime/pprof samples";
  std::set<std::string> keys;
  for (const auto& [k, s] : s_ours)
    if (s >= kMinShare) keys.insert(k);
  for (const auto& [k, s] : s_oracle)
    if (s >= kMinShare) keys.insert(k);
  std::string table;
  for (const auto& k : keys)
    table += "  " + k + ": agent " + std::to_string(100 * s_ours[k]) + "%, runtime/pprof " +
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
      EXPECT_GT(s_oracle[k], 0.0) << k << " is the agent's only\n" << table;
  }
  for (const char* k : {"endpoint=/api/users,tenant=a", "endpoint=/api/orders", "phase=one", "phase=two",
                        "k1=v1,k2=v2,k3=v3,k4=v4,k5=v5,k6=v6,k7=v7,k8=v8", "(none)"})
    EXPECT_GT(s_ours[k], 0.0) << k << "\n" << table;
}

}  // namespace
}  // namespace sb::itest
