// A binary's pcsp table as the unwind core reads it (pcsp_lookup.h sb_lookup_sp_delta): its
// runs, then a bucket index over its text. Built in userspace; header-only so that MakeProcInfo,
// the exit probe, coredump replay and the unit tests of the core build it the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "unwind_types.h"

namespace sb::unwind {

struct PcspTable {
  // What goes into the sp_deltas array from sb_proc_info.delta_first on: the runs (ascending by
  // pc_off), then the bucket index, two u32 per cell (entry k in cell k / 2: pc_off for even k,
  // delta for odd k).
  std::vector<sb_sp_delta> cells;
  uint32_t runs = 0;     // sb_proc_info.delta_count
  uint32_t shift = 0;    // sb_proc_info.delta_index_shift: buckets of 1 << shift bytes of text
  uint32_t buckets = 0;  // sb_proc_info.delta_buckets; 0: no index (the whole table is searched)
};

// Bucket k covers text [k << shift, (k + 1) << shift); index entry k (k = 0 ... buckets) is the
// run covering the bucket's first byte (the last run at or before it; 0 when none is), so a pc
// in bucket k has its run among entries k ... k + 1 of the index, inclusive: one or two runs at
// a typical density, next to each other in the array. The buckets are as fine as leaves them at
// most twice the runs (the index is at most the runs' size): a lookup touches the index cell and
// the one or two cache lines of its runs, where a binary search over a coarser page touched one
// cold line per step (six to eight per lookup in Go 1.19-1.27 binaries, 200-500 ns in BPF).
// shift (tests): buckets of 1 << shift bytes instead.
inline PcspTable BuildPcspTable(const std::vector<sb_sp_delta>& runs, uint64_t text_len, uint32_t shift = 0) {
  PcspTable t;
  t.cells = runs;
  t.runs = static_cast<uint32_t>(runs.size());
  if (runs.empty() || text_len == 0 || text_len > (uint64_t{1} << 40) || shift >= 32) return t;
  if (shift == 0) {
    shift = 4;
    while ((text_len >> shift) > 2 * uint64_t{t.runs}) shift++;
  }
  uint64_t buckets = ((text_len - 1) >> shift) + 1;
  if (buckets >= (uint64_t{1} << 31)) return t;
  std::vector<uint32_t> index(buckets + 1);
  size_t run = 0;
  for (uint64_t k = 0; k <= buckets; k++) {
    uint64_t start = k << shift;
    while (run + 1 < runs.size() && runs[run + 1].pc_off <= start) run++;
    index[k] = static_cast<uint32_t>(run);
  }
  for (size_t k = 0; k < index.size(); k += 2) {
    sb_sp_delta cell{index[k], 0};
    if (k + 1 < index.size()) cell.delta = static_cast<int32_t>(index[k + 1]);
    t.cells.push_back(cell);
  }
  t.shift = shift;
  t.buckets = static_cast<uint32_t>(buckets);
  return t;
}

// The index's description in sb_proc_info (its runs start at delta_first, set by the caller).
inline void SetPcspIndex(sb_proc_info* pi, const PcspTable& t) {
  pi->delta_count = t.runs;
  pi->delta_index_shift = t.shift;
  pi->delta_buckets = t.buckets;
}

}  // namespace sb::unwind
