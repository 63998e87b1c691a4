// The pcsp page index of sb_proc_info (delta_page_shift, delta_page): built in userspace, read
// by sb_lookup_sp_delta (unwind_core.h). Header-only so that both MakeProcInfo and the unit
// tests of the core build it the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "unwind_types.h"

namespace sb::unwind {

// Splits [0, text_len) into at most SB_DELTA_PAGES pages of 1 << shift bytes and records, for
// each page k, the index of the first run (of `runs`, ascending by pc_off) at or after its
// start; entry SB_DELTA_PAGES-or-past-the-end holds runs.size(). A lookup then binary-searches
// one page's runs (plus the run before them, which covers the page's start) instead of all of
// them: each search step over the big array is a cache miss in the BPF program.
inline void FillDeltaIndex(sb_proc_info* pi, const std::vector<sb_sp_delta>& runs, uint64_t text_len) {
  pi->delta_page_shift = 0;
  if (runs.empty() || text_len == 0 || text_len > (uint64_t{1} << 40)) return;
  uint32_t shift = 1;
  while (((text_len - 1) >> shift) >= SB_DELTA_PAGES) shift++;
  for (uint32_t k = 0; k <= SB_DELTA_PAGES; k++) {
    uint64_t page_start = uint64_t{k} << shift;
    auto it = std::lower_bound(runs.begin(), runs.end(), page_start,
                               [](const sb_sp_delta& r, uint64_t v) { return r.pc_off < v; });
    pi->delta_page[k] = static_cast<uint32_t>(it - runs.begin());
  }
  pi->delta_page_shift = shift;
}

}  // namespace sb::unwind
