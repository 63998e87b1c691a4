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

#include "unwind_types.h"

/* Whether the sampled process is arm64. The BPF program only ever samples processes of the
 * kernel's own architecture, so its build fixes the answer at compile time (bpf_env.bpf.h):
 * the other architecture's paths are then dead code, which keeps the verifier's state count
 * under its one-million-instruction limit. The host build (coredump replay) decides per
 * process. */
#ifndef SB_OPAQUE
#define SB_OPAQUE(x) ((void)0)
#endif

#ifndef SB_ARM64
#define SB_ARM64(st) ((st)->w->arm64)
#endif

/* Go's _Gcopystack: the goroutine's stack is being copied, its saved sp/bp are stale. */
#define SB_GO_STATUS_COPYSTACK 8
/* Binary search steps over the sp_deltas array: enough for 4M entries. */
#define SB_DELTA_SEARCH_STEPS 22

/* The walk: scalars only, so that BPF global functions (each crossing, the frame step, the g/m
 * loads) can take it as a plain memory argument (a pointer inside it would reach them as a
 * number and could not be followed). */
struct sb_walk {
  sb_u64 pc;
  sb_u64 sp;
  sb_u64 fp;
  sb_u64 prev_fp;        /* last frame pointer followed on this stack; 0 after a switch */
  sb_u64 lr;             /* arm64 link register, valid while lr_valid */
  sb_u64 last_pc;        /* the frame emitted before the current one (callee of this frame) */
  sb_u64 g;              /* g read from TLS, validated */
  sb_u64 m;
  sb_u64 g0;             /* m.g0 once g0_loaded (sb_g0: read only when g is not m.curg) */
  sb_u64 curg;
  /* One goroutine's header, read in one read (sb_ghdr): g.m, g.sched, atomicstatus and goid
   * of hdr_g (0: none). The crossings ask the same goroutine for its m, gobuf and goid: one
   * helper call instead of up to six. */
  sb_u64 hdr_g;
  sb_u64 hdr_m;
  sb_u64 hdr_sp;
  sb_u64 hdr_pc;
  sb_u64 hdr_bp;
  sb_u64 hdr_goid;
  sb_u32 hdr_status;
  sb_u64 label_g;        /* the goroutine the sample is labelled with (its goid in out->goid;
                            its labels): 0 when none */
  /* Left by the cgocallback crossing for the asmcgocall crossing below the C frames it leads
   * to (sb_cross_cgocallback): the goroutine whose callback this is (0: none), where
   * cgocallback's fake frame on its stack holds asmcgocall's saved pc, and the saved sp. */
  sb_u64 cb_g;
  sb_u64 cb_pc_at;
  sb_u64 cb_sp;
  sb_u64 cb_g0_sp;       /* the g0 SP of the callback around this one (nested), 0: m.g0.sched.sp's */
  sb_u8 exact_sp;        /* sp is exact for the current frame: the pcsp rule applies */
  sb_u8 frame_exact;     /* the current pc is exact (not a return address) */
  sb_u8 on_g0;           /* walking the g0 stack of the sampled thread */
  sb_u8 switch_pending;  /* the next frame-pointer step leaves this stack */
  sb_u8 lr_valid;        /* lr still holds the current frame's return address (leaf, arm64) */
  sb_u8 injected_call;   /* the current frame was entered by a signal handler's injected call */
  sb_u8 scheduling;      /* runtime.schedule is on this g0 stack: m.curg is the next goroutine */
  sb_u8 arm64;
  sb_u8 g0_loaded;       /* g0 holds m.g0 (0 when unreadable) */
  sb_u32 max_frames;     /* the frame limit of this walk (1..SB_MAX_FRAMES) */
  sb_u64 env;            /* the includer's environment (host: its HostEnv; BPF: 0) */
  sb_u64 win_base;       /* the stack window (SB_HAS_STACK_WINDOW): the bytes at [win_base, */
  sb_u64 win_len;        /*   win_base + win_len) were read in one read this walk; 0: none */
};

/* What every function of the core works on: the walk and the maps' values it reads and fills
 * (each a map value or stack pointer, so they can be global functions' arguments). */
struct sb_unwind_state {
  struct sb_walk *w;
  const struct sb_proc_info *pi;
  struct sb_sample *out;
  struct sb_counters *cnt;
};

#define SB_ENV(st) ((void *)(unsigned long)(st)->w->env)

SB_INLINE int sb_read_u64(struct sb_unwind_state *st, sb_u64 addr, sb_u64 *v) {
  *v = 0;
  if (addr == 0) return -1;
  return sb_read(SB_ENV(st), v, sizeof(*v), addr);
}

/* A frame record (saved frame pointer, return address) in one read: one helper call per frame
 * instead of two (bpf_probe_read_user is most of a frame's cost).
 *
 * With a stack window (SB_HAS_STACK_WINDOW: the BPF sampler and the host replay; not the exit
 * probe, whose uprobe programs can be preempted mid-walk and would share a per-CPU buffer), a
 * record outside the walk's window reads the stack from it to the end of its page (at most
 * SB_STACK_WINDOW_BYTES) in one read, and the records above it on that page come from that
 * copy. A walk's records lie one above the other, and their addresses depend on each other:
 * read one by one, each is a helper call and, on a stack not touched since it was left (a
 * goroutine's, crossed from g0), a cache miss the next cannot overlap; one copy of the page
 * pays the call once and lets the CPU fetch the lines together. Exact: the same bytes, read a
 * few microseconds earlier within one sample (the thread is stopped; a goroutine stack another
 * thread is writing is as racy either way). Never past the page: a read that would fail where
 * the record's own read succeeds (the next page unmapped or not present) is never made; a
 * record that straddles the page's end, or a window read that failed, takes the plain read. */
