/* The unwind core: the vDSO crossing (m.vdsoSP / vdsoPC). Part of unwind_core.h (read its head
 * for what the includer defines); the same code for the BPF programs and for the host. */
#ifndef SWITCHBACK_UNWIND_CROSS_VDSO_H
#define SWITCHBACK_UNWIND_CROSS_VDSO_H

#include "cross_morestack.h"

SB_INLINE int sb_vdso_active(struct sb_unwind_state *st) {
  sb_u64 vsp = 0;
  return sb_read_u64(st, st->w->m + st->pi->off.m_vdsosp, &vsp) == 0 && vsp != 0;
}

/* vDSO code, called by nanotime1 / time.now / walltime after they recorded in m.vdsoPC the
 * return address into their caller and in m.vdsoSP that caller's SP (often while running on
 * the g0 stack). The calling function's saved frame pointer sits at vdsoSP - 16 (amd64). */
SB_INLINE long sb_cross_vdso(struct sb_unwind_state *st) {
  const struct sb_go_offsets *o = &st->pi->off;
  if (st->w->m == 0) return -1;
  sb_count(st, SB_CROSS_VDSO, SB_CNT_ATTEMPTS);
  sb_u64 vsp = 0, vpc = 0;
  if (sb_read_u64(st, st->w->m + o->m_vdsosp, &vsp) || sb_read_u64(st, st->w->m + o->m_vdsopc, &vpc) ||
      vsp == 0 || vpc == 0)
    return sb_cross_stopped(st, SB_CROSS_VDSO, SB_STOP_STALE_GOROUTINE);
  /* The frame record of the function that called the vDSO: amd64 time.now/nanotime1 pushed
   * BP just below their return address (vdsoSP - 8); arm64 nanotime1's record is at
   * vdsoSP - 8 (saved R29, then the saved LR = vdsoPC at vdsoSP). */
  sb_u64 record = SB_ARM64(st) ? vsp - 8 : vsp - 16;
  sb_u64 caller_fp = 0;
  if (sb_read_u64(st, record, &caller_fp))
    return sb_cross_stopped(st, SB_CROSS_VDSO, SB_STOP_READ_FAULT);
  int was_g0 = st->w->on_g0;
  /* vdsoSP is the SP of the frame vdsoPC returns into (arm64 nanotime1: `$ret-8(FP)`), so on
   * arm64 the SP walk continues from it exactly. */
  sb_switch_to(st, vpc, vsp, caller_fp);
  st->w->on_g0 = (sb_u8)was_g0; /* vdsoSP is on whichever stack the caller ran on */
  sb_crossed(st, SB_CROSS_VDSO);
  return 0;
}

#endif /* SWITCHBACK_UNWIND_CROSS_VDSO_H */
