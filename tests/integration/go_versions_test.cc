// Live recordings of the demo workloads built with every Go release the project supports: Go
// 1.19 (Debian's golang-go) and 1.21 to 1.27 (tools/fetch-go.sh, Debian packages in a cache).
// For each toolchain, on this amd64 host:
//   - every crossing's counter shows it was taken (demo: leaf, systemstack, mcall, morestack,
//     vdso; democgo: asmcgocall; democgo -callbacks: cgocallback, and asmcgocall below it);
//   - at least 99.8% of the samples are whole and no stop reason takes more than 0.1%;
//   - the stacks agree with runtime/pprof of the same run: the frequent stacks of each
//     profiler are found, exactly, in the other's (see MatchesOracle for the two documented
//     differences), and so are its frequent main.* functions (their shares are printed).
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/shell_util.h"
#include "tests/integration/go_toolchains.h"
#include "tests/integration/record_harness.h"

namespace {

using namespace sb::itest;  // NOLINT: the harness is this file's vocabulary

// Whole stacks (a root, goroutine_exited or goroutine_left), and the most any one way of
// stopping may take (max_frames excepted): the live tests' 99.8% and 0.1% (docs/testing.md,
// "How the live tests judge a stack"). One recording here has ~2,500 samples, where 0.1% is
// 2.5 samples, so a stop reason may also take kMaxStopSamples (a reason at 0.01%, as measured,
// reaches 4 samples in one of these recordings with a probability of 1e-4). stack_ends_test
// asserts 0.1% flat over ~28,000 samples of every mode of every release. Measured with
// stack_ends_test on a loaded 2-core VM: 99.99% of 28,002 samples whole; bad_fp 2 (recurse,
// Go 1.21 and 1.25), end_of_chain 1 (chan, Go 1.23).
constexpr double kMinRootShare = 0.998;
constexpr double kMaxStopShare = 0.001;
// Also the samples that may stop short of a root whatever their share: a loaded machine gives
// fewer samples, where 0.2% is a sample or two.
constexpr int64_t kMaxStopSamples = 3;
// A stack is "frequent" at this share of its profile's samples (1%), and only looked for in the
// other profile where it is expected there kMinExpected times at least: runtime/pprof samples
// at 100 Hz, so its profile may hold only ~700 samples, where a 1% stack is absent by chance
// with a probability of 1e-3 (0.99^700; it has happened, on Go 1.26). With 10
// expected, e^-10 = 5e-5.
constexpr double kFrequentStack = 0.01;
constexpr double kMinExpected = 10;

const std::set<std::string> kVdsoCallers = {"time.now", "runtime.nanotime1", "runtime.walltime",
                                            "runtime.walltime1", "runtime.vgetrandom1"};

// Root-first function names of a sample, normalized for comparison with runtime/pprof:
//   - without runtime.goexit (runtime/pprof omits it);
//   - without vDSO frames, or the runtime functions that call the vDSO, at the leaf:
//     runtime/pprof starts at m.vdsoPC (the return address into their caller) as soon as
//     m.vdsoSP is set, even while the thread still runs in time.now or nanotime1; we show
//     where the thread really was;
//   - without runtime.morestack (Go's traceback replaces that g0 frame by the goroutine's
//     frame when it crosses; we show both);
//   - without runtime.asyncPreempt at the leaf: runtime/pprof puts many samples there because
//     a SIGPROF that is pending while the preemption signal's handler runs is delivered right
//     after it, at the injected call's first instruction (perf-event samples have no such
//     bias).
std::vector<std::string> Normalized(const ProfileData& p, const Sample& s) {
  std::vector<std::string> leaf_first = LeafFirst(p, s);
  size_t skip = 0;
  while (skip < leaf_first.size() &&
         (StartsWith(leaf_first[skip], "__vdso") || StartsWith(leaf_first[skip], "[vdso]") ||
          kVdsoCallers.count(leaf_first[skip]) || leaf_first[skip] == "runtime.asyncPreempt"))
    ++skip;
  std::vector<std::string> out;
  for (auto it = leaf_first.rbegin(); it != leaf_first.rend() - static_cast<long>(skip); ++it) {
    if (*it != "runtime.morestack") out.push_back(*it);
  }
  if (!out.empty() && out.front() == "runtime.goexit") out.erase(out.begin());
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& f : v) s += (s.empty() ? "" : ";") + f;
  return s;
}

