#include "recorder/sample_aggregator.h"

#include <gtest/gtest.h>

#include <cstring>

namespace sb::recorder {
namespace {

sb_sample Make(uint32_t tid, std::initializer_list<uint64_t> frames, uint8_t stop) {
  sb_sample s{};
  s.pid = 10;
  s.tid = tid;
  s.stop_reason = stop;
  std::strcpy(s.comm, "demo");
  for (uint64_t f : frames) s.frames[s.nframes++] = f;
  return s;
}

TEST(SampleAggregator, CountsIdenticalStacksOnce) {
  SampleAggregator a;
  a.Add(Make(11, {1, 2, 3}, SB_STOP_ROOT));
  a.Add(Make(11, {1, 2, 3}, SB_STOP_ROOT));
  a.Add(Make(12, {1, 2, 3}, SB_STOP_ROOT));        // another thread
  a.Add(Make(11, {1, 2, 3}, SB_STOP_BAD_FP));      // another stop reason
  EXPECT_EQ(a.total(), 4u);
  ASSERT_EQ(a.stacks().size(), 3u);
  EXPECT_EQ(a.per_pid().at(10), 4u);
  const auto& [key, n] = *a.stacks().begin();
  EXPECT_EQ(key.frames, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(key.comm, "demo");
  EXPECT_EQ(n, 2u);
}

TEST(SampleAggregator, GoroutineIdOnlyWhenFlagged) {
  SampleAggregator a;
  sb_sample s = Make(11, {1}, SB_STOP_ROOT);
  s.goid = 99;  // not flagged: garbage from a non-Go thread must not become a label
  a.Add(s);
  s.flags = SB_SAMPLE_HAS_GOID;
  a.Add(s);
  ASSERT_EQ(a.stacks().size(), 2u);
  EXPECT_EQ(a.stacks().begin()->first.goid, 0u);
  EXPECT_EQ(a.stacks().rbegin()->first.goid, 99u);
}

TEST(SampleAggregator, ClampsFrameCount) {
  SampleAggregator a;
  sb_sample s = Make(1, {7}, SB_STOP_MAX_FRAMES);
  s.nframes = 100000;
  a.Add(s);
  EXPECT_EQ(a.stacks().begin()->first.frames.size(), static_cast<size_t>(SB_MAX_FRAMES));
}

}  // namespace
}  // namespace sb::recorder
