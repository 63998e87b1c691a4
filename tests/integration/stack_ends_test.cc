// The live limits (docs/testing.md): on every supported Go release and every demo workload
// mode, whole stacks (a root, goroutine_exited or goroutine_left) are at least 99.8% of the
// samples and no way of stopping but max_frames takes more than 0.1%.
//
// One recording per release holds every mode at once: each mode runs alone in its own process
// (demo -mode=M, plus the cgo demo), all recorded by one `switchback record -p ... -p ...`, and
// the samples are told apart by their pid label. With ~6,000 samples per recording, 0.1% is
// about 6 samples, so the limits are asserted where they mean something:
//   - per release, over its modes (~6,000 samples);
//   - per mode, over the releases (~6,000 samples);
//   - per release and mode (~700 samples, where one sample is 0.14%) only a loose guard
//     (kMaxCellStopShare), so that one mode going wrong on one release is still caught.
// The table of every cell is printed ([ info ] lines; docs/performance.md, "Whole stacks",
// quotes its totals).
#include <signal.h>
#include <unistd.h>

#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/integration/go_toolchains.h"
#include "tests/integration/record_harness.h"

namespace {

using namespace sb::itest;  // NOLINT: the harness is this file's vocabulary

constexpr double kMinWholeShare = 0.998;
constexpr double kMaxStopShare = 0.001;     // any reason but max_frames
constexpr double kMaxCellStopShare = 0.01;  // one release, one mode: a guard, not the limit
// The sample counts above are an idle machine's: a loaded one gives each process less CPU, and
// the shares are of fewer samples, where one sample can be 0.1% of a release or 1% of a cell.
// A way of stopping (or all of them, for the whole share) that takes at most this many samples
// passes whatever its share, as in go_versions_test.
constexpr int64_t kMaxStopSamples = 3;
constexpr int kSeconds = 6;
constexpr int kFrequency = 499;

// demo's modes (all but depth, a benchmark mode that exceeds --max-frames on purpose), and
// the cgo demo as mode "cgo".
const std::vector<std::string> kModes = {"alloc", "chan", "gosched", "recurse", "vdso", "leaf", "spin", "cgo"};

bool IsWholeEnd(const std::string& end) {
  return end == "root" || end == "goroutine_exited" || end == "goroutine_left";
}

struct Ends {
  int64_t total = 0, whole = 0;
  std::map<std::string, int64_t> stops;  // not whole, max_frames left out of the limits
  void Add(const std::string& end, int64_t n) {
    total += n;
    if (IsWholeEnd(end)) {
      whole += n;
    } else {
      stops[end] += n;
    }
  }
  void Add(const Ends& o) {
    total += o.total;
    whole += o.whole;
    for (const auto& [k, n] : o.stops) stops[k] += n;
  }
  std::string Cell() const {
    std::ostringstream s;
    s << std::fixed << std::setprecision(2) << (total ? 100.0 * whole / total : 0) << "% of " << total;
    for (const auto& [k, n] : stops) s << ", " << k << " " << n;
    return s.str();
  }
};

// Checks ENDS against the limits, naming WHAT in the messages.
void ExpectWithin(const Ends& e, const std::string& what, double max_stop_share, bool check_whole) {
  ASSERT_GT(e.total, 0) << what << ": no samples";
  if (check_whole)
    EXPECT_TRUE(e.total - e.whole <= kMaxStopSamples || static_cast<double>(e.whole) / e.total >= kMinWholeShare)
        << what << ": " << e.Cell();
  for (const auto& [end, n] : e.stops) {
    if (end == "stopped:max_frames") continue;
    EXPECT_TRUE(n <= kMaxStopSamples || static_cast<double>(n) / e.total <= max_stop_share)
        << what << ": " << end << " " << n << " of " << e.total << " (" << e.Cell() << ")";
  }
}

// Records every mode of release VERSION at once, with its files in OUT/goVERSION; adds each
// mode's stack ends to *BY_MODE.
void RecordEveryMode(const std::string& version, const fs::path& out, std::map<std::string, Ends>* by_mode) {
  std::string why, go = GoFor(version, /*fetch=*/true, &why);
  ASSERT_FALSE(go.empty()) << why;
  std::string demo = BuildWorkload(go, version, "demo", /*cgo=*/false, &why);
  ASSERT_FALSE(demo.empty()) << why;
  std::string democgo = BuildWorkload(go, version, "democgo", /*cgo=*/true, &why);
  ASSERT_FALSE(democgo.empty()) << why;

  fs::path dir = out / ("go" + version);
  fs::create_directories(dir);
  std::vector<std::unique_ptr<Child>> workloads;
  std::map<int64_t, std::string> mode_of_pid;
  for (const auto& mode : kModes) {
    std::vector<std::string> argv = mode == "cgo" ? std::vector<std::string>{democgo, "-duration=0"}
                                                  : std::vector<std::string>{demo, "-mode=" + mode, "-duration=0"};
    workloads.push_back(std::make_unique<Child>(argv, dir / (mode + ".stdout"), dir / (mode + ".stderr")));
    mode_of_pid[workloads.back()->pid()] = mode;
    ASSERT_TRUE(WaitExec(workloads.back()->pid(), argv[0], seconds(30))) << "go" << version << " " << mode;
  }
  std::this_thread::sleep_for(seconds(1));
  fs::path pprof = dir / "switchback.pb.gz";
  std::vector<std::string> rargs = {kSwitchback, "record", "--duration", std::to_string(kSeconds), "--frequency",
                                    std::to_string(kFrequency), "--output", pprof.string(),
                                    "--stats", (dir / "stats.json").string(), "--quiet"};
  for (const auto& w : workloads) {
    ASSERT_TRUE(w->running()) << "go" << version << " workload " << mode_of_pid[w->pid()] << " exited early";
    rargs.push_back("--pid");
    rargs.push_back(std::to_string(w->pid()));
  }
  Child rec(rargs, dir / "record.stdout", dir / "record.stderr");
  RunResult rr = rec.Wait(seconds(kSeconds + 90));
  for (const auto& w : workloads) w->Signal(SIGTERM);
  for (const auto& w : workloads) w->Wait(seconds(30));
  ASSERT_TRUE(rr.exited_ok()) << "switchback record: " << Describe(rr);
  std::string err;
  auto p = LoadPprof(pprof, &err);
  ASSERT_TRUE(p) << err;
  std::vector<std::string> examples;
  for (const auto& s : p->samples) {
    auto pid = s.num_labels.find("pid");
    if (pid == s.num_labels.end() || !mode_of_pid.count(pid->second)) continue;
    auto frames = LeafFirst(*p, s);
    std::string end = EndOf(frames);
    (*by_mode)[mode_of_pid[pid->second]].Add(end, s.count);
    if (!IsWholeEnd(end) && examples.size() < 6) {
      std::string st = mode_of_pid[pid->second] + " " + end + ":";
      for (size_t i = 0; i < frames.size() && i < 16; ++i) st += "\n      " + frames[i];
      examples.push_back(st);
    }
  }
  for (const auto& e : examples) std::cout << "[ info     ] go" << version << " not whole: " << e << "\n";
}

class LiveStackEndsTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback record needs BPF (root and BTF): " << why;
  }
};