// runtime/pprof's stack THEIRS and ours OURS (both normalized) are the same stack when they are
// equal, or when runtime/pprof's starts at runtime.mcall (its traceback does not cross mcall:
// it shows the g0 side only) and ours is that g0 side under the goroutine we crossed into.
bool MatchesOracle(const std::vector<std::string>& theirs, const std::vector<std::string>& ours) {
  if (theirs == ours) return true;
  if (theirs.empty() || theirs.front() != "runtime.mcall" || ours.size() <= theirs.size()) return false;
  return std::equal(theirs.rbegin(), theirs.rend(), ours.rbegin());
}

// Stacks of P (normalized) that run the workload's own code (a main.* frame), with their share
// of all samples. The runtime's own stacks (GC workers, the scheduler on g0, signal handlers)
// are left out: runtime/pprof cannot see most of them (it stops at mcall, and records
// runtime._System / _ExternalCode / _GC / _VDSO pseudo-frames or a lone time.now where its
// traceback gives up).
std::map<std::vector<std::string>, double> StackShares(const ProfileData& p) {
  std::map<std::vector<std::string>, int64_t> counts;
  int64_t total = 0;
  for (const auto& s : p.samples) {
    total += s.count;
    auto st = Normalized(p, s);
    bool user = std::any_of(st.begin(), st.end(), [](const std::string& f) { return StartsWith(f, "main."); });
    if (user) counts[st] += s.count;
  }
  std::map<std::vector<std::string>, double> shares;
  for (const auto& [st, n] : counts) shares[st] = static_cast<double>(n) / total;
  return shares;
}

class GoVersionsTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string why;
    if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback record needs BPF (root and BTF): " << why;
    go_ = GoFor(GetParam(), /*fetch=*/true, &why);
    ASSERT_FALSE(go_.empty()) << why;
  }

  // Builds the workload `name` (testdata/workloads) with this test's Go version and records it
  // live with `o` (its workload set here, and stopped after the recording).
  void RecordWorkload(const std::string& name, bool cgo, RecordOptions o, Recording* r) {
    std::string why;
    o.workload = BuildWorkload(go_, GetParam(), name, cgo, &why);
    ASSERT_FALSE(o.workload.empty()) << why;
    o.stop_workload_after = true;
    ASSERT_NO_FATAL_FAILURE(Record(o, r));
  }

  // The recording of a cgo workload (democgo with `args`): 5 s, no runtime/pprof oracle.
  void RecordCgo(std::vector<std::string> args, Recording* r) {
    RecordOptions o;
    o.workload_args = std::move(args);
    o.oracle = false;
    o.duration_s = 5;
    RecordWorkload("democgo", /*cgo=*/true, o, r);
  }

  // Crossing CROSSING's "crossed" counter in the recording's stats.
  static int64_t Crossed(const Recording& r, const std::string& crossing) {
    if (!r.stats.contains("crossings")) return -1;
    return r.stats["crossings"].value(crossing, nlohmann::json::object()).value("crossed", int64_t{0});
  }

  static void ExpectRootShare(const Recording& r) {
    std::vector<std::string> examples;
    EndReport ends = CheckEnds(*r.ours, /*expected_stops=*/{}, &examples);
    ASSERT_GT(ends.total, 0);
    std::string ex;
    for (const auto& e : examples) ex += "\n  " + e;
    EXPECT_TRUE(ends.total - ends.ok <= kMaxStopSamples ||
                static_cast<double>(ends.ok) / ends.total >= kMinRootShare)
        << ends.Summary() << "\nexamples of stacks that do not end at a root:" << ex;
    for (const auto& [end, n] : ends.by_end) {
      if (end == "root" || end == "goroutine_exited" || end == "goroutine_left" || end == "stopped:max_frames")
        continue;
      EXPECT_TRUE(n <= kMaxStopSamples || static_cast<double>(n) / ends.total <= kMaxStopShare)
          << end << " " << n << " of " << ends.total << "\n" << ends.Summary();
    }
    std::cout << "[ info     ] go" << GetParam() << ": " << ends.Summary() << "\n";
  }

  std::string go_;
};

