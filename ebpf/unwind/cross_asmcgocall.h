/* The unwind core: where systemstack and asmcgocall switch, and asmcgocall's direct path. Part
 * of unwind_core.h (read its head for what the includer defines); the same code for the BPF
 * programs and for the host. */
#ifndef SWITCHBACK_UNWIND_CROSS_ASMCGOCALL_H
#define SWITCHBACK_UNWIND_CROSS_ASMCGOCALL_H

#include "cross_cgocallback.h"

/* Whether a frame of systemstack / asmcgocall on g0 (kind) at pc is in their switched path
 * ([switched_lo, direct_lo), unwinder/switch_paths.h): the one place the crossing applies.
 * Their direct path (systemstack's noswitch, asmcgocall's nosave: called on g0 already) and
 * the tests before the switch run on the g0 stack the caller is on: an ordinary frame, whose
 * caller is one more g0 frame. Not decoded (hi 0): every pc, as before. */
SB_INLINE int sb_switched_here(const struct sb_proc_info *pi, int kind, sb_u64 pc) {
  sb_u32 lo = kind == SB_FN_ASMCGOCALL ? pi->acgo_switched_lo : pi->sstack_switched_lo;
  sb_u32 hi = kind == SB_FN_ASMCGOCALL ? pi->acgo_direct_lo : pi->sstack_direct_lo;
  if (hi == 0) return 1;
  return pc >= pi->text_start + lo && pc < pi->text_start + hi;
}

/* amd64 asmcgocall at a return address in its direct path (called on g0 or gsignal; C
 * returned into it, the walk's SP is exact: the C frame's record + 16). Before Go 1.21 it has
 * no frame record, so the frame-pointer step would skip its Go caller; its entry SP, saved in
 * its aligned frame, holds the return address into that caller (acgo_entry_sp_slot, decoded;
 * 0 from Go 1.21 on, where its own PUSHQ BP makes the frame-pointer step keep the caller).
 * 0: the walk is at the caller (its frame pointer is still fp: asmcgocall never touches BP);
 * -1: not applicable or not plausible, the ordinary step then. */
SB_INLINE long sb_asmcgocall_direct(struct sb_unwind_state *st, sb_u64 lookup_pc) {
  const struct sb_proc_info *pi = st->pi;
  sb_u64 sp = st->w->sp, entry_sp = 0, ret = 0;
  if (SB_ARM64(st) || pi->acgo_entry_sp_slot == 0 || st->w->frame_exact || sp == 0 ||
      lookup_pc < pi->text_start + pi->acgo_direct_lo)
    return -1;
  if (sb_read_u64(st, sp + pi->acgo_entry_sp_slot - 1, &entry_sp) || entry_sp <= sp || entry_sp - sp > 256 ||
      (entry_sp & 7) != 0 || sb_read_u64(st, entry_sp, &ret) || !sb_in_go_text(pi, ret))
    return -1;
  st->w->pc = ret;
  st->w->sp = entry_sp + 8;
  st->w->exact_sp = 0;
  st->w->frame_exact = 0;
  st->w->lr_valid = 0;
  return 0;
}

#endif /* SWITCHBACK_UNWIND_CROSS_ASMCGOCALL_H */
