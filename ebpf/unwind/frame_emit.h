/* The unwind core: emitting a frame, moving to another stack, and the live curg. Part of
 * unwind_core.h (read its head for what the includer defines); the same code for the BPF
 * programs and for the host. */
#ifndef SWITCHBACK_UNWIND_FRAME_EMIT_H
#define SWITCHBACK_UNWIND_FRAME_EMIT_H

#include "pcsp_lookup.h"

SB_INLINE void sb_emit(struct sb_unwind_state *st, sb_u64 pc, int exact) {
  struct sb_sample *out = st->out;
  sb_u32 n = out->nframes;
  if (n >= SB_MAX_FRAMES || n >= st->w->max_frames) return;
  SB_OPAQUE(n);
  out->frames[n & (SB_MAX_FRAMES - 1)] = pc;
  if (exact) out->exact[(n >> 6) & (SB_MAX_FRAMES / 64 - 1)] |= 1ull << (n & 63);
  out->nframes = n + 1;
}

/* Moves the walk onto a goroutine stack whose saved state says: the next frame to emit is
 * `pc`, its frame pointer is `fp`. */
SB_INLINE void sb_switch_to(struct sb_unwind_state *st, sb_u64 pc, sb_u64 sp, sb_u64 fp) {
  st->w->pc = pc;
  st->w->sp = sp;
  st->w->fp = fp;
  st->w->prev_fp = 0; /* a different stack: addresses are not comparable with the last one */
  /* arm64 walks Go frames by SP: a saved sp (sched.sp) is exact; 0 means derive from fp. */
  st->w->exact_sp = SB_ARM64(st) && sp != 0;
  st->w->frame_exact = 0;
  st->w->lr_valid = 0;
  st->w->scheduling = 0;
  st->w->on_g0 = 0;
}

SB_INLINE int sb_sp_in_stack(struct sb_unwind_state *st, sb_u64 gp, sb_u64 sp) {
  const struct sb_go_offsets *o = &st->pi->off;
  sb_u64 lo = 0, hi = 0;
  if (gp == 0) return 0;
  if (o->g_stack_hi == o->g_stack_lo + 8) {
    /* g.stack is {lo, hi} in every release: one read. */
    sb_u64 b[2] = {0, 0};
    if (sb_read(SB_ENV(st), b, sizeof(b), gp + o->g_stack_lo)) return 0;
    lo = b[0];
    hi = b[1];
  } else if (sb_read_u64(st, gp + o->g_stack_lo, &lo) || sb_read_u64(st, gp + o->g_stack_hi, &hi)) {
    return 0;
  }
  return sp >= lo && sp < hi;
}

/* The user goroutine under a g0 stack: m.curg, when it still belongs to this m. */
SB_INLINE sb_u64 sb_live_curg(struct sb_unwind_state *st) {
  sb_u64 curg_m = 0;
  if (st->w->curg == 0) return 0;
  if (sb_read_g_m(st, st->w->curg, &curg_m) || curg_m != st->w->m) return 0;
  return st->w->curg;
}

#endif /* SWITCHBACK_UNWIND_FRAME_EMIT_H */
