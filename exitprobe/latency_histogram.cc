#include "exitprobe/latency_histogram.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ebpf/exitprobe.h"

namespace sb::exitprobe {

size_t BucketIndex(uint64_t ns) {
  if (ns < SB_XP_SUBS) return static_cast<size_t>(ns);
  unsigned e = 63 - static_cast<unsigned>(__builtin_clzll(ns));
  unsigned sub = static_cast<unsigned>(ns >> (e - SB_XP_SUB_BITS)) & (SB_XP_SUBS - 1);
  size_t idx = SB_XP_SUBS + (e - SB_XP_SUB_BITS) * SB_XP_SUBS + sub;
  return std::min<size_t>(idx, SB_XP_BUCKETS - 1);
}

uint64_t BucketLow(size_t index) {
  if (index < SB_XP_SUBS) return index;
  size_t e = (index - SB_XP_SUBS) / SB_XP_SUBS + SB_XP_SUB_BITS;
  uint64_t sub = (index - SB_XP_SUBS) % SB_XP_SUBS;
  return (uint64_t{1} << e) + (sub << (e - SB_XP_SUB_BITS));
}

uint64_t BucketHigh(size_t index) {
  if (index + 1 >= SB_XP_BUCKETS) return UINT64_MAX;
  return BucketLow(index + 1) - 1;
}

uint64_t Percentile(const std::vector<uint64_t>& hist, double q, uint64_t min_ns, uint64_t max_ns) {
  uint64_t total = 0;
  for (uint64_t c : hist) total += c;
  if (total == 0) return 0;
  // The rank of the quantile, 1-based: the smallest value with at least q of the calls at or below it.
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(total)));
  rank = std::clamp<uint64_t>(rank, 1, total);
  uint64_t seen = 0;
  for (size_t i = 0; i < hist.size(); i++) {
    seen += hist[i];
    if (seen >= rank) {
      uint64_t lo = BucketLow(i), hi = BucketHigh(i);
      uint64_t mid = lo + (hi - lo) / 2;
      return std::clamp(mid, min_ns, std::max(min_ns, max_ns));
    }
  }
  return max_ns;
}

std::string Log2HistogramText(const std::vector<uint64_t>& hist) {
  // Fold the sub-buckets into powers of two: row k holds [2^k, 2^(k+1)-1] (row 0: 0 -> 1).
  std::vector<uint64_t> rows(64, 0);
  for (size_t i = 0; i < hist.size(); i++) {
    if (hist[i] == 0) continue;
    uint64_t lo = BucketLow(i);
    size_t k = lo < 2 ? 0 : 63 - static_cast<size_t>(__builtin_clzll(lo));
    rows[k] += hist[i];
  }
  size_t first = 64, last = 0;
  uint64_t peak = 0;
  for (size_t k = 0; k < rows.size(); k++)
    if (rows[k]) {
      first = std::min(first, k);
      last = k;
      peak = std::max(peak, rows[k]);
    }
  if (first == 64) return "";
  std::string out = fmt::format("{:>24} : {:<8} {}\n", "nsecs", "count", "distribution");
  constexpr int kWidth = 40;
  for (size_t k = first; k <= last; k++) {
    uint64_t lo = k == 0 ? 0 : uint64_t{1} << k;
    uint64_t hi = k == 63 ? UINT64_MAX : (uint64_t{1} << (k + 1)) - 1;
    int stars = static_cast<int>(rows[k] * kWidth / peak);
    out += fmt::format("{:>10} -> {:<10} : {:<8} |{:<40}|\n", lo, hi, rows[k], std::string(stars, '*'));
  }
  return out;
}

std::string FormatNanos(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f}ns", ns);
  if (ns < 1e6) return fmt::format("{:.2f}us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.2f}ms", ns / 1e6);
  return fmt::format("{:.2f}s", ns / 1e9);
}

}  // namespace sb::exitprobe
