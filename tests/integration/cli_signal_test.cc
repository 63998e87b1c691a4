// SIGINT / SIGTERM at any point of `switchback record`: while it checks and attaches (early
// signals, with --pid and with --all, whose scan of every process takes longest) and while it
// records. Each time it exits 0 and writes complete outputs with what it has, under their
// final names (no temporary file left), and `go tool pprof` reads the profile. BPF links and
// objects belong to its file descriptors and go when it exits; the sampler detaches its links
// first (BpfSampler's destructor) so no program runs while the maps go away.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/file_util.h"
#include "tests/integration/cli_runner.h"

namespace sb::itest {
namespace {

const std::string kSwitchback = SB_SWITCHBACK_BIN;
const std::string kWorkloadDir = SB_WORKLOAD_DIR;
const std::string kGo = SB_GO_EXECUTABLE;

class SignalTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback record needs BPF (root and BTF): " << why;
  }
};

int64_t Samples(const profile::ProfileData& p) {
  int64_t n = 0;
  for (const auto& s : p.samples) n += s.count;
  return n;
}

// Records with EXTRA args, sends SIG DELAY after it installed its handler (or after it
// attached, when after_attach), and checks the exit and the outputs. Returns the profile's sample count.
int64_t RecordAndSignal(const fs::path& dir, const std::string& tag, std::vector<std::string> extra, int sig,
                        milliseconds delay, bool after_attach) {
  fs::path pprof = dir / (tag + ".pb.gz"), folded = dir / (tag + ".folded"), stats = dir / (tag + ".json");
  std::vector<std::string> argv = {kSwitchback, "record", "--output", pprof.string(), "--folded", folded.string(),
                                   "--stats", stats.string(), "--quiet"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  Child rec(argv, dir / (tag + ".stdout"), dir / (tag + ".stderr"));
  if (after_attach) {
    EXPECT_TRUE(WaitAttached(rec.pid(), seconds(60))) << tag << ": never attached";
  } else {
    EXPECT_TRUE(WaitCatches(rec.pid(), sig, seconds(30))) << tag << ": never installed its handler";
  }
  std::this_thread::sleep_for(delay);
  rec.Signal(sig);
  RunResult r = rec.Wait(seconds(60));
  EXPECT_TRUE(r.exited_ok()) << tag << ": " << Describe(r);
  std::string err;
  auto p = LoadPprof(pprof, &err);
  EXPECT_TRUE(p) << tag << ": " << err;
  EXPECT_TRUE(ReadFile(folded.string()).ok()) << tag;
  auto js = ReadFile(stats.string());
  EXPECT_TRUE(js.ok() && js->find("\"samples\"") != std::string::npos) << tag;
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << tag << ": left " << e.path();
  return p ? Samples(*p) : -1;
}

TEST_F(SignalTest, EarlySignalsWhileAttaching) {
  fs::path dir = TestDir(SB_TEST_OUT_DIR);
  fs::path exe = fs::path(kWorkloadDir) / "demo";
  Child demo({exe.string(), "-mode=spin", "-duration=0"}, dir / "demo.out", dir / "demo.err");
  ASSERT_TRUE(WaitExec(demo.pid(), exe, seconds(30))) << "the demo never started";
  for (int sig : {SIGINT, SIGTERM}) {
    for (int ms : {0, 40, 150}) {
      std::string tag = std::string(sig == SIGINT ? "int" : "term") + "-" + std::to_string(ms);
      RecordAndSignal(dir, tag + "-pid", {"--pid", std::to_string(demo.pid())}, sig, milliseconds(ms), false);
      RecordAndSignal(dir, tag + "-all", {"--all"}, sig, milliseconds(ms), false);
    }
  }
}

TEST_F(SignalTest, SigtermWhileRecordingWritesWhatWasRecorded) {
  fs::path dir = TestDir(SB_TEST_OUT_DIR);
  fs::path exe = fs::path(kWorkloadDir) / "demo";
  Child demo({exe.string(), "-mode=spin", "-duration=0"}, dir / "demo.out", dir / "demo.err");
  ASSERT_TRUE(WaitExec(demo.pid(), exe, seconds(30))) << "the demo never started";
  // --pid: the process is followed before the perf events open, so every sample after the
  // attach counts (with --all the scan of the host may still be running then).
  int64_t n = RecordAndSignal(dir, "term", {"--pid", std::to_string(demo.pid()), "--frequency", "499"}, SIGTERM,
                              milliseconds(2500), true);
  // How many samples 2.5 s give depends on the CPU the demo got.
  std::cout << "[ info     ] samples: " << n << "\n";
  EXPECT_GT(n, 0) << "samples recorded before SIGTERM were not written";
  RunResult top = RunCommand({kGo, "tool", "pprof", "-top", (dir / "term.pb.gz").string()}, dir, "pprof-top",
                             seconds(120));
  ASSERT_TRUE(top.exited_ok()) << Describe(top);
  EXPECT_NE(top.out.find("main.spin"), std::string::npos) << top.out;
}

}  // namespace
}  // namespace sb::itest
