/* The baseline the crossing cost is measured against: a plain frame-pointer walk, what perf
 * and the kernel's user stack walker do (follow [fp] and [fp+8] until a read fails, the chain
 * ends or it stops moving up), with no pcsp lookups, no Go runtime reads and no crossings.
 * Only for benchmarking (`switchback record --compare-fp-walk`): its stacks are not kept.
 * Same environment contract as unwind_core.h (sb_read, SB_LOOP). */
#ifndef SWITCHBACK_FP_WALK_BASELINE_H
#define SWITCHBACK_FP_WALK_BASELINE_H

#include "unwind_types.h"
#include "unwind_core.h" /* sb_ghdr_read: the floor reads g's header as the unwinder does */

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

/* The floor under any profiler that names the goroutine a sample belongs to (switchback's
 * `goroutine` label, pprof labels; otel-ebpf-profiler's and Parca's Go label readers make the
 * same reads): the thread's g (amd64: the TLS slot; arm64: R28), g.m and its goid in one
 * read of g's header (as sb_ghdr_read), m.curg, and when the thread is not on it (g0, gsignal)
 * curg's goid; then the plain walk. Nothing is checked beyond "readable", no pcsp, no crossing:
 * the least the unwinder's per-sample work could cost, timed against the plain walk
 * (`record --compare-floor`) to show how much of the unwinder's cost over that walk is the
 * goroutine's cold memory alone. Returns
 * the frames as sb_fp_walk_baseline does; *goid: the goroutine found (0: none). */
SB_SUBPROG sb_u32 sb_fp_walk_floor(sb_u64 env_addr, const struct sb_proc_info *pi, const struct sb_regs *r,
                                   sb_u64 *goid) {
  /* A BPF global function: env as a scalar (the verifier cannot size a void pointer). */
  void *env = (void *)(unsigned long)env_addr;
  if (!pi || !r || !goid) return 0;
  const struct sb_go_offsets *o = &pi->off;
  sb_u64 g = 0, m = 0, curg = 0, id = 0;
  *goid = 0;
  if (pi->arch == SB_ARCH_ARM64) {
    g = r->g_reg; /* Go code keeps g there, C code preserves it; the TLS slot may be unused */
  } else if ((pi->flags & SB_PI_HAS_TLS) && r->tls_base != 0) {
    sb_read(env, &g, sizeof(g), r->tls_base + (sb_u64)pi->tls_g_offset);
  }
  /* g's header exactly as the unwinder reads it (one read: g.m, sched, status, goid). */
  struct sb_walk w = {};
  w.env = env_addr;
  if (g != 0 && sb_ghdr_read(&w, pi, g) == 0) {
    m = w.hdr_m;
    id = w.hdr_goid;
  }
  if (m != 0 && sb_read(env, &curg, sizeof(curg), m + o->m_curg) == 0 && curg != 0 && curg != g)
    sb_read(env, &id, sizeof(id), curg + o->g_goid); /* on g0 or gsignal: the goroutine's id */
  *goid = m != 0 && curg != 0 ? id : 0;
  return sb_fp_walk_baseline(env, r->fp, pi->max_frames);
}

#endif /* SWITCHBACK_FP_WALK_BASELINE_H */
