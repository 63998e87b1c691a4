// Shared harness of the `switchback record` integration tests: child processes, one recording
// of a Go workload (the CLI's pprof, folded, SVG and stats outputs plus the workload's own
// runtime/pprof profile), and checks on the stacks of a profile.
#ifndef SWITCHBACK_TESTS_INTEGRATION_RECORD_HARNESS_H_
#define SWITCHBACK_TESTS_INTEGRATION_RECORD_HARNESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/profile_data.h"
#include "tests/integration/cli_runner.h"

namespace sb::itest {

using sb::profile::ProfileData;
using sb::profile::Sample;

extern const std::string kSwitchback;   // the CLI under test
extern const std::string kWorkloadDir;  // the workloads built by the `workloads` target
extern const std::string kGo;           // the Go toolchain the workloads were built with

// Whole stacks end at one of these (DESIGN.md, "The unwind core contract").
extern const std::set<std::string> kRootFunctions;
// Roots that must never have frames beyond them.
extern const std::set<std::string> kHardRoots;

// Processes, per-test directories and pprof loading: cli_runner.h.
// A fresh output directory for the current test under SB_TEST_OUT_DIR.
fs::path TestDir();

// ---- profiles

// Function names of S, leaf first, inline frames expanded (innermost first).
std::vector<std::string> LeafFirst(const ProfileData& p, const Sample& s);
int64_t TotalCount(const ProfileData& p);
// Function -> share of samples (by count) whose stack contains it at least once.
std::map<std::string, double> InclusiveShares(const ProfileData& p);
bool StartsWith(const std::string& s, const std::string& prefix);
// How a stack ends, as a key: "root" / "goroutine_exited" / "goroutine_left" (all whole) /
// "stopped:REASON" /
// "bad:..." (the latter explain why).
std::string EndOf(const std::vector<std::string>& frames);

struct EndReport {
  int64_t total = 0;
  int64_t ok = 0;
  std::map<std::string, int64_t> by_end;
  std::string Summary() const;
};
EndReport CheckEnds(const ProfileData& p, const std::set<std::string>& expected_stops,
                    std::vector<std::string>* bad_examples);
// Every sample whose leaf is LEAF must have one of CALLERS as its next frame. Returns the
// number of such samples; violations are added to BAD.
int64_t CheckLeafCaller(const ProfileData& p, const std::string& leaf,
                        const std::set<std::string>& callers, int64_t* bad,
                        std::vector<std::string>* examples);

// ---- one recording

struct RecordOptions {
  // A workload name in kWorkloadDir, or a path (contains '/') to any Go executable.
  std::string workload = "demo";
  std::vector<std::string> workload_args = {"-mode=all", "-duration=12s"};
  bool oracle = true;  // pass -cpuprofile
  int duration_s = 8;
  int frequency = 499;
  milliseconds warmup{1000};
  // If > 0: SIGKILL the workload this long after the recording started.
  milliseconds kill_workload_after{0};
  // SIGTERM the workload once the recording ended (for workloads run with -duration=0, so a
  // slow start of the recorder never finds the workload already gone).
  bool stop_workload_after = false;
  std::vector<std::string> record_args;  // extra `switchback record` flags (e.g. --no-labels)
};

struct Recording {
  fs::path dir, pprof, folded, svg, stats_path, oracle_path;
  pid_t pid = -1;
  RunResult record, workload;
  std::optional<ProfileData> ours, oracle;
  nlohmann::json stats;
  std::string folded_text, svg_text;
};

// Records and loads everything into R (R->dir is TestDir() unless set). Fatal failures are
// reported through gtest; callers use ASSERT_NO_FATAL_FAILURE.
void Record(const RecordOptions& o, Recording* r);

// ---- checks

// `go tool pprof -top` and `-traces` read FILE and list main.* functions and MUST_LIST.
void ExpectGoToolPprofReads(const fs::path& file, const fs::path& dir,
                            const std::vector<std::string>& must_list);
// At least MIN_SHARE of the samples end at a root or with one of EXPECTED_STOPS; none has
// frames past a root.
void ExpectWholeStacks(const ProfileData& p, const std::set<std::string>& expected_stops,
                       double min_share);
// main.leafAdd keeps main.leafCaller, main.spinInner its caller. MAX_LOST_SHARE: share of each
// leaf's samples allowed to lose the caller; MAX_LOST_SAMPLES: a number of samples allowed on
// top of it (for losses that do not grow with the recording, which a share of however many
// samples the machine gave would not cover).
void ExpectLeafCallers(const ProfileData& p, double max_lost_share = 0, int64_t max_lost_samples = 0);
// A function of ORACLE (runtime/pprof of the same run) is "expected" in OURS when that many of
// OURS's samples would hold it at ORACLE's share: below that it may be absent by chance
// (e^-10 = 5e-5).
constexpr double kMinExpectedSamples = 10;
// Every main.* function with at least MIN_ORACLE_SHARE of ORACLE's samples, expected in OURS,
// is in OURS. The shares themselves are printed, not compared: how the CPU was split among the
// workload's goroutines, how many samples each profiler got, and how much time the scheduler
// spent on g0 (runtime/pprof's traceback stops at mcall, ours crosses it) all depend on the
// machine.
void ExpectOracleFunctionsFound(const ProfileData& ours, const ProfileData& oracle,
                                double min_oracle_share = 0.05);
const nlohmann::json* FindProcess(const nlohmann::json& stats, pid_t pid);
int64_t CountForPid(const ProfileData& p, pid_t pid);

}  // namespace sb::itest

#endif  // SWITCHBACK_TESTS_INTEGRATION_RECORD_HARNESS_H_
