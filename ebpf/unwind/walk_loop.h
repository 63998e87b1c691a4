/* The unwind core: each crossing and the frame step as a BPF global function, and the bounded
 * frame loop. Part of unwind_core.h (read its head for what the includer defines); the same code
 * for the BPF programs and for the host. */
#ifndef SWITCHBACK_UNWIND_WALK_LOOP_H
#define SWITCHBACK_UNWIND_WALK_LOOP_H

#include "frame_step.h"

/* Each crossing and the frame step as a BPF global function: the verifier checks each once, on
 * its own, with its arguments unknown, instead of once for every combination of walk states
 * that reaches it (the frame loop's body inlined them all: 460 k instructions for the sampler,
 * 962 k with --compare-fp-walk). The walk is plain memory; the map values are map-value
 * pointers; everything else is a scalar. On the host these are inline functions. */
#define SB_GLOBAL_STATE()                              \
  struct sb_unwind_state st_ = {w, pi, out, cnt};      \
  struct sb_unwind_state *st = &st_;                   \
  if (!w || !pi || !out || !cnt) return 1

SB_SUBPROG long sb_g_cross_mcall(struct sb_walk *w, const struct sb_proc_info *pi, struct sb_sample *out,
                                 struct sb_counters *cnt) {
  SB_GLOBAL_STATE();
  return sb_cross_mcall(st);
}

SB_SUBPROG long sb_g_cross_morestack(struct sb_walk *w, const struct sb_proc_info *pi, struct sb_sample *out,
                                     struct sb_counters *cnt) {
  SB_GLOBAL_STATE();
  return sb_cross_morestack(st);
}

SB_SUBPROG long sb_g_cross_saved_switch(struct sb_walk *w, const struct sb_proc_info *pi, struct sb_sample *out,
                                        struct sb_counters *cnt, int crossing) {
  SB_GLOBAL_STATE();
  return sb_cross_saved_switch(st, crossing == SB_CROSS_ASMCGOCALL ? SB_CROSS_ASMCGOCALL : SB_CROSS_SYSTEMSTACK);
}

/* vDSO: whether to cross (the vDSO caller test reads m.vdsoSP), then the crossing. -1: not taken. */
SB_SUBPROG long sb_g_cross_vdso(struct sb_walk *w, const struct sb_proc_info *pi, struct sb_sample *out,
                                struct sb_counters *cnt, int in_vdso) {
  SB_GLOBAL_STATE();
  if (!in_vdso && !(w->frame_exact && w->m != 0 && sb_vdso_active(st))) return -1;
  return sb_cross_vdso(st);
}

SB_SUBPROG long sb_g_cross_signal(struct sb_walk *w, const struct sb_proc_info *pi, struct sb_sample *out,
                                  struct sb_counters *cnt, sb_u64 entry_sp) {
  SB_GLOBAL_STATE();
  return sb_cross_signal(st, entry_sp);
}

/* Also for a sample in cgocallback itself (its pc exact): cgocallback sets g before it moves SP,
 * on the way in and on the way out, so g says nothing about the stack here; SP does. On g0, an
 * ordinary g0 frame (its caller crosscall2, and the asmcgocall below the C frames crosses: a
 * walk taken as on the goroutine ended there with bad_fp); on the goroutine's stack (from the
 * switch to the fake frame until the switch back), the crossing, as from a return address
 * (the walk read the fake frame's saved pc as cgocallback's caller). */
