/* The unwind core: the cgocallback crossing (Go called back from C). Part of unwind_core.h (read
 * its head for what the includer defines); the same code for the BPF programs and for the host. */
#ifndef SWITCHBACK_UNWIND_CROSS_CGOCALLBACK_H
#define SWITCHBACK_UNWIND_CROSS_CGOCALLBACK_H

#include "cross_signal.h"

/* runtime.cgocallback reached on the goroutine stack: C code (on g0) called Go. cgocallback
 * saved its g0 SP in m.g0.sched.sp, switched to m.curg's stack and called cgocallbackg under
 * a fake frame whose return address is curg.sched.pc (Go's traceback follows that into the
 * goroutine's frames from before the C call, or to goexit on a C-created thread). The real
 * caller is C: continue at cgocallback's g0 frame, whose return address leads into
 * crosscall2 and the C frames that called the Go function. */
SB_INLINE long sb_cross_cgocallback(struct sb_unwind_state *st, sb_u64 lookup_pc) {
  sb_count(st, SB_CROSS_CGOCALLBACK, SB_CNT_ATTEMPTS);
  const struct sb_go_offsets *o = &st->pi->off;
  sb_u64 g0_sp = 0, ret = 0, caller_fp = 0;
  sb_s32 delta = 0;
  sb_u64 g0 = st->w->m == 0 ? 0 : sb_g0(st);
  /* m.g0.sched.sp is the innermost running callback's g0 SP; each cgocallback saved the one
   * before it in its g0 frame (at SP + alignUp(MinFrameSize, StackAlign): amd64 0, arm64 16,
   * what the runtime's unwindm reads), so an outer callback of nested ones (Go -> C -> Go ->
   * C -> Go) is found from the inner one's frame. */
  g0_sp = st->w->cb_g0_sp;
  if (g0 == 0 || (g0_sp == 0 && sb_read_u64(st, g0 + o->g_sched + o->gobuf_sp, &g0_sp)) || g0_sp == 0 ||
      !sb_sp_in_stack(st, g0, g0_sp))
    return sb_cross_stopped(st, SB_CROSS_CGOCALLBACK, SB_STOP_STALE_GOROUTINE);
  if (sb_read_u64(st, g0_sp + (SB_ARM64(st) ? 16 : 0), &st->w->cb_g0_sp)) st->w->cb_g0_sp = 0;
  if (sb_lookup_sp_delta(st, lookup_pc, &delta) != 0)
    return sb_cross_stopped(st, SB_CROSS_CGOCALLBACK, SB_STOP_END_OF_CHAIN);
  /* The g0 frame has the same size as the fake one: amd64 return address at SP + delta with
   * the saved BP below it; arm64 LR at [SP] and the caller's R29 below it. */
  sb_u64 slot = SB_ARM64(st) ? g0_sp : g0_sp + (sb_u64)delta;
  if (sb_read_u64(st, slot, &ret) || sb_read_u64(st, slot - 8, &caller_fp))
    return sb_cross_stopped(st, SB_CROSS_CGOCALLBACK, SB_STOP_READ_FAULT);
  if (ret == 0) return sb_cross_stopped(st, SB_CROSS_CGOCALLBACK, SB_STOP_END_OF_CHAIN);
  /* For the asmcgocall the C frames lead to (sb_cross_saved_switch): the callback runs on the
   * goroutine that called C, the one whose stack the walk is on (the sample's goroutine,
   * checked there: the saved sp must lie in its stack). cgocallback's fake frame here has the
   * size of its g0 frame and holds the save asmcgocall made (the runtime restores the gobuf from
   * it when the callback returns): amd64 the saved pc in its return slot, the saved sp right
   * above; arm64 the saved pc at its SP (LR's slot), the saved sp at SP + its size. */
  st->w->cb_g = st->w->label_g;
  st->w->cb_pc_at = SB_ARM64(st) ? st->w->sp : st->w->sp + (sb_u64)delta;
  st->w->cb_sp = st->w->sp + (sb_u64)delta + (SB_ARM64(st) ? 0 : 8);
  /* The caller, crosscall2, is Go assembly with an exact SP here: the next step takes it by
   * its pcsp (sb_g_step_crosscall2), as from any of its callees. */
  sb_u64 c2_sp = SB_ARM64(st) ? g0_sp + (sb_u64)delta : slot + 8;
  sb_switch_to(st, ret, c2_sp, caller_fp);
  st->w->exact_sp = 1;
  st->w->on_g0 = 1;
  sb_crossed(st, SB_CROSS_CGOCALLBACK);
  return 0;
}

#endif /* SWITCHBACK_UNWIND_CROSS_CGOCALLBACK_H */