SB_INLINE int sb_read_record(struct sb_unwind_state *st, sb_u64 addr, sb_u64 rec[2]) {
  if (addr == 0) return -1;
#ifdef SB_HAS_STACK_WINDOW
  struct sb_walk *w = st->w;
  sb_u64 off = addr - w->win_base;
  if (w->win_len < 16 || off > w->win_len - 16) {
    sb_u64 len = 4096 - (addr & 4095); /* to the end of addr's (4 KiB or larger) page */
    if (len > SB_STACK_WINDOW_BYTES) len = SB_STACK_WINDOW_BYTES;
    w->win_len = 0;
    if (len >= 16 && sb_window_fill(SB_ENV(st), addr, (sb_u32)len) == 0) {
      w->win_base = addr;
      w->win_len = len;
      off = 0;
    }
  }
  if (w->win_len >= 16 && off <= w->win_len - 16 && (off & 7) == 0 && sb_window_get(SB_ENV(st), off, rec) == 0)
    return 0;
#endif
  return sb_read(SB_ENV(st), rec, 2 * sizeof(sb_u64), addr);
}

/* The g header: SB_GHDR_BYTES from g.m hold g.m, g.sched, atomicstatus and goid in every
 * release (g.m at 48, goid at 152 or 160). Not g.stack (at 0): the buffer is on the BPF stack,
 * and the exit probe's frames leave room for 120 bytes, not 176. */
#define SB_GHDR_BYTES 120
#define SB_GHDR_WORDS (SB_GHDR_BYTES / 8)

/* The word of buf at byte offset off (u32 fields: off % 8 == 4 is the upper half), or -1 when
 * off + size is outside the first span bytes. Little-endian, as amd64 and arm64 are. */
SB_INLINE int sb_ghdr_word(const sb_u64 *buf, sb_u32 span, sb_u32 off, sb_u32 size, sb_u64 *v) {
  if (off + size > span || (off & (size - 1)) != 0) return -1;
  sb_u64 i = off >> 3;
  SB_OPAQUE(i); /* the bound below must stay on the index register (a stack read) */
  if (i >= SB_GHDR_WORDS) return -1;
  sb_u64 word = buf[i];
  *v = size == 8 ? word : (word >> ((off & 4) * 8)) & 0xffffffffull;
  return 0;
}

/* Reads gp's header into w->hdr_* in one read. 0 when it did; -1 (w->hdr_g 0) when the fields
 * do not all lie in SB_GHDR_BYTES or the read failed: the callers then read each field as
 * before, so a fault gives the stop it gave. */
SB_SUBPROG long sb_ghdr_read(struct sb_walk *w, const struct sb_proc_info *pi, sb_u64 gp) {
  if (!w || !pi) return -1;
  w->hdr_g = 0;
  if (gp == 0) return -1;
  const struct sb_go_offsets *o = &pi->off;
  /* Offsets from g.m, the lowest field read; every field must lie at or above it. */
  sb_u32 base = o->g_m;
  if (o->g_sched < base || o->g_atomicstatus < base || o->g_goid < base) return -1;
  sb_u32 sched = o->g_sched - base, status_off = o->g_atomicstatus - base, goid_off = o->g_goid - base;
  sb_u32 span = goid_off + 8;
  /* No array here: the exit probe's three frames have 512 bytes in all. */
  sb_u32 end = status_off + 4u;
  if (end > span) span = end;
  end = sched + 8u + (o->gobuf_bp > o->gobuf_sp ? o->gobuf_bp : o->gobuf_sp);
  if (end > span) span = end;
  end = sched + 8u + o->gobuf_pc;
  if (end > span) span = end;
  sb_u64 size = span;
  SB_OPAQUE(size); /* the verifier must see the bound on the register the read gets */
  if (size > SB_GHDR_BYTES) return -1;
  sb_u64 buf[SB_GHDR_WORDS] = {};
  if (sb_read((void *)(unsigned long)w->env, buf, (sb_u32)size, gp + base)) return -1;
  sb_u64 status = 0;
  if (sb_ghdr_word(buf, span, 0, 8, &w->hdr_m) ||
      sb_ghdr_word(buf, span, sched + o->gobuf_sp, 8, &w->hdr_sp) ||
      sb_ghdr_word(buf, span, sched + o->gobuf_pc, 8, &w->hdr_pc) ||
      sb_ghdr_word(buf, span, sched + o->gobuf_bp, 8, &w->hdr_bp) ||
      sb_ghdr_word(buf, span, goid_off, 8, &w->hdr_goid) ||
      sb_ghdr_word(buf, span, status_off, 4, &status))
    return -1;
  w->hdr_status = (sb_u32)status;
  w->hdr_g = gp;
  return 0;
}

/* Whether gp's header is in the walk (read now if it is not). */
SB_INLINE int sb_ghdr(struct sb_unwind_state *st, sb_u64 gp) {
  if (gp == 0) return 0;
  if (st->w->hdr_g == gp) return 1;
  return sb_ghdr_read(st->w, st->pi, gp) == 0;
}

/* g.m of gp: from its header, else one read. */
SB_INLINE int sb_read_g_m(struct sb_unwind_state *st, sb_u64 gp, sb_u64 *m) {
  if (sb_ghdr(st, gp)) {
    *m = st->w->hdr_m;
    return 0;
  }
  return sb_read_u64(st, gp + st->pi->off.g_m, m);
}

/* m.g0 of the sampled thread's m, read the first time it is needed: a sample on a user
 * goroutine (g = m.curg) never needs it unless it crosses into g0 (cgocallback, the gogo
 * window). Every walk on g0 has it: on_g0 is only ever set after this. 0 when unreadable. */
SB_INLINE sb_u64 sb_g0(struct sb_unwind_state *st) {
  if (!st->w->g0_loaded) {
    sb_u64 g0 = 0;
    if (st->w->m == 0 || sb_read_u64(st, st->w->m + st->pi->off.m_g0, &g0)) g0 = 0;
    st->w->g0 = g0;
    st->w->g0_loaded = 1;
  }
  return st->w->g0;
}

/* Labels the sample with goroutine gp: its goid, and gp itself in st->w->label_g. */
SB_INLINE void sb_name_goroutine(struct sb_unwind_state *st, sb_u64 gp) {
  sb_u64 goid = 0;
  if (gp == 0) return;
  if (sb_ghdr(st, gp)) goid = st->w->hdr_goid;
  else if (sb_read_u64(st, gp + st->pi->off.g_goid, &goid)) return;
  if (goid == 0) return;
  st->out->goid = goid;
  st->out->flags |= SB_SAMPLE_HAS_GOID;
  st->w->label_g = gp;
  st->out->goid_g = gp;  /* whose labels the sample carries (goroutine_labels.h) */
}

