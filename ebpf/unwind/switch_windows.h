/* The unwind core: the thread's g and m at the sample, and the windows inside the switch
 * functions where the registers are half switched. Part of unwind_core.h (read its head for what
 * the includer defines); the same code for the BPF programs and for the host. */
#ifndef SWITCHBACK_UNWIND_SWITCH_WINDOWS_H
#define SWITCHBACK_UNWIND_SWITCH_WINDOWS_H

#include "walk_loop.h"

/* Checks that candidate is a g of its m (curg, g0 or gsignal) and loads the thread's g, m,
 * curg and, unless g is m.curg, g0. Returns 0 when it is. g's header (g.m and its goid, in one
 * read) stays in the walk: a sample on a user goroutine needs no other read of g. */
SB_INLINE int sb_try_g(struct sb_unwind_state *st, sb_u64 g) {
  const struct sb_go_offsets *o = &st->pi->off;
  sb_u64 m = 0, g0 = 0, curg = 0, gsignal = 0;
  if (g == 0 || sb_read_g_m(st, g, &m) || m == 0) return -1;
  if (sb_read_u64(st, m + o->m_curg, &curg)) return -1;
  if (g != curg) {
    /* m.g0, then m.gsignal only when g is neither (no crossing needs gsignal). */
    if (sb_read_u64(st, m + o->m_g0, &g0)) return -1;
    if (g != g0 && (sb_read_u64(st, m + o->m_gsignal, &gsignal) || g != gsignal)) return -1;
  }
  st->w->g = g;
  st->w->m = m;
  st->w->g0 = g0;
  st->w->g0_loaded = g != curg; /* g = m.curg: m.g0 when a crossing asks (sb_g0) */
  st->w->curg = curg;
  st->w->on_g0 = g != curg && g == g0;
  return 0;
}

/* arm64 only: the runtime writes g's TLS slot (save_g) only while the byte runtime.iscgo is 1;
 * otherwise the slot is never written and may hold anything. amd64's slot is always current. */
SB_INLINE int sb_tls_g_live(struct sb_unwind_state *st) {
  const struct sb_proc_info *pi = st->pi;
  if (!SB_ARM64(st)) return 1;
  if (!(pi->flags & SB_PI_HAS_ISCGO) || pi->iscgo_addr == 0) return 0;
  sb_u8 iscgo = 0;
  if (sb_read(SB_ENV(st), &iscgo, sizeof(iscgo), pi->iscgo_addr)) return 0;
  return iscgo == 1;
}

/* runtime.gogo resuming m.curg (execute, newstack and recovery all call gogo(&gp.sched) with
 * gp = m.curg): it sets g to gp first (amd64: the TLS slot; arm64: R28, then save_g), so a
 * sample there finds g = m.curg while the registers are not yet all gp's (unwinder/gogo_window.h
 * decodes the windows):
 *   SP still on g0 (before the SP load)  the thread is on g0, in gogo called by execute: walk
 *                                        g0 (walked as gp it ends with bad_fp, on the wrong stack);
 *   SP = gp.sched.sp (up to the JMP)     gp is about to resume at gp.sched.pc (gogo clears
 *                                        sched.sp/bp/lr after loading them, never sched.pc):
 *                                        emit gogo, then walk gp from sched.pc with SP, and BP
 *                                        (arm64: R29, LR) from the gobuf until gogo has loaded
 *                                        them. The save must be mcall's or morestack's (the
 *                                        saved-pc rule) and SP in gp's stack; any other (a new
 *                                        goroutine's first gogo) stops with stale_goroutine
 *                                        after gogo.
 * arm64's g0 window from gogo's BL save_g on (and inside save_g called from there): LR is
 * save_g's return site, the return address into the caller of runtime.gogo is in no register.
 * That caller's frame is at SP (runtime.gogo and gogo<> branch, save_g has no frame), so its own
 * return address at [SP] follows the BL that called it: the BL's target names the caller, and
 * the host's table gives the return site of its one call to runtime.gogo (sb_gogo_caller_site).
 * A caller not in it (newstack, with two calls) ends the stack with end_of_chain after gogo. */
SB_SUBPROG sb_u64 sb_gogo_caller_site(const struct sb_proc_info *pi, sb_u64 bl_pc, sb_u32 word) {
  if (!pi || (word & 0xFC000000u) != 0x94000000u) return 0; /* BL imm26 */
  sb_u64 target = bl_pc + (sb_u64)((sb_s64)((sb_s32)(word << 6) >> 6) * 4);
  if (target < pi->text_start || target - pi->text_start > 0xffffffffull) return 0;
  sb_u32 off = (sb_u32)(target - pi->text_start);
  for (int i = 0; i < SB_MAX_GOGO_CALLERS; i++) {
    if ((sb_u32)i >= pi->ngogo_callers) break;
    if (pi->gogo_callers[i].entry == off) return pi->text_start + pi->gogo_callers[i].site;
  }
  return 0;
}

