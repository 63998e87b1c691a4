/* The unwind core: the systemstack crossing (and asmcgocall's, which saves the same way). Part
 * of unwind_core.h (read its head for what the includer defines); the same code for the BPF
 * programs and for the host. */
#ifndef SWITCHBACK_UNWIND_CROSS_SYSTEMSTACK_H
#define SWITCHBACK_UNWIND_CROSS_SYSTEMSTACK_H

#include "gobuf_resume.h"

/* runtime.systemstack and runtime.asmcgocall on g0. Both save their caller's state with
 * gosave_systemstack_switch before switching stacks. amd64 before Go 1.21: they have no frame,
 * so the chain from the g0 side skips their caller F; F's return address is at
 * curg.sched.sp and F's frame pointer is curg.sched.bp. Later versions link the frame
 * pointer chain across by themselves: only the stack change is recorded. */
SB_INLINE long sb_cross_saved_switch(struct sb_unwind_state *st, int crossing) {
  sb_count(st, crossing, SB_CNT_ATTEMPTS);
  /* asmcgocall below the C frames that a cgocallback crossing led to: the goroutine is that
   * callback's (the one that called C; m.curg is 0 once it parked inside the callback), and
   * its save is in cgocallback's fake frame: the gobuf holds whatever the callback saved since
   * (a systemstack: resuming from it repeated the callback's frames up to max_frames; an mcall
   * or a morestack, which gogo's return then cleared: stale_goroutine). */
  sb_u64 gp = crossing == SB_CROSS_ASMCGOCALL ? st->w->cb_g : 0;
  if (gp == 0) gp = sb_live_curg(st);
  if (gp == 0) return sb_cross_stopped(st, crossing, SB_STOP_STALE_GOROUTINE);
  sb_u32 recipe = st->pi->flags & (SB_PI_SYSTEMSTACK_SCHED | SB_PI_SWITCH_SCHED_BP);
  /* arm64 asmcgocall loads g0.sched.bp into R29 in every version (Go 1.25 linked only
   * systemstack's frame chain): its frame record is found at curg.sched.bp (found in the
   * Go 1.27 arm64 cgo cores, which stopped with read_fault right after asmcgocall). */
  if (SB_ARM64(st) && crossing == SB_CROSS_ASMCGOCALL) recipe = SB_PI_SWITCH_SCHED_BP;
  if (recipe == 0) {
    /* The frame pointer chain continues into the goroutine stack by itself: the switch
     * function's frame record on g0 links to its caller's frame on the goroutine stack. */
    st->w->on_g0 = 0;
    st->w->switch_pending = 1;
    /* The frame record, not the SP, leads off g0: an SP walk (arm64 walks Go frames by SP)
     * would read the fake return address into mstart at g0.sched.sp (found in the Go 1.27 arm64
     * systemstack core, which ended at runtime.mstart). */
    st->w->exact_sp = 0;
    st->w->cb_g = 0;
    sb_crossed(st, crossing);
    return -1; /* caller continues with an ordinary frame-pointer step */
  }
  long r = sb_gobuf_resume(st, crossing, gp, SB_SAVE_SYSTEMSTACK, 0, 0, SB_STOP_STALE_GOROUTINE);
  st->w->cb_g = 0; /* that callback's C frames are behind the walk now */
  return r;
}

#endif /* SWITCHBACK_UNWIND_CROSS_SYSTEMSTACK_H */
