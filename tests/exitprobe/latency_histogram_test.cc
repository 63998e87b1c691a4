// The latency histogram's bucket layout (shared with the BPF side) and its percentiles.
#include <gtest/gtest.h>

#include <vector>

#include "ebpf/exitprobe.h"
#include "exitprobe/latency_histogram.h"

namespace sb::exitprobe {
namespace {

TEST(LatencyHistogram, BucketsTileTheRangeWithoutGaps) {
  EXPECT_EQ(BucketLow(0), 0u);
  for (size_t i = 0; i + 1 < SB_XP_BUCKETS; i++) {
    EXPECT_EQ(BucketHigh(i) + 1, BucketLow(i + 1)) << i;
    EXPECT_EQ(BucketIndex(BucketLow(i)), i);
    EXPECT_EQ(BucketIndex(BucketHigh(i)), i);
  }
  EXPECT_EQ(BucketIndex(UINT64_MAX), SB_XP_BUCKETS - 1u);
}

TEST(LatencyHistogram, RelativeWidthIsAtMostAnEighth) {
  for (size_t i = SB_XP_SUBS; i + 1 < SB_XP_BUCKETS; i++) {
    double lo = static_cast<double>(BucketLow(i));
    double width = static_cast<double>(BucketHigh(i) - BucketLow(i) + 1);
    EXPECT_LE(width / lo, 0.125 + 1e-12) << i;
  }
}

TEST(LatencyHistogram, PercentilesComeFromTheRightBucket) {
  std::vector<uint64_t> h(SB_XP_BUCKETS, 0);
  // 90 calls of 1000 ns, 9 of 20000 ns, 1 of 1000000 ns.
  h[BucketIndex(1000)] = 90;
  h[BucketIndex(20000)] = 9;
  h[BucketIndex(1000000)] = 1;
  uint64_t p50 = Percentile(h, 0.5, 1000, 1000000);
  uint64_t p99 = Percentile(h, 0.99, 1000, 1000000);
  uint64_t p100 = Percentile(h, 1.0, 1000, 1000000);
  EXPECT_GE(p50, BucketLow(BucketIndex(1000)));
  EXPECT_LE(p50, BucketHigh(BucketIndex(1000)));
  EXPECT_GE(p99, BucketLow(BucketIndex(20000)));
  EXPECT_LE(p99, BucketHigh(BucketIndex(20000)));
  EXPECT_EQ(p100, 1000000u);  // clamped to the exact max
  EXPECT_EQ(Percentile(std::vector<uint64_t>(SB_XP_BUCKETS, 0), 0.5, 0, 0), 0u);
}

TEST(LatencyHistogram, Log2TextFoldsSubBucketsIntoPowersOfTwo) {
  std::vector<uint64_t> h(SB_XP_BUCKETS, 0);
  h[BucketIndex(1100)] = 3;  // 1024 -> 2047
  h[BucketIndex(1900)] = 1;  // same row
  h[BucketIndex(5000)] = 2;  // 4096 -> 8191
  std::string t = Log2HistogramText(h);
  EXPECT_NE(t.find("1024 -> 2047"), std::string::npos) << t;
  EXPECT_NE(t.find(": 4 "), std::string::npos) << t;
  EXPECT_NE(t.find("2048 -> 4095"), std::string::npos) << t;  // empty rows in between are shown
  EXPECT_NE(t.find("4096 -> 8191"), std::string::npos) << t;
  EXPECT_NE(t.find("|****************************************|"), std::string::npos) << t;
}

}  // namespace
}  // namespace sb::exitprobe
