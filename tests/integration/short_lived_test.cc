// Short-lived Go processes under `record --all` and the agent: once an executable's facts are
// known, each later process of it is followed from its exec (its facts made in BPF from the
// executable's template), so it keeps its samples however briefly it lives. The ground truth is
// each run's own CPU time (wait4's rusage): a process that burned T of CPU at F Hz was sampled
// about T * F times, and the recorder must keep nearly all of them. The share of samples kept
// is the recorder's doing, not the machine's: a process is either followed from its exec or
// not, and exec and exit (the only samples not unwound) are a fixed small part of a run.
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/window_index.h"
#include "base/file_util.h"
#include "tests/integration/record_harness.h"

extern char** environ;

namespace {

using namespace sb::itest;  // NOLINT: the harness is this file's vocabulary

constexpr int kFrequency = 999;
constexpr int kRuns = 100;
constexpr const char* kRunCpu = "20ms";
// Exec (the image being replaced) and exit (the address space torn down) are part of each
// run's CPU time but cannot be unwound: a few percent of a 20 ms run at most.
constexpr double kMinKeptShare = 0.9;

struct ProcRun {
  pid_t pid = 0;
  double cpu_s = 0;  // user + system time of the run (rusage)
  int status = -1;
};

// Runs ARGV to its end (posix_spawn, as a shell's fork and exec would), with its rusage.
ProcRun SpawnAndWait(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ProcRun r;
  if (posix_spawn(&r.pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return r;
  struct rusage ru {};
  if (wait4(r.pid, &r.status, 0, &ru) != r.pid) return r;
  r.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  return r;
}

// One busy loop per CPU (a shell, not Go), killed when it goes.
class CpuHogs {
 public:
  explicit CpuHogs(const fs::path& dir) {
    unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < n; i++)
      hogs_.push_back(std::make_unique<Child>(std::vector<std::string>{"/bin/sh", "-c", "while :; do :; done"},
                                              dir / ("hog" + std::to_string(i) + ".out"),
                                              dir / ("hog" + std::to_string(i) + ".err")));
  }
  ~CpuHogs() {
    for (auto& h : hogs_) h->Signal(SIGKILL);
    for (auto& h : hogs_) h->Wait(seconds(10));
  }

 private:
  std::vector<std::unique_ptr<Child>> hogs_;
};

// Samples by pid in a profile.
std::map<int64_t, int64_t> SamplesByPid(const ProfileData& p) {
  std::map<int64_t, int64_t> out;
  for (const auto& s : p.samples) {
    auto it = s.num_labels.find("pid");
    if (it != s.num_labels.end()) out[it->second] += s.count;
  }
  return out;
}

struct Tally {
  double expected = 0;  // samples the runs' CPU time is worth at kFrequency
  int64_t kept = 0;     // samples of those runs in the profile(s)
  int64_t whole = 0;    // of which whole (a root, or a goroutine that exited or left)
  int followed = 0;     // runs the recording followed
  std::map<std::string, int64_t> not_whole;  // how the others end
  std::string example;
  std::string Describe() const {
    return std::to_string(kept) + " samples kept of " + std::to_string(static_cast<int64_t>(expected)) +
           " the runs' CPU time is worth (" + std::to_string(expected > 0 ? 100.0 * kept / expected : 0) +
           "%), " + std::to_string(whole) + " whole" + NotWhole();
  }
  std::string NotWhole() const {
    std::string out;
    for (const auto& [e, n] : not_whole) out += ", " + e + " " + std::to_string(n);
    return out + (example.empty() ? "" : "\n  e.g. " + example);
  }
};

void Count(const ProfileData& p, const std::set<int64_t>& pids, Tally* t) {
  for (const auto& s : p.samples) {
    auto it = s.num_labels.find("pid");
    if (it == s.num_labels.end() || !pids.count(it->second)) continue;
    t->kept += s.count;
    auto frames = LeafFirst(p, s);
    std::string e = EndOf(frames);
    if (e == "root" || e == "goroutine_exited" || e == "goroutine_left") {
      t->whole += s.count;
      continue;
    }
    t->not_whole[e] += s.count;
    if (t->example.empty())
      for (size_t i = 0; i < frames.size() && i < 12; i++) t->example += " " + frames[i];
  }
}

// How many of PIDS the recording followed (its stats' processes), as the program they ran.
int Followed(const nlohmann::json& stats, const std::set<int64_t>& pids) {
  int n = 0;
  for (const auto& p : stats["processes"])
    if (pids.count(p.value("pid", int64_t{0})) && !p.value("ran_exec", false)) n++;
  return n;
}

// `switchback record --all` at kFrequency into DIR/TAG.pb.gz and DIR/TAG.json, attached and
// past its scan of the running processes when this returns.
std::unique_ptr<Child> StartRecordAll(const fs::path& dir, const std::string& tag) {
  auto rec = std::make_unique<Child>(
      std::vector<std::string>{kSwitchback, "record", "--all", "--duration", "600", "--frequency",
                               std::to_string(kFrequency), "--quiet", "--output", (dir / (tag + ".pb.gz")).string(),
                               "--stats", (dir / (tag + ".json")).string()},
      dir / (tag + ".stdout"), dir / (tag + ".stderr"));
  EXPECT_TRUE(WaitAttached(rec->pid(), seconds(60))) << "switchback record never opened a perf event";
  std::this_thread::sleep_for(seconds(2));
  return rec;
}

// Stops REC (SIGINT: it writes its outputs) and loads DIR/TAG.pb.gz and DIR/TAG.json.
void StopRecord(Child* rec, const fs::path& dir, const std::string& tag, std::optional<ProfileData>* p,
                nlohmann::json* stats) {
  rec->Signal(SIGINT);
  RunResult rr = rec->Wait(seconds(120));
  ASSERT_TRUE(rr.exited_ok()) << Describe(rr);
  std::string err;
  *p = LoadPprof(dir / (tag + ".pb.gz"), &err);
  ASSERT_TRUE(*p) << err;
  *stats = nlohmann::json::parse(sb::ReadFile((dir / (tag + ".json")).string()).value());
}

class ShortLivedTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback needs BPF (root and BTF): " << why;
    dir_ = TestDir();
    // A copy of its own, so that no other test's runs made its template.
    exe_ = dir_ / "shortlived";
    fs::copy_file(kWorkloadDir + "/shortlived", exe_, fs::copy_options::overwrite_existing);
  }

