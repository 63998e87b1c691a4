#include "agent/window_index.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace sb::agent {
namespace {

namespace fs = std::filesystem;

fs::path TempDir() {
  fs::path d = fs::temp_directory_path() / ("sb_index_test." + std::to_string(getpid()) + "." +
                                            testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

IndexEntry Entry(uint32_t pid, int64_t start_s) {
  IndexEntry e;
  e.path = "2026-12-01/210603Z-demo-" + std::to_string(pid) + ".pb.gz";
  e.start_unix_ns = start_s * 1000000000LL;
  e.duration_ns = 60000000000LL;
  e.pid = pid;
  e.exe = "/usr/bin/demo";
  e.labels = {{"host", "h1"}, {"container_id", "abc"}};
  e.samples = 1140;
  e.whole_share = 0.75;
  e.stop_reasons = {{"root", 855}, {"bad_fp", 285}};
  return e;
}

TEST(WindowIndexTest, LineRoundTrip) {
  IndexEntry e = Entry(1234, 1796159163);
  std::string line = IndexLine(e);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = ParseIndexLine(line);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->path, e.path);
  EXPECT_EQ(back->start_unix_ns, e.start_unix_ns);
  EXPECT_EQ(back->duration_ns, e.duration_ns);
  EXPECT_EQ(back->pid, 1234u);
  EXPECT_EQ(back->exe, e.exe);
  EXPECT_EQ(back->labels, e.labels);
  EXPECT_EQ(back->samples, 1140u);
  EXPECT_DOUBLE_EQ(back->whole_share, 0.75);
  EXPECT_EQ(back->stop_reasons, e.stop_reasons);
}

TEST(WindowIndexTest, BadLinesAreOneLineErrors) {
  for (const char* s : {"", "{", "[]", "null", "{}", "{\"path\":\"x\"}",
                        "{\"path\":\"x\",\"start_unix_ns\":1,\"duration_ns\":1}",
                        "{\"path\":\"x\",\"start_unix_ns\":1,\"duration_ns\":1,\"pid\":-3}",
                        "{\"path\":\"x\",\"start_unix_ns\":\"1\",\"duration_ns\":1,\"pid\":3}",
                        "{\"path\":7,\"start_unix_ns\":1,\"duration_ns\":1,\"pid\":3}"}) {
    auto r = ParseIndexLine(s);
    ASSERT_FALSE(r.ok()) << s;
    EXPECT_EQ(r.error().find('\n'), std::string::npos);
  }
  // Wrongly typed optional fields are ignored, not fatal.
  auto r = ParseIndexLine(
      "{\"path\":\"x\",\"start_unix_ns\":1,\"duration_ns\":1,\"pid\":3,\"labels\":{\"a\":1,\"b\":\"c\"},\"samples\":\"9\"}");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->labels, (std::map<std::string, std::string>{{"b", "c"}}));
  EXPECT_EQ(r->samples, 0u);
}

TEST(WindowIndexTest, AppendReadRewriteSkipsDamage) {
  fs::path d = TempDir();
  ASSERT_TRUE(AppendIndex(d, Entry(1, 100)).ok());
  {
    std::ofstream f(d / "index.jsonl", std::ios::app);
    f << "{\"path\":\"half\n";  // a line cut short (full disk)
  }
  ASSERT_TRUE(AppendIndex(d, Entry(2, 200)).ok());
  size_t bad = 0;
  auto all = ReadIndex(d, &bad);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(bad, 1u);
  EXPECT_EQ(all[0].pid, 1u);
  EXPECT_EQ(all[1].pid, 2u);
  ASSERT_TRUE(WriteIndex(d, {all[1]}).ok());
  all = ReadIndex(d, &bad);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(all[0].pid, 2u);
  EXPECT_TRUE(ReadIndex((d / "nope").string(), &bad).empty());
  fs::remove_all(d);
}

}  // namespace
}  // namespace sb::agent
