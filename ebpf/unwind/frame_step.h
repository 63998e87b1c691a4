/* The unwind core: the step to the caller: frame pointer, pcsp, and which crossing a frame leads
 * to. Part of unwind_core.h (read its head for what the includer defines); the same code for the
 * BPF programs and for the host. */
#ifndef SWITCHBACK_UNWIND_FRAME_STEP_H
#define SWITCHBACK_UNWIND_FRAME_STEP_H

#include "cross_asmcgocall.h"

/* The frame-pointer step: the caller's frame record at fp (saved fp, return address). Most
 * frames take it (amd64 once the frame is set up), so the frame loop runs it inline. */
SB_INLINE long sb_fp_step(struct sb_unwind_state *st) {
  sb_u64 fp = st->w->fp;
  if (fp == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
  /* Frame pointers move up the stack, except on the one step that leaves a stack (a crossing
   * that the frame chain makes by itself): the two stacks' addresses are not comparable. */
  if ((fp & 7) != 0 || (!st->w->switch_pending && st->w->prev_fp != 0 && fp <= st->w->prev_fp))
    return sb_stop(st, SB_STOP_BAD_FP);
  sb_u64 rec[2] = {0, 0}; /* the frame record: saved frame pointer, return address */
  if (sb_read_record(st, fp, rec)) return sb_stop(st, SB_STOP_READ_FAULT);
  sb_u64 saved_fp = rec[0], ret = rec[1];
  if (ret == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
  /* Across a stack switch, addresses on the two stacks are not comparable. */
  st->w->prev_fp = st->w->switch_pending ? 0 : fp;
  st->w->switch_pending = 0;
  st->w->lr_valid = 0;
  st->w->pc = ret;
  st->w->sp = fp + 16;
  st->w->fp = saved_fp;
  st->w->exact_sp = 0;
  st->w->frame_exact = 0;
  return 0;
}

/* One step to the caller of the current frame. */
SB_INLINE long sb_step_caller(struct sb_unwind_state *st) {
  sb_s32 delta = 0;
  if (SB_ARM64(st) && sb_in_go_text(st->pi, st->w->pc)) {
    /* arm64 Go frames are walked by SP, the way Go's own traceback walks them: the prologue
     * stores LR at the new SP (MOVD.W R30, -size(RSP)) and the caller's R29 just below it, so
     * the return address is at [SP] and the caller's SP is SP + pcsp delta. Frame pointers
     * are not trusted here: before Go 1.21, copystack left outer frames' saved R29 pointing at
     * the old stack. Where only R29 is known (after a switch), SP = R29 + 8. With no frame yet
     * (delta 0: a frameless leaf, or the first prologue instruction) the return address is
     * still in LR. */
    sb_u64 sp = st->w->exact_sp ? st->w->sp : st->w->fp + 8;
    if (sb_lookup_sp_delta(st, st->w->frame_exact ? st->w->pc : st->w->pc - 1, &delta) == 0) {
      sb_u64 ret = 0, caller_fp = st->w->fp;
      if (delta == 0) {
        if (!st->w->lr_valid) return sb_stop(st, SB_STOP_END_OF_CHAIN);
        ret = st->w->lr;
        sb_count(st, SB_CROSS_LEAF, SB_CNT_ATTEMPTS);
        sb_crossed(st, SB_CROSS_LEAF);
      } else {
        /* LR at [SP], the caller's R29 just below it: one read of both; the R29 is only
         * needed to leave Go code, so where it alone is unreadable the walk goes on. */
        sb_u64 rec[2] = {0, 0};
        if (sb_read_record(st, sp - 8, rec) == 0) {
          caller_fp = rec[0];
          ret = rec[1];
        } else {
          if (sb_read_u64(st, sp, &ret)) return sb_stop(st, SB_STOP_READ_FAULT);
          if (sb_read_u64(st, sp - 8, &caller_fp)) caller_fp = 0;
        }
        if (st->w->fp != sp - 8 && st->w->exact_sp && st->w->frame_exact) {  /* R29 not set up yet */
          sb_count(st, SB_CROSS_LEAF, SB_CNT_ATTEMPTS);
          sb_crossed(st, SB_CROSS_LEAF);
        }
      }
      if (ret == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
      st->w->pc = ret;
      st->w->sp = sp + (sb_u64)delta;
      st->w->fp = caller_fp;
      st->w->exact_sp = 1;
      st->w->frame_exact = 0;
      st->w->lr_valid = 0;
      st->w->prev_fp = 0;
      if (st->w->injected_call) {
        /* asyncPreempt, "called" by the signal handler's pushCall: it lowered the interrupted
         * SP by 16 and stored the interrupted LR there, then set LR to the interrupted pc. That
         * pc is exact; the interrupted function's SP is 16 higher, and where it has no frame
         * yet (pcsp 0: a leaf or a prologue) its return address is the stored LR. */
        sb_u64 saved_lr = 0;
        if (sb_read_u64(st, st->w->sp, &saved_lr)) return sb_stop(st, SB_STOP_READ_FAULT);
        st->w->sp += 16;
        st->w->lr = saved_lr;
        st->w->lr_valid = 1;
        st->w->frame_exact = 1;
        st->w->injected_call = 0;
        sb_count(st, SB_CROSS_ASYNCPREEMPT, SB_CNT_ATTEMPTS);
        sb_crossed(st, SB_CROSS_ASYNCPREEMPT);
      }
      return 0;
    }
  }
  if (st->w->exact_sp && !SB_ARM64(st) &&
      sb_lookup_sp_delta(st, st->w->frame_exact ? st->w->pc : st->w->pc - 1, &delta) == 0) {
    /* amd64 Go frame: the return address sits at SP + delta. If the function already set
     * up its frame pointer, BP points just below the return address slot. */
    sb_u64 slot = st->w->sp + (sb_u64)delta;
    sb_u64 ret = 0, caller_fp = st->w->fp;
    if (st->w->fp == 0) {
      if (sb_read_u64(st, slot, &ret)) return sb_stop(st, SB_STOP_READ_FAULT);
      /* No frame pointer to follow (copystack, or none at all, as in a goroutine's first
       * function): walk on by SP, the caller's SP is exact too. */
      if (ret == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
      if (st->w->frame_exact) { /* the sampled frame: a frame-pointer walk would have lost this caller */
        sb_count(st, SB_CROSS_LEAF, SB_CNT_ATTEMPTS);
        sb_crossed(st, SB_CROSS_LEAF);
      }
      st->w->pc = ret;
      st->w->sp = slot + 8;
      st->w->frame_exact = 0;
      return 0;
    }
    int frame_set_up = st->w->fp == slot - 8;
    if (frame_set_up) {
      /* The frame record: the caller's BP right below the return address, in one read. */
      sb_u64 rec[2] = {0, 0};
      if (sb_read_record(st, st->w->fp, rec)) return sb_stop(st, SB_STOP_READ_FAULT);
      caller_fp = rec[0];
      ret = rec[1];
    } else {
      if (sb_read_u64(st, slot, &ret)) return sb_stop(st, SB_STOP_READ_FAULT);
      /* A frame-pointer walk would have lost this caller. */
      sb_count(st, SB_CROSS_LEAF, SB_CNT_ATTEMPTS);
      sb_crossed(st, SB_CROSS_LEAF);
    }
    if (ret == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
    if (frame_set_up) st->w->prev_fp = st->w->fp;
    st->w->pc = ret;
    st->w->sp = slot + 8;
    st->w->fp = caller_fp;
    st->w->exact_sp = 0;
    st->w->frame_exact = 0;
    return 0;
  }
  long r = sb_fp_step(st);
  if (r != 0) return r;
  if (st->w->injected_call && SB_ARM64(st)) st->w->injected_call = 0; /* arm64: only by the SP walk */
  if (st->w->injected_call) {
    /* asyncPreempt was "called" by the signal handler at the interrupted pc: that pc is exact
     * (not a return address) and so is the SP, so the interrupted function, which may be a
     * frameless leaf, is unwound by its pcsp like a sampled leaf (amd64: the injected CALL
     * pushed the pc just above asyncPreempt's frame record). */
    st->w->exact_sp = 1;
    st->w->frame_exact = 1;
    st->w->injected_call = 0;
    sb_count(st, SB_CROSS_ASYNCPREEMPT, SB_CNT_ATTEMPTS);
    sb_crossed(st, SB_CROSS_ASYNCPREEMPT);
  }
  return 0;
}

#endif /* SWITCHBACK_UNWIND_FRAME_STEP_H */
