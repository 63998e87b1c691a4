/* The unwind core: the SP delta at a pc, from the pcsp table (through its bucket index and the
 * cache). Part of unwind_core.h (read its head for what the includer defines); the same code for
 * the BPF programs and for the host. */
#ifndef SWITCHBACK_UNWIND_PCSP_LOOKUP_H
#define SWITCHBACK_UNWIND_PCSP_LOOKUP_H

#include "classify.h"

/* The includer's pcsp cache (bpf_env.bpf.h: the sampler's), keyed by sb_proc_info.delta_table
 * (0: none) and the pc's offset; none by default (coredump replay, the exit probe). */
#ifndef SB_HAS_PCSP_CACHE
SB_INLINE int sb_pcsp_cache_get(void *env, sb_u32 table, sb_u32 off, sb_s32 *delta) { return -1; }
SB_INLINE void sb_pcsp_cache_put(void *env, sb_u32 table, sb_u32 off, sb_s32 delta) {}
#endif

/* Entry k of the binary's bucket index (delta_index.h: two per cell after its runs). */
SB_INLINE int sb_delta_bucket(struct sb_unwind_state *st, sb_u32 k, sb_u32 *run) {
  const struct sb_proc_info *pi = st->pi;
  struct sb_sp_delta cell;
  if (sb_delta_entry(SB_ENV(st), pi->delta_first + pi->delta_count + (k >> 1), &cell) != 0) return -1;
  *run = (k & 1) ? (sb_u32)cell.delta : cell.pc_off;
  return 0;
}

/* pcsp value at pc: the runs between pc's bucket's two index entries (one or two, usually),
 * else by binary search over all of this binary's runs. 0 found, -1 not found. */
SB_INLINE int sb_lookup_sp_delta(struct sb_unwind_state *st, sb_u64 pc, sb_s32 *delta) {
  const struct sb_proc_info *pi = st->pi;
  if (pi->delta_count == 0 || !sb_in_go_text(pi, pc)) return -1;
  sb_u32 off = (sb_u32)(pc - pi->text_start);
  if (st->cnt) st->cnt->pcsp_lookups++;
  if (pi->delta_table != 0 && sb_pcsp_cache_get(SB_ENV(st), pi->delta_table, off, delta) == 0) {
    if (st->cnt) st->cnt->pcsp_cache_hits++;
    return 0;
  }
  sb_u32 first = 0, count = pi->delta_count;
  sb_u32 shift = pi->delta_index_shift;
  if (pi->delta_buckets != 0 && shift < 32) {
    sb_u32 k = off >> shift, lo = 0, hi = 0;
    if (k < pi->delta_buckets && sb_delta_bucket(st, k, &lo) == 0 && sb_delta_bucket(st, k + 1, &hi) == 0 &&
        lo <= hi && hi < count) {
      first = lo;
      count = hi - lo + 1;
    }
  }
  long idx = sb_find_delta_run(st->w->env, pi->delta_first + first, count, off);
  struct sb_sp_delta e;
  if (idx < 0 || sb_delta_entry(SB_ENV(st), (sb_u32)idx, &e) != 0) return -1;
  if (e.pc_off > off || e.delta < 0) return -1;
  *delta = e.delta;
  if (pi->delta_table != 0) sb_pcsp_cache_put(SB_ENV(st), pi->delta_table, off, e.delta);
  return 0;
}

#endif /* SWITCHBACK_UNWIND_PCSP_LOOKUP_H */
