/* The unwind core: what a pc is: a root, a switch function, Go text, or an ordinary frame. Part
 * of unwind_core.h (read its head for what the includer defines); the same code for the BPF
 * programs and for the host. */
#ifndef SWITCHBACK_UNWIND_CLASSIFY_H
#define SWITCHBACK_UNWIND_CLASSIFY_H

#include "stop_reasons.h"

/* The kind of function a pc belongs to. Return addresses are looked up at pc-1, so that a
 * call that ends a function is attributed to that function. Runs once per frame, so it is
 * cheap: the ranges are ascending by start and disjoint (MakeProcInfo sorts them), so one
 * bounding test of the span they cover answers most frames of a program (its own code, its
 * libraries: outside the runtime), and inside the span a binary search with fixed steps
 * (16, 8, 4, 2, 1: one state per step for the verifier) finds the one range that may hold pc. */
/* The bounding test alone: pc outside the span of every range (SB_FN_NONE). The frame loop
 * runs it inline, so a frame of the program's own code costs no call. */
SB_INLINE int sb_outside_special(const struct sb_proc_info *pi, sb_u64 pc) {
  return pc < pi->special_lo || pc >= pi->special_hi; /* the span, precomputed: no range read */
}

/* The bitmap after it: pc is in no range when it is outside the span or in a block of the span
 * that no range overlaps (most return addresses in the runtime's own code). 0: search. */
SB_INLINE int sb_no_special(const struct sb_proc_info *pi, sb_u64 pc) {
  if (sb_outside_special(pi, pc)) return 1;
  sb_u64 block = (pc - pi->special_lo) >> (pi->special_shift & 63);
  if (block >= SB_SPECIAL_BLOCKS) return 0;
  SB_OPAQUE(block);
  return (pi->special_free[(block >> 6) & (SB_SPECIAL_WORDS - 1)] >> (block & 63)) & 1;
}

SB_SUBPROG int sb_classify(const struct sb_proc_info *pi, sb_u64 pc) {
  if (!pi || sb_outside_special(pi, pc)) return SB_FN_NONE;
  sb_u32 n = pi->nranges;
  sb_u32 i = 0; /* the last range whose start is at or below pc */
  for (sb_u32 step = SB_MAX_RANGES / 2; step > 0; step >>= 1) {
    sb_u32 j = i + step;
    if (j < n && pi->ranges[j & (SB_MAX_RANGES - 1)].start <= pc) i = j;
  }
  i &= SB_MAX_RANGES - 1;
  if (pc >= pi->ranges[i].start && pc < pi->ranges[i].end) return (int)pi->ranges[i].kind;
  return SB_FN_NONE;
}

/* Whether pc is in one of the root ranges kept beside the spans (sb_proc_info.roots): copies
 * of ranges of kind SB_FN_ROOT, so the answer is the search's; they share the cache line of the
 * windows' span, which every sample reads, where the search reads up to five lines of `ranges`
 * for the frame nearly every stack ends with. */
SB_INLINE int sb_in_roots(const struct sb_proc_info *pi, sb_u64 pc) {
  sb_u64 off = pc - pi->text_start; /* below text: huge, in no root */
  for (int i = 0; i < SB_MAX_ROOTS; i++) {
    if ((sb_u32)i >= pi->nroots) break;
    if (off >= pi->roots[i].lo && off < pi->roots[i].hi) return 1;
  }
  return 0;
}

/* The frame loop's kind of pc: the bitmap, the roots, and only where neither answers, the
 * search. */
SB_INLINE int sb_frame_kind(const struct sb_proc_info *pi, sb_u64 pc) {
  if (sb_no_special(pi, pc)) return SB_FN_NONE;
  return sb_in_roots(pi, pc) ? SB_FN_ROOT : sb_classify(pi, pc);
}

/* The g slot offset (from g0.sched.sp) of the spilling mcall callee containing pc, or 1 when
 * pc is not in one past its spill (offsets are negative). */
SB_SUBPROG long sb_spill_slot(const struct sb_proc_info *pi, sb_u64 pc) {
  if (!pi) return 1;
  for (int i = 0; i < SB_MAX_RANGES; i++) {
    if ((sb_u32)i >= pi->nranges) break;
    if (pi->ranges[i].kind == SB_FN_MCALL_SPILLER && pc >= pi->ranges[i].start && pc < pi->ranges[i].end)
      return (long)(sb_s32)pi->ranges[i].arg;
  }
  return 1;
}

SB_INLINE int sb_in_go_text(const struct sb_proc_info *pi, sb_u64 pc) {
  return pc >= pi->text_start && pc < pi->text_end;
}

/* Index of the last pcsp run at or before `off` within [first, first + count), or -1. */
/* env travels as a number: BPF global functions take scalars, not arbitrary pointers. */
SB_SUBPROG long sb_find_delta_run(sb_u64 env, sb_u32 first, sb_u32 count, sb_u32 off) {
  sb_u32 lo = 0, hi = count;
  struct sb_sp_delta e;
  if (count == 0) return -1;
  for (int i = 0; i < SB_DELTA_SEARCH_STEPS; i++) {
    if (hi - lo <= 1) break;
    sb_u32 mid = lo + (hi - lo) / 2;
    if (sb_delta_entry((void *)env, first + mid, &e) != 0) return -1;
    if (e.pc_off <= off) lo = mid; else hi = mid;
  }
  return (long)(first + lo);
}

#endif /* SWITCHBACK_UNWIND_CLASSIFY_H */
