// Shared harness of the `switchback record` integration tests (see record_harness.h).
#include "tests/integration/record_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "base/file_util.h"
#include "profile/pprof_reader.h"

#ifndef SB_SWITCHBACK_BIN
#error "SB_SWITCHBACK_BIN must name the switchback binary"
#endif
#ifndef SB_WORKLOAD_DIR
#error "SB_WORKLOAD_DIR must name the directory of the built workloads"
#endif
#ifndef SB_GO_EXECUTABLE
#define SB_GO_EXECUTABLE "go"
#endif
#ifndef SB_TEST_OUT_DIR
#define SB_TEST_OUT_DIR "/tmp/switchback-record-test"
#endif

namespace sb::itest {

const std::string kSwitchback = SB_SWITCHBACK_BIN;
const std::string kWorkloadDir = SB_WORKLOAD_DIR;
const std::string kGo = SB_GO_EXECUTABLE;

const std::set<std::string> kRootFunctions = {"runtime.goexit", "runtime.mstart",   "runtime.rt0_go",
                                              "runtime.sigtramp", "_rt0_amd64_linux", "_rt0_amd64",
                                              "_rt0_arm64_linux", "_rt0_arm64"};
// sigtramp is not here: the signal crossing continues into the interrupted context.
const std::set<std::string> kHardRoots = {"runtime.goexit", "runtime.mstart", "runtime.rt0_go"};

// ---------------------------------------------------------------------------------------------
// Processes

fs::path TestDir() { return TestDir(SB_TEST_OUT_DIR); }

// ---------------------------------------------------------------------------------------------
// Profiles

// Function names of S, leaf first, inline frames expanded (innermost first).
std::vector<std::string> LeafFirst(const ProfileData& p, const Sample& s) {
  std::vector<std::string> out;
  for (uint32_t li : s.locations) {
    if (li >= p.locations.size()) {
      out.push_back("[bad location]");
      continue;
    }
    const auto& loc = p.locations[li];
    if (loc.lines.empty()) {
      char buf[32];
      snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(loc.address));
      out.push_back(buf);
      continue;
    }
    for (const auto& line : loc.lines) out.push_back(line.function);
  }
  return out;
}

int64_t TotalCount(const ProfileData& p) {
  int64_t n = 0;
  for (const auto& s : p.samples) n += s.count;
  return n;
}