SB_INLINE long sb_stop(struct sb_unwind_state *st, int reason) {
  st->out->stop_reason = (sb_u8)reason;
  return 1; /* ends the loop */
}

SB_INLINE void sb_count(struct sb_unwind_state *st, int crossing, int kind) {
  if (crossing >= 0 && crossing < SB_CROSS_MAX && kind >= 0 && kind < 3)
    st->cnt->crossing[crossing][kind]++;
}

SB_INLINE long sb_cross_stopped(struct sb_unwind_state *st, int crossing, int reason) {
  sb_count(st, crossing, SB_CNT_STOPPED);
  return sb_stop(st, reason);
}

SB_INLINE void sb_crossed(struct sb_unwind_state *st, int crossing) {
  sb_count(st, crossing, SB_CNT_CROSSED);
  st->out->crossed |= (sb_u16)(1u << crossing);
}

/* The kind of function a pc belongs to. Return addresses are looked up at pc-1, so that a
 * call that ends a function is attributed to that function. Runs once per frame, so it is
 * cheap: the ranges are ascending by start and disjoint (MakeProcInfo sorts them), so one
 * bounding test of the span they cover answers most frames of a program (its own code, its
 * libraries: outside the runtime), and inside the span a binary search with fixed steps
 * (16, 8, 4, 2, 1: one state per step for the verifier) finds the one range that may hold pc. */
/* The bounding test alone: pc outside the span of every range (SB_FN_NONE). The frame loop
 * runs it inline, so a frame of the program's own code costs no call. */
SB_INLINE int sb_outside_special(const struct sb_proc_info *pi, sb_u64 pc) {
  return pc < pi->special_lo || pc >= pi->special_hi; /* the span, precomputed: no range read */
}

/* The bitmap after it: pc is in no range when it is outside the span or in a block of the span
 * that no range overlaps (most return addresses in the runtime's own code). 0: search. */
SB_INLINE int sb_no_special(const struct sb_proc_info *pi, sb_u64 pc) {
  if (sb_outside_special(pi, pc)) return 1;
  sb_u64 block = (pc - pi->special_lo) >> (pi->special_shift & 63);
  if (block >= SB_SPECIAL_BLOCKS) return 0;
  SB_OPAQUE(block);
  return (pi->special_free[(block >> 6) & (SB_SPECIAL_WORDS - 1)] >> (block & 63)) & 1;
}

SB_SUBPROG int sb_classify(const struct sb_proc_info *pi, sb_u64 pc) {
  if (!pi || sb_outside_special(pi, pc)) return SB_FN_NONE;
  sb_u32 n = pi->nranges;
  sb_u32 i = 0; /* the last range whose start is at or below pc */
  for (sb_u32 step = SB_MAX_RANGES / 2; step > 0; step >>= 1) {
    sb_u32 j = i + step;
    if (j < n && pi->ranges[j & (SB_MAX_RANGES - 1)].start <= pc) i = j;
  }
  i &= SB_MAX_RANGES - 1;
  if (pc >= pi->ranges[i].start && pc < pi->ranges[i].end) return (int)pi->ranges[i].kind;
  return SB_FN_NONE;
}

/* Whether pc is in one of the root ranges kept beside the spans (sb_proc_info.roots): copies
 * of ranges of kind SB_FN_ROOT, so the answer is the search's; they share the cache line of the
 * windows' span, which every sample reads, where the search reads up to five lines of `ranges`
 * for the frame nearly every stack ends with. */
SB_INLINE int sb_in_roots(const struct sb_proc_info *pi, sb_u64 pc) {
  sb_u64 off = pc - pi->text_start; /* below text: huge, in no root */
  for (int i = 0; i < SB_MAX_ROOTS; i++) {
    if ((sb_u32)i >= pi->nroots) break;
    if (off >= pi->roots[i].lo && off < pi->roots[i].hi) return 1;
  }
  return 0;
}

/* The frame loop's kind of pc: the bitmap, the roots, and only where neither answers, the
 * search. */
SB_INLINE int sb_frame_kind(const struct sb_proc_info *pi, sb_u64 pc) {
  if (sb_no_special(pi, pc)) return SB_FN_NONE;
  return sb_in_roots(pi, pc) ? SB_FN_ROOT : sb_classify(pi, pc);
}

/* The g slot offset (from g0.sched.sp) of the spilling mcall callee containing pc, or 1 when
 * pc is not in one past its spill (offsets are negative). */
SB_SUBPROG long sb_spill_slot(const struct sb_proc_info *pi, sb_u64 pc) {
  if (!pi) return 1;
  for (int i = 0; i < SB_MAX_RANGES; i++) {
    if ((sb_u32)i >= pi->nranges) break;
    if (pi->ranges[i].kind == SB_FN_MCALL_SPILLER && pc >= pi->ranges[i].start && pc < pi->ranges[i].end)
      return (long)(sb_s32)pi->ranges[i].arg;
  }
  return 1;
}

SB_INLINE int sb_in_go_text(const struct sb_proc_info *pi, sb_u64 pc) {
  return pc >= pi->text_start && pc < pi->text_end;
}

/* Index of the last pcsp run at or before `off` within [first, first + count), or -1. */
/* env travels as a number: BPF global functions take scalars, not arbitrary pointers. */
SB_SUBPROG long sb_find_delta_run(sb_u64 env, sb_u32 first, sb_u32 count, sb_u32 off) {
  sb_u32 lo = 0, hi = count;
  struct sb_sp_delta e;
  if (count == 0) return -1;
  for (int i = 0; i < SB_DELTA_SEARCH_STEPS; i++) {
    if (hi - lo <= 1) break;
    sb_u32 mid = lo + (hi - lo) / 2;
    if (sb_delta_entry((void *)env, first + mid, &e) != 0) return -1;
    if (e.pc_off <= off) lo = mid; else hi = mid;
  }
  return (long)(first + lo);
}

/* The includer's pcsp cache (bpf_env.bpf.h: the sampler's), keyed by sb_proc_info.delta_table
 * (0: none) and the pc's offset; none by default (coredump replay, the exit probe). */