TEST_P(GoVersionsTest, DemoCrossesEverySwitchAndAgreesWithRuntimePprof) {
  RecordOptions o;
  o.workload_args = {"-mode=all", "-duration=0"};
  Recording r;
  ASSERT_NO_FATAL_FAILURE(RecordWorkload("demo", /*cgo=*/false, o, &r));

  for (const char* c : {"leaf", "systemstack", "mcall", "morestack", "vdso"}) {
    EXPECT_GT(Crossed(r, c), 0) << c << " never crossed with go" << GetParam() << ": "
                                << r.stats.value("crossings", nlohmann::json::object()).dump();
  }
  ExpectRootShare(r);
  ExpectLeafCallers(*r.ours);

  // Frequent stacks of each profiler are found in the other's.
  auto ours = StackShares(*r.ours);
  auto theirs = StackShares(*r.oracle);
  auto found_in = [](const std::vector<std::string>& st, const auto& other, bool st_is_theirs) {
    for (const auto& [o, share] : other) {
      if (st_is_theirs ? MatchesOracle(st, o) : MatchesOracle(o, st)) return true;
    }
    return false;
  };
  int frequent_theirs = 0, frequent_ours = 0;
  for (const auto& [st, share] : theirs) {
    if (share < std::max(kFrequentStack, kMinExpected / TotalCount(*r.ours))) continue;
    ++frequent_theirs;
    EXPECT_TRUE(found_in(st, ours, true))
        << "runtime/pprof stack (" << 100 * share << "%) missing from switchback's profile:\n  " << Join(st);
  }
  for (const auto& [st, share] : ours) {
    if (share < std::max(kFrequentStack, kMinExpected / TotalCount(*r.oracle))) continue;
    // A sample in the vDSO (a clock read: the scheduler's timer checks, time.now): where
    // runtime/pprof's traceback gives up there, it records a pseudo-frame, so such a stack has
    // no counterpart to look for; how frequent it is depends on the machine's clock source.
    static const std::set<std::string> kVdsoCallers = {"runtime.nanotime", "runtime.nanotime1", "runtime.walltime",
                                                       "time.now"};
    if (!st.empty() && kVdsoCallers.count(st.back())) continue;
    ++frequent_ours;
    EXPECT_TRUE(found_in(st, theirs, false))
        << "switchback stack (" << 100 * share << "%) missing from runtime/pprof's profile:\n  " << Join(st);
  }
  // How many stacks are frequent depends on how the CPU was split among the modes: printed.
  EXPECT_GT(frequent_theirs, 0) << "no frequent stack in runtime/pprof to compare";
  std::cout << "[ info     ] go" << GetParam() << ": frequent stacks compared: runtime/pprof "
            << frequent_theirs << ", switchback " << frequent_ours << "\n";

  ExpectOracleFunctionsFound(*r.ours, *r.oracle);
}

TEST_P(GoVersionsTest, CgoCrossesAsmcgocall) {
  Recording r;
  ASSERT_NO_FATAL_FAILURE(RecordCgo({"-duration=0"}, &r));
  EXPECT_GT(Crossed(r, "asmcgocall"), 0) << r.stats.value("crossings", nlohmann::json::object()).dump();
  ExpectRootShare(r);
  // C frames reach the goroutine that called them.
  int64_t c_samples = 0, c_reaching_go = 0;
  std::string first_short;  // the first C stack that does not reach the Go caller, for the failure
  for (const auto& s : r.ours->samples) {
    auto f = LeafFirst(*r.ours, s);
    if (f.empty() || !StartsWith(f[0], "c_spin")) continue;
    c_samples += s.count;
    if (std::find(f.begin(), f.end(), "main.cgoCaller") != f.end()) c_reaching_go += s.count;
    else if (first_short.empty()) first_short = testing::PrintToString(f);
  }
  EXPECT_GT(c_samples, 0) << "no samples in C";
  EXPECT_GE(c_reaching_go, c_samples * 99 / 100) << c_reaching_go << " of " << c_samples
                                                  << " C samples reach main.cgoCaller; the first that does not "
                                                  << "(leaf first): " << first_short;
}

