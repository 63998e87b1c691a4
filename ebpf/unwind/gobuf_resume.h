/* The unwind core: resuming a goroutine from its saved gobuf, with the proofs that it is the
 * save this very switch made. Part of unwind_core.h (read its head for what the includer
 * defines); the same code for the BPF programs and for the host. */
#ifndef SWITCHBACK_UNWIND_GOBUF_RESUME_H
#define SWITCHBACK_UNWIND_GOBUF_RESUME_H

#include "frame_emit.h"

/* The saved-pc rule. A goroutine's gobuf says where it stopped; who saved it is known from the
 * pc alone, and a crossing accepts only the save its own switch makes, so a goroutine that
 * stopped somewhere else since (parked again, preempted at a stack check) is never attached:
 *   mcall                      saves its own return address: a return site of a call to
 *                              runtime.mcall (the host decodes them all: mcall_sites);
 *   morestack                  the pc right after f's call to morestack / morestack_noctxt
 *                              (checked in the text: CALL rel32 / BL imm26 to one of them);
 *   gosave_systemstack_switch  a pc in runtime.systemstack_switch (systemstack, asmcgocall). */
#define SB_SAVE_MCALL 1
#define SB_SAVE_MORESTACK 2
#define SB_SAVE_SYSTEMSTACK 3

/* Whether pc is a return site of a call to runtime.mcall: a scan of the sorted offsets that
 * stops at the first one past pc (a binary search cost the verifier 66 k instructions: every
 * (lo, hi) pair is a state of its own; the scan's iterations all end in the same state). */
SB_SUBPROG int sb_is_mcall_site(const struct sb_proc_info *pi, sb_u64 pc) {
  if (!pi || pc < pi->text_start || pc - pi->text_start > 0xffffffffull) return 0;
  sb_u32 off = (sb_u32)(pc - pi->text_start);
  for (int i = 0; i < SB_MAX_MCALL_SITES; i++) {
    if ((sb_u32)i >= pi->nmcall_sites) break;
    sb_u32 v = pi->mcall_sites[i];
    if (v >= off) return v == off;
  }
  return 0;
}

/* The saved-pc rule's callee check for mcall: each call site passes mcall one known function
 * (gopark: park_m, Gosched: gosched_m, exitsyscall: exitsyscall0, ...; decoded on the host into
 * mcall_fns beside mcall_sites), and on g0 the frame just below mcall is the function it
 * called. A goroutine whose sched.pc is site i called this mcall only if callee_pc lies in
 * site i's function: one that has run since and parked again through another site (this M's
 * mcall(exitsyscall0), gopark's mcall(park_m) on another M) fails. The frame the walk shows
 * below mcall is the callee only if the frame-pointer walk did not skip it: a callee that called
 * a frameless function which calls on (Go 1.19's gcWriteBarrierDX) is skipped, the walk shows
 * that function instead. So a callee_pc in no mcall callee at all says nothing (not checked);
 * only one in another site's callee is stale. 1: consistent or unchecked (fn not decoded;
 * pc no site, which sb_gobuf_resume refuses); 0: stale. */
SB_SUBPROG int sb_mcall_callee_is(const struct sb_proc_info *pi, sb_u64 site_pc, sb_u64 callee_pc) {
  if (!pi || site_pc < pi->text_start || site_pc - pi->text_start > 0xffffffffull) return 1;
  sb_u32 off = (sb_u32)(site_pc - pi->text_start);
  sb_u64 coff = callee_pc - pi->text_start; /* wraps below text_start: outside every function */
  /* Two scans that end at their answer: no state carried across iterations (each carried
   * flag multiplies the verifier's states; a one-pass version did not load). */
  for (int i = 0; i < SB_MAX_MCALL_SITES; i++) {
    if ((sb_u32)i >= pi->nmcall_sites) return 1; /* no site */
    if (pi->mcall_sites[i] < off) continue;
    if (pi->mcall_sites[i] != off) return 1; /* no site */
    sb_u32 lo = pi->mcall_fns[i].lo, hi = pi->mcall_fns[i].hi;
    if (hi == 0 || (coff >= lo && coff < hi)) return 1;
    break;
  }
  for (int i = 0; i < SB_MAX_MCALL_SITES; i++) {
    if ((sb_u32)i >= pi->nmcall_sites) break;
    if (pi->mcall_fns[i].hi != 0 && coff >= pi->mcall_fns[i].lo && coff < pi->mcall_fns[i].hi) return 0;
  }
  return 1;
}

