// The sampler's process events (a process sampled under --all, an exec of a followed process)
// travel in a ring buffer that userspace reads between other work (resolving a binary takes
// hundreds of milliseconds). A full ring must delay a process, never drop it: the event is
// counted (`process_events_lost`) and sent again at the process's next sample.
//
// SWITCHBACK_TEST_PROCESS_RING=PATH (a test hook in unwinder/bpf_sampler.cc) makes the ring one
// page (256 events) and leaves it unread while PATH exists; 300 short shells fill it. Before
// the fix a process whose event found the ring full was marked as reported anyway and never
// followed, and userspace never heard of an exec whose event was lost (the pid stayed followed
// as its old program, and the agent never followed the new one).
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "tests/integration/record_harness.h"

namespace {

using namespace sb::itest;  // NOLINT: the harness is this file's vocabulary

class ProcessEventsTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback record needs BPF (root and BTF): " << why;
  }
};

// The entries of STATS's processes with PID (one per program the pid ran while followed).
std::vector<nlohmann::json> EntriesFor(const nlohmann::json& stats, pid_t pid) {
  std::vector<nlohmann::json> out;
  for (const auto& p : stats.value("processes", nlohmann::json::array()))
    if (p.value("pid", int64_t{-1}) == pid) out.push_back(p);
  return out;
}

// True once FILE contains TEXT, within TIMEOUT.
bool WaitFileHas(const fs::path& file, const std::string& text, milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto t = sb::ReadFile(file.string());
    if (t.ok() && t->find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return false;
}

TEST_F(ProcessEventsTest, EventsLostToAFullRingAreSentAgain) {
  fs::path dir = TestDir();
  fs::path pprof = dir / "all.pb.gz", stats_path = dir / "stats.json", hold = dir / "hold";
  std::string demo = (fs::path(kWorkloadDir) / "demo").string();
  ASSERT_TRUE(sb::WriteFileAtomic(hold.string(), "").ok());
  // Y: followed from the start (the --all scan); it runs exec while the ring is full and
  // becomes the demo again. Its first program runs until the SIGTERM below, however long the
  // scan takes (it is slow under the sanitizers).
  Child y({demo, "-mode=spin", "-duration=0", "-exec", demo, "-mode=spin", "-duration=4s"}, dir / "y.stdout",
          dir / "y.stderr");
  ASSERT_TRUE(WaitExec(y.pid(), demo, seconds(30))) << "Y never started";
  setenv("SWITCHBACK_TEST_PROCESS_RING", hold.c_str(), 1);
  Child rec({kSwitchback, "record", "--all", "--duration", "60", "--frequency", "999", "--output", pprof.string(),
             "--stats", stats_path.string()},
            dir / "record.stdout", dir / "record.stderr");
  unsetenv("SWITCHBACK_TEST_PROCESS_RING");
  // Printed once the scan of running processes is done: Y is followed.
  ASSERT_TRUE(WaitFileHas(dir / "record.stderr", "switchback: recording", seconds(60)))
      << "the recorder never started";
  // 300 shells, each a new process to report (the one-page ring holds 256 events): each runs
  // ~15 ms of CPU (sampled a dozen times at 999 Hz), notes it in RAN, then sleeps, so the
  // recorder is never starved. Once all 300 have run, all were sampled and the ring is full,
  // however long a loaded machine took to run them.
  fs::path ran = dir / "shells.ran";
  Child shells({"/bin/sh", "-c",
                "i=0; while [ $i -lt 300 ]; do sh -c 'j=0; while [ $j -lt 10000 ]; do j=$((j+1)); done; echo >> \"" +
                    ran.string() + "\"; sleep 4' & i=$((i+1)); done; wait"},
               dir / "shells.stdout", dir / "shells.stderr");
  auto shells_ran = [&ran] {
    auto t = sb::ReadFile(ran.string());
    return t.ok() ? std::count(t->begin(), t->end(), '\n') : 0;
  };
  auto ran_deadline = std::chrono::steady_clock::now() + seconds(120);
  while (shells_ran() < 300 && std::chrono::steady_clock::now() < ran_deadline)
    std::this_thread::sleep_for(milliseconds(100));
  ASSERT_EQ(shells_ran(), 300) << "the shells did not all run";
  // L: started while the ring is full, so its first report is lost.
  Child late({demo, "-mode=spin", "-duration=0"}, dir / "late.stdout", dir / "late.stderr");
  // Y's exec while the ring is full (SIGTERM ends its first program, which then runs exec): its
  // new program's command line has no -exec.
  ASSERT_TRUE(WaitCatches(y.pid(), SIGTERM, seconds(30))) << "Y never handled SIGTERM";
  y.Signal(SIGTERM);
  fs::path y_cmdline = "/proc/" + std::to_string(y.pid()) + "/cmdline";
  auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    auto c = sb::ReadFile(y_cmdline.string());
    if (c.ok() && c->find("-exec") == std::string::npos) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  std::this_thread::sleep_for(milliseconds(1000));  // samples of Y's new program find the ring full
  fs::remove(hold);  // the recorder reads the ring again
  ASSERT_TRUE(y.Wait(seconds(30)).exited_ok());  // Y's new program: 4 s
  late.Signal(SIGTERM);
  late.Wait(seconds(30));
  ASSERT_TRUE(shells.Wait(seconds(30)).exited_ok());
  rec.Signal(SIGINT);
  RunResult r = rec.Wait(seconds(90));
  ASSERT_TRUE(r.exited_ok()) << Describe(r);

  auto text = sb::ReadFile(stats_path.string());
  ASSERT_TRUE(text.ok()) << text.error();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  int64_t lost = j.value("process_events_lost", int64_t{-1});
  std::cout << "[ info     ] process_events_lost: " << lost << "\n";
  ASSERT_GT(lost, 0) << "the ring never filled, so this test proved nothing";

  // L was followed once its report got through, and profiled.
  const nlohmann::json* l = FindProcess(j, late.pid());
  EXPECT_NE(l, nullptr) << "a process whose first report was lost was never followed: " << j["processes"].dump();
  // How many samples each got depends on the CPU it got: printed.
  if (l != nullptr) {
    std::cout << "[ info     ] samples of L: " << l->value("samples", int64_t{0}) << "\n";
    EXPECT_GT(l->value("samples", int64_t{0}), 0) << l->dump();
  }

  // Y: followed as the program it started as, which ended by exec: the exec's event got
  // through once the ring had room. (record follows a pid once; the agent goes on to follow
  // the new program: agent_cli_test's exec tests.)
  auto ys = EntriesFor(j, y.pid());
  ASSERT_EQ(ys.size(), 1u) << j["processes"].dump();
  EXPECT_TRUE(ys[0].value("ran_exec", false)) << "Y's exec was never reported: " << ys[0].dump();
  std::cout << "[ info     ] samples of Y: " << ys[0].value("samples", int64_t{0}) << "\n";
  EXPECT_GT(ys[0].value("samples", int64_t{0}), 0) << ys[0].dump();
}

}  // namespace