#ifndef SB_HAS_PCSP_CACHE
SB_INLINE int sb_pcsp_cache_get(void *env, sb_u32 table, sb_u32 off, sb_s32 *delta) { return -1; }
SB_INLINE void sb_pcsp_cache_put(void *env, sb_u32 table, sb_u32 off, sb_s32 delta) {}
#endif

/* Entry k of the binary's bucket index (delta_index.h: two per cell after its runs). */
SB_INLINE int sb_delta_bucket(struct sb_unwind_state *st, sb_u32 k, sb_u32 *run) {
  const struct sb_proc_info *pi = st->pi;
  struct sb_sp_delta cell;
  if (sb_delta_entry(SB_ENV(st), pi->delta_first + pi->delta_count + (k >> 1), &cell) != 0) return -1;
  *run = (k & 1) ? (sb_u32)cell.delta : cell.pc_off;
  return 0;
}

/* pcsp value at pc: the runs between pc's bucket's two index entries (one or two, usually),
 * else by binary search over all of this binary's runs. 0 found, -1 not found. */
SB_INLINE int sb_lookup_sp_delta(struct sb_unwind_state *st, sb_u64 pc, sb_s32 *delta) {
  const struct sb_proc_info *pi = st->pi;
  if (pi->delta_count == 0 || !sb_in_go_text(pi, pc)) return -1;
  sb_u32 off = (sb_u32)(pc - pi->text_start);
  if (st->cnt) st->cnt->pcsp_lookups++;
  if (pi->delta_table != 0 && sb_pcsp_cache_get(SB_ENV(st), pi->delta_table, off, delta) == 0) {
    if (st->cnt) st->cnt->pcsp_cache_hits++;
    return 0;
  }
  sb_u32 first = 0, count = pi->delta_count;
  sb_u32 shift = pi->delta_index_shift;
  if (pi->delta_buckets != 0 && shift < 32) {
    sb_u32 k = off >> shift, lo = 0, hi = 0;
    if (k < pi->delta_buckets && sb_delta_bucket(st, k, &lo) == 0 && sb_delta_bucket(st, k + 1, &hi) == 0 &&
        lo <= hi && hi < count) {
      first = lo;
      count = hi - lo + 1;
    }
  }
  long idx = sb_find_delta_run(st->w->env, pi->delta_first + first, count, off);
  struct sb_sp_delta e;
  if (idx < 0 || sb_delta_entry(SB_ENV(st), (sb_u32)idx, &e) != 0) return -1;
  if (e.pc_off > off || e.delta < 0) return -1;
  *delta = e.delta;
  if (pi->delta_table != 0) sb_pcsp_cache_put(SB_ENV(st), pi->delta_table, off, e.delta);
  return 0;
}

SB_INLINE void sb_emit(struct sb_unwind_state *st, sb_u64 pc, int exact) {
  struct sb_sample *out = st->out;
  sb_u32 n = out->nframes;
  if (n >= SB_MAX_FRAMES || n >= st->w->max_frames) return;
  SB_OPAQUE(n);
  out->frames[n & (SB_MAX_FRAMES - 1)] = pc;
  if (exact) out->exact[(n >> 6) & (SB_MAX_FRAMES / 64 - 1)] |= 1ull << (n & 63);
  out->nframes = n + 1;
}

/* Moves the walk onto a goroutine stack whose saved state says: the next frame to emit is
 * `pc`, its frame pointer is `fp`. */
SB_INLINE void sb_switch_to(struct sb_unwind_state *st, sb_u64 pc, sb_u64 sp, sb_u64 fp) {
  st->w->pc = pc;
  st->w->sp = sp;
  st->w->fp = fp;
  st->w->prev_fp = 0; /* a different stack: addresses are not comparable with the last one */
  /* arm64 walks Go frames by SP: a saved sp (sched.sp) is exact; 0 means derive from fp. */
  st->w->exact_sp = SB_ARM64(st) && sp != 0;
  st->w->frame_exact = 0;
  st->w->lr_valid = 0;
  st->w->scheduling = 0;
  st->w->on_g0 = 0;
}

SB_INLINE int sb_sp_in_stack(struct sb_unwind_state *st, sb_u64 gp, sb_u64 sp) {
  const struct sb_go_offsets *o = &st->pi->off;
  sb_u64 lo = 0, hi = 0;
  if (gp == 0) return 0;
  if (o->g_stack_hi == o->g_stack_lo + 8) {
    /* g.stack is {lo, hi} in every release: one read. */
    sb_u64 b[2] = {0, 0};
    if (sb_read(SB_ENV(st), b, sizeof(b), gp + o->g_stack_lo)) return 0;
    lo = b[0];
    hi = b[1];
  } else if (sb_read_u64(st, gp + o->g_stack_lo, &lo) || sb_read_u64(st, gp + o->g_stack_hi, &hi)) {
    return 0;
  }
  return sp >= lo && sp < hi;
}

/* The user goroutine under a g0 stack: m.curg, when it still belongs to this m. */
SB_INLINE sb_u64 sb_live_curg(struct sb_unwind_state *st) {
  sb_u64 curg_m = 0;
  if (st->w->curg == 0) return 0;
  if (sb_read_g_m(st, st->w->curg, &curg_m) || curg_m != st->w->m) return 0;
  return st->w->curg;
}

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

/* runtime.systemstack and runtime.asmcgocall on g0. Both save their caller's state with
 * gosave_systemstack_switch before switching stacks. amd64 before Go 1.21: they have no frame,
 * so the chain from the g0 side skips their caller F; F's return address is at
 * curg.sched.sp and F's frame pointer is curg.sched.bp. Later versions link the frame
 * pointer chain across by themselves: only the stack change is recorded. */