/* Whether gp's gobuf may be this mcall's by its callee (sb_mcall_callee_is): the frame the walk
 * came from is the callee, unless mcall's own pc is exact (sampled in mcall, or interrupted
 * there by a signal): then no callee frame was walked. */
SB_INLINE int sb_mcall_callee_ok(struct sb_unwind_state *st, sb_u64 gp) {
  const struct sb_go_offsets *o = &st->pi->off;
  sb_u64 pc = 0;
  if (gp == 0 || st->w->frame_exact || st->w->last_pc == 0) return 1;
  /* gp's header: read here or by sb_live_curg already, and sb_gobuf_resume reads it next. */
  if (sb_ghdr(st, gp)) pc = st->w->hdr_pc;
  else if (sb_read_u64(st, gp + o->g_sched + o->gobuf_pc, &pc)) return 1; /* sb_gobuf_resume stops */
  return sb_mcall_callee_is(st->pi, pc, st->w->last_pc - 1);
}

/* Whether the instruction that ends right before pc is a direct call to runtime.morestack or
 * runtime.morestack_noctxt (read from the process's text: that code has just run). */
SB_INLINE int sb_after_morestack_call(struct sb_unwind_state *st, sb_u64 pc) {
  const struct sb_proc_info *pi = st->pi;
  sb_u64 target = 0;
  if (pi->morestack == 0 || pc < 8) return 0;
  if (SB_ARM64(st)) {
    sb_u32 word = 0;
    if (sb_read(SB_ENV(st), &word, sizeof(word), pc - 4) || (word & 0xFC000000u) != 0x94000000u) return 0;
    sb_s64 imm = (sb_s64)((sb_s32)(word << 6) >> 6) * 4; /* BL imm26, sign-extended, in words */
    target = pc - 4 + (sb_u64)imm;
  } else {
    sb_u8 b[5] = {};
    if (sb_read(SB_ENV(st), b, sizeof(b), pc - 5) || b[0] != 0xE8) return 0;
    sb_s32 rel = (sb_s32)((sb_u32)b[1] | (sb_u32)b[2] << 8 | (sb_u32)b[3] << 16 | (sb_u32)b[4] << 24);
    target = pc + (sb_u64)(sb_s64)rel; /* CALL rel32 */
  }
  return target == pi->morestack || (pi->morestack_noctxt != 0 && target == pi->morestack_noctxt);
}

/* mcall's link (amd64 Go 1.19, 1.21-1.24): mcall calls its callee on g0 with BP as it was on the
 * goroutine, so the frame pointer the callee saved there (the walk's fp at mcall's frame, or BP
 * itself when sampled in mcall) names the gobuf that very mcall saved: in Go 1.19 (mcall has no
 * frame) it is mcall's caller's frame pointer, which mcall stored as gobuf.bp; from 1.21 mcall's
 * own frame record, right below its caller's SP (gobuf.sp - 16). A goroutine that has run
 * since and parked again, through the same mcall site too (gopark's, which every channel, lock
 * and sleep shares), has saved another gobuf unless it parked at the very same stack address.
 * Go 1.25+ clears BP before the call, and arm64's mcall loads g0.sched.bp into R29: nothing to
 * compare (SB_PI_MCALL_LINK_* unset). */
SB_INLINE int sb_mcall_link_ok(struct sb_unwind_state *st, sb_u64 sched_sp, sb_u64 sched_bp) {
  sb_u32 flags = st->pi->flags;
  if (SB_ARM64(st)) return 1;
  if (flags & SB_PI_MCALL_LINK_BP) return st->w->fp == sched_bp;
  if (flags & SB_PI_MCALL_LINK_FRAME) return st->w->fp == sched_sp - 16;
  return 1;
}

SB_INLINE int sb_save_is(struct sb_unwind_state *st, sb_u64 pc, int save) {
  const struct sb_proc_info *pi = st->pi;
  if (save == SB_SAVE_MCALL) return sb_is_mcall_site(pi, pc);
  if (save == SB_SAVE_MORESTACK) return sb_after_morestack_call(st, pc);
  return pi->sswitch_start != 0 && pc >= pi->sswitch_start && pc < pi->sswitch_end;
}

