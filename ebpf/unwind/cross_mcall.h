/* The unwind core: the mcall crossing. Part of unwind_core.h (read its head for what the
 * includer defines); the same code for the BPF programs and for the host. */
#ifndef SWITCHBACK_UNWIND_CROSS_MCALL_H
#define SWITCHBACK_UNWIND_CROSS_MCALL_H

#include "cross_systemstack.h"

/* runtime.mcall on g0: the goroutine that called mcall saved its caller's pc/sp/bp in
 * g.sched. It is m.curg until the callee runs dropg(); after that, amd64's mcall pushed the
 * old g on the g0 stack (PUSHQ AX) at g0.sched.sp - 8. A candidate from that slot is used
 * only if it is still parked (g.m == 0) and its gobuf is mcall's save (sb_gobuf_resume);
 * otherwise it has run elsewhere since this M dropped it, and the stack ends here, whole, with
 * goroutine_left (the M's work since dropg is scheduler work that belongs to no goroutine). */
SB_INLINE long sb_cross_mcall(struct sb_unwind_state *st) {
  const struct sb_go_offsets *o = &st->pi->off;
  sb_u64 gp = sb_live_curg(st);
  /* Under schedule (after dropg), execute may already have set m.curg to the goroutine it is
   * about to run: that is not the one that called mcall (found in a Go 1.23 arm64 core sampled
   * in gogo). Only the g0 slot can name the caller then. */
  int from_slot = gp == 0 || st->w->scheduling;
  /* mcall(goexit0) past its dropg: the goroutine has exited. The g0 slot still names its g,
   * but that g is dead and gfput may already have handed it to a new goroutine, which would
   * pass every check below: the stack is whole as it is (nothing to cross, no counter). */
  if (from_slot && sb_classify(st->pi, st->w->last_pc - 1) == SB_FN_GOEXIT0)
    return sb_stop(st, SB_STOP_GOROUTINE_EXITED);
  sb_count(st, SB_CROSS_MCALL, SB_CNT_ATTEMPTS);
  /* The g0 slot holds the goroutine for sure on amd64 (mcall's PUSHQ AX at g0.sched.sp - 8);
   * on arm64 only once the callee (the frame just below mcall) has spilled its argument, at
   * the offset decoded from that callee's prologue. */
  long slot_off = SB_ARM64(st) ? sb_spill_slot(st->pi, st->w->last_pc - 1) : -8;
  if (from_slot) gp = 0;
  if (gp == 0 && slot_off <= 0) {
    sb_u64 g0_sp = 0, cand = 0, cand_m = 1;
    if (sb_read_u64(st, sb_g0(st) + o->g_sched + o->gobuf_sp, &g0_sp) ||
        sb_read_u64(st, g0_sp + (sb_u64)slot_off, &cand) ||
        sb_read_u64(st, cand + o->g_m, &cand_m))
      return sb_cross_stopped(st, SB_CROSS_MCALL, SB_STOP_STALE_GOROUTINE);
    /* Running again on some M: its saved state is not this stack's. Except when execute on
     * this very M picked it again (m.curg, g.m = m): gogo has not run yet (we are on g0), so
     * its sched is still what mcall saved (Gosched with one runnable goroutine does this on
     * every call). */
    if (cand_m != 0 && !(cand_m == st->w->m && cand == st->w->curg))
      return sb_cross_stopped(st, SB_CROSS_MCALL, SB_STOP_GOROUTINE_LEFT);
    gp = cand;
  }
  /* From the slot (after dropg: this M works for no goroutine) the goroutine is named for
   * certain, so a gobuf that is not this mcall's save (another site's callee, not mcall's
   * save, SP outside its stack) means it has run since: goroutine_left. */
  int moved = from_slot ? SB_STOP_GOROUTINE_LEFT : SB_STOP_STALE_GOROUTINE;
  if (!sb_mcall_callee_ok(st, gp)) return sb_cross_stopped(st, SB_CROSS_MCALL, moved);
  long r = sb_gobuf_resume(st, SB_CROSS_MCALL, gp, SB_SAVE_MCALL, 0, 0, moved);
  if (r != 0) return r;
  /* found through the g0 slot: name it */
  if (from_slot || !(st->out->flags & SB_SAMPLE_HAS_GOID)) sb_name_goroutine(st, gp);
  return 0;
}

#endif /* SWITCHBACK_UNWIND_CROSS_MCALL_H */