TEST_F(LiveStackEndsTest, EveryModeOfEveryGoVersionEndsWhole) {
  std::map<std::string, std::map<std::string, Ends>> table;  // version -> mode -> ends
  fs::path out = TestDir();  // emptied once: every release's files stay for a look after a failure
  for (const auto& v : SupportedGoVersions()) {
    ASSERT_NO_FATAL_FAILURE(RecordEveryMode(v, out, &table[v])) << "go" << v;
  }
  std::map<std::string, Ends> per_mode;
  for (const auto& [v, modes] : table) {
    Ends all;
    for (const auto& [mode, e] : modes) {
      std::cout << "[ info     ] go" << v << " " << mode << ": " << e.Cell() << "\n";
      all.Add(e);
      per_mode[mode].Add(e);
      ExpectWithin(e, "go" + v + " mode " + mode, kMaxCellStopShare, /*check_whole=*/false);
    }
    std::cout << "[ info     ] go" << v << " (every mode): " << all.Cell() << "\n";
    ExpectWithin(all, "go" + v + ", every mode", kMaxStopShare, /*check_whole=*/true);
  }
  Ends total;
  for (const auto& mode : kModes) {
    ASSERT_TRUE(per_mode.count(mode)) << "no samples of mode " << mode;
    std::cout << "[ info     ] " << mode << " (every release): " << per_mode[mode].Cell() << "\n";
    ExpectWithin(per_mode[mode], "mode " + mode + ", every release", kMaxStopShare, /*check_whole=*/true);
    total.Add(per_mode[mode]);
  }
  std::cout << "[ info     ] every release and mode: " << total.Cell() << "\n";
}

}  // namespace