/* The one reader of a goroutine's saved state: every crossing that resumes a goroutine comes here
 * with the save its switch makes (SB_SAVE_*). The save is gp's gobuf, or, for the asmcgocall
 * below a cgocallback crossing (w->cb_g, sb_cross_saved_switch), the one other place the runtime
 * keeps one: cgocallback's fake frame on gp's stack, which holds asmcgocall's save while the
 * callback runs (the gobuf then holds whatever the callback saved since). The saved pc must be
 * that save (the rule above), the saved sp inside gp's stack; otherwise gp is not this stack's
 * caller and the walk stops. Then the walk moves onto gp the way Go's traceback starts from a
 * gobuf:
 *   mcall      the pc is a return address in a frame that is set up: walk on from pc/sp/bp;
 *   morestack  f was stopped in its prologue, before its frame exists: emit f (the pc), then
 *              its caller, whose return address is only in sched.lr on arm64 (Go's traceback
 *              starts with lr = gp.sched.lr) and at [sched.sp] on amd64 (the CALL pushed it);
 *   systemstack_switch  the two recipes of sb_cross_saved_switch.
 * want_caller_sp != 0 (morestack only): f's caller must be at that sp with return address
 * want_caller_pc (newstack's copy of m.morebuf, sb_morestack_from_morebuf), else stale.
 * moved: the stop reason when the save is not (or no longer) that save: stale_goroutine, or
 * goroutine_left where the caller named the goroutine for certain after dropg (mcall's g0
 * slot, newstack's morebuf): then it has run elsewhere since and the g0 stack is whole.
 * Returns 0 when the walk continues on the goroutine, 1 when it stopped, -1 when the caller
 * continues with an ordinary frame step. */
