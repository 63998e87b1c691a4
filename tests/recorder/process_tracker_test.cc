// ProcessTracker without a sampler (no privileges needed): a Go process is tracked with its
// facts, a non-Go one refused in one line, and a process that ran exec ends like one that
// exited (its facts describe the old program) and is forgotten on request; a pid now owned by
// another process (another start time) is not the one tracked.
#include "recorder/process_tracker.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "symbolizer/binary.h"

extern char** environ;

namespace sb::recorder {
namespace {

// A child process running ARGV, killed and reaped at the end of the test.
class Spawned {
 public:
  explicit Spawned(std::vector<std::string> argv) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], nullptr, nullptr, args.data(), environ) != 0) pid_ = -1;
  }
  ~Spawned() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  uint32_t pid() const { return static_cast<uint32_t>(pid_); }

 private:
  pid_t pid_ = -1;
};

const std::string kDemo = std::string(SB_TESTDATA_BIN) + "/demo";

// Waits until the child's /proc/PID/exe names PATH (posix_spawn returns before the exec).
bool WaitExec(uint32_t pid, const std::string& path) {
  for (int i = 0; i < 200; i++) {
    char buf[4096];
    ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof buf - 1);
    if (n > 0 && std::string(buf, n) == path) return true;
    usleep(10000);
  }
  return false;
}

TEST(ProcessTracker, TracksAGoProcessAndRefusesOneThatIsNot) {
  Spawned demo({kDemo, "-mode=leaf", "-duration=20s"});
  Spawned sleeper({"/bin/sleep", "20"});
  ASSERT_TRUE(WaitExec(demo.pid(), kDemo));
  ASSERT_TRUE(WaitExec(sleeper.pid(), "/usr/bin/sleep") || WaitExec(sleeper.pid(), "/bin/sleep"));
  sym::BinaryCache cache;
  ProcessTracker tracker(&cache, nullptr);
  auto p = tracker.Track(demo.pid(), /*require_go=*/true);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ((*p)->exe, kDemo);
  EXPECT_NE((*p)->facts, nullptr);
  EXPECT_FALSE((*p)->exited);
  auto s = tracker.Track(sleeper.pid(), /*require_go=*/true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("is not a Go program"), std::string::npos) << s.error();
  EXPECT_EQ(s.error().find('\n'), std::string::npos) << s.error();
  EXPECT_EQ(tracker.Find(sleeper.pid()), nullptr);
}

TEST(ProcessTracker, AProcessThatRanExecEndsLikeOneThatExited) {
  Spawned demo({kDemo, "-mode=leaf", "-duration=20s"});
  ASSERT_TRUE(WaitExec(demo.pid(), kDemo));
  sym::BinaryCache cache;
  ProcessTracker tracker(&cache, nullptr);
  ASSERT_TRUE(tracker.Track(demo.pid(), true).ok());
  EXPECT_EQ(tracker.CheckAlive(), 1u);
  EXPECT_FALSE(tracker.NoteExec(demo.pid() + 1000000)) << "not followed";
  ASSERT_TRUE(tracker.NoteExec(demo.pid()));
  EXPECT_EQ(tracker.CheckAlive(), 0u) << "the process still runs, but not the program its facts describe";
  const TrackedProcess* p = tracker.Find(demo.pid());
  ASSERT_NE(p, nullptr) << "kept until forgotten, so its samples can be symbolized";
  EXPECT_TRUE(p->exited);
  EXPECT_TRUE(p->ran_exec);
  EXPECT_FALSE(tracker.NoteExec(demo.pid())) << "already ended";
  tracker.Forget(demo.pid());
  EXPECT_EQ(tracker.Find(demo.pid()), nullptr);
  // Followed anew: the pid is a new process (here the same program again).
  auto again = tracker.Track(demo.pid(), true);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_FALSE((*again)->ran_exec);
  EXPECT_EQ(tracker.CheckAlive(), 1u);
}

TEST(ProcessTracker, APidReusedByAnotherProcessIsNotTheOneTracked) {
  sym::BinaryCache cache;
  ProcessTracker tracker(&cache, nullptr);
  uint32_t self = static_cast<uint32_t>(getpid());
  uint64_t started = ProcessStartTime(self);
  ASSERT_GT(started, 0u);
  TrackedProcess same;
  same.pid = self;
  same.start_time = started;
  tracker.Adopt(same);
  EXPECT_EQ(tracker.CheckAlive(), 1u);
  TrackedProcess other;  // the pid's earlier owner, as the tracker would have kept it
  other.pid = self;
  other.start_time = started - 1;
  tracker.Adopt(other);
  EXPECT_EQ(tracker.CheckAlive(), 0u);
  EXPECT_TRUE(tracker.Find(self)->exited);
  EXPECT_EQ(ProcessStartTime(4000000000u), 0u) << "no such pid";
}

}  // namespace
}  // namespace sb::recorder
