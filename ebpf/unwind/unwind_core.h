/* The unwind core: one source of truth for the BPF sampler and for coredump replay.
 *
 * The includer defines, before including this header:
 *   SB_INLINE                         static inline (always_inline in BPF)
 *   int sb_read(void *env, void *dst, sb_u32 size, sb_u64 addr)   0 on success
 *   int sb_delta_entry(void *env, sb_u32 index, struct sb_sp_delta *out)   0 on success
 *   SB_LOOP(n, callback, ctx)         bpf_loop in BPF, a plain loop on the host
 *   SB_SUBPROG                        a function the BPF verifier checks once, on its own (a
 *                                     global function in BPF; static inline on the host)
 * and then calls sb_unwind() with the registers of the sampled thread.
 *
 * The walk is a bounded loop over frames. Each iteration emits the current pc, stops at a
 * root (TOPFRAME function), crosses a Go stack switch when the pc is in a switch function,
 * and otherwise steps to the caller: by the pcsp table for a frame whose frame pointer may
 * not be set up yet (the leaf, or the first frame after a switch), by the frame pointer
 * chain otherwise. Every stop has a named reason. */
#ifndef SWITCHBACK_UNWIND_CORE_H
#define SWITCHBACK_UNWIND_CORE_H

/* The core is one header per concern and one per crossing, each including the one before it
 * (the order the compiler sees them in is the order of this list):
 *   walk_state.h           the walk's state (sb_walk, sb_unwind_state), the constants
 *   memory_reads.h         reads of the sampled process's memory (and the stack window)
 *   goroutine_header.h     a goroutine's header in one read, its m and g0; the sample's goroutine
 *   stop_reasons.h         the named stop reasons and the crossings' counters
 *   classify.h             what a pc is: a root, a switch function, Go text, other
 *   pcsp_lookup.h          the SP delta at a pc (pcsp table, bucket index, cache)
 *   frame_emit.h           emitting a frame, moving to another stack, the live curg
 *   gobuf_resume.h         resuming a goroutine from its gobuf, on proof of the save
 *   cross_systemstack.h    systemstack (and asmcgocall, which saves the same way)
 *   cross_mcall.h          mcall
 *   cross_morestack.h      morestack (m.morebuf, and newstack's copy of it)
 *   cross_vdso.h           the vDSO (m.vdsoSP / vdsoPC)
 *   cross_signal.h         a signal frame (the interrupted context)
 *   cross_cgocallback.h    cgocallback (Go called back from C)
 *   cross_asmcgocall.h     where systemstack / asmcgocall switch; asmcgocall's direct path
 *   frame_step.h           the step to the caller, and which crossing a frame leads to
 *   walk_loop.h            the BPF global functions and the bounded frame loop
 *   switch_windows.h       the thread's g and m; the half-switched windows
 * This file is the driver: where a walk starts and its result. */
#include "switch_windows.h"

/* Unwinds one thread into `out`, which must have nframes = 0, stop_reason = 0, crossed = 0,
 * exact = 0. `w` is the walk's memory (a stack variable or a map value of the caller's); after
 * the call it holds the final walk state, among it w->label_g: the goroutine the sample is
 * labelled with (0: none). Returns w->label_g. */
SB_INLINE sb_u64 sb_unwind_walk(const struct sb_proc_info *pi, struct sb_sample *out, struct sb_counters *cnt,
                                void *env, const struct sb_regs *regs, struct sb_walk *w) {
  struct sb_walk zero = {};
  *w = zero;
  w->pc = regs->pc;
  w->sp = regs->sp;
  w->fp = regs->fp;
  w->lr = regs->lr;
  w->lr_valid = pi->arch == SB_ARCH_ARM64;
  w->arm64 = pi->arch == SB_ARCH_ARM64;
  w->exact_sp = 1;
  w->frame_exact = 1;
  w->env = (sb_u64)(unsigned long)env;
  /* Cost is linear in the limit: the loop ends at the stack's end or at the limit. */
  w->max_frames = pi->max_frames == 0 ? SB_DEFAULT_MAX_FRAMES
                  : pi->max_frames > SB_MAX_FRAMES ? SB_MAX_FRAMES : pi->max_frames;
  struct sb_unwind_state st = {w, pi, out, cnt};
  if (pi->flags & SB_PI_GO) sb_g_load_g(w, pi, out, cnt, regs);
  if ((pi->flags & SB_PI_GO) && sb_clone_child(&st, regs)) { /* the loop then stops at once */
    sb_emit(&st, regs->pc, 1);
    sb_stop(&st, SB_STOP_ROOT);
  }
  SB_LOOP(w->max_frames + 1, sb_unwind_step, &st);
  if (out->stop_reason == SB_STOP_NONE) out->stop_reason = SB_STOP_MAX_FRAMES;
  if (out->stop_reason < SB_STOP_MAX) cnt->stop[out->stop_reason]++;
  cnt->samples++;
  return w->label_g;
}

/* The same with the walk on the caller's stack. Returns the goroutine the sample is labelled
 * with (its g address; 0: none). */
SB_INLINE sb_u64 sb_unwind(const struct sb_proc_info *pi, struct sb_sample *out, struct sb_counters *cnt,
                           void *env, const struct sb_regs *regs) {
  struct sb_walk w;
  return sb_unwind_walk(pi, out, cnt, env, regs, &w);
}

#endif /* SWITCHBACK_UNWIND_CORE_H */
