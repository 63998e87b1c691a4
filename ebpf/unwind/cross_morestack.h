/* The unwind core: the morestack crossing (m.morebuf, and newstack's copy of it). Part of
 * unwind_core.h (read its head for what the includer defines); the same code for the BPF
 * programs and for the host. */
#ifndef SWITCHBACK_UNWIND_CROSS_MORESTACK_H
#define SWITCHBACK_UNWIND_CROSS_MORESTACK_H

#include "cross_mcall.h"

/* After newstack preempted the goroutine (gopreempt_m -> goschedImpl -> dropg -> schedule, or
 * preemptPark), m.curg no longer names it (0, or under schedule the next goroutine execute
 * picked). One record of it is left on this M: newstack's local `morebuf`, its copy of
 * m.morebuf that morestack filled for this very call (g, and f's caller's pc and sp), which
 * DWARF's location list puts at newstack's CFA + morebuf_cfa_off at the return address below
 * morestack (newstack_lo/hi). newstack's CFA is where morestack switched to: g0.sched.sp
 * (amd64: then CALL; arm64: below a 16-byte frame of its own), and the walk is there too (it
 * stepped out of newstack's frame). The goroutine must not be running (g.m 0, or execute on
 * this M has just picked it again: gogo has not run, we are on g0), its gobuf must be
 * morestack's save (the saved-pc rule) and its caller frame must be morebuf's pc and sp: a
 * goroutine that ran since and stopped elsewhere fails one of them. No proof (no DWARF, or
 * another pc): stale_goroutine, as before. */
SB_INLINE long sb_morestack_from_morebuf(struct sb_unwind_state *st) {
  const struct sb_proc_info *pi = st->pi;
  const struct sb_go_offsets *o = &pi->off;
  sb_u64 ret = st->w->last_pc; /* the return address into newstack (its frame was the last one) */
  if (pi->newstack_hi == 0 || ret <= pi->text_start || ret - pi->text_start > 0xffffffffull)
    return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_STALE_GOROUTINE);
  /* The call that returns to ret (its last byte, ret - 1) must lie in the proven range: DWARF's
   * location list and the code proof (newstack_morebuf.h) both speak of the calling pc, and the
   * code proof's range ends right after the last preempting call, at its return site (requiring
   * ret itself inside missed every goroutine preempted through goschedImpl in stripped Go 1.27
   * binaries: lefthook's stale_goroutine under newstack). */
  sb_u32 off = (sb_u32)(ret - pi->text_start);
  if (off - 1 < pi->newstack_lo || off - 1 >= pi->newstack_hi)
    return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_STALE_GOROUTINE);
  sb_u64 g0_sp = 0, gp = 0, mb_sp = 0, mb_pc = 0, gp_m = 1;
  if (sb_g0(st) == 0 || sb_read_u64(st, st->w->g0 + o->g_sched + o->gobuf_sp, &g0_sp))
    return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_STALE_GOROUTINE);
  sb_u64 cfa = SB_ARM64(st) ? g0_sp - 16 : g0_sp;
  if (cfa != st->w->sp) return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_STALE_GOROUTINE);
  sb_u64 mb = cfa + (sb_u64)(sb_s64)pi->morebuf_cfa_off;
  if (sb_read_u64(st, mb + pi->gobuf_g, &gp) || sb_read_u64(st, mb + o->gobuf_sp, &mb_sp) ||
      sb_read_u64(st, mb + o->gobuf_pc, &mb_pc) || gp == 0 || mb_sp == 0 || mb_pc == 0 ||
      sb_read_u64(st, gp + o->g_m, &gp_m))
    return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_STALE_GOROUTINE);
  /* morebuf names the goroutine for certain and this M has dropped it (dropg): running on
   * another M, or a gobuf that is no longer this morestack's, means it has run since. */
  if (gp_m != 0 && !(gp_m == st->w->m && gp == st->w->curg))
    return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_GOROUTINE_LEFT);
  long r = sb_gobuf_resume(st, SB_CROSS_MORESTACK, gp, SB_SAVE_MORESTACK, mb_pc, mb_sp, SB_STOP_GOROUTINE_LEFT);
  if (r == 0) sb_name_goroutine(st, gp);
  return r;
}

/* runtime.morestack on g0 (newstack and what it calls): the goroutine was stopped in f's
 * prologue; its gobuf is morestack's save (sb_gobuf_resume walks f, then f's caller). Under
 * runtime.schedule (newstack preempted it: gopreempt_m -> dropg -> schedule), m.curg may
 * already be the next goroutine that execute picked: not this stack's, so it is not used;
 * the goroutine comes from newstack's copy of morebuf instead, where DWARF proves it. */
SB_INLINE long sb_cross_morestack(struct sb_unwind_state *st) {
  sb_count(st, SB_CROSS_MORESTACK, SB_CNT_ATTEMPTS);
  sb_u64 gp = st->w->scheduling ? 0 : sb_live_curg(st);
  if (gp == 0) return sb_morestack_from_morebuf(st);
  return sb_gobuf_resume(st, SB_CROSS_MORESTACK, gp, SB_SAVE_MORESTACK, 0, 0, SB_STOP_STALE_GOROUTINE);
}

#endif /* SWITCHBACK_UNWIND_CROSS_MORESTACK_H */
