// The coredump case workflow through the real CLI: `new --pid` captures a live Go process with
// gcore, `check` passes, a changed expectation makes `check` fail and name the difference,
// `rebase` rewrites it, and `check` passes again.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/file_util.h"
#include "coredump/replay/case_file.h"
#include "tests/common/shell_util.h"

namespace sb::coredump {
namespace {

namespace fs = std::filesystem;

TEST(CaseWorkflow, NewCheckBreakRebase) {
  if (geteuid() != 0) GTEST_SKIP() << "gcore needs to ptrace the workload: run as root";
  ASSERT_EQ(test::RunCommand("command -v gcore").status, 0) << "gcore missing: run tools/install-deps.sh";
  std::string dir = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "case-workflow");
  pid_t pid = fork();
  if (pid == 0) {
    execl(SB_DEMO, SB_DEMO, "-mode=spin,chan", "-duration=60s", nullptr);
    _exit(127);
  }
  // The core must be the demo's: wait for the exec (fork returns before it), then give its
  // goroutines a moment to start.
  std::error_code exe_ec;
  for (int i = 0; i < 3000 && !fs::equivalent("/proc/" + std::to_string(pid) + "/exe", SB_DEMO, exe_ec); i++)
    usleep(10 * 1000);
  usleep(500 * 1000);
  std::string sb = test::Quote(SB_SWITCHBACK);
  std::string cache = test::Quote(dir + "/cache");
  auto made = test::RunCommand(sb + " coredump new --pid " + std::to_string(pid) + " --name live --dir " +
                               test::Quote(dir) + " --state live --cache " + cache);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_EQ(made.status, 0) << made.out;
  std::string json = dir + "/live.json";
  ASSERT_TRUE(fs::exists(json)) << made.out;

  auto text = ReadFile(json);
  ASSERT_TRUE(text.ok());
  auto c = ParseCase(*text);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->arch, "amd64");
  EXPECT_EQ(c->go_version.rfind("go1.", 0), 0u);
  ASSERT_FALSE(c->threads.empty());
  bool spin = false;
  for (const auto& t : c->threads)
    for (const auto& f : t.frames) spin |= f.rfind("main.", 0) == 0;
  EXPECT_TRUE(spin) << "no main.* frame in any thread: " << *text;

  auto check = test::RunCommand(sb + " coredump check " + test::Quote(json) + " --cache " + cache);
  EXPECT_EQ(check.status, 0) << check.out;
  EXPECT_NE(check.out.find("1 passed, 0 failed"), std::string::npos) << check.out;

  // A reviewed change would alter the stacks; here the expectation is altered instead.
  c->threads[0].frames[0] = "main.somethingElse+0x0 in x.go:1";
  ASSERT_TRUE(WriteFileAtomic(json, SerializeCase(*c)).ok());
  check = test::RunCommand(sb + " coredump check " + test::Quote(json) + " --cache " + cache);
  EXPECT_NE(check.status, 0) << check.out;
  EXPECT_NE(check.out.find("FAIL"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("main.somethingElse"), std::string::npos) << "the difference is not named: " << check.out;

  auto rebase = test::RunCommand(sb + " coredump rebase " + test::Quote(json) + " --cache " + cache);
  EXPECT_EQ(rebase.status, 0) << rebase.out;
  check = test::RunCommand(sb + " coredump check " + test::Quote(json) + " --cache " + cache);
  EXPECT_EQ(check.status, 0) << check.out;
  fs::remove_all(dir);
}

TEST(CaseWorkflow, MissingCoreIsAClearError) {
  std::string dir = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "case-missing");
  std::string json = dir + "/x.json";
  ASSERT_TRUE(WriteFileAtomic(json, R"({"name":"x","arch":"amd64","core":"blobs/none.zst",
    "files":[{"path":"/a","file":"blobs/a.zst","role":"executable"}]})").ok());
  auto check = test::RunCommand(test::Quote(SB_SWITCHBACK) + " coredump check " + test::Quote(json));
  EXPECT_NE(check.status, 0);
  EXPECT_NE(check.out.find("missing file"), std::string::npos) << check.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sb::coredump
