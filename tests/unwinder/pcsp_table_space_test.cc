// The sampler's pcsp table space: one table per binary shared by its processes, space freed
// with the last of them and reused only after the delay, ids never repeated.
#include "unwinder/pcsp_table_space.h"

#include <gtest/gtest.h>

namespace sb::unwinder {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(PcspTableSpace, ProcessesOfOneBinaryShareItsTable) {
  PcspTableSpace s(100);
  auto t0 = PcspTableSpace::Clock::time_point{};
  auto a = s.Acquire("bin-a", 40, t0);
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_TRUE(a->fresh);
  EXPECT_NE(a->id, 0u);
  auto again = s.Acquire("bin-a", 40, t0);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->fresh);  // not written twice
  EXPECT_EQ(again->first, a->first);
  EXPECT_EQ(again->id, a->id);
  EXPECT_EQ(s.used(), 40u);
  s.Release("bin-a", t0);
  EXPECT_EQ(s.used(), 40u);  // one process of it still runs
  s.Release("bin-a", t0);
  EXPECT_EQ(s.used(), 0u);
  EXPECT_EQ(s.tables(), 0u);
  s.Release("bin-a", t0);  // unknown: nothing happens
  EXPECT_EQ(s.used(), 0u);
}

TEST(PcspTableSpace, FreedSpaceIsReusedAfterTheDelayWithANewId) {
  PcspTableSpace s(100, seconds(1));
  auto t0 = PcspTableSpace::Clock::time_point{} + seconds(10);
  auto a = s.Acquire("bin-a", 60, t0);
  ASSERT_TRUE(a.ok());
  auto b = s.Acquire("bin-b", 40, t0);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->first, 60u);
  EXPECT_FALSE(s.Acquire("bin-c", 1, t0).ok());  // full
  s.Release("bin-a", t0);
  // A sample that looked up bin-a's facts just before may still read its cells: not yet reused.
  auto early = s.Acquire("bin-c", 50, t0 + milliseconds(500));
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.error().find("pcsp table full"), std::string::npos) << early.error();
  EXPECT_NE(early.error().find("freed less than a second ago"), std::string::npos) << early.error();
  auto c = s.Acquire("bin-c", 50, t0 + seconds(1));
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->first, 0u);
  EXPECT_TRUE(c->fresh);
  EXPECT_NE(c->id, a->id);  // the pcsp cache never takes bin-c's pcs for bin-a's
  EXPECT_NE(c->id, b->id);
}

TEST(PcspTableSpace, NeighbouringFreedRunsJoin) {
  PcspTableSpace s(90, seconds(0));
  auto t = PcspTableSpace::Clock::time_point{};
  ASSERT_TRUE(s.Acquire("a", 30, t).ok());
  ASSERT_TRUE(s.Acquire("b", 30, t).ok());
  ASSERT_TRUE(s.Acquire("c", 30, t).ok());
  s.Release("a", t);
  s.Release("c", t);
  EXPECT_FALSE(s.Acquire("big", 60, t).ok());  // 60 free, but in two runs
  s.Release("b", t);
  auto big = s.Acquire("big", 90, t);  // all three joined
  ASSERT_TRUE(big.ok()) << big.error();
  EXPECT_EQ(big->first, 0u);
}

TEST(PcspTableSpace, ManyBinariesComeAndGoInBoundedSpace) {
  // An agent over weeks: binaries replaced again and again never fill the array.
  PcspTableSpace s(2000, seconds(1));  // room for one table pending reuse and the next
  auto t = PcspTableSpace::Clock::time_point{};
  for (int i = 0; i < 5000; i++) {
    std::string key = "build-" + std::to_string(i);
    auto r = s.Acquire(key, 100 + (i % 7) * 50, t);
    ASSERT_TRUE(r.ok()) << i << ": " << r.error();
    t += seconds(2);
    s.Release(key, t);
  }
  EXPECT_EQ(s.tables(), 0u);
  EXPECT_EQ(s.used(), 0u);
}

}  // namespace
}  // namespace sb::unwinder