SB_INLINE long sb_cross_saved_switch(struct sb_unwind_state *st, int crossing) {
  sb_count(st, crossing, SB_CNT_ATTEMPTS);
  /* asmcgocall below the C frames that a cgocallback crossing led to: the goroutine is that
   * callback's (the one that called C; m.curg is 0 once it parked inside the callback), and
   * its save is in cgocallback's fake frame: the gobuf holds whatever the callback saved since
   * (a systemstack: resuming from it repeated the callback's frames up to max_frames; an mcall
   * or a morestack, which gogo's return then cleared: stale_goroutine). */
  sb_u64 gp = crossing == SB_CROSS_ASMCGOCALL ? st->w->cb_g : 0;
  if (gp == 0) gp = sb_live_curg(st);
  if (gp == 0) return sb_cross_stopped(st, crossing, SB_STOP_STALE_GOROUTINE);
  sb_u32 recipe = st->pi->flags & (SB_PI_SYSTEMSTACK_SCHED | SB_PI_SWITCH_SCHED_BP);
  /* arm64 asmcgocall loads g0.sched.bp into R29 in every version (Go 1.25 linked only
   * systemstack's frame chain): its frame record is found at curg.sched.bp (found in the
   * Go 1.27 arm64 cgo cores, which stopped with read_fault right after asmcgocall). */
  if (SB_ARM64(st) && crossing == SB_CROSS_ASMCGOCALL) recipe = SB_PI_SWITCH_SCHED_BP;
  if (recipe == 0) {
    /* The frame pointer chain continues into the goroutine stack by itself: the switch
     * function's frame record on g0 links to its caller's frame on the goroutine stack. */
    st->w->on_g0 = 0;
    st->w->switch_pending = 1;
    /* The frame record, not the SP, leads off g0: an SP walk (arm64 walks Go frames by SP)
     * would read the fake return address into mstart at g0.sched.sp (found in the Go 1.27 arm64
     * systemstack core, which ended at runtime.mstart). */
    st->w->exact_sp = 0;
    st->w->cb_g = 0;
    sb_crossed(st, crossing);
    return -1; /* caller continues with an ordinary frame-pointer step */
  }
  long r = sb_gobuf_resume(st, crossing, gp, SB_SAVE_SYSTEMSTACK, 0, 0, SB_STOP_STALE_GOROUTINE);
  st->w->cb_g = 0; /* that callback's C frames are behind the walk now */
  return r;
}

/* runtime.mcall on g0: the goroutine that called mcall saved its caller's pc/sp/bp in
 * g.sched. It is m.curg until the callee runs dropg(); after that, amd64's mcall pushed the
 * old g on the g0 stack (PUSHQ AX) at g0.sched.sp - 8. A candidate from that slot is used
 * only if it is still parked (g.m == 0) and its gobuf is mcall's save (sb_gobuf_resume);
 * otherwise it has run elsewhere since this M dropped it, and the stack ends here, whole, with
 * goroutine_left (the M's work since dropg is scheduler work that belongs to no goroutine). */
SB_INLINE long sb_cross_mcall(struct sb_unwind_state *st) {
  const struct sb_go_offsets *o = &st->pi->off;
  sb_u64 gp = sb_live_curg(st);
  /* Under schedule (after dropg), execute may already have set m.curg to the goroutine it is
   * about to run: that is not the one that called mcall (found in a Go 1.23 arm64 core sampled
   * in gogo). Only the g0 slot can name the caller then. */
  int from_slot = gp == 0 || st->w->scheduling;
  /* mcall(goexit0) past its dropg: the goroutine has exited. The g0 slot still names its g,
   * but that g is dead and gfput may already have handed it to a new goroutine, which would
   * pass every check below: the stack is whole as it is (nothing to cross, no counter). */
  if (from_slot && sb_classify(st->pi, st->w->last_pc - 1) == SB_FN_GOEXIT0)
    return sb_stop(st, SB_STOP_GOROUTINE_EXITED);
  sb_count(st, SB_CROSS_MCALL, SB_CNT_ATTEMPTS);
  /* The g0 slot holds the goroutine for sure on amd64 (mcall's PUSHQ AX at g0.sched.sp - 8);
   * on arm64 only once the callee (the frame just below mcall) has spilled its argument, at
   * the offset decoded from that callee's prologue. */
  long slot_off = SB_ARM64(st) ? sb_spill_slot(st->pi, st->w->last_pc - 1) : -8;
  if (from_slot) gp = 0;
  if (gp == 0 && slot_off <= 0) {
    sb_u64 g0_sp = 0, cand = 0, cand_m = 1;
    if (sb_read_u64(st, sb_g0(st) + o->g_sched + o->gobuf_sp, &g0_sp) ||
        sb_read_u64(st, g0_sp + (sb_u64)slot_off, &cand) ||
        sb_read_u64(st, cand + o->g_m, &cand_m))
      return sb_cross_stopped(st, SB_CROSS_MCALL, SB_STOP_STALE_GOROUTINE);
    /* Running again on some M: its saved state is not this stack's. Except when execute on
     * this very M picked it again (m.curg, g.m = m): gogo has not run yet (we are on g0), so
     * its sched is still what mcall saved (Gosched with one runnable goroutine does this on
     * every call). */
    if (cand_m != 0 && !(cand_m == st->w->m && cand == st->w->curg))
      return sb_cross_stopped(st, SB_CROSS_MCALL, SB_STOP_GOROUTINE_LEFT);
    gp = cand;
  }
  /* From the slot (after dropg: this M works for no goroutine) the goroutine is named for
   * certain, so a gobuf that is not this mcall's save (another site's callee, not mcall's
   * save, SP outside its stack) means it has run since: goroutine_left. */
  int moved = from_slot ? SB_STOP_GOROUTINE_LEFT : SB_STOP_STALE_GOROUTINE;
  if (!sb_mcall_callee_ok(st, gp)) return sb_cross_stopped(st, SB_CROSS_MCALL, moved);
  long r = sb_gobuf_resume(st, SB_CROSS_MCALL, gp, SB_SAVE_MCALL, 0, 0, moved);
  if (r != 0) return r;
  /* found through the g0 slot: name it */
  if (from_slot || !(st->out->flags & SB_SAMPLE_HAS_GOID)) sb_name_goroutine(st, gp);
  return 0;
}

/* After newstack preempted the goroutine (gopreempt_m -> goschedImpl -> dropg -> schedule, or
 * preemptPark), m.curg no longer names it (0, or under schedule the next goroutine execute
 * picked). One record of it is left on this M: newstack's local `morebuf`, its copy of
 * m.morebuf that morestack filled for this very call (g, and f's caller's pc and sp), which
 * DWARF's location list puts at newstack's CFA + morebuf_cfa_off at the return address below
 * morestack (newstack_lo/hi). newstack's CFA is where morestack switched to: g0.sched.sp
 * (amd64: then CALL; arm64: below a 16-byte frame of its own), and the walk is there too (it
 * stepped out of newstack's frame). The goroutine must not be running (g.m 0, or execute on
 * this M has just picked it again: gogo has not run, we are on g0), its gobuf must be
 * morestack's save (the saved-pc rule) and its caller frame must be morebuf's pc and sp: a
 * goroutine that ran since and stopped elsewhere fails one of them. No proof (no DWARF, or
 * another pc): stale_goroutine, as before. */
