#include "agent/retention.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "agent/window_index.h"
#include "agent/window_naming.h"

namespace sb::agent {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kNow = 1796159163LL;  // 2026-12-01T21:06:03Z

fs::path TempDir() {
  fs::path d = fs::temp_directory_path() / ("sb_retention_test." + std::to_string(getpid()) + "." +
                                            testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A window file of BYTES bytes started AGO seconds before kNow, with its index line.
std::string AddWindow(const fs::path& dir, int64_t ago, uint32_t pid, size_t bytes) {
  std::string rel = WindowRelativePath((kNow - ago) * 1000000000LL, "/bin/demo", pid);
  fs::create_directories((dir / rel).parent_path());
  std::ofstream(dir / rel) << std::string(bytes, 'x');
  // Written at the window's end, a minute after its start.
  auto when = std::chrono::system_clock::from_time_t(kNow - ago + 60);
  fs::last_write_time(dir / rel, fs::file_time_type::clock::from_sys(when));
  IndexEntry e;
  e.path = rel;
  e.start_unix_ns = (kNow - ago) * 1000000000LL;
  e.duration_ns = 60000000000LL;
  e.pid = pid;
  EXPECT_TRUE(AppendIndex(dir, e).ok());
  return rel;
}

TEST(RetentionTest, ListsWindowsOldestFirstAndIgnoresOthers) {
  fs::path d = TempDir();
  std::string b = AddWindow(d, 100, 2, 10);
  std::string a = AddWindow(d, 200, 1, 10);
  std::string c = AddWindow(d, 86400 + 50, 3, 10);  // the day before
  std::ofstream(d / fs::path(a).parent_path() / "notes.txt") << "x";
  std::ofstream(d / (b + ".tmp.123")) << "half";
  auto w = ListWindows(d);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].rel_path, c);
  EXPECT_EQ(w[1].rel_path, a);
  EXPECT_EQ(w[2].rel_path, b);
  EXPECT_EQ(RemoveLeftoverTemporaries(d), 1u);
  EXPECT_FALSE(fs::exists(d / (b + ".tmp.123")));
  fs::remove_all(d);
}

TEST(RetentionTest, ByAgeDeletesOldAndTheirIndexLinesAndEmptyDays) {
  fs::path d = TempDir();
  std::string old_day = AddWindow(d, 2 * 86400, 1, 10);
  std::string old = AddWindow(d, 7200, 2, 10);
  std::string just = AddWindow(d, 3600 + 59, 4, 10);  // started over an hour ago, ended 59 min ago
  std::string fresh = AddWindow(d, 60, 3, 10);
  RetentionPolicy p;
  p.keep_ns = 3600LL * 1000000000LL;
  auto r = ApplyRetention(d, p, kNow);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.deleted, (std::vector<std::string>{old_day, old}));
  EXPECT_FALSE(fs::exists(d / old));
  EXPECT_TRUE(fs::exists(d / fresh));
  EXPECT_TRUE(fs::exists(d / just)) << "age counts from the window's end";
  EXPECT_FALSE(fs::exists(d / fs::path(old_day).parent_path())) << "the emptied day folder stays";
  auto idx = ReadIndex(d, nullptr);
  ASSERT_EQ(idx.size(), 2u);
  EXPECT_EQ(idx[1].path, fresh);
  fs::remove_all(d);
}

TEST(RetentionTest, BySizeDeletesOldestUntilUnderLimit) {
  fs::path d = TempDir();
  std::string w1 = AddWindow(d, 400, 1, 1000);
  std::string w2 = AddWindow(d, 300, 2, 1000);
  std::string w3 = AddWindow(d, 200, 3, 1000);
  std::string w4 = AddWindow(d, 100, 4, 1000);
  // Room for two windows and their index lines (the index counts too).
  uint64_t line = (DiskUsage(d) - 4000) / 4;
  RetentionPolicy p;
  p.max_disk = 2 * (1000 + line) + 10;
  auto r = ApplyRetention(d, p, kNow);
  EXPECT_EQ(r.deleted, (std::vector<std::string>{w1, w2}));
  EXPECT_LE(DiskUsage(d), p.max_disk);
  EXPECT_TRUE(fs::exists(d / w3));
  EXPECT_TRUE(fs::exists(d / w4));
  EXPECT_EQ(ReadIndex(d, nullptr).size(), 2u);
  // Nothing more to do.
  EXPECT_TRUE(ApplyRetention(d, p, kNow).deleted.empty());
  fs::remove_all(d);
}

TEST(RetentionTest, NoPolicyDeletesNothing) {
  fs::path d = TempDir();
  AddWindow(d, 10 * 86400, 1, 10);
  EXPECT_TRUE(ApplyRetention(d, RetentionPolicy{}, kNow).deleted.empty());
  fs::remove_all(d);
}

TEST(RetentionTest, ParseDurationAndSize) {
  EXPECT_EQ(*ParseDuration("90s"), 90LL * 1000000000LL);
  EXPECT_EQ(*ParseDuration("1h30m"), 5400LL * 1000000000LL);
  EXPECT_EQ(*ParseDuration("7d"), 7LL * 86400 * 1000000000LL);
  EXPECT_EQ(*ParseDuration("250ms"), 250000000LL);
  for (const char* bad : {"", "h", "10", "10x", "-1s", "1.5h", "99999999999999d"}) EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  EXPECT_EQ(*ParseSize("1GiB"), 1ULL << 30);
  EXPECT_EQ(*ParseSize("500MiB"), 500ULL << 20);
  EXPECT_EQ(*ParseSize("10MB"), 10000000ULL);
  EXPECT_EQ(*ParseSize("4096"), 4096ULL);
  for (const char* bad : {"", "GiB", "1XB", "-5", "1.5G", "999999999999999TiB"}) EXPECT_FALSE(ParseSize(bad).ok()) << bad;
}

}  // namespace
}  // namespace sb::agent
