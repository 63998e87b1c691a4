// The unwinder's live limits on a real program: lefthook 2.2.2 (npm; Go 1.27, stripped, no
// DWARF) recorded live with `switchback record --all` while it runs a pre-commit hook of 16
// parallel commands back to back in a scratch repository (what tools/bench/lefthook_live.py
// measures for longer). Only the samples of lefthook's own threads count (thread label
// "lefthook": its comm). Each run lives about 30 ms on an idle machine: every run after the
// first is followed from its exec (its executable's template), so the test judges whole stacks
// whatever the machine's speed. Short-lived processes that start and exit all the time,
// threads parked and woken by the scheduler, syscalls and signals: the unwinder sees what a
// real CLI does.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "tests/common/shell_util.h"
#include "tests/integration/record_harness.h"

#ifndef SB_SOURCE_DIR
#error "SB_SOURCE_DIR must name the source tree"
#endif

namespace {

using namespace sb::itest;  // NOLINT: the harness is this file's vocabulary

constexpr int kSeconds = 10;
constexpr int kFrequency = 999;
constexpr int kJobs = 16;
constexpr double kMinWholeShare = 0.998;
constexpr double kMaxStopShare = 0.001;   // any reason but max_frames
// How many samples lefthook's threads get depends on the machine's speed (a few hundred to a
// few thousand in 10 s), where 0.1% may be less than a sample: a reason may also take this many
// samples, and all of them together twice that (tools/bench/lefthook_live.py measures longer).
constexpr int64_t kMaxStopSamples = 2;

// lefthook-linux-x64 from npm (tools/fetch-lefthook.sh, into .cache/lefthook); empty with *WHY.
std::string Lefthook(std::string* why) {
  std::string dest = std::string(SB_SOURCE_DIR) + "/.cache/lefthook";
  auto r = sb::test::RunCommand(sb::test::Quote(SB_SOURCE_DIR "/tools/fetch-lefthook.sh") + " " +
                                sb::test::Quote(dest));
  std::string exe = dest + "/lefthook-linux-x64";
  if (r.status != 0 || access(exe.c_str(), X_OK) != 0) {
    *why = "tools/fetch-lefthook.sh failed (it needs the npm registry): " + r.out;
    return "";
  }
  return exe;
}

// A git repository with a pre-commit hook of kJobs parallel commands and staged files.
void MakeRepo(const fs::path& repo) {
  fs::create_directories(repo);
  std::ofstream yml(repo / "lefthook.yml");
  yml << "pre-commit:\n  parallel: true\n  commands:\n";
  for (int i = 0; i < kJobs; i++) yml << "    job" << i << ":\n      run: test -d .git && echo " << i << " >/dev/null\n";
  yml.close();
  for (int i = 0; i < 20; i++) std::ofstream(repo / ("file" + std::to_string(i) + ".txt")) << i << "\n";
  auto r = sb::test::RunCommand("cd " + sb::test::Quote(repo.string()) + " && git init -q . && git add .");
  ASSERT_EQ(r.status, 0) << r.out;
}

TEST(LefthookLiveTest, StacksOfARealProgramAreWhole) {
  std::string why;
  if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback record needs BPF (root and BTF): " << why;
  std::string lefthook = Lefthook(&why);
  ASSERT_FALSE(lefthook.empty()) << why;
  fs::path dir = TestDir();
  fs::path repo = dir / "repo";
  ASSERT_NO_FATAL_FAILURE(MakeRepo(repo));

  fs::path pprof = dir / "switchback.pb.gz";
  Child rec({kSwitchback, "record", "--all", "--duration", std::to_string(kSeconds + 6), "--frequency",
             std::to_string(kFrequency), "--quiet", "--output", pprof.string(), "--stats",
             (dir / "stats.json").string()},
            dir / "record.stdout", dir / "record.stderr");
  ASSERT_TRUE(WaitAttached(rec.pid(), seconds(60))) << "switchback record never opened a perf event";
  int runs = 0;
  std::string run = "cd " + sb::test::Quote(repo.string()) + " && LEFTHOOK_QUIET=meta,summary,execution " +
                    sb::test::Quote(lefthook) + " run pre-commit >/dev/null 2>&1";
  // One run to have lefthook analysed (runs that start before its analysis ends are not
  // followed from their exec, and how many those are depends on the machine's speed), then
  // the runs that count.
  ASSERT_EQ(sb::test::RunCommand(run).status, 0);
  std::this_thread::sleep_for(seconds(2));
  auto end = Clock::now() + seconds(kSeconds);
  while (Clock::now() < end) {
    auto r = sb::test::RunCommand(run);
    ASSERT_EQ(r.status, 0) << "lefthook run pre-commit: " << r.out;
    ++runs;
  }
  RunResult rr = rec.Wait(seconds(90));
  ASSERT_TRUE(rr.exited_ok()) << "switchback record: " << Describe(rr);
  std::string err;
  auto p = LoadPprof(pprof, &err);
  ASSERT_TRUE(p) << err;
  // Which lefthook processes the recorder followed (its stats), apart from how many samples
  // they got: following them is the recorder's doing, the samples the machine's.
  auto stats = nlohmann::json::parse(sb::ReadFile((dir / "stats.json").string()).value());
  int followed = 0;
  for (const auto& pr : stats["processes"])
    if (pr.value("exe", std::string()).find("lefthook") != std::string::npos && !pr.value("ran_exec", false)) followed++;
  std::string why_none = std::to_string(runs) + " hook runs, " + std::to_string(followed) +
                         " lefthook processes followed (from their exec: " +
                         std::to_string(stats.value("from_template_processes", 0)) + "; samples of processes not " +
                         "followed " + std::to_string(stats.value("unknown_pid_samples", 0)) + ", of executables " +
                         "not analysed yet " + std::to_string(stats.value("binary_not_analyzed_yet_samples", 0)) + ")";
  std::cout << "[ info     ] " << why_none << "\n";
  ASSERT_GT(followed, 0) << "the recorder followed none of the lefthook processes it ran: " << why_none;
  // Every run after the analysis is followed from its exec.
  EXPECT_GE(followed, runs) << why_none;

  int64_t total = 0, whole = 0;
  std::map<std::string, int64_t> stops;
  std::vector<std::string> examples;
  for (const auto& s : p->samples) {
    auto t = s.labels.find("thread");
    if (t == s.labels.end() || !StartsWith(t->second, "lefthook")) continue;
    auto frames = LeafFirst(*p, s);
    std::string e = EndOf(frames);
    total += s.count;
    if (e == "root" || e == "goroutine_exited" || e == "goroutine_left") {
      whole += s.count;
      continue;
    }
    stops[e] += s.count;
    if (examples.size() < 8) {
      std::string st = e + ":";
      for (size_t i = 0; i < frames.size() && i < 16; ++i) st += "\n    " + frames[i];
      examples.push_back(st);
    }
  }
  std::string summary = std::to_string(runs) + " hook runs, " + std::to_string(total) + " lefthook samples, " +
                        std::to_string(whole) + " whole";
  for (const auto& [k, n] : stops) summary += ", " + k + " " + std::to_string(n);
  std::cout << "[ info     ] " << summary << "\n";
  for (const auto& e : examples) std::cout << "[ info     ] not whole: " << e << "\n";
  ASSERT_GT(total, 0) << "no sample of a lefthook thread in " << followed << " lefthook processes followed: " << summary;
  EXPECT_TRUE(total - whole <= 2 * kMaxStopSamples || static_cast<double>(whole) / total >= kMinWholeShare)
      << summary;
  for (const auto& [k, n] : stops) {
    if (k == "stopped:max_frames") continue;
    EXPECT_TRUE(n <= kMaxStopSamples || static_cast<double>(n) / total <= kMaxStopShare) << k << ": " << summary;
  }
}

}  // namespace
