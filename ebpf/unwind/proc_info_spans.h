// The derived fields of an sb_proc_info that let a sample skip most of it: the ranges sorted
// (sb_classify's binary search), the span they cover (special_lo/hi, sb_outside_special), the
// span's blocks that hold no range (special_free, sb_no_special) and the
// span of the sample-start windows (windows_lo/hi, sb_load_g), and the root ranges (roots,
// sb_frame_kind). Built in userspace; header-only
// so that MakeProcInfo and the unit tests of the core derive them the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "unwind_types.h"

namespace sb::unwind {

// The span's block bitmap: the smallest block (at least 64 bytes) that fits the span in
// SB_SPECIAL_BLOCKS blocks; a block is free when no range overlaps it. ranges[0, n) sorted.
inline void SetSpecialFreeBlocks(sb_proc_info* pi, uint32_t n) {
  std::fill(std::begin(pi->special_free), std::end(pi->special_free), 0);
  pi->special_shift = 0;
  if (pi->special_hi <= pi->special_lo) return;
  uint64_t span = pi->special_hi - pi->special_lo;
  uint32_t shift = 6;
  while (((span + (uint64_t{1} << shift) - 1) >> shift) > SB_SPECIAL_BLOCKS) shift++;
  pi->special_shift = shift;
  uint64_t blocks = (span + (uint64_t{1} << shift) - 1) >> shift;
  for (uint64_t b = 0; b < blocks; b++) pi->special_free[b >> 6] |= uint64_t{1} << (b & 63);
  for (uint32_t i = 0; i < n; i++) {
    if (pi->ranges[i].end <= pi->ranges[i].start) continue;
    uint64_t first = (pi->ranges[i].start - pi->special_lo) >> shift;
    uint64_t last = (pi->ranges[i].end - 1 - pi->special_lo) >> shift;
    for (uint64_t b = first; b <= last && b < SB_SPECIAL_BLOCKS; b++)
      pi->special_free[b >> 6] &= ~(uint64_t{1} << (b & 63));
  }
}

// Call after every range and window field is set (runtime addresses).
inline void SetProcInfoSpans(sb_proc_info* pi) {
  uint32_t n = std::min<uint32_t>(pi->nranges, SB_MAX_RANGES);
  std::sort(pi->ranges, pi->ranges + n, [](const sb_range& a, const sb_range& b) { return a.start < b.start; });
  pi->special_lo = pi->special_hi = 0;
  if (n > 0) {
    pi->special_lo = pi->ranges[0].start;
    for (uint32_t i = 0; i < n; i++) pi->special_hi = std::max(pi->special_hi, pi->ranges[i].end);
  }
  SetSpecialFreeBlocks(pi, n);
  // The roots, in ascending order (the ranges are), as offsets from text_start; a root outside
  // Go text or past SB_MAX_ROOTS stays with the search alone.
  pi->nroots = 0;
  std::fill(std::begin(pi->roots), std::end(pi->roots), sb_root_range{});
  for (uint32_t i = 0; i < n && pi->nroots < SB_MAX_ROOTS; i++) {
    const sb_range& r = pi->ranges[i];
    if (r.kind != SB_FN_ROOT || r.start < pi->text_start || r.end <= r.start || r.end > pi->text_end ||
        r.end - pi->text_start > UINT32_MAX)
      continue;
    pi->roots[pi->nroots++] = {static_cast<uint32_t>(r.start - pi->text_start),
                               static_cast<uint32_t>(r.end - pi->text_start)};
  }
  const uint64_t windows[][2] = {
      {pi->gogo_g0_lo, pi->gogo_g0_hi},       {pi->gogo_gp_lo, pi->gogo_gp_hi},
      {pi->save_g_lo, pi->save_g_hi}, {pi->sstack_g0_lo, pi->sstack_g0_hi},
      {pi->sstack_gp_lo, pi->sstack_gp_hi},   {pi->clone_shared_lo, pi->clone_shared_hi},
      {pi->acgo_g0_lo, pi->acgo_g0_hi},       {pi->acgo_gp_lo, pi->acgo_gp_hi},
  };
  pi->windows_lo = pi->windows_hi = 0;
  for (const auto& w : windows) {
    if (w[1] <= w[0]) continue;
    if (pi->windows_hi == 0 || w[0] < pi->windows_lo) pi->windows_lo = w[0];
    pi->windows_hi = std::max(pi->windows_hi, w[1]);
  }
}

}  // namespace sb::unwind