  // Runs the workload kRuns times: the first one, then (once its executable is analysed) the
  // others back to back. Returns runs 2..kRuns.
  std::vector<ProcRun> RunMany() {
    ProcRun first = SpawnAndWait({exe_.string(), "-cpu", kRunCpu});
    EXPECT_EQ(first.status, 0);
    std::this_thread::sleep_for(seconds(2));  // its analysis ends; not what is measured
    std::vector<ProcRun> runs;
    for (int i = 1; i < kRuns; i++) {
      runs.push_back(SpawnAndWait({exe_.string(), "-cpu", kRunCpu}));
      EXPECT_EQ(runs.back().status, 0) << "run " << i + 1;
    }
    return runs;
  }

  static Tally Expect(const std::vector<ProcRun>& runs) {
    Tally t;
    for (const auto& r : runs) t.expected += r.cpu_s * kFrequency;
    return t;
  }

  static std::set<int64_t> Pids(const std::vector<ProcRun>& runs) {
    std::set<int64_t> pids;
    for (const auto& r : runs) pids.insert(r.pid);
    return pids;
  }

  // `record --all` while RunMany runs; the profile and the stats.
  void RecordRuns(const std::string& tag, Tally* tally, nlohmann::json* stats) {
    auto rec = StartRecordAll(dir_, tag);
    std::vector<ProcRun> runs = RunMany();
    std::optional<ProfileData> p;
    ASSERT_NO_FATAL_FAILURE(StopRecord(rec.get(), dir_, tag, &p, stats));
    *tally = Expect(runs);
    Count(*p, Pids(runs), tally);
    tally->followed = Followed(*stats, Pids(runs));
  }

  fs::path dir_, exe_;
};

void ExpectKept(const Tally& t, const nlohmann::json& stats) {
  std::cout << "[ info     ] " << t.Describe() << "; from template " << stats.value("from_template_processes", 0)
            << ", unknown_pid_samples " << stats.value("unknown_pid_samples", 0) << ", not analysed yet "
            << stats.value("binary_not_analyzed_yet_samples", 0) << ", runs followed " << t.followed << "\n";
  ASSERT_GT(t.expected, 0);
  EXPECT_GE(static_cast<double>(t.kept), kMinKeptShare * t.expected) << t.Describe();
  // Never more than the runs burned (one tick of slack per run: a sample lands at a tick).
  EXPECT_LE(static_cast<double>(t.kept), t.expected + kRuns) << t.Describe();
  EXPECT_GE(static_cast<double>(t.whole), 0.99 * static_cast<double>(t.kept)) << t.Describe();
  EXPECT_EQ(t.followed, kRuns - 1) << "events lost " << stats.value("process_events_lost", 0);
  // Followed from their exec, not from a report of their first sample (a run read in the middle
  // of its execve is followed with the same facts, without its template: a few at most).
  EXPECT_GE(stats.value("from_template_processes", 0), (kRuns - 1) * 9 / 10);
}