// Function -> share of samples (by count) whose stack contains it at least once.
std::map<std::string, double> InclusiveShares(const ProfileData& p) {
  std::map<std::string, int64_t> counts;
  int64_t total = 0;
  for (const auto& s : p.samples) {
    auto frames = LeafFirst(p, s);
    std::set<std::string> uniq(frames.begin(), frames.end());
    for (const auto& f : uniq) counts[f] += s.count;
    total += s.count;
  }
  std::map<std::string, double> shares;
  for (const auto& [f, n] : counts) shares[f] = total ? static_cast<double>(n) / total : 0;
  return shares;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// How a stack ends, as a key: "root" / "goroutine_exited" / "goroutine_left" (all whole) /
// "stopped:REASON" /
// "bad:..." (the latter explain why).
std::string EndOf(const std::vector<std::string>& frames) {
  if (frames.empty()) return "bad:empty stack";
  for (size_t i = 0; i + 1 < frames.size(); ++i) {
    if (kHardRoots.count(frames[i])) return "bad:frames past " + frames[i];
    if (StartsWith(frames[i], "[stopped:")) return "bad:stop pseudo-frame not at the root end";
  }
  const std::string& last = frames.back();
  if (kRootFunctions.count(last)) return "root";
  // A new thread's first instructions (runtime.clone's child side: its own code, or the code it
  // shares with the parent while its TLS g is still 0): nothing is above them, and the unwinder
  // ends the stack there with clone as its only frame. clone anywhere else is no root.
  if (last == "runtime.clone" && (frames.size() == 1 || (frames.size() == 2 && frames[0] == "runtime.stackcheck")))
    return "root";  // the child calls stackcheck before anything else
  // goroutine_exited: whole, with no marker; mcall is the base of a g0 stack whose goroutine
  // has exited (the unwinder checked that goexit0 is mcall's callee).
  if (last == "runtime.mcall" && frames.size() >= 2 && frames[frames.size() - 2] == "runtime.goexit0")
    return "goroutine_exited";
  // goroutine_left: whole, with no marker; after dropg (the M works for no goroutine) the
  // goroutine that called into the scheduler through mcall or morestack has run elsewhere
  // since. The unwinder ends a stack at these two on g0 without a marker for no other reason.
  if (last == "runtime.mcall" || last == "runtime.morestack") return "goroutine_left";
  if (StartsWith(last, "[stopped:")) {
    std::string reason = last.substr(9);
    while (!reason.empty() && (reason.front() == ' ')) reason.erase(0, 1);
    if (!reason.empty() && reason.back() == ']') reason.pop_back();
    if (reason == "max_frames") {
      // Only legitimate in the demo's mode depth, which recurses past SB_MAX_FRAMES on purpose.
      size_t deep = std::count_if(frames.begin(), frames.end(),
                                  [](const std::string& f) { return f == "main.depthRecurse"; });
      if (deep < 64) return "stopped:max_frames (not in a deep recursion)";
    }
    return "stopped:" + reason;
  }
  return "bad:ends at " + last;
}

std::string EndReport::Summary() const {
  std::ostringstream s;
  s << "ends of " << total << " samples:";
  std::vector<std::pair<int64_t, std::string>> v;
  for (const auto& [k, n] : by_end) v.push_back({n, k});
  std::sort(v.rbegin(), v.rend());
  for (const auto& [n, k] : v) s << "\n  " << n << "  " << k;
  return s.str();
}

EndReport CheckEnds(const ProfileData& p, const std::set<std::string>& expected_stops,
                    std::vector<std::string>* bad_examples) {
  EndReport r;
  for (const auto& s : p.samples) {
    auto frames = LeafFirst(p, s);
    std::string end = EndOf(frames);
    r.total += s.count;
    r.by_end[end] += s.count;
    bool ok = end == "root" || end == "goroutine_exited" || end == "goroutine_left" ||
              (StartsWith(end, "stopped:") && expected_stops.count(end.substr(8)));
    if (ok) {
      r.ok += s.count;
    } else if (bad_examples && bad_examples->size() < 8) {
      std::string st;
      for (size_t i = 0; i < frames.size() && i < 24; ++i) st += "\n    " + frames[i];
      bad_examples->push_back(end + ":" + st);
    }
  }
  return r;
}

// Every sample whose leaf is LEAF must have CALLER as its next frame. Returns the number of
// such samples; violations are appended to BAD.
int64_t CheckLeafCaller(const ProfileData& p, const std::string& leaf,
                        const std::set<std::string>& callers, int64_t* bad,
                        std::vector<std::string>* examples) {
  int64_t n = 0;
  for (const auto& s : p.samples) {
    auto frames = LeafFirst(p, s);
    if (frames.empty() || frames[0] != leaf) continue;
    n += s.count;
    if (frames.size() < 2 || !callers.count(frames[1])) {
      *bad += s.count;
      if (examples->size() < 5) {
        std::string st;
        for (size_t i = 0; i < frames.size() && i < 8; ++i) st += " <- " + frames[i];
        examples->push_back(st);
      }
    }
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// One recording

// Records and loads everything. Fatal failures are reported through gtest in the caller with
// ASSERT_NO_FATAL_FAILURE.
void Record(const RecordOptions& o, Recording* r) {
  if (r->dir.empty()) r->dir = TestDir();
  r->pprof = r->dir / "switchback.pb.gz";
  r->folded = r->dir / "switchback.folded";
  r->svg = r->dir / "switchback.svg";
  r->stats_path = r->dir / "stats.json";
  r->oracle_path = r->dir / "runtime_pprof.pb.gz";
  fs::path exe = o.workload.find('/') != std::string::npos ? fs::path(o.workload)
                                                          : fs::path(kWorkloadDir) / o.workload;
  ASSERT_TRUE(fs::exists(exe)) << exe << " missing: build target `workloads`";
  ASSERT_TRUE(fs::exists(kSwitchback)) << kSwitchback << " missing: build target `switchback`";

  std::vector<std::string> wargs = {exe.string()};
  wargs.insert(wargs.end(), o.workload_args.begin(), o.workload_args.end());
  if (o.oracle) wargs.push_back("-cpuprofile=" + r->oracle_path.string());
  Child workload(wargs, r->dir / "workload.stdout", r->dir / "workload.stderr");
  r->pid = workload.pid();
  ASSERT_TRUE(WaitExec(r->pid, exe, seconds(30))) << exe << " never started";
  std::this_thread::sleep_for(o.warmup);
  ASSERT_TRUE(workload.running()) << "workload exited early: " << Describe(workload.Wait(milliseconds(0)));

  std::vector<std::string> rargs = {kSwitchback,
                                    "record",
                                    "--pid",
                                    std::to_string(r->pid),
                                    "--duration",
                                    std::to_string(o.duration_s),
                                    "--frequency",
                                    std::to_string(o.frequency),
                                    "--output",
                                    r->pprof.string(),
                                    "--folded",
                                    r->folded.string(),
                                    "--flamegraph",
                                    r->svg.string(),
                                    "--stats",
                                    r->stats_path.string(),
                                    "--quiet"};
  rargs.insert(rargs.end(), o.record_args.begin(), o.record_args.end());
  Child rec(rargs, r->dir / "record.stdout", r->dir / "record.stderr");
  if (o.kill_workload_after.count() > 0) {
    // Count from the moment the sampler is attached, so the recording holds samples for sure.
    EXPECT_TRUE(WaitAttached(rec.pid(), seconds(30))) << "switchback never opened a perf event";
    std::this_thread::sleep_for(o.kill_workload_after);
    workload.Signal(SIGKILL);
  }
  r->record = rec.Wait(seconds(o.duration_s + 60));
  if (o.stop_workload_after) workload.Signal(SIGTERM);
  r->workload = workload.Wait(seconds(30));
  ASSERT_TRUE(r->record.exited_ok()) << "switchback record: " << Describe(r->record);
  if (o.kill_workload_after.count() == 0) {
    ASSERT_TRUE(r->workload.exited_ok()) << "workload: " << Describe(r->workload);
  }

  std::string err;
  r->ours = LoadPprof(r->pprof, &err);
  ASSERT_TRUE(r->ours) << err;
  if (o.oracle && o.kill_workload_after.count() == 0) {
    r->oracle = LoadPprof(r->oracle_path, &err);
    ASSERT_TRUE(r->oracle) << "runtime/pprof profile: " << err;
  }
  auto stats = sb::ReadFile(r->stats_path.string());
  ASSERT_TRUE(stats.ok()) << stats.error();
  r->stats = nlohmann::json::parse(*stats, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(r->stats.is_discarded()) << "stats is not JSON: " << *stats;
  auto folded = sb::ReadFile(r->folded.string());
  ASSERT_TRUE(folded.ok()) << folded.error();
  r->folded_text = *folded;
  auto svg = sb::ReadFile(r->svg.string());
  ASSERT_TRUE(svg.ok()) << svg.error();
  r->svg_text = *svg;
}

// `go tool pprof -top` and `-traces` read FILE and list main.* functions.
void ExpectGoToolPprofReads(const fs::path& file, const fs::path& dir,
                            const std::vector<std::string>& must_list) {
  for (const std::string mode : {"-top", "-traces"}) {
    RunResult r = RunCommand({kGo, "tool", "pprof", mode, file.string()}, dir, "pprof" + mode, seconds(120));
    ASSERT_TRUE(r.exited_ok()) << "go tool pprof " << mode << ": " << Describe(r);
    EXPECT_NE(r.out.find("main."), std::string::npos) << "go tool pprof " << mode << " lists no main.*";
    for (const auto& f : must_list) {
      EXPECT_NE(r.out.find(f), std::string::npos) << "go tool pprof " << mode << " does not list " << f;
    }
  }
}

void ExpectWholeStacks(const ProfileData& p, const std::set<std::string>& expected_stops,
                       double min_share) {
  std::vector<std::string> examples;
  EndReport r = CheckEnds(p, expected_stops, &examples);
  ASSERT_GT(r.total, 0);
  double share = static_cast<double>(r.ok) / r.total;
  std::string ex;
  for (const auto& e : examples) ex += "\n  " + e;
  EXPECT_GE(share, min_share) << r.Summary() << "\nexamples of unexpected ends:" << ex;
  // Frames beyond goexit/mstart/rt0_go, or a stop pseudo-frame in the middle: never.
  int64_t malformed = 0;
  for (const auto& [k, n] : r.by_end) {
    if (StartsWith(k, "bad:frames past") || StartsWith(k, "bad:stop pseudo-frame")) malformed += n;
  }
  EXPECT_EQ(malformed, 0) << r.Summary();
  std::cout << "[ info     ] " << r.Summary() << "\n";
}

// MAX_LOST_SHARE: share of each leaf's samples allowed to lose the caller (0 = none);
// MAX_LOST_SAMPLES: samples allowed to lose it on top of that share.
void ExpectLeafCallers(const ProfileData& p, double max_lost_share, int64_t max_lost_samples) {
  struct Want {
    std::string leaf;
    std::set<std::string> callers;
  };
  const std::vector<Want> wants = {
      {"main.leafAdd", {"main.leafCaller"}},
      {"main.spinInner", {"main.spin", "main.depthBottom"}},
  };
  for (const auto& w : wants) {
    int64_t bad = 0;
    std::vector<std::string> ex;
    int64_t n = CheckLeafCaller(p, w.leaf, w.callers, &bad, &ex);
    std::string exs;
    for (const auto& e : ex) exs += "\n  " + e;
    std::cout << "[ info     ] samples with leaf " << w.leaf << ": " << n << ", caller lost: " << bad << "\n";
    EXPECT_LE(bad, static_cast<int64_t>(max_lost_share * n) + max_lost_samples)
        << bad << " of " << n << " samples with leaf " << w.leaf
                      << " lost its caller:" << exs;
    if (w.leaf == "main.leafAdd") {
      EXPECT_GT(n, 0) << "no sample has main.leafAdd as leaf";
    }
  }
}

void ExpectOracleFunctionsFound(const ProfileData& ours, const ProfileData& oracle, double min_oracle_share) {
  auto mine = InclusiveShares(ours);
  auto theirs = InclusiveShares(oracle);
  const int64_t n_ours = TotalCount(ours);
  int looked_for = 0;
  std::ostringstream table;
  table << "function: runtime/pprof% switchback% (" << TotalCount(oracle) << " and " << n_ours << " samples)";
  for (const auto& [fn, share] : theirs) {
    if (!StartsWith(fn, "main.") || share < min_oracle_share) continue;
    double m = mine.count(fn) ? mine[fn] : 0;
    table << "\n  " << fn << ": " << 100 * share << " " << 100 * m;
    // Looked for only where it is expected in ours often enough not to be absent by chance.
    if (share * static_cast<double>(n_ours) < kMinExpectedSamples) continue;
    ++looked_for;
    EXPECT_GT(m, 0) << fn << " has " << 100 * share << "% of runtime/pprof's samples and none of switchback's "
                    << n_ours << " samples";
  }
  EXPECT_GT(looked_for, 0) << "no main.* function of runtime/pprof's profile to look for";
  std::cout << "[ info     ] " << table.str() << "\n";
}

const nlohmann::json* FindProcess(const nlohmann::json& stats, pid_t pid) {
  if (!stats.contains("processes") || !stats["processes"].is_array()) return nullptr;
  for (const auto& p : stats["processes"]) {
    if (p.contains("pid") && p["pid"].is_number() && p["pid"].get<int64_t>() == pid) return &p;
  }
  return nullptr;
}

int64_t CountForPid(const ProfileData& p, pid_t pid) {
  int64_t n = 0;
  for (const auto& s : p.samples) {
    auto it = s.num_labels.find("pid");
    if (it != s.num_labels.end() && it->second == pid) n += s.count;
  }
  return n;
}
}  // namespace sb::itest
