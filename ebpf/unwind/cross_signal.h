/* The unwind core: the signal crossing (the interrupted context in the signal frame). Part of
 * unwind_core.h (read its head for what the includer defines); the same code for the BPF
 * programs and for the host. */
#ifndef SWITCHBACK_UNWIND_CROSS_SIGNAL_H
#define SWITCHBACK_UNWIND_CROSS_SIGNAL_H

#include "cross_vdso.h"

/* The signal frame the kernel built for a handler: runtime.sigtramp is entered with SP at it
 * (amd64: the restorer's address `pretcode`, then the ucontext; arm64: siginfo (128 bytes),
 * then the ucontext). Kernel ABI, the same in every Go version; qemu-user copies it.
 * amd64 uc_mcontext at uc+40: r14 +48, rbp +80, rsp +120, rip +128.
 * arm64 uc_mcontext at uc+176: fault_address, then x0..x30, sp, pc (x28 +232, x29 +240,
 * x30 +248, sp +256, pc +264). */
#define SB_AMD64_MCTX (8 + 40)
#define SB_ARM64_MCTX_X0 (128 + 176 + 8)

/* runtime.sigtramp on a signal stack (gsignal): the interrupted context is in the ucontext
 * the kernel saved at sigtramp's entry SP, found from sigtramp's own SP and its pcsp delta
 * (no layout of Go's handler frames is assumed). The interrupted pc is exact and its frame
 * may be a frameless leaf or a prologue: the walk continues with the leaf rule there, on the
 * stack the interrupted SP lies in (g0 or the goroutine, whose id the sample then carries). */
SB_INLINE long sb_cross_signal(struct sb_unwind_state *st, sb_u64 entry_sp) {
  sb_count(st, SB_CROSS_SIGNAL, SB_CNT_ATTEMPTS);
  sb_u64 pc = 0, sp = 0, fp = 0, lr = 0;
  if (SB_ARM64(st)) {
    sb_u64 x = entry_sp + SB_ARM64_MCTX_X0;
    if (sb_read_u64(st, x + 32 * 8, &pc) || sb_read_u64(st, x + 31 * 8, &sp) ||
        sb_read_u64(st, x + 29 * 8, &fp) || sb_read_u64(st, x + 30 * 8, &lr))
      return sb_cross_stopped(st, SB_CROSS_SIGNAL, SB_STOP_READ_FAULT);
  } else {
    sb_u64 mc = entry_sp + SB_AMD64_MCTX;
    if (sb_read_u64(st, mc + 128, &pc) || sb_read_u64(st, mc + 120, &sp) || sb_read_u64(st, mc + 80, &fp))
      return sb_cross_stopped(st, SB_CROSS_SIGNAL, SB_STOP_READ_FAULT);
  }
  if (pc == 0 || sp == 0) return sb_cross_stopped(st, SB_CROSS_SIGNAL, SB_STOP_END_OF_CHAIN);
  sb_switch_to(st, pc, sp, fp);
  st->w->exact_sp = 1;
  st->w->frame_exact = 1;
  st->w->lr = lr;
  st->w->lr_valid = SB_ARM64(st);
  if (st->w->m != 0 && (st->pi->flags & SB_PI_HAS_OFFSETS)) {
    sb_u64 gp = sb_live_curg(st);
    sb_u64 g0 = sb_g0(st);
    if (g0 != 0 && sb_sp_in_stack(st, g0, sp)) {
      st->w->on_g0 = 1;
    } else if (gp != 0 && sb_sp_in_stack(st, gp, sp) && !(st->out->flags & SB_SAMPLE_HAS_GOID)) {
      sb_name_goroutine(st, gp);
    }
  }
  sb_crossed(st, SB_CROSS_SIGNAL);
  return 0;
}

#endif /* SWITCHBACK_UNWIND_CROSS_SIGNAL_H */
