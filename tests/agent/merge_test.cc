#include "agent/merge.h"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "agent/window_index.h"
#include "agent/window_naming.h"
#include "base/file_util.h"
#include "profile/pprof_reader.h"
#include "profile/writers.h"

namespace sb::agent {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kSec = 1000000000LL;
constexpr int64_t kT0 = 1796159163LL * kSec;

// A window of PID: COUNT_A samples of main.a and COUNT_B of main.b (leaf), both under main.main.
profile::ProfileData Window(int64_t start, uint32_t pid, int64_t count_a, int64_t count_b) {
  profile::ProfileBuilder b;
  profile::Mapping m{0x400000, 0x500000, 0, "/bin/demo", "bid"};
  int mi = b.AddMapping(m);
  auto loc = [&](uint64_t addr, const char* fn) {
    profile::Location l;
    l.mapping_index = mi;
    l.address = addr;
    l.lines.push_back({fn, "main.go", 10});
    return b.AddLocation(l);
  };
  uint32_t main_ = loc(0x401000, "main.main"), a = loc(0x402000, "main.a"), bb = loc(0x403000, "main.b");
  for (auto [leaf, n] : {std::pair{a, count_a}, std::pair{bb, count_b}}) {
    if (n == 0) continue;
    profile::Sample s;
    s.locations = {leaf, main_};
    s.count = n;
    s.nanos = n * 52631578;
    s.labels = {{"exe", "/bin/demo"}, {"pid", std::to_string(pid)}, {"thread", "demo"}};
    s.num_labels = {{"pid", pid}};
    b.AddSample(s);
  }
  profile::ProfileData d = b.Take();
  d.period_nanos = 52631578;
  d.start_time_nanos = start;
  d.duration_nanos = 60 * kSec;
  return d;
}

fs::path TempDir() {
  fs::path d = fs::temp_directory_path() / ("sb_merge_test." + std::to_string(getpid()) + "." +
                                            testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void Store(const fs::path& dir, const profile::ProfileData& p, uint32_t pid, const std::string& exe) {
  std::string rel = WindowRelativePath(p.start_time_nanos, exe, pid);
  fs::create_directories((dir / rel).parent_path());
  ASSERT_TRUE(WriteFileAtomic((dir / rel).string(), *profile::WritePprofGz(p)).ok());
  IndexEntry e;
  e.path = rel;
  e.start_unix_ns = p.start_time_nanos;
  e.duration_ns = p.duration_nanos;
  e.pid = pid;
  e.exe = exe;
  ASSERT_TRUE(AppendIndex(dir, e).ok());
}

int64_t Count(const profile::ProfileData& p, const std::string& leaf) {
  int64_t n = 0;
  for (const auto& s : p.samples)
    if (p.locations[s.locations[0]].lines[0].function == leaf) n += s.count;
  return n;
}

TEST(MergeTest, EqualStacksAreSummed) {
  auto m = MergeProfiles({Window(kT0, 7, 3, 1), Window(kT0 + 60 * kSec, 7, 5, 0), Window(kT0 + 120 * kSec, 7, 0, 2)});
  ASSERT_EQ(m.samples.size(), 2u) << "equal stacks with equal labels are one sample";
  EXPECT_EQ(Count(m, "main.a"), 8);
  EXPECT_EQ(Count(m, "main.b"), 3);
  EXPECT_EQ(m.mappings.size(), 1u);
  EXPECT_EQ(m.locations.size(), 3u);
  EXPECT_EQ(m.start_time_nanos, kT0);
  EXPECT_EQ(m.duration_nanos, 180 * kSec);
  EXPECT_EQ(m.period_nanos, 52631578);
  int64_t nanos = 0;
  for (const auto& s : m.samples) nanos += s.nanos;
  EXPECT_EQ(nanos, 11 * 52631578LL);
}

TEST(MergeTest, DifferentProcessesStayApart) {
  auto m = MergeProfiles({Window(kT0, 7, 3, 0), Window(kT0, 8, 4, 0)});
  EXPECT_EQ(m.samples.size(), 2u);
  EXPECT_EQ(Count(m, "main.a"), 7);
}

TEST(MergeTest, SelectsByPidExeAndTime) {
  fs::path d = TempDir();
  Store(d, Window(kT0, 7, 1, 0), 7, "/bin/demo");
  Store(d, Window(kT0 + 60 * kSec, 7, 2, 0), 7, "/bin/demo");
  Store(d, Window(kT0 + 120 * kSec, 7, 4, 0), 7, "/bin/demo");
  Store(d, Window(kT0, 9, 8, 0), 9, "/usr/sbin/other");

  auto all = MergeWindows(d.string(), MergeQuery{});
  ASSERT_TRUE(all.ok()) << all.error();
  EXPECT_EQ(all->windows, 4u);
  EXPECT_EQ(Count(all->profile, "main.a"), 15);

  MergeQuery by_pid;
  by_pid.pid = 7;
  EXPECT_EQ(Count(MergeWindows(d.string(), by_pid)->profile, "main.a"), 7);
  MergeQuery by_exe;
  by_exe.exe_regex = "other$";
  EXPECT_EQ(Count(MergeWindows(d.string(), by_exe)->profile, "main.a"), 8);
  MergeQuery range;  // windows overlapping [T0+60s, T0+120s): only the second of pid 7
  range.pid = 7;
  range.from_unix_ns = kT0 + 60 * kSec;
  range.to_unix_ns = kT0 + 120 * kSec;
  auto r = MergeWindows(d.string(), range);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->windows, 1u);
  EXPECT_EQ(Count(r->profile, "main.a"), 2);

  MergeQuery none;
  none.pid = 12345;
  EXPECT_FALSE(MergeWindows(d.string(), none).ok());
  MergeQuery bad;
  bad.exe_regex = "(";
  EXPECT_FALSE(MergeWindows(d.string(), bad).ok());
  // A damaged window file is skipped and said, not fatal.
  fs::path first = d / WindowRelativePath(kT0, "/bin/demo", 7);
  ASSERT_TRUE(WriteFileAtomic(first.string(), "garbage").ok());
  auto skipped = MergeWindows(d.string(), by_pid);
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(skipped->windows, 2u);
  EXPECT_EQ(skipped->skipped.size(), 1u);
  fs::remove_all(d);
}

TEST(MergeTest, ParseTime) {
  EXPECT_EQ(*ParseTime("2026-12-01T21:06:03Z"), kT0);
  EXPECT_EQ(*ParseTime("2026-12-01T21:06:03"), kT0);
  EXPECT_EQ(*ParseTime("1796159163"), kT0);
  for (const char* bad : {"", "yesterday", "2026-12-01", "2026-12-01T21:06:03+02:00"}) EXPECT_FALSE(ParseTime(bad).ok()) << bad;
}

}  // namespace
}  // namespace sb::agent
