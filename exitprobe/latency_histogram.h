// The latency histogram the BPF side fills (exitprobe.h: exact below 8 ns, then 8 linear
// sub-buckets per power of two) and what is read from it: percentiles and the log2 text
// histogram funclatency prints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sb::exitprobe {

size_t BucketIndex(uint64_t ns);  // the same function as the BPF side
uint64_t BucketLow(size_t index);   // smallest value in the bucket
uint64_t BucketHigh(size_t index);  // largest value in the bucket

// The q-quantile (0..1) of the histogram: the middle of the bucket holding it, clamped to the
// exact [min, max] the BPF side keeps. Error: at most half a bucket (6.25% of the value).
uint64_t Percentile(const std::vector<uint64_t>& hist, double q, uint64_t min_ns, uint64_t max_ns);

// funclatency's layout: one row per power of two, "low -> high : count |****    |".
std::string Log2HistogramText(const std::vector<uint64_t>& hist);

// "1.25ms", "830ns", "2.0s".
std::string FormatNanos(double ns);

}  // namespace sb::exitprobe
