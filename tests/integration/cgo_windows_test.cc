// runtime.asmcgocall's two windows, live: it sets g to g0 one instruction before it moves SP to
// g0's stack, and back to the goroutine one instruction before it moves SP back. A sample in
// the second walked as on the goroutine from g0's SP reads asmcgocall's saved g as a return
// address: a stray frame between asmcgocall and cgocall in a stack counted whole
// (FindAsmcgocallWindow decodes the windows, sb_switch_window walks them).
//
// The cgo demo with -rounds=0 (a loop of C calls that return at once) is recorded on Go 1.27
// for 8 s at 4999 Hz (~79,000 samples, ~3,500 through asmcgocall): a walk without the windows
// shows 4, 7 and 16 stray frames in three runs (at 999 Hz only 0-1 per run: too few to tell),
// this one none in three. The coredump cases amd64-*-acgo-gp hold the same state exactly.
#include <signal.h>

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/integration/go_toolchains.h"
#include "tests/integration/record_harness.h"

namespace {

using namespace sb::itest;  // NOLINT: the harness is this file's vocabulary

constexpr int kSeconds = 8;

TEST(CgoWindowsTest, ShortCgoCallsHaveNoStrayFrames) {
  std::string why;
  if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback record needs BPF (root and BTF): " << why;
  std::string go = GoFor("1.27", /*fetch=*/true, &why);
  ASSERT_FALSE(go.empty()) << why;
  std::string democgo = BuildWorkload(go, "1.27", "democgo", /*cgo=*/true, &why);
  ASSERT_FALSE(democgo.empty()) << why;
  fs::path dir = TestDir(), pprof = dir / "cgo.pb.gz";
  Child w({democgo, "-duration=0", "-rounds=0"}, dir / "democgo.stdout", dir / "democgo.stderr");
  ASSERT_TRUE(WaitExec(w.pid(), democgo, seconds(30))) << "democgo never started";
  std::this_thread::sleep_for(seconds(1));
  ASSERT_TRUE(w.running()) << "democgo exited early";
  Child rec({kSwitchback, "record", "--pid", std::to_string(w.pid()), "--duration", std::to_string(kSeconds),
             "--frequency", "4999", "--output", pprof.string(), "--quiet"},
            dir / "record.stdout", dir / "record.stderr");
  RunResult rr = rec.Wait(seconds(kSeconds + 60));
  w.Signal(SIGTERM);
  w.Wait(seconds(30));
  ASSERT_TRUE(rr.exited_ok()) << "switchback record: " << Describe(rr);
  std::string err;
  auto p = LoadPprof(pprof, &err);
  ASSERT_TRUE(p) << err;

  // Every frame right below asmcgocall (toward the root) is a function of the binary: cgocall
  // in the loop, a runtime function for the runtime's own C calls. A stray frame is an address.
  int64_t in_asmcgocall = 0, stray = 0;
  std::string example;
  for (const auto& s : p->samples) {
    auto frames = LeafFirst(*p, s);
    for (size_t i = 0; i + 1 < frames.size(); i++) {
      if (frames[i] != "runtime.asmcgocall") continue;
      in_asmcgocall += s.count;
      if (frames[i + 1].rfind("runtime.", 0) != 0) {
        stray += s.count;
        example = frames[i + 1];
      }
      break;
    }
  }
  std::cout << "[ info ] " << TotalCount(*p) << " samples, " << in_asmcgocall << " through asmcgocall, " << stray
            << " with a stray frame below it" << std::endl;
  // The share through asmcgocall (4% as measured) is the CPU's: how long a call into C takes
  // next to the rest of the loop. Printed above; only the stray frames are the unwinder's.
  EXPECT_GT(in_asmcgocall, 0) << "the cgo loop was never sampled: the test means nothing";
  EXPECT_EQ(stray, 0) << "e.g. " << example << " right below runtime.asmcgocall";
  ExpectWholeStacks(*p, {}, 0.998);  // the live tests' limit for whole stacks (docs/testing.md)
}

}  // namespace