SB_INLINE long sb_gobuf_resume(struct sb_unwind_state *st, int crossing, sb_u64 gp, int save,
                               sb_u64 want_caller_pc, sb_u64 want_caller_sp, int moved) {
  const struct sb_go_offsets *o = &st->pi->off;
  sb_u64 base = gp + o->g_sched;
  sb_u64 sp = 0, pc = 0, bp = 0;
  if (gp == 0) return sb_cross_stopped(st, crossing, SB_STOP_STALE_GOROUTINE);
  if (crossing == SB_CROSS_ASMCGOCALL && st->w->cb_g == gp) {
    /* bp 0: amd64 takes F's frame pointer from F's pcsp (the fake frame has none before Go
     * 1.21), arm64 needs only sp. */
    sp = st->w->cb_sp;
    if (sb_read_u64(st, st->w->cb_pc_at, &pc)) return sb_cross_stopped(st, crossing, SB_STOP_READ_FAULT);
  } else if (sb_ghdr(st, gp)) {
    sp = st->w->hdr_sp;
    pc = st->w->hdr_pc;
    bp = st->w->hdr_bp;
  } else if (sb_read_u64(st, base + o->gobuf_sp, &sp) || sb_read_u64(st, base + o->gobuf_pc, &pc) ||
             sb_read_u64(st, base + o->gobuf_bp, &bp))
    return sb_cross_stopped(st, crossing, save == SB_SAVE_SYSTEMSTACK ? SB_STOP_READ_FAULT : SB_STOP_STALE_GOROUTINE);
  if (sp == 0 || pc == 0 || !sb_save_is(st, pc, save)) return sb_cross_stopped(st, crossing, moved);
  if (save == SB_SAVE_MCALL) {
    if (!sb_sp_in_stack(st, gp, sp) || !sb_mcall_link_ok(st, sp, bp)) return sb_cross_stopped(st, crossing, moved);
    sb_switch_to(st, pc, sp, bp);
    sb_crossed(st, crossing);
    return 0;
  }
  if (save == SB_SAVE_MORESTACK) {
    /* While the stack is being copied (status copystack) the saved frame pointers are being
     * rewritten: some point into the new stack, some still into the old one. Return addresses
     * and frame sizes never change, though, and sched.sp always names a whole copy (the old
     * stack until copystack swaps gp.stack and sched.sp, the fully copied new one after; the
     * old one is freed only after that). So the goroutine is walked by SP and pcsp alone, as
     * Go's own traceback does: on arm64 that is how Go frames are always walked, on amd64 a
     * zero frame pointer keeps the pcsp step going for this stack. Only when sched.sp is
     * outside g.stack (the instant between the two stores of the swap) does the walk stop
     * with `copystack`, after f and its caller. */
    sb_u32 status = 0;
    sb_u64 ret = 0;
    if (st->w->hdr_g == gp) status = st->w->hdr_status;
    else if (sb_read(SB_ENV(st), &status, sizeof(status), gp + o->g_atomicstatus))
      return sb_cross_stopped(st, crossing, SB_STOP_READ_FAULT);
    int copying = status == SB_GO_STATUS_COPYSTACK;
    int in_stack = sb_sp_in_stack(st, gp, sp);
    if (!in_stack && !copying) return sb_cross_stopped(st, crossing, moved);
    if (sb_read_u64(st, SB_ARM64(st) ? base + o->gobuf_lr : sp, &ret))
      return sb_cross_stopped(st, crossing, SB_STOP_READ_FAULT);
    /* morestack stored f's caller in m.morebuf too: amd64 sp + 8 (past f's return address) and
     * that return address; arm64 sp itself and sched.lr. */
    if (want_caller_sp != 0 && (ret != want_caller_pc || (SB_ARM64(st) ? sp : sp + 8) != want_caller_sp))
      return sb_cross_stopped(st, crossing, moved);
    sb_emit(st, pc, 0); /* f itself, stopped at its call to morestack */
    if (!in_stack) {
      if (ret != 0) sb_emit(st, ret, 0);
      return sb_cross_stopped(st, crossing, SB_STOP_COPYSTACK);
    }
    sb_switch_to(st, ret, SB_ARM64(st) ? sp : sp + 8, bp); /* amd64: past the pushed return address */
    if (copying && !SB_ARM64(st)) {
      /* No trusted frame pointer (fp 0): the amd64 pcsp step keeps walking by SP. No flag of
       * its own: every extra state bit multiplies the BPF verifier's work. */
      st->w->fp = 0;
      st->w->exact_sp = 1; /* f's caller's SP: just above f's return address */
    }
    sb_crossed(st, crossing);
    return 0;
  }
  if ((st->pi->flags & SB_PI_SWITCH_SCHED_BP) || (SB_ARM64(st) && crossing == SB_CROSS_ASMCGOCALL)) {
    /* arm64 before Go 1.25 (asmcgocall: every version): the switch function has a frame on the
     * goroutine stack, at sched.sp, which gosave_systemstack_switch saved with its frame pointer
     * (sched.bp, = sched.sp - 8 by arm64's frame layout); on g0 it loaded R29 from g0.sched.bp,
     * so the g0 chain does not lead back. Continue at that frame record, found from sched.sp:
     * during a C call that calls back into Go, sched.bp is cgocall's frame pointer from the
     * first callback's return on (reentersyscall saves it; cgocallback restores only sched.pc
     * and sched.sp), and the walk from there skipped cgocall and ended in bad_fp
     * (arm64-go1.23.5-cgocallback). */
    if (sp < 8 || !sb_sp_in_stack(st, gp, sp)) return sb_cross_stopped(st, crossing, SB_STOP_STALE_GOROUTINE);
    st->w->fp = sp - 8;
    st->w->sp = sp; /* the switch function's own SP on the goroutine stack */
    st->w->prev_fp = 0;
    st->w->on_g0 = 0;
    st->w->exact_sp = 1;
    st->w->frame_exact = 0;
    sb_crossed(st, crossing);
    return -1; /* the step from the switch function's own frame yields its caller */
  }
  /* amd64 before Go 1.21: F's return address at curg.sched.sp, its frame pointer sched.bp. */
  if (!sb_sp_in_stack(st, gp, sp)) return sb_cross_stopped(st, crossing, SB_STOP_STALE_GOROUTINE);
  sb_u64 caller = 0;
  if (sb_read_u64(st, sp, &caller)) return sb_cross_stopped(st, crossing, SB_STOP_READ_FAULT);
  if (bp == 0 || crossing == SB_CROSS_ASMCGOCALL) {
    /* F is mid-body, so its frame pointer is where its prologue pushed BP, right below its
     * return address: F's SP (sp + 8) + pcsp delta - 8 (only for a Go frame with a BP slot).
     * asmcgocall's caller always: once C has called back into Go, curg.sched.bp is 0 (found
     * in a cgocallback core) or, between two callbacks, the frame pointer of the last
     * systemstack a callback called (cgocallback restores only sched.pc and sched.sp), and a
     * walk from it repeated callback frames before bad_fp or read_fault. */
    sb_s32 d = 0;
    if (sb_lookup_sp_delta(st, caller - 1, &d) == 0 && d >= 16) bp = sp + (sb_u64)d;
  }
  sb_switch_to(st, caller, sp + 8, bp);
  sb_crossed(st, crossing);
  return 0;
}

#endif /* SWITCHBACK_UNWIND_GOBUF_RESUME_H */
