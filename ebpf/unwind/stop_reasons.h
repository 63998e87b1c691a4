/* The unwind core: ending a walk with a named stop reason, and the crossings' counters. Part of
 * unwind_core.h (read its head for what the includer defines); the same code for the BPF
 * programs and for the host. */
#ifndef SWITCHBACK_UNWIND_STOP_REASONS_H
#define SWITCHBACK_UNWIND_STOP_REASONS_H

#include "goroutine_header.h"

SB_INLINE long sb_stop(struct sb_unwind_state *st, int reason) {
  st->out->stop_reason = (sb_u8)reason;
  return 1; /* ends the loop */
}

SB_INLINE void sb_count(struct sb_unwind_state *st, int crossing, int kind) {
  if (crossing >= 0 && crossing < SB_CROSS_MAX && kind >= 0 && kind < 3)
    st->cnt->crossing[crossing][kind]++;
}

SB_INLINE long sb_cross_stopped(struct sb_unwind_state *st, int crossing, int reason) {
  sb_count(st, crossing, SB_CNT_STOPPED);
  return sb_stop(st, reason);
}

SB_INLINE void sb_crossed(struct sb_unwind_state *st, int crossing) {
  sb_count(st, crossing, SB_CNT_CROSSED);
  st->out->crossed |= (sb_u16)(1u << crossing);
}

#endif /* SWITCHBACK_UNWIND_STOP_REASONS_H */