SB_INLINE void sb_gogo_window(struct sb_unwind_state *st, const struct sb_regs *regs) {
  const struct sb_proc_info *pi = st->pi;
  const struct sb_go_offsets *o = &pi->off;
  sb_u64 pc = regs->pc;
  sb_u64 bl_ret = pi->gogo_g0_lo + 4; /* arm64: the return site of gogo's BL save_g */
  int in_save_g = SB_ARM64(st) && pc >= pi->save_g_lo && pc < pi->save_g_hi && regs->lr == bl_ret;
  if ((pc >= pi->gogo_g0_lo && pc < pi->gogo_g0_hi) || in_save_g) {
    st->w->g = sb_g0(st);
    st->w->on_g0 = 1;
    if (!SB_ARM64(st) || pc == pi->gogo_g0_lo) return; /* LR (arm64) or [SP] (amd64) is the caller */
    sb_emit(st, pc, 1);
    if (in_save_g) sb_emit(st, bl_ret, 0);
    st->w->last_pc = (in_save_g ? bl_ret - 1 : pc) + 1;
    sb_u64 ret = 0;
    sb_u32 word = 0;
    if (sb_read_u64(st, regs->sp, &ret) || ret < 4 || sb_read(SB_ENV(st), &word, sizeof(word), ret - 4)) {
      sb_stop(st, SB_STOP_READ_FAULT);
      return;
    }
    sb_u64 site = sb_gogo_caller_site(pi, ret - 4, word);
    if (site == 0) {
      sb_stop(st, SB_STOP_END_OF_CHAIN);
      return;
    }
    st->w->pc = site; /* a return address in the caller, whose SP is the sampled one */
    st->w->frame_exact = 0;
    st->w->lr_valid = 0;
    return;
  }
  if (pc < pi->gogo_gp_lo || pc >= pi->gogo_gp_hi) return;
  if (st->w->g != st->w->curg) return; /* arm64: past save_g, g is gp wherever it is read */
  sb_u64 gp = st->w->curg, base = gp + o->g_sched, resume = 0, bp = regs->fp, lr = regs->lr;
  sb_emit(st, pc, 1);
  st->w->last_pc = pc + 1;
  if (sb_read_u64(st, base + o->gobuf_pc, &resume) ||
      (pc < pi->gogo_bp_loaded && sb_read_u64(st, base + o->gobuf_bp, &bp)) ||
      (SB_ARM64(st) && pc < pi->gogo_lr_loaded && sb_read_u64(st, base + o->gobuf_lr, &lr))) {
    sb_stop(st, SB_STOP_READ_FAULT);
    return;
  }
  if (!sb_sp_in_stack(st, gp, regs->sp) ||
      !(sb_save_is(st, resume, SB_SAVE_MCALL) || sb_save_is(st, resume, SB_SAVE_MORESTACK))) {
    sb_stop(st, SB_STOP_STALE_GOROUTINE);
    return;
  }
  st->w->pc = resume; /* the next instruction gp runs: exact, and so is its SP */
  st->w->sp = regs->sp;
  st->w->fp = bp;
  st->w->lr = lr; /* arm64: a morestack save resumes in f's prologue, f's caller in LR */
}

/* runtime.systemstack's windows (unwinder/systemstack_window.h): it sets g to g0 (amd64: the
 * TLS slot; arm64: R28, then save_g) before it loads SP from g0.sched.sp, and to m.curg on the
 * way back before it loads SP from curg.sched.sp. A sample in between reads a g whose stack SP
 * is not on. Walked as on the stack SP is on:
 *   switch in (g0, SP still curg's)        as on curg: systemstack's own frame by its pcsp,
 *                                          then its caller F, as before g was set;
 *   switch back (curg, SP on g0, where fn has returned)  as on g0: the systemstack
 *                                          crossing leads to curg (its frame record from Go
 *                                          1.21, curg.sched before; both intact until after
 *                                          the SP load). Walked as on curg it ends with
 *                                          end_of_chain.
 * arm64: inside save_g called from either window (LR its return site) too; save_g is frameless,
 * so the walk goes on from LR into systemstack as from any leaf.
 * amd64 runtime.asmcgocall has the same two windows around its C call (acgo_*): switch back
 * walked as on curg read its g0 frame's saved g as a return address (a stray frame between
 * asmcgocall and cgocall in a stack counted whole: tests/integration/cgo_windows_test.cc). */
