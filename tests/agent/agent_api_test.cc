// The Agent API that other threads use while Run() goes on (what the HTTP endpoint serves from):
// Processes(), Counters(), several Capture() calls at once, cancel, on_window_written. Runs
// the real sampler on the demo workload (needs root and BPF; skips otherwise).
#include "agent/agent.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <iostream>
#include <thread>

#include <gtest/gtest.h>

#include "unwinder/bpf_sampler.h"

namespace sb::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

int64_t Samples(const profile::ProfileData& p) {
  int64_t n = 0;
  for (const auto& s : p.samples) n += s.count;
  return n;
}

TEST(AgentApiTest, CapturesProcessesAndCountersWhileRunning) {
  if (std::string why = unwinder::BpfUnavailableReason(); !why.empty()) GTEST_SKIP() << "needs BPF: " << why;
  pid_t demo = fork();
  if (demo == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // -duration=0 must not outlive a test that crashed
    execl(SB_DEMO, SB_DEMO, "-mode=spin", "-duration=0", static_cast<char*>(nullptr));
    _exit(127);
  }
  // The agent follows the pid as the demo: wait for the exec (fork returns before it).
  std::error_code exe_ec;
  for (int i = 0; i < 3000 && !fs::equivalent("/proc/" + std::to_string(demo) + "/exe", SB_DEMO, exe_ec); i++)
    std::this_thread::sleep_for(10ms);
  fs::path dir = fs::temp_directory_path() / ("sb_agent_api_test." + std::to_string(getpid()));
  fs::remove_all(dir);
  AgentOptions o;
  o.dir = dir.string();
  o.frequency_hz = 99;
  o.interval = 1500ms;
  o.selection.pids = {static_cast<uint32_t>(demo)};
  std::atomic<int> windows{0};
  o.on_window_written = [&](const WindowFile& w) {
    EXPECT_EQ(w.pid, static_cast<uint32_t>(demo));
    EXPECT_TRUE(fs::exists(w.path)) << w.path;
    EXPECT_GT(w.samples, 0u);
    EXPECT_EQ(w.labels.at("pid"), std::to_string(demo));
    windows++;
  };
  auto agent = Agent::Open(o);
  ASSERT_TRUE(agent.ok()) << agent.error();
  std::atomic<bool> stop{false};
  std::thread runner([&] { EXPECT_TRUE((*agent)->Run(&stop).ok()); });

  auto procs = (*agent)->Processes();
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0].pid, static_cast<uint32_t>(demo));
  EXPECT_EQ(procs[0].go_version.rfind("go1.", 0), 0u);
  EXPECT_FALSE(procs[0].facts_source.empty());
  EXPECT_FALSE(procs[0].exited);

  // Two captures at once, by pid and by exe, and one cancelled early.
  std::atomic<bool> no{false}, cancel{false};
  auto by_pid = std::async(std::launch::async, [&] {
    return (*agent)->Capture(CaptureFilter{static_cast<uint32_t>(demo), ""}, 2s, &no);
  });
  auto by_exe = std::async(std::launch::async, [&] { return (*agent)->Capture(CaptureFilter{0, "/demo$"}, 2s, &no); });
  auto cancelled = std::async(std::launch::async, [&] {
    auto t0 = std::chrono::steady_clock::now();
    auto r = (*agent)->Capture(CaptureFilter{static_cast<uint32_t>(demo), ""}, 60s, &cancel);
    return std::make_pair(std::move(r), std::chrono::steady_clock::now() - t0);
  });
  std::this_thread::sleep_for(500ms);
  cancel = true;
  for (auto* f : {&by_pid, &by_exe}) {
    auto r = f->get();
    ASSERT_TRUE(r.ok()) << r.error();
    // How many 2 s at 99 Hz give depends on the CPU the demo got: printed.
    std::cout << "[ info     ] capture samples: " << Samples(*r) << "\n";
    EXPECT_GT(Samples(*r), 0);
    EXPECT_GT(r->duration_nanos, 1900000000LL);
    for (const auto& s : r->samples) {
      EXPECT_EQ(s.labels.at("pid"), std::to_string(demo));
      EXPECT_TRUE(s.labels.count("go_version"));
    }
  }
  auto [cr, took] = cancelled.get();
  EXPECT_TRUE(cr.ok());
  EXPECT_LT(took, 10s) << "cancel did not end the capture";

  // Errors are one line.
  auto none = (*agent)->Capture(CaptureFilter{1, ""}, 100ms, &no);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("not followed"), std::string::npos);
  EXPECT_FALSE((*agent)->Capture(CaptureFilter{1, "x"}, 100ms, &no).ok());
  EXPECT_FALSE((*agent)->Capture(CaptureFilter{0, "("}, 100ms, &no).ok());

  for (int i = 0; i < 600 && windows.load() < 1; i++) std::this_thread::sleep_for(100ms);
  AgentCounters c = (*agent)->Counters();
  EXPECT_GE(c.windows_written, 1u);
  EXPECT_EQ(c.processes_followed, 1u);
  uint64_t unwound = 0;
  for (const auto& [k, n] : c.samples_by_stop_reason) unwound += n;
  EXPECT_GT(unwound, 0u);
  // The binary cache holds the demo's executable (its mapped size, within the default bound),
  // and kernel stacks are on by default: each sample in the kernel got one or is counted failed
  // (the counters are read while the sampler runs: a CPU may be between the two increments).
  EXPECT_GT(c.binary_cache_bytes, 0u);
  EXPECT_EQ(c.binary_cache_entries, 1u);
  EXPECT_EQ(c.binary_cache_evictions, 0u);
  // The demo's pcsp table: one binary's, in the BPF array.
  EXPECT_EQ(c.pcsp_tables, 1u);
  EXPECT_GT(c.pcsp_table_cells, 1000u);
  EXPECT_LT(c.pcsp_table_cells, c.pcsp_table_capacity);
  EXPECT_LE(c.kernel_stacks + c.kernel_stack_errors, c.kernel_in_kernel);
  EXPECT_LE(c.kernel_in_kernel - c.kernel_stacks - c.kernel_stack_errors,
            static_cast<uint64_t>(std::thread::hardware_concurrency()));
  EXPECT_FALSE((*agent)->Processes()[0].latest_window_file.empty());

  // The process exits: the agent writes its last window and stops (--pid).
  kill(demo, SIGKILL);
  waitpid(demo, nullptr, 0);
  runner.join();
  EXPECT_GE(windows.load(), 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sb::agent
