#include "serve/spool.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/file_util.h"
#include "tests/common/shell_util.h"

namespace sb::serve {
namespace {
namespace fs = std::filesystem;

class SpoolTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::MakeTempDir("/tmp", "sb-spool"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Window(const std::string& name, size_t size) {
    std::string p = dir_ + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(p, std::string(size, 'x')).ok());
    return p;
  }
  SpoolItem Item(int64_t from) {
    SpoolItem it;
    it.name = "demo.cpu{}";
    it.from = from;
    it.until = from + 60;
    it.pid = 9;
    it.exe = "/bin/demo";
    return it;
  }
  std::function<void(const std::string&)> log_ = [this](const std::string& s) { logs_.push_back(s); };
  std::vector<std::string> logs_;
  std::string dir_;
};

TEST_F(SpoolTest, OrderSurvivesReopen) {
  {
    auto s = Spool::Open(dir_ + "/spool", 1 << 20, log_);
    ASSERT_TRUE(s.ok()) << s.error();
    std::vector<SpoolItem> dropped;
    for (int i = 0; i < 3; i++) ASSERT_TRUE((*s)->Add(Window("w" + std::to_string(i), 100), Item(i), 0, &dropped).ok());
    EXPECT_TRUE(dropped.empty());
    EXPECT_EQ((*s)->windows(), 3u);
    EXPECT_EQ((*s)->bytes(), 300u);
  }
  fs::remove(dir_ + "/w0");  // the spool holds its own link or copy
  auto s = Spool::Open(dir_ + "/spool", 1 << 20, log_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->windows(), 3u);
  auto o = (*s)->Oldest();
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->from, 0);
  EXPECT_EQ(o->name, "demo.cpu{}");
  EXPECT_EQ(ReadFile(o->data_path).value(), std::string(100, 'x'));
  ASSERT_TRUE((*s)->Remove(o->seq).ok());
  EXPECT_EQ((*s)->Oldest()->from, 1);
  // New numbers continue after the old ones.
  std::vector<SpoolItem> dropped;
  auto added = (*s)->Add(Window("w9", 10), Item(9), 0, &dropped);
  ASSERT_TRUE(added.ok());
  EXPECT_GT(added->seq, 3u);
}

TEST_F(SpoolTest, OldestDroppedFirstSparingTheOneInFlight) {
  auto s = Spool::Open(dir_ + "/spool", 5000, log_);
  ASSERT_TRUE(s.ok());
  std::vector<SpoolItem> dropped;
  for (int i = 0; i < 4; i++) ASSERT_TRUE((*s)->Add(Window("w" + std::to_string(i), 1000), Item(i), 0, &dropped).ok());
  uint64_t first = (*s)->Oldest()->seq;
  // The bound holds five: the sixth needs room, and with the first in flight item 1 goes.
  ASSERT_TRUE((*s)->Add(Window("w4", 1000), Item(4), first, &dropped).ok());
  ASSERT_TRUE((*s)->Add(Window("w5", 1000), Item(5), first, &dropped).ok());
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].from, 1);
  EXPECT_LE((*s)->bytes(), 5000u);
  EXPECT_EQ((*s)->Oldest()->seq, first);
  dropped.clear();
  auto too_big = (*s)->Add(Window("big", 6000), Item(99), 0, &dropped);
  ASSERT_TRUE(too_big.ok());
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].from, 99);
}

TEST_F(SpoolTest, LeftoversOfACrashAreCleaned) {
  std::string sp = dir_ + "/spool";
  fs::create_directories(sp);
  ASSERT_TRUE(WriteFileAtomic(sp + "/00000000000000000007.pb.gz", "p").ok());        // no .json
  ASSERT_TRUE(WriteFileAtomic(sp + "/00000000000000000008.json", "{\"name\":1}").ok());  // damaged
  ASSERT_TRUE(WriteFileAtomic(sp + "/00000000000000000008.pb.gz", "p").ok());
  ASSERT_TRUE(WriteFileAtomic(sp + "/00000000000000000009.pb.gz.tmp", "p").ok());
  auto s = Spool::Open(sp, 1 << 20, log_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->windows(), 0u);
  EXPECT_TRUE(fs::is_empty(sp));
  EXPECT_EQ(logs_.size(), 3u);
  std::vector<SpoolItem> dropped;
  EXPECT_EQ((*s)->Add(Window("w", 1), Item(1), 0, &dropped)->seq, 10u);
}

TEST_F(SpoolTest, MetaRoundTrip) {
  SpoolItem it = Item(5);
  it.bytes = 42;
  auto back = ParseSpoolMeta(SpoolMetaJson(it));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->name, it.name);
  EXPECT_EQ(back->until, 65);
  EXPECT_EQ(back->bytes, 42u);
  for (const char* bad : {"", "[]", "{\"name\":\"a\"}", "{\"name\":\"a\",\"from\":5,\"until\":1,\"pid\":1,\"bytes\":1}",
                          "{\"name\":\"a\",\"from\":\"5\",\"until\":6,\"pid\":1,\"bytes\":1}"}) {
    EXPECT_FALSE(ParseSpoolMeta(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace sb::serve
