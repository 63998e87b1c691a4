// base/build_info and base/kernel_features: the facts --version and switchback_build_info show.
#include "base/build_info.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>

#include "base/kernel_features.h"

namespace sb {
namespace {

TEST(BuildInfoTest, Facts) {
  BuildInfo b = GetBuildInfo();
  EXPECT_EQ(b.version, SB_EXPECTED_VERSION);
  EXPECT_FALSE(b.revision.empty());  // a commit, or "unknown" outside a git checkout
  EXPECT_TRUE(std::regex_match(b.libbpf, std::regex("[0-9]+\\.[0-9]+"))) << b.libbpf;
  EXPECT_TRUE(std::regex_match(b.compiler, std::regex("(gcc|clang) [0-9]+\\.[0-9]+\\.[0-9]+"))) << b.compiler;
}

TEST(KernelFeaturesTest, MatchesThisMachine) {
  KernelFeatures k = ProbeKernelFeatures();
  struct utsname u {};
  ASSERT_EQ(uname(&u), 0);
  EXPECT_EQ(k.release, u.release);
  struct stat st {};
  EXPECT_EQ(k.btf, stat("/sys/kernel/btf/vmlinux", &st) == 0 ? Support::kYes : Support::kNo);
  if (geteuid() == 0) {
    // Root may probe: every answer is a yes or a no (a kernel too old for one says no).
    EXPECT_EQ(k.unknown_reason, "");
    for (Support s : {k.bpf_loop, k.uprobe_multi, k.ringbuf}) EXPECT_NE(s, Support::kUnknown);
  } else if (!k.unknown_reason.empty()) {
    for (Support s : {k.bpf_loop, k.uprobe_multi, k.ringbuf}) EXPECT_EQ(s, Support::kUnknown);
  }
}

// An unprivileged user gets "unknown (needs root)", never a guess: libbpf's own probes would
// answer "supported" for a load that failed before the verifier ran.
TEST(KernelFeaturesTest, UnprivilegedSaysUnknown) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(2);
    KernelFeatures k = ProbeKernelFeatures();
    bool ok = k.unknown_reason == "needs root" && k.bpf_loop == Support::kUnknown &&
              k.uprobe_multi == Support::kUnknown && k.ringbuf == Support::kUnknown &&
              DescribeSupport(k.bpf_loop, k.unknown_reason) == "unknown (needs root)";
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "as nobody: not all BPF features unknown (needs root)";
}

TEST(KernelFeaturesTest, Words) {
  EXPECT_STREQ(SupportLabel(Support::kYes), "true");
  EXPECT_STREQ(SupportLabel(Support::kNo), "false");
  EXPECT_STREQ(SupportLabel(Support::kUnknown), "unknown");
  EXPECT_EQ(DescribeSupport(Support::kYes, "needs root"), "yes");
  EXPECT_EQ(DescribeSupport(Support::kNo, ""), "no");
  EXPECT_EQ(DescribeSupport(Support::kUnknown, ""), "unknown");
  EXPECT_EQ(DescribeSupport(Support::kUnknown, "needs root"), "unknown (needs root)");
}

}  // namespace
}  // namespace sb
