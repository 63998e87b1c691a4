#include "agent/window_naming.h"

#include <gtest/gtest.h>

namespace sb::agent {
namespace {

// 2026-12-01T21:06:03Z
constexpr int64_t kT = 1796159163LL;

TEST(WindowNamingTest, PathIsUtcDayAndTime) {
  EXPECT_EQ(WindowRelativePath(kT * 1000000000LL + 999, "/usr/local/bin/demo", 1234),
            "2026-12-01/210603Z-demo-1234.pb.gz");
}

TEST(WindowNamingTest, ExeNameIsSafe) {
  EXPECT_EQ(SafeExeName("/opt/my app/ser:ver"), "ser_ver");
  EXPECT_EQ(SafeExeName("/x/"), "unknown");
  EXPECT_EQ(SafeExeName(".."), "unknown");
  EXPECT_EQ(SafeExeName(std::string(100, 'a')).size(), 64u);
  EXPECT_EQ(SafeExeName("/bin/a\nb"), "a_b");
}

TEST(WindowNamingTest, ParseRoundTrip) {
  std::string rel = WindowRelativePath(kT * 1000000000LL, "/bin/my-server", 77);
  auto w = ParseWindowRelativePath(rel);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->start_unix_s, kT);
  EXPECT_EQ(w->exe, "my-server");  // the last dash separates the pid
  EXPECT_EQ(w->pid, 77u);
  ASSERT_TRUE(ParseWindowRelativePath("/var/lib/switchback/" + rel));
}

TEST(WindowNamingTest, ParseRejectsOthers) {
  for (const char* s : {"", "x", "2026-12-01/210603Z-demo-1234.pb.gz.tmp.55", "2026-12-01/210603Z-demo.pb.gz",
                        "2026-12-01/210603-demo-1.pb.gz", "2026-13-01/210603Z-demo-1.pb.gz",
                        "2026-12-01/250603Z-demo-1.pb.gz", "2026-12-01/210603Z-demo-0.pb.gz",
                        "2026-12-01/210603Z-demo-99999999999.pb.gz", "20261201xx/210603Z-d-1.pb.gz",
                        "index.jsonl", "2026-12-01/210603Z--1.pb.gz"})
    EXPECT_FALSE(ParseWindowRelativePath(s)) << s;
}

}  // namespace
}  // namespace sb::agent