// C code calling back into Go on the goroutine that called C (democgo -callbacks), where each
// callback allocates on the system stack, now and then yields, and now and then calls C that
// calls back once more (nested: the outer callback's g0 frame is found from the inner one's,
// not from m.g0.sched.sp): a callback's stack crosses
// cgocallback back to the C frames on g0 and asmcgocall back to the goroutine that called C.
// asmcgocall's save is the one in cgocallback's fake frame: the goroutine's gobuf holds what
// the callback saved since. Crossed from the gobuf instead, 17% of Go 1.19's samples are whole
// (bad_fp from a stale sched.bp, stale_goroutine, the callback repeated up to max_frames) and
// 96-97% of Go 1.21-1.27's (stale_goroutine: the goroutine parked inside the callback, m.curg
// 0), as tools/bench/stop_reasons.sh MODES=cgo-callbacks measures.
TEST_P(GoVersionsTest, CgoCallbacksReturnToTheGoroutineThatCalledC) {
  Recording r;
  ASSERT_NO_FATAL_FAILURE(RecordCgo({"-duration=0", "-callbacks"}, &r));
  EXPECT_GT(Crossed(r, "cgocallback"), 0) << r.stats.value("crossings", nlohmann::json::object()).dump();
  ExpectRootShare(r);
  int64_t in_callback = 0, reaching_caller = 0, wrong = 0, nested = 0, nested_whole = 0, no_stub = 0;
  // The first stack each shortfall below counts, printed when its check fails (leaf first).
  std::string first_not_reaching, first_nested_short;
  for (const auto& s : r.ours->samples) {
    auto f = LeafFirst(*r.ours, s);
    // crosscall2's caller is the exported function's C stub (a frame-pointer step from its inner
    // frame record, Go 1.21+, emitted the stub's BP as a frame there).
    for (size_t i = 0; i + 1 < f.size(); i++)
      if (f[i] == "crosscall2" && f[i + 1] != "goCallback") {
        if (no_stub == 0) ADD_FAILURE() << "first such stack (leaf first): " << testing::PrintToString(f);
        no_stub += s.count;
      }
    auto callbacks = std::count(f.begin(), f.end(), "runtime.cgocallback");
    auto calls = std::count(f.begin(), f.end(), "runtime.asmcgocall");
    // Every callback's C frames lead back to an asmcgocall, and the workload nests one deep.
    if (callbacks > 2 || callbacks > calls) {
      if (wrong == 0) ADD_FAILURE() << "first such stack (leaf first): " << testing::PrintToString(f);
      wrong += s.count;
    }
    if (std::find(f.begin(), f.end(), "main.callbackWork") == f.end()) continue;
    in_callback += s.count;
    auto cgocall = std::find(f.begin(), f.end(), "runtime.asmcgocall");
    if (cgocall != f.end() && std::find(cgocall, f.end(), "main.callbackCaller") != f.end())
      reaching_caller += s.count;
    else if (first_not_reaching.empty())
      first_not_reaching = testing::PrintToString(f);
    if (callbacks != 2) continue;
    // Nested: the inner callback, its C frames (c_call_go) and asmcgocall, the outer callback
    // that called C again, its C frames (c_callback_loop) and asmcgocall, the Go caller. (The
    // outer cgocallback crossed at the inner one's g0 frame walked the inner C frames twice.)
    nested += s.count;
    if (calls == 2 && std::find(cgocall, f.end(), "main.callIntoCAgain") != f.end() &&
        std::find(cgocall, f.end(), "c_callback_loop") != f.end() &&
        std::find(cgocall, f.end(), "main.callbackCaller") != f.end())
      nested_whole += s.count;
    else if (first_nested_short.empty())
      first_nested_short = testing::PrintToString(f);
  }
  // How many samples land in the callbacks depends on the CPU the workload got: printed.
  std::cout << "[ info     ] go" << GetParam() << ": callback samples " << in_callback << ", nested " << nested
            << "\n";
  EXPECT_GT(in_callback, 0) << "no samples in the callbacks";
  EXPECT_GE(reaching_caller, in_callback * 998 / 1000)
      << reaching_caller << " of " << in_callback << " callback samples reach main.callbackCaller past asmcgocall;"
      << " the first that does not (leaf first): " << first_not_reaching;
  EXPECT_EQ(wrong, 0) << "stacks with more callbacks than the workload nests, or a callback not returning to an asmcgocall";
  EXPECT_EQ(no_stub, 0) << "stacks where crosscall2 is not called by the C stub goCallback";
  EXPECT_GT(nested, 0) << "no samples in nested callbacks";
  EXPECT_GE(nested_whole, nested * 998 / 1000)
      << nested_whole << " of " << nested << " nested callback samples reach the outer callback and main.callbackCaller;"
      << " the first that does not (leaf first): " << first_nested_short;
}

INSTANTIATE_TEST_SUITE_P(Go, GoVersionsTest,
                         testing::Values("1.19", "1.21", "1.22", "1.23", "1.24", "1.25", "1.26", "1.27"),
                         [](const testing::TestParamInfo<std::string>& p) {
                           std::string n = "go" + p.param;
                           std::replace(n.begin(), n.end(), '.', '_');
                           return n;
                         });

}  // namespace
