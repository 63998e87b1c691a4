/* The baseline the crossing cost is measured against: a plain frame-pointer walk, what perf
 * and the kernel's user stack walker do (follow [fp] and [fp+8] until a read fails, the chain
 * ends or it stops moving up), with no pcsp lookups, no Go runtime reads and no crossings.
 * Only for benchmarking (`switchback record --compare-fp-walk`): its stacks are not kept.
 * Same environment contract as unwind_core.h (sb_read, SB_LOOP). */
#ifndef SWITCHBACK_FP_WALK_BASELINE_H
#define SWITCHBACK_FP_WALK_BASELINE_H

#include "unwind_types.h"

struct sb_fp_walk {
  sb_u64 fp;
  sb_u32 frames;
  void *env;
};

static long sb_fp_walk_step(sb_u32 index, void *ctx) {
  struct sb_fp_walk *w = (struct sb_fp_walk *)ctx;
  sb_u64 rec[2] = {0, 0}; /* saved fp, return address */
  if (w->fp == 0 || (w->fp & 7) != 0 || sb_read(w->env, rec, sizeof(rec), w->fp) != 0) return 1;
  if (rec[1] == 0) return 1;
  w->frames++;
  if (rec[0] <= w->fp) return 1; /* frame pointers move up the stack */
  w->fp = rec[0];
  return 0;
}

/* Returns the number of frames found above the leaf (at most max_frames - 1, like the unwind). */
SB_INLINE sb_u32 sb_fp_walk_baseline(void *env, sb_u64 fp, sb_u32 max_frames) {
  struct sb_fp_walk w = {fp, 0, env};
  if (max_frames == 0 || max_frames > SB_MAX_FRAMES) max_frames = SB_DEFAULT_MAX_FRAMES;
  SB_LOOP(max_frames - 1, sb_fp_walk_step, &w);
  return w.frames;
}

#endif /* SWITCHBACK_FP_WALK_BASELINE_H */