TEST_F(ShortLivedTest, RecordAllKeepsTheSamplesOfLaterRuns) {
  Tally t;
  nlohmann::json stats;
  ASSERT_NO_FATAL_FAILURE(RecordRuns("idle", &t, &stats));
  ExpectKept(t, stats);
}

TEST_F(ShortLivedTest, RecordAllKeepsThemBesideACpuHog) {
  CpuHogs hogs(dir_);
  Tally t;
  nlohmann::json stats;
  ASSERT_NO_FATAL_FAILURE(RecordRuns("hog", &t, &stats));
  ExpectKept(t, stats);
}

TEST_F(ShortLivedTest, AgentKeepsTheSamplesOfLaterRuns) {
  fs::path data = dir_ / "data";
  Child agent({kSwitchback, "agent", "--dir", data.string(), "--interval", "2s", "--testing-short-interval",
               "--frequency", std::to_string(kFrequency), "--no-kernel"},
              dir_ / "agent.stdout", dir_ / "agent.stderr");
  ASSERT_TRUE(WaitAttached(agent.pid(), seconds(60))) << "the agent never attached";
  std::this_thread::sleep_for(seconds(2));
  std::vector<ProcRun> runs = RunMany();
  std::this_thread::sleep_for(seconds(1));
  agent.Signal(SIGTERM);
  RunResult r = agent.Wait(seconds(60));
  auto log = sb::ReadFile((dir_ / "agent.stderr").string());
  ASSERT_TRUE(r.exited_ok()) << Describe(r) << (log.ok() ? *log : "");
  size_t bad = 0;
  auto index = sb::agent::ReadIndex(data.string(), &bad);
  ASSERT_FALSE(index.empty()) << (log.ok() ? *log : "");
  Tally t = Expect(runs);
  std::set<int64_t> pids = Pids(runs);
  for (const auto& w : index) {
    std::string err;
    auto p = LoadPprof(data / w.path, &err);
    ASSERT_TRUE(p) << w.path << ": " << err;
    Count(*p, pids, &t);
  }
  std::cout << "[ info     ] agent: " << t.Describe() << ", " << index.size() << " windows\n";
  // The agent's last line says how many processes it followed from their exec.
  std::string text = log.ok() ? *log : "";
  size_t at = text.find("processes were followed from their exec");
  ASSERT_NE(at, std::string::npos) << text;
  size_t num = text.rfind("; ", at);
  ASSERT_NE(num, std::string::npos);
  int from_exec = std::atoi(text.c_str() + num + 2);
  EXPECT_GE(from_exec, (kRuns - 1) * 9 / 10) << text.substr(num, 120);
  EXPECT_GE(static_cast<double>(t.kept), kMinKeptShare * t.expected) << t.Describe();
  EXPECT_LE(static_cast<double>(t.kept), t.expected + kRuns) << t.Describe();
  EXPECT_GE(static_cast<double>(t.whole), 0.99 * static_cast<double>(t.kept)) << t.Describe();
}

// Samples of PID in P: total, whole, with FN in the stack, and any with a function of AVOID.
struct PidStacks {
  int64_t total = 0, whole = 0, in_fn = 0, avoided = 0;
  std::string example;  // a stack that is not whole
};
PidStacks StacksOf(const ProfileData& p, int64_t pid, const std::string& fn, const std::string& avoid) {
  PidStacks r;
  for (const auto& s : p.samples) {
    auto it = s.num_labels.find("pid");
    if (it == s.num_labels.end() || it->second != pid) continue;
    auto frames = LeafFirst(p, s);
    std::string e = EndOf(frames);
    r.total += s.count;
    if (e == "root" || e == "goroutine_exited" || e == "goroutine_left") {
      r.whole += s.count;
    } else if (r.example.empty()) {
      r.example = e + ":";
      for (const auto& f : frames) r.example += " " + f;
    }
    if (std::find(frames.begin(), frames.end(), fn) != frames.end()) r.in_fn += s.count;
    if (!avoid.empty() && std::find(frames.begin(), frames.end(), avoid) != frames.end()) r.avoided += s.count;
  }
  std::cout << "[ info     ] pid " << pid << ": " << r.total << " samples, " << r.whole << " whole, " << r.in_fn
            << " in " << fn << "\n";
  return r;
}

void ExpectOwnStacks(const ProfileData& p, const ProcRun& run, const std::string& fn, const std::string& avoid) {
  ASSERT_EQ(run.status, 0);
  PidStacks r = StacksOf(p, run.pid, fn, avoid);
  EXPECT_GT(r.total, 0) << "pid " << run.pid;
  EXPECT_GE(static_cast<double>(r.whole), 0.99 * static_cast<double>(r.total)) << "pid " << run.pid << ": " << r.example;
  EXPECT_GT(r.in_fn, r.total / 2) << "pid " << run.pid;
  EXPECT_EQ(r.avoided, 0) << "pid " << run.pid << " shows " << avoid << ", a function of the other build";
}

