// Cores as production writes them, through the real CLI: a Go program killed with SIGABRT under
// GOTRACEBACK=crash and dumped by the kernel (no gdb), compressed with zstd as systemd-coredump
// stores it, made into a case without --binary (the core's NT_FILE names the executable) and
// checked; the same core as lz4 on standard input and as xz; and the documented error for a
// binary whose build id is not the one the core mapped.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "base/file_util.h"
#include "coredump/replay/case_file.h"
#include "tests/common/shell_util.h"

namespace sb::coredump {
namespace {

namespace fs = std::filesystem;

size_t Threads(pid_t pid) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec))
    n++;
  return n;
}

class KernelCore : public ::testing::Test {
 protected:
  // Runs the demo with RLIMIT_CORE unlimited in DIR (core_pattern "core" writes it there),
  // kills it with SIGABRT, and returns the core's path ("" with *why set when none appears).
  static std::string MakeCore(const std::string& dir, std::string* why) {
    auto pattern = ReadFile("/proc/sys/kernel/core_pattern");
    std::string pat = pattern.ok() ? *pattern : "";
    while (!pat.empty() && (pat.back() == '\n' || pat.back() == ' ')) pat.pop_back();
    if (!pat.empty() && pat[0] == '|') {
      *why = "core_pattern is a pipe (" + pat + "): the kernel hands cores to a program, not to a file here";
      return "";
    }
    if (pat.find('/') != std::string::npos) {
      *why = "core_pattern " + pat + " writes cores to another directory; this test reads them from its cwd";
      return "";
    }
    pid_t pid = fork();
    if (pid == 0) {
      struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
      setrlimit(RLIMIT_CORE, &unlimited);
      if (chdir(dir.c_str()) != 0) _exit(126);
      setenv("GOTRACEBACK", "crash", 1);
      if (!freopen("traceback.txt", "w", stderr)) _exit(126);
      execl(SB_DEMO, SB_DEMO, "-mode=spin,chan", "-duration=120s", nullptr);
      _exit(127);
    }
    // Ready when the spin and chan workers run on their own threads, then a little longer.
    for (int i = 0; i < 200 && Threads(pid) < 4; i++) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    kill(pid, SIGABRT);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status) || !WCOREDUMP(status)) {
      *why = "the kernel wrote no core (status " + std::to_string(status) + ", core_pattern " + pat + ")";
      return "";
    }
    for (const auto& name : {std::string("core"), "core." + std::to_string(pid)})
      if (fs::exists(dir + "/" + name)) return dir + "/" + name;
    *why = "the kernel reported a core but none is in " + dir + " (core_pattern " + pat + ")";
    return "";
  }

  static void SetUpTestSuite() {
    dir_ = new std::string(test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "kernel-core"));
    core_ = new std::string(MakeCore(*dir_, &why_));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);  // the kernel core is never kept, let alone committed
    delete dir_;
    delete core_;
  }
  void SetUp() override {
    if (core_->empty()) GTEST_SKIP() << why_;
  }
  static std::string Sb() { return test::Quote(SB_SWITCHBACK); }

  static std::string* dir_;
  static std::string* core_;
  static std::string why_;
};
std::string* KernelCore::dir_;
std::string* KernelCore::core_;
std::string KernelCore::why_;

TEST_F(KernelCore, SystemdZstdCoreBecomesACaseThatPasses) {
  // systemd-coredump's form: core.COMM.UID.BOOT_ID.PID.USEC.zst, zstd-compressed.
  std::string zst = *dir_ + "/core.demo.0.1a2b3c.4242.1700000000000000.zst";
  auto z = test::RunCommand("zstd -q -f " + test::Quote(*core_) + " -o " + test::Quote(zst));
  ASSERT_EQ(z.status, 0) << z.out;
  std::string cases = *dir_ + "/cases";
  // No --binary: the core's NT_FILE names the executable, which is on this machine.
  auto made = test::RunCommand(Sb() + " coredump new --core " + test::Quote(zst) + " --name kernel-sigabrt --dir " +
                               test::Quote(cases) + " --state crash --cache " + test::Quote(*dir_ + "/cache"));
  ASSERT_EQ(made.status, 0) << made.out;
  EXPECT_NE(made.out.find("zstd core"), std::string::npos) << made.out;
  EXPECT_NE(made.out.find("build id matches (Go build id"), std::string::npos) << made.out;
  auto text = ReadFile(cases + "/kernel-sigabrt.json");
  ASSERT_TRUE(text.ok()) << made.out;
  auto c = ParseCase(*text);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->arch, "amd64");
  ASSERT_GE(c->threads.size(), 3u);
  // The goroutines Go's own traceback shows running spin are on our threads' stacks too.
  auto tb = ReadFile(*dir_ + "/traceback.txt");
  ASSERT_TRUE(tb.ok());
  ASSERT_NE(tb->find("main.spin"), std::string::npos) << "Go's traceback shows no spinning goroutine:\n" << *tb;
  bool spin = false, signal = false;
  for (const auto& t : c->threads) {
    for (const auto& f : t.frames) spin |= f.rfind("main.spin", 0) == 0;
    for (const auto& x : t.crossed) signal |= x == "signal";
  }
  EXPECT_TRUE(spin) << "no thread's stack reaches main.spin: " << *text;
  EXPECT_TRUE(signal) << "GOTRACEBACK=crash stops threads in signal handlers; none crossed one: " << *text;
  // The stored case is small (slimmed core, zstd) and checks green in a fresh directory.
  uint64_t bytes = 0;
  for (const auto& e : fs::directory_iterator(cases + "/blobs")) bytes += e.file_size();
  EXPECT_LT(bytes, 3u << 20) << "case blobs";
  auto check = test::RunCommand(Sb() + " coredump check " + test::Quote(cases) + " --cache " +
                                test::Quote(*dir_ + "/cache2"));
  EXPECT_EQ(check.status, 0) << check.out;
  EXPECT_NE(check.out.find("coredump check: 1 passed, 0 failed, 0 errors of 1 cases"), std::string::npos) << check.out;
}