SB_SUBPROG long sb_g_cross_cgocallback(struct sb_walk *w, const struct sb_proc_info *pi, struct sb_sample *out,
                                       struct sb_counters *cnt, sb_u64 lookup_pc) {
  SB_GLOBAL_STATE();
  sb_u64 g0 = 0;
  if (w->frame_exact || w->on_g0) {
    g0 = w->m == 0 ? 0 : sb_g0(st);
    if (g0 == 0) return -1;
  }
  if (w->frame_exact) w->on_g0 = (sb_u8)sb_sp_in_stack(st, g0, w->sp);
  if (!w->on_g0) return sb_cross_cgocallback(st, lookup_pc);
  /* cgocallback's own frame on g0 (sampled in it, or under its needm/dropm): from the store of
   * its SP as m.g0.sched.sp to the one that puts the old value back, that slot names this frame,
   * not the callback around it (nested callbacks); the old value is at its SP + 0 (arm64 + 16),
   * which the outer callback's crossing then takes (cb_g0_sp). Before the store and after the
   * restore the slot is the outer one's already. (A sample there crossed the outer callback at
   * this frame: the inner C frames twice, seen live on Go 1.27 in 1 of 282,089 samples.) */
  sb_u64 sched_sp = 0;
  if (w->sp != 0 && sb_read_u64(st, g0 + pi->off.g_sched + pi->off.gobuf_sp, &sched_sp) == 0 && sched_sp == w->sp &&
      sb_read_u64(st, w->sp + (SB_ARM64(st) ? 16 : 0), &w->cb_g0_sp))
    w->cb_g0_sp = 0;
  return -1;
}

/* crosscall2 (runtime/cgo), which the C stub of an exported Go function calls; on amd64 its one
 * callee is runtime.cgocallback. Its frame records cannot be followed: from Go 1.21 it has two
 * (PUSHQ BP, then the assembler's own after SUBQ), the inner one's return slot holding the
 * outer one's saved BP, so a frame-pointer step read the C stub's BP as a return address (a
 * stray frame in a whole stack, for a sample in cgocallback or its callees on g0, or in
 * crosscall2). Its SP is exact (its callee's frame record + 16, cgocallback's crossing, or the
 * sample's), so its pcsp gives the return address into the stub; the stub's BP is the link of
 * the record in crosscall2's frame that holds that return address (its first record, or its
 * only one up to Go 1.20), checked, never assumed; with no such record (in its prologue or
 * epilogue), BP is still the stub's. */