SB_INLINE long sb_morestack_from_morebuf(struct sb_unwind_state *st) {
  const struct sb_proc_info *pi = st->pi;
  const struct sb_go_offsets *o = &pi->off;
  sb_u64 ret = st->w->last_pc; /* the return address into newstack (its frame was the last one) */
  if (pi->newstack_hi == 0 || ret <= pi->text_start || ret - pi->text_start > 0xffffffffull)
    return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_STALE_GOROUTINE);
  /* The call that returns to ret (its last byte, ret - 1) must lie in the proven range: DWARF's
   * location list and the code proof (newstack_morebuf.h) both speak of the calling pc, and the
   * code proof's range ends right after the last preempting call, at its return site (requiring
   * ret itself inside missed every goroutine preempted through goschedImpl in stripped Go 1.27
   * binaries: lefthook's stale_goroutine under newstack). */
  sb_u32 off = (sb_u32)(ret - pi->text_start);
  if (off - 1 < pi->newstack_lo || off - 1 >= pi->newstack_hi)
    return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_STALE_GOROUTINE);
  sb_u64 g0_sp = 0, gp = 0, mb_sp = 0, mb_pc = 0, gp_m = 1;
  if (sb_g0(st) == 0 || sb_read_u64(st, st->w->g0 + o->g_sched + o->gobuf_sp, &g0_sp))
    return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_STALE_GOROUTINE);
  sb_u64 cfa = SB_ARM64(st) ? g0_sp - 16 : g0_sp;
  if (cfa != st->w->sp) return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_STALE_GOROUTINE);
  sb_u64 mb = cfa + (sb_u64)(sb_s64)pi->morebuf_cfa_off;
  if (sb_read_u64(st, mb + pi->gobuf_g, &gp) || sb_read_u64(st, mb + o->gobuf_sp, &mb_sp) ||
      sb_read_u64(st, mb + o->gobuf_pc, &mb_pc) || gp == 0 || mb_sp == 0 || mb_pc == 0 ||
      sb_read_u64(st, gp + o->g_m, &gp_m))
    return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_STALE_GOROUTINE);
  /* morebuf names the goroutine for certain and this M has dropped it (dropg): running on
   * another M, or a gobuf that is no longer this morestack's, means it has run since. */
  if (gp_m != 0 && !(gp_m == st->w->m && gp == st->w->curg))
    return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_GOROUTINE_LEFT);
  long r = sb_gobuf_resume(st, SB_CROSS_MORESTACK, gp, SB_SAVE_MORESTACK, mb_pc, mb_sp, SB_STOP_GOROUTINE_LEFT);
  if (r == 0) sb_name_goroutine(st, gp);
  return r;
}

/* runtime.morestack on g0 (newstack and what it calls): the goroutine was stopped in f's
 * prologue; its gobuf is morestack's save (sb_gobuf_resume walks f, then f's caller). Under
 * runtime.schedule (newstack preempted it: gopreempt_m -> dropg -> schedule), m.curg may
 * already be the next goroutine that execute picked: not this stack's, so it is not used;
 * the goroutine comes from newstack's copy of morebuf instead, where DWARF proves it. */
SB_INLINE long sb_cross_morestack(struct sb_unwind_state *st) {
  sb_count(st, SB_CROSS_MORESTACK, SB_CNT_ATTEMPTS);
  sb_u64 gp = st->w->scheduling ? 0 : sb_live_curg(st);
  if (gp == 0) return sb_morestack_from_morebuf(st);
  return sb_gobuf_resume(st, SB_CROSS_MORESTACK, gp, SB_SAVE_MORESTACK, 0, 0, SB_STOP_STALE_GOROUTINE);
}

SB_INLINE int sb_vdso_active(struct sb_unwind_state *st) {
  sb_u64 vsp = 0;
  return sb_read_u64(st, st->w->m + st->pi->off.m_vdsosp, &vsp) == 0 && vsp != 0;
}

/* vDSO code, called by nanotime1 / time.now / walltime after they recorded in m.vdsoPC the
 * return address into their caller and in m.vdsoSP that caller's SP (often while running on
 * the g0 stack). The calling function's saved frame pointer sits at vdsoSP - 16 (amd64). */
SB_INLINE long sb_cross_vdso(struct sb_unwind_state *st) {
  const struct sb_go_offsets *o = &st->pi->off;
  if (st->w->m == 0) return -1;
  sb_count(st, SB_CROSS_VDSO, SB_CNT_ATTEMPTS);
  sb_u64 vsp = 0, vpc = 0;
  if (sb_read_u64(st, st->w->m + o->m_vdsosp, &vsp) || sb_read_u64(st, st->w->m + o->m_vdsopc, &vpc) ||
      vsp == 0 || vpc == 0)
    return sb_cross_stopped(st, SB_CROSS_VDSO, SB_STOP_STALE_GOROUTINE);
  /* The frame record of the function that called the vDSO: amd64 time.now/nanotime1 pushed
   * BP just below their return address (vdsoSP - 8); arm64 nanotime1's record is at
   * vdsoSP - 8 (saved R29, then the saved LR = vdsoPC at vdsoSP). */
  sb_u64 record = SB_ARM64(st) ? vsp - 8 : vsp - 16;
  sb_u64 caller_fp = 0;
  if (sb_read_u64(st, record, &caller_fp))
    return sb_cross_stopped(st, SB_CROSS_VDSO, SB_STOP_READ_FAULT);
  int was_g0 = st->w->on_g0;
  /* vdsoSP is the SP of the frame vdsoPC returns into (arm64 nanotime1: `$ret-8(FP)`), so on
   * arm64 the SP walk continues from it exactly. */
  sb_switch_to(st, vpc, vsp, caller_fp);
  st->w->on_g0 = (sb_u8)was_g0; /* vdsoSP is on whichever stack the caller ran on */
  sb_crossed(st, SB_CROSS_VDSO);
  return 0;
}

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

