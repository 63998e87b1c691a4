// End-to-end tests of `switchback trace` on testdata/workloads/traced. They need root and BPF
// (GTEST_SKIP otherwise). Artifacts stay in SB_TEST_OUT_DIR/<test>/ for inspection.
//
//   - Exact counts: the workload recurses deep enough to grow its stack many times inside a
//     traced function, panics and recovers through traced functions, uses defer and
//     runtime.Goexit, on many goroutines. Traced for its whole run it must exit normally, and
//     for every function calls = exits + aborted, equal to the workload's own counters. For
//     both entry placements, both attach methods, and a PIE build.
//   - The same workload under a uretprobe dies ("unknown caller pc"): why exit probes exist.
//   - A function that sleeps a known time shows that time.
//   - A C program is timed with uretprobes (safe outside Go).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/common/shell_util.h"

namespace {

namespace fs = std::filesystem;
using sb::test::Quote;
using sb::test::RunCommand;

const std::string kSwitchback = SB_SWITCHBACK_BIN;
const std::string kWorkload = std::string(SB_WORKLOAD_DIR) + "/traced";
const std::string kGo = SB_GO_EXECUTABLE;

const char* kTracedFuncs = "^main\\.(leafPanic|middle|recoverer|withDefer|deep|deepTop|exitVia|sleeper)$";

std::string SkipReason() {
  if (geteuid() != 0) return "needs root to load BPF programs";
  if (!fs::exists("/sys/kernel/btf/vmlinux")) return "kernel without BTF";
  return "";
}

// uprobe_multi links came with Linux 6.6; an older kernel makes trace fall back to perf events.
bool KernelHasUprobeMulti() {
  utsname u{};
  int major = 0, minor = 0;
  if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 6 || (major == 6 && minor >= 6);
}

std::string OutDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name)
    if (c == '/') c = '_';
  fs::path dir = fs::path(SB_TEST_OUT_DIR) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A child running `sh -c cmd` with stdout and stderr in files, killed if the test program dies
// (a tracer left running keeps its probes in every process of the binary).
struct Child {
  pid_t pid = -1;
  std::string out, err;