SB_SUBPROG long sb_g_step_crosscall2(struct sb_walk *w, const struct sb_proc_info *pi, struct sb_sample *out,
                                     struct sb_counters *cnt, sb_u64 lookup_pc) {
  SB_GLOBAL_STATE();
  sb_s32 delta = 0;
  sb_u64 sp = w->sp, ret = 0, caller_fp = w->fp, rec = w->fp;
  if (sp == 0 || sb_lookup_sp_delta(st, lookup_pc, &delta) != 0 || delta < 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
  sb_u64 ret_slot = sp + (sb_u64)delta;
  if (SB_ARM64(st)) {
    /* arm64 crosscall2 (NOFRAME) stores R29 and LR at the top of its frame (STP (R29, R30),
     * 176(RSP)) before its first call (BL load_g) and loads them back after its last. So while
     * LR points into crosscall2 (a call has returned) they are there, as from a return address
     * in it; otherwise (sampled in its prologue or epilogue) LR and R29 are still the caller's. */
    if (!w->frame_exact || !w->lr_valid || sb_classify(pi, w->lr) == SB_FN_CROSSCALL2) {
      if (delta < 16 || sb_read_u64(st, ret_slot - 8, &ret) || sb_read_u64(st, ret_slot - 16, &caller_fp))
        return sb_stop(st, SB_STOP_READ_FAULT);
    } else {
      ret = w->lr;
    }
    if (ret == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
    w->pc = ret;
    w->sp = ret_slot;
    w->fp = caller_fp;
    w->prev_fp = 0;
    w->exact_sp = 1;
    w->frame_exact = 0;
    w->lr_valid = 0;
    return 0;
  }
  if (sb_read_u64(st, ret_slot, &ret)) return sb_stop(st, SB_STOP_READ_FAULT);
  if (ret == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
  for (int i = 0; i < 2; i++) {
    sb_u64 r[2] = {0, 0};
    if (rec < sp || rec >= ret_slot || (rec & 7) != 0 || sb_read_record(st, rec, r)) break;
    if (r[1] == ret) {
      caller_fp = r[0];
      break;
    }
    rec = r[0];
  }
  w->pc = ret;
  w->sp = ret_slot + 8;
  w->fp = caller_fp;
  w->prev_fp = ret_slot; /* the stub's frame lies above crosscall2's */
  w->exact_sp = 0;
  w->frame_exact = 0;
  w->lr_valid = 0;
  return 0;
}

SB_SUBPROG long sb_g_step_caller(struct sb_walk *w, const struct sb_proc_info *pi, struct sb_sample *out,
                                 struct sb_counters *cnt) {
  SB_GLOBAL_STATE();
  return sb_step_caller(st);
}

/* Signal frames need only sigtramp's SP and pcsp: the entry SP, or 0 when none is found. */
SB_SUBPROG sb_u64 sb_g_sigtramp_entry_sp(struct sb_walk *w, const struct sb_proc_info *pi, sb_u64 lookup_pc) {
  sb_s32 delta = 0;
  struct sb_unwind_state st_ = {w, pi, 0, 0};
  if (!w || !pi || sb_lookup_sp_delta(&st_, lookup_pc, &delta) != 0) return 0;
  return w->sp + (sb_u64)delta;
}

/* amd64: after a frame-pointer step, up to SB_PLAIN_BURST more frames in the same loop
 * iteration while each is plain: a return address in no special range (sb_no_special) nor the vDSO
 * (nothing to classify or cross: what the loop body would do with it is emit it and take the
 * frame-pointer step). Each bpf_loop iteration is an indirect call; most frames of a deep
 * stack are plain, so this saves most of them. The frame limit is checked as the loop body
 * checks it. Returns 1 when the walk stopped, 0 when the loop body takes the next frame. */
SB_INLINE long sb_plain_frames(struct sb_unwind_state *st) {
  struct sb_walk *w = st->w;
  const struct sb_proc_info *pi = st->pi;
  for (int i = 0; i < SB_PLAIN_BURST; i++) {
    sb_u64 lookup_pc = w->pc - 1; /* a return address (the frame-pointer step left it inexact) */
    if (!sb_no_special(pi, lookup_pc)) return 0; /* may be a switch, a root...: the loop body */
    if (w->pc >= pi->vdso_start && w->pc < pi->vdso_end) return 0;
    if (st->out->nframes + 1 >= w->max_frames) return 0; /* the loop body's limit checks */
    sb_emit(st, w->pc, 0);
    w->last_pc = w->pc;
    if (sb_fp_step(st) != 0) return 1;
  }
  return 0;
}

/* The frame-pointer step and the plain frames after it, as one global function: inlined into
 * the loop body they ran no faster and doubled the verifier's work (55,984 instructions for the
 * sampler instead of 24,321). Returns 1 when the walk stopped. */
SB_SUBPROG long sb_g_fp_steps(struct sb_walk *w, const struct sb_proc_info *pi, struct sb_sample *out,
                              struct sb_counters *cnt) {
  SB_GLOBAL_STATE();
  return sb_fp_step(st) != 0 || sb_plain_frames(st) != 0;
}

/* Loop body: emit the current frame, then find the next one. Returns 1 to stop. */
static long sb_unwind_step(sb_u32 index, void *ctx) {
  struct sb_unwind_state *st = (struct sb_unwind_state *)ctx;
  struct sb_walk *w = st->w;
  const struct sb_proc_info *pi = st->pi;
  if (st->out->stop_reason != SB_STOP_NONE) return 1;
  if (st->out->nframes >= w->max_frames) return sb_stop(st, SB_STOP_MAX_FRAMES);
  sb_emit(st, w->pc, w->frame_exact);

  sb_u64 lookup_pc = w->frame_exact ? w->pc : w->pc - 1;
  int kind = sb_frame_kind(pi, lookup_pc);
  if (kind == SB_FN_ROOT) return sb_stop(st, SB_STOP_ROOT);
  if (kind == SB_FN_SIGRETURN && SB_ARM64(st)) kind = SB_FN_NONE; /* amd64's restorer only */
  if (kind == SB_FN_SIGTRAMP || kind == SB_FN_SIGRETURN) {
    /* The signal frame needs only sigtramp's SP and pcsp (registers, no runtime offsets). Its
     * entry SP: SP + pcsp delta; the restorer runs after sigtramp's RET popped `pretcode`. */
    w->last_pc = lookup_pc + 1;
    if (kind == SB_FN_SIGRETURN) {
      if (!w->frame_exact) return sb_stop(st, SB_STOP_BAD_FP); /* nothing calls the restorer */
      return sb_g_cross_signal(w, pi, st->out, st->cnt, w->sp - 8) != 0; /* bpf_loop: 0 or 1 */
    }
    sb_u64 entry_sp = sb_g_sigtramp_entry_sp(w, pi, lookup_pc);
    if (entry_sp == 0) return sb_stop(st, SB_STOP_ROOT);
    return sb_g_cross_signal(w, pi, st->out, st->cnt, entry_sp) != 0;
  }
  if (kind == SB_FN_SCHEDULE && w->on_g0) w->scheduling = 1;
  /* A return address in a function that called with no frame of its own (frameless_callers.h):
   * its callee's frame record links to its caller's caller, so the frame-pointer step would skip
   * its caller (Go 1.19 park_m -> gcWriteBarrierDX -> gcWriteBarrier showed no park_m). Its
   * return address is at its SP, which the step out of that callee left exact (the callee's
   * frame pointer + 16): the pcsp step takes it. Sampled in it, the leaf rule does the same. */
  if (kind == SB_FN_FRAMELESS_CALLER && !SB_ARM64(st) && w->sp != 0) w->exact_sp = 1;
  if (kind == SB_FN_CROSSCALL2) {
    w->last_pc = lookup_pc + 1;
    return sb_g_step_crosscall2(w, pi, st->out, st->cnt, lookup_pc) != 0;
  }
  if (kind == SB_FN_SCHEDULE || kind == SB_FN_GOEXIT0 || kind == SB_FN_FRAMELESS_CALLER)
    kind = SB_FN_NONE; /* ordinary frames otherwise */
  if (kind != SB_FN_NONE && !(pi->flags & SB_PI_HAS_OFFSETS))
    return sb_stop(st, SB_STOP_NO_OFFSETS); /* a switch we cannot cross without offsets */

  long r = -1;
  int in_vdso = w->pc >= pi->vdso_start && w->pc < pi->vdso_end;
  /* Sampled inside nanotime1/walltime/time.now themselves (or with no vDSO at all, as under
   * qemu): their SP may already be on g0, so continue from m.vdsoPC/SP as well. */
  if ((in_vdso || kind == SB_FN_VDSO_CALLER) && (pi->flags & SB_PI_HAS_OFFSETS))
    r = sb_g_cross_vdso(w, pi, st->out, st->cnt, in_vdso);
  if (r >= 0) {
  } else if (kind == SB_FN_CGOCALLBACK) {
    r = sb_g_cross_cgocallback(w, pi, st->out, st->cnt, lookup_pc);
  } else if (w->on_g0) {
    if ((kind == SB_FN_SYSTEMSTACK || kind == SB_FN_ASMCGOCALL) && sb_switched_here(pi, kind, lookup_pc))
      r = sb_g_cross_saved_switch(w, pi, st->out, st->cnt,
                                  kind == SB_FN_ASMCGOCALL ? SB_CROSS_ASMCGOCALL : SB_CROSS_SYSTEMSTACK);
    else if (kind == SB_FN_MCALL) r = sb_g_cross_mcall(w, pi, st->out, st->cnt);
    else if (kind == SB_FN_MORESTACK) r = sb_g_cross_morestack(w, pi, st->out, st->cnt);
  }
  if (r < 0 && kind == SB_FN_ASMCGOCALL) r = sb_asmcgocall_direct(st, lookup_pc);
  w->last_pc = lookup_pc + 1;
  if (r >= 0) return r != 0;
  if (st->out->nframes >= w->max_frames) return sb_stop(st, SB_STOP_MAX_FRAMES);
  /* amd64: the frame-pointer step out of asyncPreempt's frame (its record sits right below the
   * injected return address); arm64: the SP step, whatever the frame. */
  w->injected_call = kind == SB_FN_ASYNCPREEMPT && (SB_ARM64(st) || !w->exact_sp);
  /* amd64 past the leaf: the frame-pointer step, then the plain frames that follow it in the
   * same iteration (sb_g_fp_steps). */
  if (!SB_ARM64(st) && !w->exact_sp && !w->injected_call) return sb_g_fp_steps(w, pi, st->out, st->cnt) != 0;
  return sb_g_step_caller(w, pi, st->out, st->cnt) != 0;
}

#endif /* SWITCHBACK_UNWIND_WALK_LOOP_H */
