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

/* The crossing floor's walk: g's stack while the chain stays in [lo, hi), then (one iteration,
 * one frame: gobuf.pc) curg's stack from gobuf.bp. Records are read as the unwinder reads them
 * (sb_read_record: from the sampler's stack window), so that the floor and the unwinder differ
 * only in what the unwinder does beyond reading. One loop, each iteration at most one frame, so
 * that the frame count is never tested outside it (a test there makes the verifier track every
 * count the loop can end with, one state each, past its limit). */
struct sb_fp_cross_walk {
  struct sb_unwind_state *st;
  sb_u64 fp;
  sb_u64 lo, hi;  /* g.stack */
  sb_u64 curg_bp; /* curg.sched.bp */
  sb_u32 frames;
  sb_u32 phase;   /* 0: g's stack, 1: gobuf.pc next, 2: curg's stack */
};

static long sb_fp_cross_step(sb_u32 index, void *ctx) {
  struct sb_fp_cross_walk *c = (struct sb_fp_cross_walk *)ctx;
  if (c->phase == 1) {
    c->frames++; /* gobuf.pc */
    c->fp = c->curg_bp;
    c->phase = 2;
    return 0;
  }
  sb_u64 rec[2] = {0, 0};
  int end = c->fp == 0 || (c->fp & 7) != 0 || sb_read_record(c->st, c->fp, rec) != 0 || rec[1] == 0;
  if (!end) c->frames++;
  /* g's stack ends where the chain leaves it (Go 1.21+ systemstack's record links into curg's),
   * ends or stops moving up: curg's turn. */
  if (!end && (rec[0] <= c->fp || (c->phase == 0 && (rec[0] < c->lo || rec[0] >= c->hi)))) end = 1;
  if (!end) {
    c->fp = rec[0];
    return 0;
  }
  if (c->phase != 0) return 1;
  c->phase = 1;
  return 0;
}

SB_INLINE sb_u32 sb_fp_walk_max(sb_u32 max_frames) {
  return max_frames == 0 || max_frames > SB_MAX_FRAMES ? SB_DEFAULT_MAX_FRAMES : max_frames;
}

/* Returns the number of frames found above the leaf (at most max_frames - 1, like the unwind). */
SB_INLINE sb_u32 sb_fp_walk_baseline(void *env, sb_u64 fp, sb_u32 max_frames) {
  struct sb_fp_walk w = {fp, 0, env};
  SB_LOOP(sb_fp_walk_max(max_frames) - 1, sb_fp_walk_step, &w);
  return w.frames;
}

/* The floor under any profiler that names the goroutine a sample belongs to (switchback's
 * `goroutine` label, pprof labels; otel-ebpf-profiler's and Parca's Go label readers make the
 * same reads): the thread's g (amd64: the TLS slot; arm64: R28), g.m and its goid in one
 * read of g's header (as sb_ghdr_read), m.curg, and when the thread is not on it (g0, gsignal)
 * curg's goid; then the plain walk. Nothing is checked beyond "readable", no pcsp, no crossing:
 * the least the unwinder's per-sample work could cost, timed against the plain walk
 * (`record --compare-floor`) to show how much of the unwinder's cost over that walk is the
 * goroutine's cold memory alone.
 *
 * With CROSS (`record --compare-crossing-floor`) the floor also makes the crossing the issue
 * asks for, in its cheapest form: on a thread that is not on curg (g0, gsignal), g's stack
 * bounds (one 16-byte read) and curg's header (one read: its goid and gobuf), then the walk of
 * g's stack only and of curg's from gobuf.bp, counting gobuf.pc as a frame, reading records as
 * the unwinder does (the stack window). No check of any kind, no pcsp, no g0 slot after dropg
 * (curg 0: nothing to cross), no signal frame: less than any unwinder that shows the goroutine
 * which asked for the work can do, so its time against the plain walk bounds from below what
 * such an unwinder can reach.
 * Returns the frames as sb_fp_walk_baseline does (both stacks' together, at most max_frames -
 * 1); *goid: the goroutine found (0: none). */
SB_SUBPROG sb_u32 sb_fp_walk_floor(sb_u64 env_addr, const struct sb_proc_info *pi, const struct sb_regs *r,
                                   sb_u64 *goid, int cross) {
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
  if (m != 0 && sb_read(env, &curg, sizeof(curg), m + o->m_curg) != 0) curg = 0;
  int off_curg = m != 0 && curg != 0 && curg != g; /* on g0 or gsignal */
  if (!cross) {
    if (off_curg) sb_read(env, &id, sizeof(id), curg + o->g_goid);
    *goid = m != 0 && curg != 0 ? id : 0;
    return sb_fp_walk_baseline(env, r->fp, pi->max_frames);
  }
  struct sb_unwind_state st = {&w, pi, 0, 0};
  struct sb_fp_cross_walk c = {&st, r->fp, 0, 0, 0, 0, 2}; /* on curg (or none): its stack alone */
  *goid = m != 0 && curg != 0 ? id : 0;
  if (off_curg) {
    sb_u64 bounds[2] = {0, 0}; /* g.stack: lo, hi */
    if (o->g_stack_hi == o->g_stack_lo + 8 && sb_read(env, bounds, sizeof(bounds), g + o->g_stack_lo) == 0) {
      c.lo = bounds[0];
      c.hi = bounds[1];
    }
    /* curg's header before its frames (one read: its goid and gobuf); unreadable: g's stack only. */
    *goid = 0;
    if (sb_ghdr_read(&w, pi, curg) == 0 && w.hdr_pc != 0) {
      *goid = w.hdr_goid;
      c.curg_bp = w.hdr_bp;
      c.phase = 0;
    }
  }
  SB_LOOP(sb_fp_walk_max(pi->max_frames) - 1, sb_fp_cross_step, &c);
  return c.frames;
}

#endif /* SWITCHBACK_FP_WALK_BASELINE_H */