TEST_F(KernelCore, Lz4OnStandardInputAndXz) {
  std::string err1 = *dir_ + "/lz4.err", err2 = *dir_ + "/xz.err";
  auto lz4 = test::RunCommand("lz4 -q -c " + test::Quote(*core_) + " | " + Sb() + " coredump analyze --core - --binary " +
                                  test::Quote(SB_DEMO) + " 2>" + test::Quote(err1),
                              false);
  ASSERT_EQ(lz4.status, 0) << lz4.out;
  EXPECT_NE(ReadFile(err1).value().find("standard input: lz4 core"), std::string::npos) << ReadFile(err1).value();
  EXPECT_NE(lz4.out.find("main.spin"), std::string::npos) << lz4.out;
  std::string xz = *dir_ + "/core.xz";
  ASSERT_EQ(test::RunCommand("xz -1 -c " + test::Quote(*core_) + " > " + test::Quote(xz)).status, 0);
  auto a = test::RunCommand(Sb() + " coredump analyze --core " + test::Quote(xz) + " 2>" + test::Quote(err2), false);
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_NE(ReadFile(err2).value().find("xz core"), std::string::npos) << ReadFile(err2).value();
  EXPECT_EQ(a.out, lz4.out) << "the same core read two ways gives different stacks";
  // `new` takes a piped core too (coredumpctl dump PID | switchback coredump new --core - ...).
  std::string cases = *dir_ + "/piped";
  auto made = test::RunCommand("zstd -q -c " + test::Quote(*core_) + " | " + Sb() + " coredump new --core - --binary " +
                               test::Quote(SB_DEMO) + " --name piped --dir " + test::Quote(cases));
  ASSERT_EQ(made.status, 0) << made.out;
  auto check = test::RunCommand(Sb() + " coredump check " + test::Quote(cases + "/piped.json"));
  EXPECT_EQ(check.status, 0) << check.out;
  auto json = ReadFile(cases + "/piped.json");
  ASSERT_TRUE(json.ok());
  EXPECT_NE(json->find("\"main.spin"), std::string::npos) << "piped.json expects no main.spin frame: " << *json;
}

TEST_F(KernelCore, BuildIdMismatchIsTheDocumentedError) {
  // Another Go program given as the executable the core mapped.
  auto info = test::RunCommand(Sb() + " coredump analyze --core " + test::Quote(*core_) + " --binary " +
                               test::Quote(std::string(SB_DEMOCGO) + "=" + SB_DEMO));
  EXPECT_EQ(info.status, 1) << info.out;
  EXPECT_NE(info.out.find("switchback coredump analyze: build id mismatch: the core's executable has Go build id "),
            std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("is not the executable that dumped this core"), std::string::npos) << info.out;
  auto made = test::RunCommand(Sb() + " coredump new --core " + test::Quote(*core_) + " --binary " +
                               test::Quote(std::string(SB_DEMOCGO) + "=" + SB_DEMO) + " --name wrong --dir " +
                               test::Quote(*dir_ + "/wrong"));
  EXPECT_EQ(made.status, 1) << made.out;
  EXPECT_NE(made.out.find("build id mismatch"), std::string::npos) << made.out;
  EXPECT_FALSE(fs::exists(*dir_ + "/wrong/wrong.json"));
  EXPECT_FALSE(fs::exists(*dir_ + "/wrong/blobs")) << "blobs were stored for a refused core";
}

}  // namespace
}  // namespace sb::coredump