  static Child Start(const std::string& cmd, const std::string& out, const std::string& err) {
    Child c;
    c.out = out;
    c.err = err;
    std::string full = "exec " + cmd + " >" + Quote(out) + " 2>" + Quote(err);
    c.pid = fork();
    if (c.pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      execl("/bin/sh", "sh", "-c", full.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return c;
  }
  // Exit status, or 128 + signal; -1 on timeout (the child is killed then).
  int Wait(std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      pid_t r = waitpid(pid, &st, WNOHANG);
      if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
  }
  bool WaitForText(const std::string& text, std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Slurp(err).find(text) != std::string::npos) return true;
      if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
};

struct TraceRun {
  int trace_status = -1;
  int workload_status = -1;
  std::string trace_out, trace_err, workload_err;
  nlohmann::json report;    // switchback's --json
  nlohmann::json counters;  // the workload's own counters
  int64_t workload_ns = 0;  // from its start until it was reaped: no call of it lasted longer
};

// Starts the tracer on the workload binary, runs the workload once, stops the tracer.
TraceRun TraceWorkload(const std::string& dir, const std::string& trace_args, const std::string& workload_args,
                       const std::string& workload = kWorkload) {
  TraceRun r;
  std::string json = dir + "/trace.json";
  Child tracer = Child::Start(kSwitchback + " trace --binary " + Quote(workload) + " " + trace_args + " --json " +
                                  Quote(json) + " --pprof " + Quote(dir + "/trace.pb.gz"),
                              dir + "/trace.out", dir + "/trace.err");
  if (!tracer.WaitForText("switchback: tracing", std::chrono::seconds(60))) {
    r.trace_status = tracer.Wait(std::chrono::seconds(5));
    r.trace_err = Slurp(tracer.err);
    return r;
  }
  auto work_start = std::chrono::steady_clock::now();
  Child work = Child::Start(Quote(workload) + " " + workload_args + " -counters " + Quote(dir + "/counters.json"),
                            dir + "/workload.out", dir + "/workload.err");
  r.workload_status = work.Wait(std::chrono::seconds(180));
  r.workload_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - work_start)
                      .count();
  kill(tracer.pid, SIGINT);
  r.trace_status = tracer.Wait(std::chrono::seconds(60));
  r.trace_out = Slurp(tracer.out);
  r.trace_err = Slurp(tracer.err);
  r.workload_err = Slurp(work.err);
  try {
    if (fs::exists(json)) r.report = nlohmann::json::parse(Slurp(json));
    if (fs::exists(dir + "/counters.json")) r.counters = nlohmann::json::parse(Slurp(dir + "/counters.json"));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "bad JSON: " << e.what();
  }
  return r;
}

struct Mode {
  const char* name;
  const char* args;
  const char* binary = "traced";  // in SB_WORKLOAD_DIR
};

// ctest names the test by its mode, not by the struct's bytes.
void PrintTo(const Mode& m, std::ostream* os) { *os << m.name; }

class ExactCounts : public ::testing::TestWithParam<Mode> {};

TEST_P(ExactCounts, CallsEqualExitsPlusAbortedForEveryFunction) {
  if (auto why = SkipReason(); !why.empty()) GTEST_SKIP() << why;
  std::string dir = OutDir();
  TraceRun r = TraceWorkload(dir, std::string("--func '") + kTracedFuncs + "' " + GetParam().args,
                             "-goroutines 16 -iterations 100 -deep 200 -sleeps 2 -sleep 5ms",
                             std::string(SB_WORKLOAD_DIR) + "/" + GetParam().binary);
  ASSERT_EQ(r.workload_status, 0) << "the traced workload must exit normally\n" << r.workload_err;
  ASSERT_EQ(r.trace_status, 0) << r.trace_err << r.trace_out;
  ASSERT_TRUE(r.report.contains("functions")) << r.trace_err;
  ASSERT_TRUE(r.counters.is_object());
  // Where the kernel has uprobe_multi the probes load as such: a program the kernel refuses
  // there makes trace fall back to perf-event uprobes silently, slower to start and to detach
  // (the plain-uprobe probe sharing the tail-call array did that once).
  if (KernelHasUprobeMulti() && std::string(GetParam().args).find("--perf-event") == std::string::npos)
    EXPECT_EQ(r.report["attach"]["method"], "uprobe_multi") << r.trace_err;
  const auto& funcs = r.report["functions"];
  for (const auto& [name, want] : r.counters.items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(funcs.contains(name));
    const auto& got = funcs[name];
    int64_t calls = want["calls"], aborted = want["aborted"];
    EXPECT_GT(calls, 0);
    EXPECT_EQ(got["calls"].get<int64_t>(), calls);
    EXPECT_EQ(got["aborted"].get<int64_t>(), aborted);
    EXPECT_EQ(got["exits"].get<int64_t>(), calls - aborted);
    EXPECT_EQ(got["in_flight"].get<int64_t>(), 0);
    EXPECT_EQ(got["dropped"].get<int64_t>(), 0);
    EXPECT_EQ(got["unmatched_exits"].get<int64_t>(), 0);
  }
  // --stacks: every paired exit's call path arrived or was counted lost (the ring buffer full:
  // a burst of 20,000 deep unwinds on a machine whose CPUs the workload saturates, as under the
  // sanitizers in CI), and the paths add up to the exits.
  if (r.report.contains("paths")) {
    const auto& st = r.report["stacks"];
    int64_t lost = st["lost"].get<int64_t>(), sent = st["sent"].get<int64_t>();
    EXPECT_EQ(st["no_process_facts"].get<int64_t>(), 0) << st.dump();
    // Every record sent unpacked (the BPF side packs what userspace reads).
    EXPECT_EQ(st["malformed"].get<int64_t>(), 0) << st.dump();
    EXPECT_EQ(st["received"].get<int64_t>(), sent) << st.dump();
    // How many are lost depends on how fast this machine's userspace drains the buffer while
    // the workload saturates the CPUs: printed. Some arrive.
    std::cout << "[ info     ] call paths sent " << sent << ", lost " << lost << "\n";
    EXPECT_GT(sent, 0) << st.dump();
    std::map<std::string, int64_t> path_calls;
    int64_t all_paths = 0, all_exits = 0;
    for (const auto& p : r.report["paths"]) path_calls[p["function"]] += p["calls"].get<int64_t>();
    for (const auto& [name, got] : funcs.items()) {
      EXPECT_LE(path_calls[name], got["exits"].get<int64_t>()) << name;
      if (lost == 0) EXPECT_EQ(path_calls[name], got["exits"].get<int64_t>()) << name;
      all_paths += path_calls[name];
      all_exits += got["exits"].get<int64_t>();
    }
    EXPECT_EQ(all_paths + lost, all_exits) << st.dump();
    // The paths are whole: they reach the goroutine's root (crossing the stack growth of
    // main.deep), or are longer than the unwinder's 128 frames (main.deep recurses 200 levels).
    for (const auto& [reason, n] : st["stop_reasons"].items())
      EXPECT_TRUE(reason == "root" || reason == "max_frames") << reason << ": " << n << " " << st.dump();
    // Symbolized in the process's own address space (a PIE build is loaded elsewhere in each
    // process): every path starts at its traced function, and every frame has a function
    // name (an unsymbolized one is "0x..." or "FILE+0x...").
    EXPECT_EQ(st["processes"].get<int64_t>(), 1) << st.dump();
    for (const auto& p : r.report["paths"]) {
      ASSERT_GE(p["frames"].size(), 2u) << p.dump();
      EXPECT_EQ(p["frames"][0], p["function"]) << p.dump();
      for (const auto& f : p["frames"]) {
        std::string name = f.get<std::string>();
        EXPECT_TRUE(name.rfind("main.", 0) == 0 || name.rfind("runtime.", 0) == 0 ||
                    name == "[stopped: max_frames]")
            << p.dump();
      }
    }
  }
  // main.deep grew its stack while traced: the entry ran again after morestack (a restart,
  // not a new call) — proof that the run exercised stack copies under the probes.
  EXPECT_GT(funcs["main.deep"]["restarts"].get<int64_t>(), 0);
  EXPECT_EQ(r.report["counters"]["no_g"].get<int64_t>(), 0);
  // The pprof file holds calls and total nanoseconds per function, and go tool pprof reads it.
  auto top = RunCommand(Quote(kGo) + " tool pprof -sample_index=calls -top " + Quote(dir + "/trace.pb.gz"));
  EXPECT_EQ(top.status, 0) << top.out;
  EXPECT_NE(top.out.find("main.deep"), std::string::npos) << top.out;
}

INSTANTIATE_TEST_SUITE_P(Placements, ExactCounts,
                         ::testing::Values(Mode{"auto_multi", "--entry auto"}, Mode{"first_multi", "--entry first"},
                                           Mode{"auto_perf_event", "--entry auto --perf-event"},
                                           Mode{"auto_multi_pie", "--entry auto", "traced-pie"},
                                           Mode{"auto_multi_stacks", "--entry auto --stacks"},
                                           Mode{"auto_multi_pie_stacks", "--entry auto --stacks", "traced-pie"}),
                         [](const auto& info) { return std::string(info.param.name); });

// trace --stacks: main.shared is called from two paths with known delays (fast 2 ms through
// main.fastCaller, slow 8 ms through main.slowPath -> main.slowCaller on a goroutine labelled
// path=slow, the same number of calls): both paths come out, with total times in the ratio the
// workload sets, the slow one with its label; the pprof has calls/total/max per path.
const nlohmann::json* FindPath(const nlohmann::json& paths, const std::string& caller) {
  for (const auto& p : paths) {
    if (p["function"] != "main.shared") continue;
    const auto& f = p["frames"];
    if (f.size() >= 2 && f[1] == caller) return &p;
  }
  return nullptr;
}

TEST(TraceStacks, TwoPathsInTheRatioTheWorkloadSets) {
  if (auto why = SkipReason(); !why.empty()) GTEST_SKIP() << why;
  std::string dir = OutDir();
  TraceRun r = TraceWorkload(dir, "--func '^main\\.shared$' --stacks", "-paths 150 -fast 2ms -slow 8ms");
  ASSERT_EQ(r.workload_status, 0) << r.workload_err;
  ASSERT_EQ(r.trace_status, 0) << r.trace_err << r.trace_out;
  const auto& f = r.report["functions"]["main.shared"];
  EXPECT_EQ(f["calls"].get<int64_t>(), 300);
  EXPECT_EQ(f["exits"].get<int64_t>(), 300);
  const auto* fast = FindPath(r.report["paths"], "main.fastCaller");
  const auto* slow = FindPath(r.report["paths"], "main.slowCaller");
  ASSERT_TRUE(fast && slow) << r.report["paths"].dump(1);
  EXPECT_EQ((*fast)["calls"].get<int64_t>(), 150);
  EXPECT_EQ((*slow)["calls"].get<int64_t>(), 150);
  // Every path crossed the ring whole: sent, unpacked and received (none malformed, none lost).
  const auto& st = r.report["stacks"];
  EXPECT_EQ(st["sent"].get<int64_t>(), 300) << st.dump();
  EXPECT_EQ(st["received"].get<int64_t>(), 300) << st.dump();
  EXPECT_EQ(st["malformed"].get<int64_t>(), 0) << st.dump();
  EXPECT_EQ((*slow)["frames"][2], "main.slowPath");
  EXPECT_EQ((*slow)["labels"]["path"], "slow");
  EXPECT_TRUE((*fast)["labels"].empty());
  // time.Sleep sleeps at least its duration, plus a wake-up latency: the ratio of the totals is
  // 4 only at a latency of 0 (3 at 1 ms, 2.6 at 1.8 ms on a loaded CI runner), and how the
  // latency differs between the two paths is the machine's too, so the totals are printed and
  // the test checks what latency cannot change: each path took at least its sleeps, and no
  // call of the slow path was shorter than its 8 ms (a fast call counted there would be).
  double slow_total = (*slow)["total_ns"].get<double>(), fast_total = (*fast)["total_ns"].get<double>();
  std::cout << "[ info     ] ms per call: slow path " << slow_total / 150 / 1e6 << ", fast path "
            << fast_total / 150 / 1e6 << "\n";
  EXPECT_GE(slow_total, 150 * 8e6) << r.trace_out;
  EXPECT_GE(fast_total, 150 * 2e6) << r.trace_out;
  EXPECT_GE((*slow)["max_ns"].get<int64_t>(), 8'000'000);
  EXPECT_FALSE((*slow)["histogram"].empty());
  for (const auto& b : (*slow)["histogram"]) EXPECT_GE(b["high_ns"].get<int64_t>(), 8'000'000) << slow->dump();
  for (const auto& b : (*fast)["histogram"]) EXPECT_GE(b["high_ns"].get<int64_t>(), 2'000'000) << fast->dump();
  EXPECT_NE(r.trace_out.find("Call paths of main.shared"), std::string::npos) << r.trace_out;
  // go tool pprof: the paths with their three values; by total, slowCaller's path leads.
  auto top = RunCommand(Quote(kGo) + " tool pprof -sample_index=total -top -cum " + Quote(dir + "/trace.pb.gz"));
  EXPECT_EQ(top.status, 0) << top.out;
  EXPECT_NE(top.out.find("main.slowCaller"), std::string::npos) << top.out;
  auto raw = RunCommand(Quote(kGo) + " tool pprof -raw " + Quote(dir + "/trace.pb.gz"));
  for (const char* type : {"calls/count", "total/nanoseconds", "max/nanoseconds"})
    EXPECT_NE(raw.out.find(type), std::string::npos) << type << "\n" << raw.out;
}

// trace --stacks --binary of a PIE executable: every process running it is loaded at its own
// address (ASLR), all of them started after trace attached, two at once and one after those
// ended. Each process's runtime facts are made in BPF from the load bias its first exit
// proves, so every exit of every process comes with its whole, symbolized call path.
TEST(TraceStacks, EveryProcessOfAPieBinary) {
  if (auto why = SkipReason(); !why.empty()) GTEST_SKIP() << why;
  std::string dir = OutDir();
  std::string workload = std::string(SB_WORKLOAD_DIR) + "/traced-pie";
  std::string json = dir + "/trace.json";
  Child tracer = Child::Start(kSwitchback + " trace --binary " + Quote(workload) + " --func '^main\\.shared$' --stacks --json " +
                                  Quote(json),
                              dir + "/trace.out", dir + "/trace.err");
  if (!tracer.WaitForText("switchback: tracing", std::chrono::seconds(60))) {
    tracer.Wait(std::chrono::seconds(0));  // kills it if it still runs
    FAIL() << Slurp(tracer.err);
  }
  auto run = [&](int i) {
    return Child::Start(Quote(workload) + " -paths 20 -fast 1ms -slow 2ms", dir + "/w" + std::to_string(i) + ".out",
                        dir + "/w" + std::to_string(i) + ".err");
  };
  Child a = run(0), b = run(1);
  EXPECT_EQ(a.Wait(std::chrono::seconds(120)), 0) << Slurp(a.err);
  EXPECT_EQ(b.Wait(std::chrono::seconds(120)), 0) << Slurp(b.err);
  Child c = run(2);
  EXPECT_EQ(c.Wait(std::chrono::seconds(120)), 0) << Slurp(c.err);
  kill(tracer.pid, SIGINT);
  ASSERT_EQ(tracer.Wait(std::chrono::seconds(60)), 0) << Slurp(tracer.err) << Slurp(tracer.out);
  nlohmann::json r = nlohmann::json::parse(Slurp(json));
  EXPECT_EQ(r["functions"]["main.shared"]["exits"].get<int64_t>(), 3 * 40);
  const auto& st = r["stacks"];
  EXPECT_EQ(st["sent"].get<int64_t>(), 3 * 40) << st.dump();
  EXPECT_EQ(st["received"].get<int64_t>(), 3 * 40) << st.dump();
  EXPECT_EQ(st["malformed"].get<int64_t>(), 0) << st.dump();
  EXPECT_EQ(st["no_process_facts"].get<int64_t>(), 0) << st.dump();
  EXPECT_EQ(st["processes"].get<int64_t>(), 3) << st.dump();
  for (const auto& [reason, n] : st["stop_reasons"].items()) EXPECT_EQ(reason, "root") << st.dump();
  // Per process: both callers, 20 calls each, named.
  std::map<std::pair<int64_t, std::string>, int64_t> calls;
  for (const auto& p : r["paths"]) {
    ASSERT_GE(p["frames"].size(), 2u) << p.dump();
    EXPECT_EQ(p["frames"][0], "main.shared") << p.dump();
    calls[{p["pid"].get<int64_t>(), p["frames"][1].get<std::string>()}] += p["calls"].get<int64_t>();
  }
  for (pid_t pid : {a.pid, b.pid, c.pid}) {
    EXPECT_EQ((calls[{pid, "main.fastCaller"}]), 20) << pid << " " << r["paths"].dump(1);
    EXPECT_EQ((calls[{pid, "main.slowCaller"}]), 20) << pid;
  }
  EXPECT_EQ(calls.size(), 6u) << r["paths"].dump(1);
  // Each process was loaded at its own address (the log names each one's bias).
  std::set<std::string> biases;
  std::string err = Slurp(tracer.err);
  for (size_t at = err.find("load bias 0x"); at != std::string::npos; at = err.find("load bias 0x", at + 1))
    biases.insert(err.substr(at, err.find(')', at) - at));
  EXPECT_EQ(biases.size(), 3u) << err;
}

TEST(TraceStacks, SlowerThanKeepsOnlyTheSlowPath) {
  if (auto why = SkipReason(); !why.empty()) GTEST_SKIP() << why;
  std::string dir = OutDir();
  TraceRun r = TraceWorkload(dir, "--func '^main\\.shared$' --stacks --slower-than 15ms", "-paths 60 -fast 1ms -slow 30ms");
  ASSERT_EQ(r.workload_status, 0) << r.workload_err;
  ASSERT_EQ(r.trace_status, 0) << r.trace_err << r.trace_out;
  const auto& f = r.report["functions"]["main.shared"];
  EXPECT_EQ(f["calls"].get<int64_t>(), 120);  // the counts stay whole
  EXPECT_EQ(f["exits"].get<int64_t>(), 120);
  // Every slow call sleeps 30 ms, so all 60 are kept. A fast call (a 1 ms sleep) is kept only
  // if it really took 15 ms: a scheduling delay that a machine under load (CI under the
  // sanitizers) does cause now and then, as often as the machine decides, so it is counted,
  // printed and checked to be slow.
  const auto* slow = FindPath(r.report["paths"], "main.slowCaller");
  ASSERT_NE(slow, nullptr) << r.report["paths"].dump(1);
  EXPECT_EQ((*slow)["calls"].get<int64_t>(), 60);
  int64_t kept = 0;
  for (const auto& p : r.report["paths"]) {
    kept += p["calls"].get<int64_t>();
    EXPECT_GE(p["max_ns"].get<int64_t>(), 15'000'000) << p.dump();
    for (const auto& b : p["histogram"]) EXPECT_GE(b["high_ns"].get<int64_t>(), 15'000'000) << p.dump();
  }
  const auto* fast = FindPath(r.report["paths"], "main.fastCaller");
  int64_t fast_kept = fast ? (*fast)["calls"].get<int64_t>() : 0;
  std::cout << "[ info     ] fast calls slower than 15 ms: " << fast_kept << " of 60\n";
  EXPECT_LE(fast_kept, 60) << r.report["paths"].dump(1);
  EXPECT_EQ(r.report["stacks"]["faster"].get<int64_t>(), 120 - kept);
  EXPECT_EQ(r.report["stacks"]["slower_than_ns"].get<int64_t>(), 15'000'000);
}

TEST(TraceListing, FunctionWithoutRetIsListed) {
  if (auto why = SkipReason(); !why.empty()) GTEST_SKIP() << why;
  std::string dir = OutDir();
  TraceRun r = TraceWorkload(dir, "--func '^main\\.(alwaysPanics|sleeper)$' --verbose",
                             "-goroutines 1 -iterations 1 -sleeps 1 -sleep 1ms");
  ASSERT_EQ(r.trace_status, 0) << r.trace_err;
  bool listed = false;
  for (const auto& s : r.report["not_traced"])
    if (s["function"] == "main.alwaysPanics") {
      listed = true;
      EXPECT_NE(s["reason"].get<std::string>().find("no RET"), std::string::npos);
    }
  EXPECT_TRUE(listed) << r.report.dump(2);
  EXPECT_NE(r.trace_out.find("main.alwaysPanics: no RET"), std::string::npos) << r.trace_out;
  // --verbose lists the sites and says which the kernel emulates.
  EXPECT_NE(r.trace_err.find("stack-check branch"), std::string::npos) << r.trace_err;
  EXPECT_NE(r.trace_err.find("single-stepped"), std::string::npos) << r.trace_err;
}

TEST(TraceLatency, SleeperShowsItsSleep) {
  if (auto why = SkipReason(); !why.empty()) GTEST_SKIP() << why;
  std::string dir = OutDir();
  TraceRun r = TraceWorkload(dir, "--func '^main\\.sleeper$'", "-goroutines 1 -iterations 1 -sleeps 10 -sleep 20ms");
  ASSERT_EQ(r.workload_status, 0) << r.workload_err;
  ASSERT_EQ(r.trace_status, 0) << r.trace_err;
  const auto& s = r.report["functions"]["main.sleeper"];
  ASSERT_EQ(s["exits"].get<int64_t>(), 10) << s.dump(2);
  // Never shorter than the sleep (time.Sleep guarantees at least the duration), and no longer
  // than the workload ran. How much longer than 20 ms is the machine's wake-up latency: printed.
  std::cout << "[ info     ] main.sleeper p50 " << s["p50_ns"].get<int64_t>() / 1e6 << " ms, max "
            << s["max_ns"].get<int64_t>() / 1e6 << " ms\n";
  EXPECT_GE(s["min_ns"].get<int64_t>(), 20'000'000);
  EXPECT_LE(s["p50_ns"].get<int64_t>(), s["max_ns"].get<int64_t>()) << s.dump(2);
  EXPECT_LE(s["max_ns"].get<int64_t>(), r.workload_ns) << s.dump(2);
  EXPECT_NE(r.trace_out.find("nsecs"), std::string::npos) << "funclatency-style histogram";
}

TEST(TracePid, AttachesToARunningProcessAndStopsWhenItExits) {
  if (auto why = SkipReason(); !why.empty()) GTEST_SKIP() << why;
  std::string dir = OutDir();
  // 10 s of work: loading and verifying the probes can take over 2 s on a loaded machine, and
  // several times that on a slower one.
  Child work = Child::Start(Quote(kWorkload) + " -goroutines 2 -iterations 50 -sleeps 200 -sleep 50ms",
                            dir + "/workload.out", dir + "/workload.err");
  // trace --pid needs the workload, not the shell that execs it.
  std::error_code ec;
  for (int i = 0; i < 3000 && !fs::equivalent("/proc/" + std::to_string(work.pid) + "/exe", kWorkload, ec); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto t = RunCommand(kSwitchback + " trace --pid " + std::to_string(work.pid) +
                      " --func '^main\\.sleeper$' --json " + Quote(dir + "/trace.json") + " 2>&1");
  EXPECT_EQ(t.status, 0) << t.out;
  EXPECT_EQ(work.Wait(std::chrono::seconds(60)), 0) << Slurp(work.err);
  auto j = nlohmann::json::parse(Slurp(dir + "/trace.json"));
  const auto& s = j["functions"]["main.sleeper"];
  // How many calls ended after the attach depends on how long the attach took: printed.
  std::cout << "[ info     ] main.sleeper exits traced: " << s["exits"].get<int64_t>() << " of 200\n";
  EXPECT_GT(s["exits"].get<int64_t>(), 0) << s.dump(2);
  // The call running at attach time is seen only by its exit.
  EXPECT_LE(s["unmatched_exits"].get<int64_t>(), 1);
  EXPECT_EQ(s["calls"].get<int64_t>(), s["exits"].get<int64_t>() + s["in_flight"].get<int64_t>());
}

// Non-Go code: entry uprobe + uretprobe, paired per thread by -SP; recursion nests.
TEST(TraceC, UretprobesTimeACProgram) {
  if (auto why = SkipReason(); !why.empty()) GTEST_SKIP() << why;
  std::string dir = OutDir();
  {
    std::ofstream src(dir + "/c.c");
    src << "#include <unistd.h>\n"
           "__attribute__((noinline)) int work(int n) {\n"
           "  if (n > 0) return work(n - 1) + 1;\n"
           "  usleep(1000);\n"
           "  return 0;\n"
           "}\n"
           "int main(void) { int s = 0; for (int i = 0; i < 50; i++) s += work(3); return s == 150 ? 0 : 1; }\n";
  }
  auto cc = RunCommand("cc -O1 -fno-optimize-sibling-calls -o " + Quote(dir + "/c") + " " + Quote(dir + "/c.c"));
  if (cc.status != 0) GTEST_SKIP() << "no C compiler: " << cc.out;
  Child tracer = Child::Start(kSwitchback + " trace --binary " + Quote(dir + "/c") + " --func '^work$' --json " +
                                  Quote(dir + "/trace.json"),
                              dir + "/trace.out", dir + "/trace.err");
  if (!tracer.WaitForText("switchback: tracing", std::chrono::seconds(60))) {
    tracer.Wait(std::chrono::seconds(0));  // kills it if it still runs
    FAIL() << Slurp(dir + "/trace.err");
  }
  auto run = RunCommand(Quote(dir + "/c"));
  EXPECT_EQ(run.status, 0) << run.out;
  kill(tracer.pid, SIGINT);
  ASSERT_EQ(tracer.Wait(std::chrono::seconds(60)), 0) << Slurp(dir + "/trace.err");
  auto j = nlohmann::json::parse(Slurp(dir + "/trace.json"));
  EXPECT_EQ(j["exit_probes"], "uretprobe");
  const auto& w = j["functions"]["work"];
  EXPECT_EQ(w["calls"].get<int64_t>(), 200) << w.dump(2);  // 50 x (work(3) .. work(0))
  EXPECT_EQ(w["exits"].get<int64_t>(), 200);
  EXPECT_EQ(w["aborted"].get<int64_t>(), 0);
  EXPECT_GE(w["min_ns"].get<int64_t>(), 1'000'000);  // every call contains the 1 ms sleep
}

TEST(UretprobeOnGo, KillsTheProgramWhenItsStackIsCopied) {
  if (auto why = SkipReason(); !why.empty()) GTEST_SKIP() << why;
  std::string dir = OutDir();
  // Refused without the explicit flag.
  auto refused = RunCommand(kSwitchback + " trace --binary " + Quote(kWorkload) + " --func '^main\\.deep$' --uretprobe");
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.out.find("unknown caller pc"), std::string::npos) << refused.out;

  TraceRun r = TraceWorkload(dir, "--func '^main\\.deep$' --uretprobe --allow-unsafe-uretprobe",
                             "-goroutines 4 -iterations 20 -deep 200 -sleeps 0");
  if (r.workload_status == -1 && r.trace_err.find("uretprobe") != std::string::npos)
    GTEST_SKIP() << "uretprobes unavailable here: " << r.trace_err;
  ASSERT_EQ(r.trace_status, 0) << r.trace_err;
  EXPECT_NE(r.workload_status, 0) << "a Go program under a uretprobe survived a stack copy";
  EXPECT_NE(r.workload_err.find("unknown caller pc"), std::string::npos) << r.workload_err.substr(0, 2000);
}

}  // namespace
