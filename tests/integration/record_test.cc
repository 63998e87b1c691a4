// End-to-end tests of `switchback record` against the Go workloads in testdata/workloads.
//
// Each test starts a workload, records it with the real CLI (BPF, so root and BTF are needed),
// then reads the pprof it wrote and checks what DESIGN.md promises:
//   - `go tool pprof -top` and `-traces` read the file;
//   - stacks are whole (end at a root) or carry an expected stop reason;
//   - frameless leaves keep their caller (pcsp crossing);
//   - systemstack is crossed back to the goroutine that called mallocgc;
//   - function-level inclusive shares agree with the workload's own runtime/pprof profile.
// Artifacts of every test are kept in SB_TEST_OUT_DIR/<test name>/ for inspection.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "profile/pprof_reader.h"
#include "profile/profile_data.h"
#include "tests/integration/cli_runner.h"

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

namespace {

using namespace sb::itest;  // Child, RunCommand, RunResult, fs, milliseconds, ...
using sb::profile::ProfileData;
using sb::profile::Sample;

const std::string kSwitchback = SB_SWITCHBACK_BIN;
const std::string kWorkloadDir = SB_WORKLOAD_DIR;
const std::string kGo = SB_GO_EXECUTABLE;

// Whole stacks end at one of these (DESIGN.md, "The unwind core contract").
const std::set<std::string> kRootFunctions = {"runtime.goexit", "runtime.mstart", "runtime.rt0_go",
                                              "runtime.sigtramp"};
// Roots that must never have frames beyond them (sigtramp may: the signal crossing continues
// into the interrupted context).
const std::set<std::string> kHardRoots = {"runtime.goexit", "runtime.mstart", "runtime.rt0_go"};

// Stop reasons that are expected, by design, for the demo workload:
//   max_frames       main.recurse runs 2000 frames deep; SB_MAX_FRAMES is 128. Accepted only
//                    when the stack really is full of main.recurse frames (see EndOf()).
//   copystack        a goroutine caught while newstack copies its stack: its saved sp/bp point
//                    at the old stack, so the design stops rather than guess (recurse mode).
//   stale_goroutine  mcall after dropg when the g0 slot fails the validity checks (chan,
//                    gosched modes): the design says never guess.
// Anything else (bad_fp, read_fault, end_of_chain, no_offsets, bad_g, not_go, ...) is a bug
// for a pure-Go static or PIE binary and counts against the 99%.
const std::set<std::string> kExpectedStops = {"max_frames", "copystack", "stale_goroutine"};

constexpr double kMinWholeOrExpected = 0.99;  // share of samples (by count)
constexpr double kMinMallocCrossed = 0.90;    // share of mallocgc->systemstack samples
// Inclusive shares of main.* functions must agree with runtime/pprof within this many
// percentage points. Why 10: the two profilers sample the same run but not the same window
// (runtime/pprof covers all 12 s, we record 8 s in the middle) and at different rates (100 Hz
// vs 499 Hz), and runtime/pprof stops at mcall (it attributes park_m/schedule time to no
// goroutine, while we cross mcall into the parked goroutine), so chan/gosched callers gain a
// few points with us. Shares are function-level (a function counts once per sample), because
// runtime/pprof omits runtime.goexit and its stacks end differently.
constexpr double kShareTolerancePoints = 10.0;
constexpr double kMinOracleShare = 0.05;  // compare functions with >= 5% in runtime/pprof

// ---------------------------------------------------------------------------------------------
// Processes and files: tests/integration/cli_runner.h

fs::path TestDir() { return sb::itest::TestDir(SB_TEST_OUT_DIR); }

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

// How a stack ends, as a key: "root" / "stopped:REASON" / "bad:..." (the latter explain why).
std::string EndOf(const std::vector<std::string>& frames) {
  if (frames.empty()) return "bad:empty stack";
  for (size_t i = 0; i + 1 < frames.size(); ++i) {
    if (kHardRoots.count(frames[i])) return "bad:frames past " + frames[i];
    if (StartsWith(frames[i], "[stopped:")) return "bad:stop pseudo-frame not at the root end";
  }
  const std::string& last = frames.back();
  if (kRootFunctions.count(last)) return "root";
  if (StartsWith(last, "[stopped:")) {
    std::string reason = last.substr(9);
    while (!reason.empty() && (reason.front() == ' ')) reason.erase(0, 1);
    if (!reason.empty() && reason.back() == ']') reason.pop_back();
    if (reason == "max_frames") {
      // Only legitimate under main.recurse's 2000 frames or mode depth.
      size_t deep = std::count_if(frames.begin(), frames.end(), [](const std::string& f) {
        return f == "main.recurse" || f == "main.depthRecurse";
      });
      if (deep < 64) return "stopped:max_frames (not in a deep recursion)";
    }
    return "stopped:" + reason;
  }
  return "bad:ends at " + last;
}

struct EndReport {
  int64_t total = 0;
  int64_t ok = 0;
  std::map<std::string, int64_t> by_end;
  std::string Summary() const {
    std::ostringstream s;
    s << "ends of " << total << " samples:";
    std::vector<std::pair<int64_t, std::string>> v;
    for (const auto& [k, n] : by_end) v.push_back({n, k});
    std::sort(v.rbegin(), v.rend());
    for (const auto& [n, k] : v) s << "\n  " << n << "  " << k;
    return s.str();
  }
};

EndReport CheckEnds(const ProfileData& p, const std::set<std::string>& expected_stops,
                    std::vector<std::string>* bad_examples) {
  EndReport r;
  for (const auto& s : p.samples) {
    auto frames = LeafFirst(p, s);
    std::string end = EndOf(frames);
    r.total += s.count;
    r.by_end[end] += s.count;
    bool ok = end == "root" ||
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

struct RecordOptions {
  std::string workload = "demo";
  std::vector<std::string> workload_args = {"-mode=all", "-duration=12s"};
  bool oracle = true;  // pass -cpuprofile
  int duration_s = 8;
  int frequency = 499;
  milliseconds warmup{1000};
  // If > 0: SIGKILL the workload this long after the recording started.
  milliseconds kill_workload_after{0};
};

struct Recording {
  fs::path dir, pprof, folded, svg, stats_path, oracle_path;
  pid_t pid = -1;
  RunResult record, workload;
  std::optional<ProfileData> ours, oracle;
  nlohmann::json stats;
  std::string folded_text, svg_text;
};

// Records and loads everything. Fatal failures are reported through gtest in the caller with
// ASSERT_NO_FATAL_FAILURE.
void Record(const RecordOptions& o, Recording* r) {
  r->dir = TestDir();
  r->pprof = r->dir / "switchback.pb.gz";
  r->folded = r->dir / "switchback.folded";
  r->svg = r->dir / "switchback.svg";
  r->stats_path = r->dir / "stats.json";
  r->oracle_path = r->dir / "runtime_pprof.pb.gz";
  fs::path exe = fs::path(kWorkloadDir) / o.workload;
  ASSERT_TRUE(fs::exists(exe)) << exe << " missing: build target `workloads`";
  ASSERT_TRUE(fs::exists(kSwitchback)) << kSwitchback << " missing: build target `switchback`";

  std::vector<std::string> wargs = {exe.string()};
  wargs.insert(wargs.end(), o.workload_args.begin(), o.workload_args.end());
  if (o.oracle) wargs.push_back("-cpuprofile=" + r->oracle_path.string());
  Child workload(wargs, r->dir / "workload.stdout", r->dir / "workload.stderr");
  r->pid = workload.pid();
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
  Child rec(rargs, r->dir / "record.stdout", r->dir / "record.stderr");
  if (o.kill_workload_after.count() > 0) {
    // Count from the moment the sampler is attached, so the recording holds samples for sure.
    EXPECT_TRUE(WaitAttached(rec.pid(), seconds(30))) << "switchback never opened a perf event";
    std::this_thread::sleep_for(o.kill_workload_after);
    workload.Signal(SIGKILL);
  }
  r->record = rec.Wait(seconds(o.duration_s + 60));
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

// MAX_LOST_SHARE: share of each leaf's samples allowed to lose the caller (0 = none).
void ExpectLeafCallers(const ProfileData& p, double max_lost_share = 0) {
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
    EXPECT_LE(bad, static_cast<int64_t>(max_lost_share * n))
        << bad << " of " << n << " samples with leaf " << w.leaf
                      << " lost its caller:" << exs;
    if (w.leaf == "main.leafAdd") {
      EXPECT_GT(n, 0) << "no sample has main.leafAdd as leaf";
    }
  }
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

class RecordTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback record needs BPF (root and BTF): " << why;
  }
};

// ---------------------------------------------------------------------------------------------
// Tests

// demo -mode=all at 499 Hz: readable output, whole stacks, leaf callers, systemstack crossed
// back to the allocating goroutine, and agreement with runtime/pprof of the same run.
TEST_F(RecordTest, DemoAllModes) {
  Recording r;
  ASSERT_NO_FATAL_FAILURE(Record(RecordOptions{}, &r));
  const ProfileData& ours = *r.ours;
  const ProfileData& oracle = *r.oracle;

  // Enough samples: 8 s at 499 Hz on at least a quarter of one CPU (the box is shared).
  int64_t total = TotalCount(ours);
  EXPECT_GE(total, 499 * 8 / 4) << "too few samples";
  EXPECT_EQ(CountForPid(ours, r.pid), total) << "samples of other processes, or no pid label";

  ASSERT_NO_FATAL_FAILURE(ExpectGoToolPprofReads(r.pprof, r.dir, {"main.leafCaller", "main.spin"}));
  ExpectWholeStacks(ours, kExpectedStops, kMinWholeOrExpected);
  ExpectLeafCallers(ours);

  // Labels: every sample has pid and tid; some have a goroutine id; thread names are set.
  int64_t with_tid = 0, with_goid = 0, with_thread = 0;
  for (const auto& s : ours.samples) {
    if (s.num_labels.count("tid")) with_tid += s.count;
    if (s.num_labels.count("goroutine")) with_goid += s.count;
    if (s.labels.count("thread")) with_thread += s.count;
  }
  EXPECT_EQ(with_tid, total);
  EXPECT_EQ(with_thread, total);
  EXPECT_GT(with_goid, 0);

  // mallocgc -> ... -> systemstack (mallocgc on the goroutine side of the switch): the frames
  // beneath systemstack (closer to the root) must reach main.allocLarge / main.allocSmall.
  int64_t malloc_switch = 0, malloc_crossed = 0;
  std::vector<std::string> malloc_examples;
  for (const auto& s : ours.samples) {
    auto f = LeafFirst(ours, s);
    auto ss = std::find(f.begin(), f.end(), "runtime.systemstack");
    if (ss == f.end()) continue;
    auto mg = std::find(ss, f.end(), "runtime.mallocgc");
    if (mg == f.end()) continue;
    malloc_switch += s.count;
    bool found = std::any_of(ss, f.end(), [](const std::string& fn) {
      return fn == "main.allocLarge" || fn == "main.allocSmall";
    });
    if (found) {
      malloc_crossed += s.count;
    } else if (malloc_examples.size() < 5) {
      std::string st;
      for (const auto& fn : f) st += " <- " + fn;
      malloc_examples.push_back(st);
    }
  }
  std::string mex;
  for (const auto& e : malloc_examples) mex += "\n  " + e;
  std::cout << "[ info     ] mallocgc->systemstack samples: " << malloc_switch << ", reaching main.alloc*: "
            << malloc_crossed << "\n";
  EXPECT_GE(malloc_switch, 5) << "no samples of mallocgc inside systemstack";
  if (malloc_switch > 0) {
    EXPECT_GE(static_cast<double>(malloc_crossed) / malloc_switch, kMinMallocCrossed)
        << malloc_crossed << " of " << malloc_switch
        << " mallocgc->systemstack samples reach main.alloc*; examples:" << mex;
  }

  // Folded stacks and SVG name the leaf caller.
  EXPECT_NE(r.folded_text.find("main.leafCaller;main.leafAdd "), std::string::npos)
      << "folded has no main.leafCaller;main.leafAdd stack";
  EXPECT_NE(r.svg_text.find("<svg"), std::string::npos);
  EXPECT_NE(r.svg_text.find("main.leafCaller"), std::string::npos);

  // Stats JSON.
  const auto& st = r.stats;
  EXPECT_TRUE(st.contains("samples"));
  EXPECT_TRUE(st.contains("stop_reasons"));
  const nlohmann::json* proc = FindProcess(st, r.pid);
  ASSERT_NE(proc, nullptr) << "stats has no process " << r.pid << ": " << st.dump();
  EXPECT_TRUE(proc->value("go_version", std::string()).rfind("go1.", 0) == 0) << proc->dump();
  EXPECT_GT(proc->value("samples", int64_t{0}), 0) << proc->dump();
  if (st.contains("crossings")) {
    for (const char* c : {"systemstack", "leaf"}) {
      EXPECT_GT(st["crossings"].value(c, nlohmann::json::object()).value("crossed", int64_t{0}), 0)
          << c << " never crossed: " << st["crossings"].dump();
    }
  } else {
    ADD_FAILURE() << "stats has no crossings: " << st.dump();
  }

  // runtime/pprof of the same run: function-level inclusive shares of main.* functions.
  auto mine = InclusiveShares(ours);
  auto theirs = InclusiveShares(oracle);
  int compared = 0;
  std::ostringstream table;
  table << "function: runtime/pprof% switchback%";
  for (const auto& [fn, share] : theirs) {
    if (!StartsWith(fn, "main.") || share < kMinOracleShare) continue;
    ++compared;
    double m = mine.count(fn) ? mine[fn] : 0;
    table << "\n  " << fn << ": " << 100 * share << " " << 100 * m;
    EXPECT_NEAR(100 * m, 100 * share, kShareTolerancePoints)
        << fn << " inclusive share differs from runtime/pprof by more than "
        << kShareTolerancePoints << " points";
  }
  EXPECT_GE(compared, 3) << "too few main.* functions above 5% in runtime/pprof";
  std::cout << "[ info     ] " << table.str() << "\n";
}

// Stripped binary (-ldflags=-s -w: no symbol table, no DWARF): offsets come from the runtime's
// assembly, names from .gopclntab.
TEST_F(RecordTest, StrippedBinary) {
  RecordOptions o;
  o.workload = "demo-stripped";
  o.workload_args = {"-mode=all", "-duration=10s"};
  o.oracle = false;
  o.duration_s = 6;
  Recording r;
  ASSERT_NO_FATAL_FAILURE(Record(o, &r));
  ASSERT_NO_FATAL_FAILURE(ExpectGoToolPprofReads(r.pprof, r.dir, {"main.leafCaller"}));
  ExpectWholeStacks(*r.ours, kExpectedStops, kMinWholeOrExpected);
  ExpectLeafCallers(*r.ours);
}

// PIE binary: addresses carry the load bias.
TEST_F(RecordTest, PieBinary) {
  RecordOptions o;
  o.workload = "demo-pie";
  o.workload_args = {"-mode=all", "-duration=10s"};
  o.oracle = false;
  o.duration_s = 6;
  Recording r;
  ASSERT_NO_FATAL_FAILURE(Record(o, &r));
  ASSERT_NO_FATAL_FAILURE(ExpectGoToolPprofReads(r.pprof, r.dir, {"main.leafCaller"}));
  ExpectWholeStacks(*r.ours, kExpectedStops, kMinWholeOrExpected);
  ExpectLeafCallers(*r.ours);
}

// The workload dies (SIGKILL) 3 s after the sampler attached, in a 6 s recording: the recording still succeeds and keeps
// the samples taken before the exit, symbolized.
TEST_F(RecordTest, WorkloadKilledMidRecording) {
  RecordOptions o;
  o.workload_args = {"-mode=leaf,spin", "-duration=0"};
  o.oracle = false;
  o.duration_s = 6;
  o.kill_workload_after = milliseconds(3000);
  Recording r;
  ASSERT_NO_FATAL_FAILURE(Record(o, &r));
  ASSERT_TRUE(WIFSIGNALED(r.workload.status)) << Describe(r.workload);
  int64_t n = CountForPid(*r.ours, r.pid);
  // ~3 s at 499 Hz on two busy goroutines; ask for a small fraction of it.
  EXPECT_GE(n, 200) << "samples of the killed process were lost";
  auto shares = InclusiveShares(*r.ours);
  EXPECT_GT(shares["main.leafCaller"], 0.1) << "samples of the killed process lost their symbols";
  EXPECT_GT(shares["main.spin"], 0.1);
  // A sample taken while the kernel tears the process down can see its user registers but no
  // longer read its stack ([stopped: read_fault] right after the leaf): allow 1% of those.
  ExpectLeafCallers(*r.ours, 0.01);
  const nlohmann::json* proc = FindProcess(r.stats, r.pid);
  ASSERT_NE(proc, nullptr) << r.stats.dump();
  EXPECT_TRUE(proc->value("exited", false)) << proc->dump();
  EXPECT_GT(proc->value("samples", int64_t{0}), 0) << proc->dump();
  ASSERT_NO_FATAL_FAILURE(ExpectGoToolPprofReads(r.pprof, r.dir, {"main.leafCaller"}));
}

// cgo: C frames (compiled with frame pointers) under a goroutine. Samples in c_spin_inner must
// reach the goroutine that called into C (asmcgocall crossing) in most cases.
TEST_F(RecordTest, CgoFramesReachTheCallingGoroutine) {
  RecordOptions o;
  o.workload = "democgo";
  o.workload_args = {"-duration=10s"};
  o.oracle = false;
  o.duration_s = 6;
  Recording r;
  ASSERT_NO_FATAL_FAILURE(Record(o, &r));
  int64_t in_c = 0, reached = 0;
  for (const auto& s : r.ours->samples) {
    auto f = LeafFirst(*r.ours, s);
    if (f.empty() || f[0] != "c_spin_inner") continue;
    in_c += s.count;
    if (std::find(f.begin(), f.end(), "main.cgoCaller") != f.end()) reached += s.count;
  }
  std::cout << "[ info     ] samples with leaf c_spin_inner: " << in_c << ", reaching main.cgoCaller: " << reached
            << "\n";
  ASSERT_GT(in_c, 0) << "no samples with leaf c_spin_inner";
  EXPECT_GE(static_cast<double>(reached) / in_c, 0.9)
      << reached << " of " << in_c << " C samples reach main.cgoCaller";
  auto shares = InclusiveShares(*r.ours);
  EXPECT_GT(shares["main.goSpin"], 0.1);
}

// --all: a Go process that starts after the recording began is found (through the sampler's
// new-process notification) and recorded; a non-Go process running beside it is not.
TEST_F(RecordTest, AllFollowsGoProcessesStartedLater) {
  fs::path dir = TestDir();
  fs::path pprof = dir / "all.pb.gz", stats_path = dir / "stats.json";
  Child rec({kSwitchback, "record", "--all", "--duration", "7", "--frequency", "199", "--output", pprof.string(),
             "--stats", stats_path.string(), "--quiet"},
            dir / "record.stdout", dir / "record.stderr");
  ASSERT_TRUE(WaitAttached(rec.pid(), seconds(60))) << "switchback never opened a perf event";
  std::this_thread::sleep_for(milliseconds(500));
  Child late({(fs::path(kWorkloadDir) / "demo").string(), "-mode=spin", "-duration=4s"}, dir / "demo.stdout",
             dir / "demo.stderr");
  Child other({"/bin/sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"}, dir / "sh.stdout",
              dir / "sh.stderr");
  RunResult r = rec.Wait(seconds(60));
  ASSERT_TRUE(r.exited_ok()) << Describe(r);
  ASSERT_TRUE(late.Wait(seconds(30)).exited_ok());
  other.Wait(seconds(30));
  auto stats = sb::ReadFile(stats_path.string());
  ASSERT_TRUE(stats.ok()) << stats.error();
  auto j = nlohmann::json::parse(*stats, nullptr, false);
  const nlohmann::json* proc = FindProcess(j, late.pid());
  ASSERT_NE(proc, nullptr) << "the late Go process was not followed: " << j.dump();
  EXPECT_GT(proc->value("samples", int64_t{0}), 100) << proc->dump();
  EXPECT_EQ(FindProcess(j, other.pid()), nullptr) << "a non-Go process was followed";
  std::string err;
  auto p = LoadPprof(pprof, &err);
  ASSERT_TRUE(p) << err;
  EXPECT_GT(CountForPid(*p, late.pid()), 100);
  EXPECT_GT(InclusiveShares(*p)["main.spin"], 0.1);
}

// Ctrl-C (SIGINT) with no --duration: the recording ends cleanly and writes everything.
TEST_F(RecordTest, SigintEndsTheRecordingAndWritesTheProfile) {
  fs::path dir = TestDir();
  Child demo({(fs::path(kWorkloadDir) / "demo").string(), "-mode=spin", "-duration=20s"}, dir / "demo.stdout",
             dir / "demo.stderr");
  std::this_thread::sleep_for(milliseconds(500));
  fs::path pprof = dir / "int.pb.gz", folded = dir / "int.folded";
  Child rec({kSwitchback, "record", "--pid", std::to_string(demo.pid()), "--output", pprof.string(), "--folded",
             folded.string(), "--quiet"},
            dir / "record.stdout", dir / "record.stderr");
  ASSERT_TRUE(WaitAttached(rec.pid(), seconds(60)));
  std::this_thread::sleep_for(milliseconds(2000));
  rec.Signal(SIGINT);
  RunResult r = rec.Wait(seconds(30));
  ASSERT_TRUE(r.exited_ok()) << Describe(r);
  std::string err;
  auto p = LoadPprof(pprof, &err);
  ASSERT_TRUE(p) << err;
  EXPECT_GT(CountForPid(*p, demo.pid()), 50);
  auto text = sb::ReadFile(folded.string());
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("main.spin"), std::string::npos);
  // No temporary files left behind.
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
}

// Bad input (missing, exiting and non-Go processes, unwritable outputs, ...) is tested in
// cli_bad_input_test.cc.

TEST(RecordCli, HelpExplainsTheOptions) {
  fs::path dir = TestDir();
  RunResult r = RunCommand({kSwitchback, "record", "--help"}, dir, "help", seconds(20));
  ASSERT_TRUE(r.exited_ok()) << Describe(r);
  for (const char* opt : {"--pid", "--all", "--duration", "--frequency", "--output", "--folded", "--flamegraph",
                          "--stats", "[stopped: REASON]"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt << " not in --help:\n" << r.out;
}

}  // namespace