// The executable replaced on disk under the same path between two runs, by a rename (a new
// inode: go build, a package upgrade): the next run's stacks are the new build's.
TEST_F(ShortLivedTest, AnExecutableReplacedByARenameIsAnalysedAgain) {
  auto rec = StartRecordAll(dir_, "renamed");
  ProcRun a = SpawnAndWait({exe_.string(), "-cpu", "100ms"});
  std::this_thread::sleep_for(seconds(1));
  ProcRun a2 = SpawnAndWait({exe_.string(), "-cpu", "100ms"});  // from the template of this build
  // Another program (syswrite: other functions) renamed over the path: another inode.
  fs::path tmp = dir_ / "shortlived.new";
  fs::copy_file(kWorkloadDir + "/syswrite", tmp, fs::copy_options::overwrite_existing);
  fs::rename(tmp, exe_);
  ProcRun b = SpawnAndWait({exe_.string(), "-duration", "300ms", "-workers", "1"});
  std::this_thread::sleep_for(seconds(1));
  ProcRun b2 = SpawnAndWait({exe_.string(), "-duration", "300ms", "-workers", "1"});
  std::optional<ProfileData> p;
  nlohmann::json stats;
  ASSERT_NO_FATAL_FAILURE(StopRecord(rec.get(), dir_, "renamed", &p, &stats));
  ASSERT_EQ(a.status, 0);
  ExpectOwnStacks(*p, a2, "main.spin", "main.writeLoop");
  ExpectOwnStacks(*p, b, "main.writeLoop", "main.spin");
  ExpectOwnStacks(*p, b2, "main.writeLoop", "main.spin");
}

// The executable rewritten in place (cp over it: the same inode, other bytes): the next run is
// not made from the old build's template, and the runs of the old build, whose file now holds
// the new program, are never shown with the new program's functions.
TEST_F(ShortLivedTest, AnExecutableRewrittenInPlaceIsAnalysedAgain) {
  auto rec = StartRecordAll(dir_, "rewritten");
  ProcRun a = SpawnAndWait({exe_.string(), "-cpu", "100ms"});
  std::this_thread::sleep_for(seconds(1));
  ProcRun a2 = SpawnAndWait({exe_.string(), "-cpu", "100ms"});
  std::this_thread::sleep_for(seconds(1));  // a later ctime second: the file's key changes
  {
    std::ifstream in(kWorkloadDir + "/syswrite", std::ios::binary);
    std::ofstream out(exe_, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
  }
  ProcRun c = SpawnAndWait({exe_.string(), "-duration", "300ms", "-workers", "1"});
  std::optional<ProfileData> p;
  nlohmann::json stats;
  ASSERT_NO_FATAL_FAILURE(StopRecord(rec.get(), dir_, "rewritten", &p, &stats));
  ASSERT_EQ(a.status, 0);
  ASSERT_EQ(a2.status, 0);
  ExpectOwnStacks(*p, c, "main.writeLoop", "main.spin");
  for (const ProcRun* old : {&a, &a2}) {
    PidStacks r = StacksOf(*p, old->pid, "main.spin", "main.writeLoop");
    EXPECT_EQ(r.avoided, 0) << "pid " << old->pid << " (the old build) shown with the new build's functions";
  }
}

// The first process of a new executable exits before its analysis could end: the analysis
// still ends, and the next process is followed from its exec.
TEST_F(ShortLivedTest, AnalysisOutlivesTheFirstProcess) {
  auto rec = StartRecordAll(dir_, "first");
  ProcRun first = SpawnAndWait({exe_.string(), "-cpu", "0"});  // gone in a millisecond or two
  std::this_thread::sleep_for(seconds(2));
  ProcRun second = SpawnAndWait({exe_.string(), "-cpu", "50ms"});
  std::optional<ProfileData> p;
  nlohmann::json stats;
  ASSERT_NO_FATAL_FAILURE(StopRecord(rec.get(), dir_, "first", &p, &stats));
  ASSERT_EQ(first.status, 0);
  ASSERT_EQ(second.status, 0);
  EXPECT_GE(stats.value("from_template_processes", 0), 1);
  Tally t;
  t.expected = second.cpu_s * kFrequency;
  Count(*p, {second.pid}, &t);
  std::cout << "[ info     ] second run: " << t.Describe() << "\n";
  EXPECT_GE(static_cast<double>(t.kept), kMinKeptShare * t.expected) << t.Describe();
}

}  // namespace
