/* Relocating a process's runtime facts: the facts of an executable are made once at its
 * link-time addresses (bias 0) and moved to where each process has it loaded. Shared by the
 * BPF programs and the host (plain C). */
#ifndef SWITCHBACK_PROC_INFO_BIAS_H
#define SWITCHBACK_PROC_INFO_BIAS_H

#include "unwind_types.h"

/* sb_proc_info for a process whose executable is loaded `bias` bytes above its link-time
 * addresses, from the one made for bias 0 (unwinder::MakeProcInfo(facts, 0, ...)): every
 * field that holds a runtime address of the executable moves by bias. The one list of them,
 * used by the sampler (a process made from its executable's template at exec) and the exit
 * probe (trace --stacks --binary of a PIE executable), and checked on the host against
 * MakeProcInfo(facts, B) (tests/exitprobe/proc_info_bias_test.cc), so a new address field that
 * is not added here fails that test. Not addresses of the executable: tls_g_offset,
 * the sp_deltas run, mcall_sites (offsets from text_start), and vdso_start/end (the [vdso]
 * mapping is placed apart from the executable: its caller sets them). */
static inline void sb_proc_info_add_bias(struct sb_proc_info *pi, sb_u64 bias) {
  pi->text_start += bias;
  pi->text_end += bias;
  if (pi->flags & SB_PI_HAS_ISCGO) pi->iscgo_addr += bias;
  for (int i = 0; i < SB_MAX_RANGES; i++) {
    if (i >= (int)pi->nranges) break;
    pi->ranges[i].start += bias;
    pi->ranges[i].end += bias;
  }
  if (pi->morestack) pi->morestack += bias;
  if (pi->morestack_noctxt) pi->morestack_noctxt += bias;
  if (pi->sswitch_start) {
    pi->sswitch_start += bias;
    pi->sswitch_end += bias;
  }
  if (pi->gogo_g0_hi) { /* amd64 gogo's windows (0: not decoded) */
    pi->gogo_g0_lo += bias;
    pi->gogo_g0_hi += bias;
    pi->gogo_gp_lo += bias;
    pi->gogo_gp_hi += bias;
    pi->gogo_bp_loaded += bias;
  }
  if (pi->gogo_lr_loaded) /* arm64 gogo (0: amd64 or not decoded); gogo_callers: offsets */
    pi->gogo_lr_loaded += bias;
  if (pi->save_g_hi) { /* arm64 runtime.save_g (0: amd64 or neither window decoded) */
    pi->save_g_lo += bias;
    pi->save_g_hi += bias;
  }
  if (pi->sstack_g0_hi) { /* systemstack's windows (0: not decoded) */
    pi->sstack_g0_lo += bias;
    pi->sstack_g0_hi += bias;
    pi->sstack_gp_lo += bias;
    pi->sstack_gp_hi += bias;
  }
  if (pi->acgo_g0_hi) { /* asmcgocall's windows (0: not decoded) */
    pi->acgo_g0_lo += bias;
    pi->acgo_g0_hi += bias;
    pi->acgo_gp_lo += bias;
    pi->acgo_gp_hi += bias;
  }
  if (pi->clone_shared_hi) { /* amd64 clone's new thread (0: not decoded) */
    pi->clone_shared_lo += bias;
    pi->clone_shared_hi += bias;
  }
  if (pi->special_hi) { /* the spans (proc_info_spans.h) */
    pi->special_lo += bias;
    pi->special_hi += bias;
  }
  if (pi->windows_hi) {
    pi->windows_lo += bias;
    pi->windows_hi += bias;
  }
  /* newstack_lo/hi, mcall_sites, mcall_fns, gogo_callers and the pcsp bucket index are offsets
   * from text_start. */
}

#endif