/* runtime.cgocallback reached on the goroutine stack: C code (on g0) called Go. cgocallback
 * saved its g0 SP in m.g0.sched.sp, switched to m.curg's stack and called cgocallbackg under
 * a fake frame whose return address is curg.sched.pc (Go's traceback follows that into the
 * goroutine's frames from before the C call, or to goexit on a C-created thread). The real
 * caller is C: continue at cgocallback's g0 frame, whose return address leads into
 * crosscall2 and the C frames that called the Go function. */
SB_INLINE long sb_cross_cgocallback(struct sb_unwind_state *st, sb_u64 lookup_pc) {
  sb_count(st, SB_CROSS_CGOCALLBACK, SB_CNT_ATTEMPTS);
  const struct sb_go_offsets *o = &st->pi->off;
  sb_u64 g0_sp = 0, ret = 0, caller_fp = 0;
  sb_s32 delta = 0;
  sb_u64 g0 = st->w->m == 0 ? 0 : sb_g0(st);
  /* m.g0.sched.sp is the innermost running callback's g0 SP; each cgocallback saved the one
   * before it in its g0 frame (at SP + alignUp(MinFrameSize, StackAlign): amd64 0, arm64 16,
   * what the runtime's unwindm reads), so an outer callback of nested ones (Go -> C -> Go ->
   * C -> Go) is found from the inner one's frame. */
  g0_sp = st->w->cb_g0_sp;
  if (g0 == 0 || (g0_sp == 0 && sb_read_u64(st, g0 + o->g_sched + o->gobuf_sp, &g0_sp)) || g0_sp == 0 ||
      !sb_sp_in_stack(st, g0, g0_sp))
    return sb_cross_stopped(st, SB_CROSS_CGOCALLBACK, SB_STOP_STALE_GOROUTINE);
  if (sb_read_u64(st, g0_sp + (SB_ARM64(st) ? 16 : 0), &st->w->cb_g0_sp)) st->w->cb_g0_sp = 0;
  if (sb_lookup_sp_delta(st, lookup_pc, &delta) != 0)
    return sb_cross_stopped(st, SB_CROSS_CGOCALLBACK, SB_STOP_END_OF_CHAIN);
  /* The g0 frame has the same size as the fake one: amd64 return address at SP + delta with
   * the saved BP below it; arm64 LR at [SP] and the caller's R29 below it. */
  sb_u64 slot = SB_ARM64(st) ? g0_sp : g0_sp + (sb_u64)delta;
  if (sb_read_u64(st, slot, &ret) || sb_read_u64(st, slot - 8, &caller_fp))
    return sb_cross_stopped(st, SB_CROSS_CGOCALLBACK, SB_STOP_READ_FAULT);
  if (ret == 0) return sb_cross_stopped(st, SB_CROSS_CGOCALLBACK, SB_STOP_END_OF_CHAIN);
  /* For the asmcgocall the C frames lead to (sb_cross_saved_switch): the callback runs on the
   * goroutine that called C, the one whose stack the walk is on (the sample's goroutine,
   * checked there: the saved sp must lie in its stack). cgocallback's fake frame here has the
   * size of its g0 frame and holds the save asmcgocall made (the runtime restores the gobuf from
   * it when the callback returns): amd64 the saved pc in its return slot, the saved sp right
   * above; arm64 the saved pc at its SP (LR's slot), the saved sp at SP + its size. */
  st->w->cb_g = st->w->label_g;
  st->w->cb_pc_at = SB_ARM64(st) ? st->w->sp : st->w->sp + (sb_u64)delta;
  st->w->cb_sp = st->w->sp + (sb_u64)delta + (SB_ARM64(st) ? 0 : 8);
  /* The caller, crosscall2, is Go assembly with an exact SP here: the next step takes it by
   * its pcsp (sb_g_step_crosscall2), as from any of its callees. */
  sb_u64 c2_sp = SB_ARM64(st) ? g0_sp + (sb_u64)delta : slot + 8;
  sb_switch_to(st, ret, c2_sp, caller_fp);
  st->w->exact_sp = 1;
  st->w->on_g0 = 1;
  sb_crossed(st, SB_CROSS_CGOCALLBACK);
  return 0;
}

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

/* The frame-pointer step: the caller's frame record at fp (saved fp, return address). Most
 * frames take it (amd64 once the frame is set up), so the frame loop runs it inline. */