SB_INLINE void sb_switch_window(struct sb_unwind_state *st, const struct sb_regs *regs, sb_u64 g0_lo, sb_u64 g0_hi,
                                sb_u64 gp_lo, sb_u64 gp_hi) {
  const struct sb_proc_info *pi = st->pi;
  sb_u64 pc = regs->pc;
  int in_save_g = SB_ARM64(st) && pc >= pi->save_g_lo && pc < pi->save_g_hi;
  int in_g0_window = (pc >= g0_lo && pc < g0_hi) || (in_save_g && regs->lr == g0_lo + 4);
  int in_gp_window = (pc >= gp_lo && pc < gp_hi) || (in_save_g && regs->lr == gp_lo + 4);
  /* m.g0 is read lazily (sb_g0): with TLS g = m.curg it is not loaded yet, and a sample
   * outside both windows (nearly all) must not pay for that read. */
  if (!(in_g0_window || in_gp_window) || st->w->curg == 0 || sb_g0(st) == 0) return;
  if (in_g0_window && st->w->g == st->w->g0 && sb_sp_in_stack(st, st->w->curg, regs->sp)) {
    st->w->g = st->w->curg;
    st->w->on_g0 = 0;
  } else if (in_gp_window && st->w->g == st->w->curg && sb_sp_in_stack(st, st->w->g0, regs->sp)) {
    st->w->g = st->w->g0;
    st->w->on_g0 = 1;
  }
}

/* Whether pc lies in the span of the windows tested before the walk (gogo, systemstack, clone,
 * save_g): outside it, which is nearly every sample, none of their fields is read. */
SB_INLINE int sb_in_windows(const struct sb_proc_info *pi, sb_u64 pc) {
  return pc >= pi->windows_lo && pc < pi->windows_hi;
}

/* Finds the sampled thread's g: the TLS slot when known and live (always on amd64; arm64 with
 * iscgo set), else the g register (arm64 keeps g in R28 in Go code; C code preserves it,
 * callee-saved). */
SB_INLINE void sb_load_g(struct sb_unwind_state *st, const struct sb_regs *regs) {
  const struct sb_proc_info *pi = st->pi;
  if (!(pi->flags & SB_PI_HAS_OFFSETS)) return;
  int found = -1;
  if ((pi->flags & SB_PI_HAS_TLS) && regs->tls_base != 0 && sb_tls_g_live(st)) {
    sb_u64 g = 0;
    if (sb_read_u64(st, regs->tls_base + (sb_u64)pi->tls_g_offset, &g) == 0) found = sb_try_g(st, g);
  }
  if (found != 0 && SB_ARM64(st)) found = sb_try_g(st, regs->g_reg);
  if (found != 0) return;
  if (sb_in_windows(pi, regs->pc)) {
    /* arm64 with cgo: g's TLS slot is gp only once save_g has run, g0 before. */
    if (pi->gogo_gp_hi != 0 && st->w->curg != 0 &&
        (st->w->g == st->w->curg || (SB_ARM64(st) && st->w->g == st->w->g0)))
      sb_gogo_window(st, regs);
    if (pi->sstack_g0_hi != 0)
      sb_switch_window(st, regs, pi->sstack_g0_lo, pi->sstack_g0_hi, pi->sstack_gp_lo, pi->sstack_gp_hi);
    if (pi->acgo_g0_hi != 0)
      sb_switch_window(st, regs, pi->acgo_g0_lo, pi->acgo_g0_hi, pi->acgo_gp_lo, pi->acgo_gp_hi);
  }
  sb_u64 user_g = st->w->g == st->w->curg ? st->w->g : (st->w->on_g0 ? st->w->curg : 0);
  sb_name_goroutine(st, user_g);
  if (st->w->on_g0) st->out->flags |= SB_SAMPLE_ON_G0;
}

SB_SUBPROG long sb_g_load_g(struct sb_walk *w, const struct sb_proc_info *pi, struct sb_sample *out,
                            struct sb_counters *cnt, const struct sb_regs *regs) {
  SB_GLOBAL_STATE();
  if (!regs) return 1;
  sb_load_g(st, regs);
  return 0;
}

/* amd64 runtime.clone's new thread at the code it shares with its parent (after clone's
 * SYSCALL; unwinder/clone_child.h): its SP is the new g0 stack's top, with nothing above it
 * (reading a caller there gave end_of_chain, read_fault or a stray frame), and its TLS, set by
 * CLONE_SETTLS to the new m's, has g 0 until clone stores it; the parent's TLS g is its own g.
 * A child found so is whole: clone is its only frame. */
SB_INLINE int sb_clone_child(struct sb_unwind_state *st, const struct sb_regs *regs) {
  const struct sb_proc_info *pi = st->pi;
  sb_u64 g = 1;
  if (!sb_in_windows(pi, regs->pc) || regs->pc < pi->clone_shared_lo || regs->pc >= pi->clone_shared_hi ||
      SB_ARM64(st))
    return 0;
  if (!(pi->flags & SB_PI_HAS_TLS) || regs->tls_base == 0) return 0;
  return sb_read_u64(st, regs->tls_base + (sb_u64)pi->tls_g_offset, &g) == 0 && g == 0;
}

#endif /* SWITCHBACK_UNWIND_SWITCH_WINDOWS_H */
