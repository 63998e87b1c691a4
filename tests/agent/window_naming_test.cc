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

// A second window of the same process in the same second (an agent restarted within it) gets a
// sequence number instead of overwriting the first; both parse, the exe may hold dots.
TEST(WindowNamingTest, SequenceForASecondWindowInTheSameSecond) {
  std::string rel = WindowRelativePath(kT * 1000000000LL, "/bin/my.server", 77, 2);
  EXPECT_EQ(rel, "2026-12-01/210603Z-my.server-77.2.pb.gz");
  auto w = ParseWindowRelativePath(rel);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->exe, "my.server");
  EXPECT_EQ(w->pid, 77u);
  EXPECT_EQ(w->seq, 2);
  auto first = ParseWindowRelativePath(WindowRelativePath(kT * 1000000000LL, "/bin/my.server", 77));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->exe, "my.server");
  EXPECT_EQ(first->seq, 0);
  for (const char* s : {"2026-12-01/210603Z-demo-1.x.pb.gz", "2026-12-01/210603Z-demo-1.02.pb.gz",
                        "2026-12-01/210603Z-demo-1..pb.gz", "2026-12-01/210603Z-demo-1.12345.pb.gz"})
    EXPECT_FALSE(ParseWindowRelativePath(s)) << s;
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