SB_INLINE long sb_fp_step(struct sb_unwind_state *st) {
  sb_u64 fp = st->w->fp;
  if (fp == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
  /* Frame pointers move up the stack, except on the one step that leaves a stack (a crossing
   * that the frame chain makes by itself): the two stacks' addresses are not comparable. */
  if ((fp & 7) != 0 || (!st->w->switch_pending && st->w->prev_fp != 0 && fp <= st->w->prev_fp))
    return sb_stop(st, SB_STOP_BAD_FP);
  sb_u64 rec[2] = {0, 0}; /* the frame record: saved frame pointer, return address */
  if (sb_read_record(st, fp, rec)) return sb_stop(st, SB_STOP_READ_FAULT);
  sb_u64 saved_fp = rec[0], ret = rec[1];
  if (ret == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
  /* Across a stack switch, addresses on the two stacks are not comparable. */
  st->w->prev_fp = st->w->switch_pending ? 0 : fp;
  st->w->switch_pending = 0;
  st->w->lr_valid = 0;
  st->w->pc = ret;
  st->w->sp = fp + 16;
  st->w->fp = saved_fp;
  st->w->exact_sp = 0;
  st->w->frame_exact = 0;
  return 0;
}

/* One step to the caller of the current frame. */
SB_INLINE long sb_step_caller(struct sb_unwind_state *st) {
  sb_s32 delta = 0;
  if (SB_ARM64(st) && sb_in_go_text(st->pi, st->w->pc)) {
    /* arm64 Go frames are walked by SP, the way Go's own traceback walks them: the prologue
     * stores LR at the new SP (MOVD.W R30, -size(RSP)) and the caller's R29 just below it, so
     * the return address is at [SP] and the caller's SP is SP + pcsp delta. Frame pointers
     * are not trusted here: before Go 1.21, copystack left outer frames' saved R29 pointing at
     * the old stack. Where only R29 is known (after a switch), SP = R29 + 8. With no frame yet
     * (delta 0: a frameless leaf, or the first prologue instruction) the return address is
     * still in LR. */
    sb_u64 sp = st->w->exact_sp ? st->w->sp : st->w->fp + 8;
    if (sb_lookup_sp_delta(st, st->w->frame_exact ? st->w->pc : st->w->pc - 1, &delta) == 0) {
      sb_u64 ret = 0, caller_fp = st->w->fp;
      if (delta == 0) {
        if (!st->w->lr_valid) return sb_stop(st, SB_STOP_END_OF_CHAIN);
        ret = st->w->lr;
        sb_count(st, SB_CROSS_LEAF, SB_CNT_ATTEMPTS);
        sb_crossed(st, SB_CROSS_LEAF);
      } else {
        /* LR at [SP], the caller's R29 just below it: one read of both; the R29 is only
         * needed to leave Go code, so where it alone is unreadable the walk goes on. */
        sb_u64 rec[2] = {0, 0};
        if (sb_read_record(st, sp - 8, rec) == 0) {
          caller_fp = rec[0];
          ret = rec[1];
        } else {
          if (sb_read_u64(st, sp, &ret)) return sb_stop(st, SB_STOP_READ_FAULT);
          if (sb_read_u64(st, sp - 8, &caller_fp)) caller_fp = 0;
        }
        if (st->w->fp != sp - 8 && st->w->exact_sp && st->w->frame_exact) {  /* R29 not set up yet */
          sb_count(st, SB_CROSS_LEAF, SB_CNT_ATTEMPTS);
          sb_crossed(st, SB_CROSS_LEAF);
        }
      }
      if (ret == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
      st->w->pc = ret;
      st->w->sp = sp + (sb_u64)delta;
      st->w->fp = caller_fp;
      st->w->exact_sp = 1;
      st->w->frame_exact = 0;
      st->w->lr_valid = 0;
      st->w->prev_fp = 0;
      if (st->w->injected_call) {
        /* asyncPreempt, "called" by the signal handler's pushCall: it lowered the interrupted
         * SP by 16 and stored the interrupted LR there, then set LR to the interrupted pc. That
         * pc is exact; the interrupted function's SP is 16 higher, and where it has no frame
         * yet (pcsp 0: a leaf or a prologue) its return address is the stored LR. */
        sb_u64 saved_lr = 0;
        if (sb_read_u64(st, st->w->sp, &saved_lr)) return sb_stop(st, SB_STOP_READ_FAULT);
        st->w->sp += 16;
        st->w->lr = saved_lr;
        st->w->lr_valid = 1;
        st->w->frame_exact = 1;
        st->w->injected_call = 0;
        sb_count(st, SB_CROSS_ASYNCPREEMPT, SB_CNT_ATTEMPTS);
        sb_crossed(st, SB_CROSS_ASYNCPREEMPT);
      }
      return 0;
    }
  }
  if (st->w->exact_sp && !SB_ARM64(st) &&
      sb_lookup_sp_delta(st, st->w->frame_exact ? st->w->pc : st->w->pc - 1, &delta) == 0) {
    /* amd64 Go frame: the return address sits at SP + delta. If the function already set
     * up its frame pointer, BP points just below the return address slot. */
    sb_u64 slot = st->w->sp + (sb_u64)delta;
    sb_u64 ret = 0, caller_fp = st->w->fp;
    if (st->w->fp == 0) {
      if (sb_read_u64(st, slot, &ret)) return sb_stop(st, SB_STOP_READ_FAULT);
      /* No frame pointer to follow (copystack, or none at all, as in a goroutine's first
       * function): walk on by SP, the caller's SP is exact too. */
      if (ret == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
      if (st->w->frame_exact) { /* the sampled frame: a frame-pointer walk would have lost this caller */
        sb_count(st, SB_CROSS_LEAF, SB_CNT_ATTEMPTS);
        sb_crossed(st, SB_CROSS_LEAF);
      }
      st->w->pc = ret;
      st->w->sp = slot + 8;
      st->w->frame_exact = 0;
      return 0;
    }
    int frame_set_up = st->w->fp == slot - 8;
    if (frame_set_up) {
      /* The frame record: the caller's BP right below the return address, in one read. */
      sb_u64 rec[2] = {0, 0};
      if (sb_read_record(st, st->w->fp, rec)) return sb_stop(st, SB_STOP_READ_FAULT);
      caller_fp = rec[0];
      ret = rec[1];
    } else {
      if (sb_read_u64(st, slot, &ret)) return sb_stop(st, SB_STOP_READ_FAULT);
      /* A frame-pointer walk would have lost this caller. */
      sb_count(st, SB_CROSS_LEAF, SB_CNT_ATTEMPTS);
      sb_crossed(st, SB_CROSS_LEAF);
    }
    if (ret == 0) return sb_stop(st, SB_STOP_END_OF_CHAIN);
    if (frame_set_up) st->w->prev_fp = st->w->fp;
    st->w->pc = ret;
    st->w->sp = slot + 8;
    st->w->fp = caller_fp;
    st->w->exact_sp = 0;
    st->w->frame_exact = 0;
    return 0;
  }
  long r = sb_fp_step(st);
  if (r != 0) return r;
  if (st->w->injected_call && SB_ARM64(st)) st->w->injected_call = 0; /* arm64: only by the SP walk */
  if (st->w->injected_call) {
    /* asyncPreempt was "called" by the signal handler at the interrupted pc: that pc is exact
     * (not a return address) and so is the SP, so the interrupted function, which may be a
     * frameless leaf, is unwound by its pcsp like a sampled leaf (amd64: the injected CALL
     * pushed the pc just above asyncPreempt's frame record). */
    st->w->exact_sp = 1;
    st->w->frame_exact = 1;
    st->w->injected_call = 0;
    sb_count(st, SB_CROSS_ASYNCPREEMPT, SB_CNT_ATTEMPTS);
    sb_crossed(st, SB_CROSS_ASYNCPREEMPT);
  }
  return 0;
}

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
