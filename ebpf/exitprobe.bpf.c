// SPDX-License-Identifier: GPL-2.0
/* Exit probes: one plain uprobe on a function's entry and one on each of its RET
 * instructions (never a uretprobe on Go code: it rewrites the return address, and Go dies with
 * "unknown caller pc" when it copies that stack). The cookie of each site says which function
 * and what kind of site it is (exitprobe.h).
 *
 * Pairing: every goroutine has a stack of pending calls, kept as records keyed by
 * (tgid, g, depth) with depth = g.stack.hi - SP, linked through prev_depth, its top in gstate.
 * The depth is the same at the entry site (nothing has moved SP yet) and at the RET (the frame
 * is torn down, SP points at the return address again), and stack copies keep it. Calls are
 * strictly nested, so an event at depth d proves every pending record deeper than d dead (a
 * panic or runtime.Goexit unwound it): those are counted as aborted. The entry probe may run
 * twice for one call, when the stack check sends the function to morestack and the runtime
 * restarts it; then g.sched.pc still points into the function (set by morestack, gogo does not
 * clear it) and the record at that depth is kept. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "exitprobe.h"
/* trace --stacks: the unwind core and the label reader, included as the sampler includes them
 * (never copied). With want_stacks 0 (frozen rodata) the verifier drops that code unseen. */
#include "unwind/bpf_env.bpf.h"
#include "unwind/unwind_core.h"
#include "unwind/goroutine_labels.h"
#include "unwind/sample_init.bpf.h"
/* A call path crosses the ring as the sampler's samples do, packed by the same code. */
#include "sample_pack.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct sb_xp_config cfg = {};
const volatile __u32 max_funcs = 1;
const volatile __u8 want_stacks = 0;    /* --stacks */
const volatile __u64 slower_than_ns = 0; /* --slower-than: only exits at least this slow */
const volatile __u8 want_labels = 1;    /* goroutine labels with each path */
/* --stacks --binary of a PIE executable: each process's facts are made from proc_template on
 * its first exit, with the load bias that exit's RET site proves. */
const volatile __u8 per_process_bias = 0;

/* Runtime facts per traced process (tgid), as the sampler's; key 0: any process of a non-PIE
 * binary (addresses are link-time). Not preallocated: an entry replaced (a reused tgid) is
 * freed after RCU, never reused under a reader on another CPU. Userspace deletes the entries
 * of processes that exited. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);
  __type(value, struct sb_proc_info);
} proc_info SEC(".maps");

/* per_process_bias: the executable's facts at bias 0 (link-time addresses), and a per-CPU
 * place to relocate them before they are stored whole (a reader never sees a half-made
 * entry). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_proc_info);
} proc_template SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_proc_info);
} proc_scratch SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_sample);
} stack_scratch SEC(".maps");

/* The record as sent (exitprobe.h sb_xp_stack_record, then the packed sample): built here from
 * the unwound sample in stack_scratch, per CPU (10 KB at most: far over BPF's stack). */
struct sb_xp_stack_buf {
  struct sb_xp_stack_record h;
  __u8 rec[SB_SAMPLE_RECORD_MAX];
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_xp_stack_buf);
} stack_buf SEC(".maps");

/* The unwind core's own counters (stop reasons, crossings), per CPU. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_counters);
} unwind_counters SEC(".maps");

/* The unwind's walk state (unwind_core.h): a map value, not on this program's stack, whose
 * frames and the label reader's leave no room for it within BPF's 512 bytes. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_walk);
} walk_scratch SEC(".maps");

/* Call paths for --stacks: a record (exitprobe.h sb_xp_stack_record, then the packed sample) is
 * 96 bytes plus 8 per frame and 8 per 64 frames, and 196 per goroutine label: 264 bytes at 20
 * frames, 1,136 at the default limit of 128 (before it was packed: 1,784 plus 8 per frame, 1,944
 * and 2,808). 32 MiB holds a burst of about 29,000 records of 128 frames (11,900 before) or
 * 120,000 of 20 (17,000), so the reader, which reads it every 100 ms (and when woken: a quarter
 * full, send_stack), keeps up with a deep recursion traced on every CPU; without --stacks
 * userspace shrinks it to one page-sized minimum. */
#define SB_XP_STACKS_RINGBUF_SIZE (32 << 20)
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, SB_XP_STACKS_RINGBUF_SIZE);
} stacks SEC(".maps");

/* The registers the unwind starts from: in a map, not on the stack. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_regs);
} regs_scratch SEC(".maps");

/* The exit whose stack is to be sent, handed from the probe to xp_stack* (tail call). */
struct xp_pending_stack {
  __u64 ns;
  __u64 now;
  __u32 tgid;
  __u32 func;
  __u32 site_off;  /* the RET site's offset in the function (from its cookie) */
  __u32 pad;
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct xp_pending_stack);
} pending_stack SEC(".maps");

/* The unwinding programs, entered by tail call once the probe's pairing work is done: the
 * probe's stack frame is gone then, so the unwind core's frames fit in BPF's 512 bytes, and
 * the verifier checks the unwind apart from the pairing logic. Slot 0: xp_stack_multi or
 * xp_stack, whichever matches the loaded probe program. */
struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} stack_progs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1); /* resized by userspace to the number of functions */
  __type(key, __u32);
  __type(value, struct sb_xp_func);
} funcs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1); /* resized by userspace */
  __type(key, __u32);
  __type(value, struct sb_xp_stats);
} stats SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_xp_counters);
} counters SEC(".maps");

/* Plain hash maps, not LRU: a record that cannot be stored is counted as dropped, and none is
 * ever lost silently. Userspace sizes them (--max-pending). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, struct sb_xp_pending_key);
  __type(value, struct sb_xp_pending);
} pending SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, struct sb_xp_gkey);
  __type(value, struct sb_xp_gstate);
} gstate SEC(".maps");

static __always_inline __u64 read_u64(__u64 addr) {
  __u64 v = 0;
  if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr) != 0) return 0;
  return v;
}

/* g is valid when its m points back at it (m.curg or m.g0). */
static __always_inline int g_valid(__u64 g) {
  if (g == 0) return 0;
  __u64 m = read_u64(g + cfg.g_m);
  if (m == 0) return 0;
  return read_u64(m + cfg.m_curg) == g || read_u64(m + cfg.m_g0) == g;
}

/* g_in_reg: the site is in a function whose prologue reads the stack bound through the g
 * register, so the register is g (Go's ABIInternal keeps it there) and is taken as is: no
 * memory read can fail on the way. Elsewhere the register is checked, then the TLS slot. */
static __always_inline __u64 current_g(struct pt_regs *ctx, int g_in_reg) {
#if defined(__TARGET_ARCH_arm64)
  __u64 g = ctx->regs[28]; /* Go's g register in Go code */
  if (g_in_reg && g != 0) return g;
  if (g_valid(g)) return g;
  return 0; /* the TLS copy exists only with cgo; not used */
#else
  __u64 g = ctx->r14; /* Go's g register in ABIInternal code */
  if (g_in_reg && g != 0) return g;
  if (g_valid(g)) return g;
  if (cfg.tls_g_offset == 0) return 0;
  struct task_struct *task = bpf_get_current_task_btf();
  __u64 fsbase = BPF_CORE_READ(task, thread.fsbase);
  if (fsbase == 0) return 0;
  g = read_u64(fsbase + cfg.tls_g_offset);
  return g_valid(g) ? g : 0;
#endif
}

static __always_inline struct sb_xp_stats *func_stats(__u32 func) {
  return bpf_map_lookup_elem(&stats, &func);
}

/* floor(log2(v)) for v > 0 (BPF has no count-leading-zeros instruction). */
static __always_inline __u32 log2_u64(__u64 v) {
  __u32 r = 0;
  if (v >> 32) { v >>= 32; r += 32; }
  if (v >> 16) { v >>= 16; r += 16; }
  if (v >> 8) { v >>= 8; r += 8; }
  if (v >> 4) { v >>= 4; r += 4; }
  if (v >> 2) { v >>= 2; r += 2; }
  if (v >> 1) r += 1;
  return r;
}

static __always_inline void record_latency(struct sb_xp_stats *st, __u64 ns) {
  __u32 idx;
  if (ns < SB_XP_SUBS) {
    idx = (__u32)ns;
  } else {
    __u32 e = log2_u64(ns); /* >= SB_XP_SUB_BITS */
    __u32 sub = (__u32)(ns >> (e - SB_XP_SUB_BITS)) & (SB_XP_SUBS - 1);
    idx = SB_XP_SUBS + (e - SB_XP_SUB_BITS) * SB_XP_SUBS + sub;
  }
  if (idx >= SB_XP_BUCKETS) idx = SB_XP_BUCKETS - 1;
  __sync_fetch_and_add(&st->hist[idx], 1);
  __sync_fetch_and_add(&st->exits, 1);
  __sync_fetch_and_add(&st->sum_ns, ns);
  if (st->min_ns == 0 || ns < st->min_ns) st->min_ns = ns;
  if (ns > st->max_ns) st->max_ns = ns;
}

struct event {
  __u32 kind;
  __u32 func;
  __u64 depth;
  __u64 g;
  __u64 stack_hi;
  __u64 ip;
  __u64 now;
  __u32 tgid;
  __u32 site_off;
};

/* Is this entry the restart of the call pending at the same depth (morestack ran)? */
static __always_inline int is_restart(const struct event *ev) {
  if (!cfg.go) return 0;
  __u32 f = ev->func;
  struct sb_xp_func *fi = bpf_map_lookup_elem(&funcs, &f);
  if (!fi) return 0;
  __u64 bias = ev->ip - fi->entry_site;
  __u64 pc = read_u64(ev->g + cfg.g_sched_pc) - bias;
  return pc >= fi->start && pc < fi->end;
}

/* Pops the goroutine's pending records that this event proves dead: deeper than its depth, or
 * at its depth too when `or_equal`. Returns 1 when the top is the pending call of this entry
 * restarted after morestack (then nothing at that depth is popped). */
static __always_inline int pop_orphans(struct sb_xp_gstate *gs, const struct event *ev, int or_equal,
                                       struct sb_xp_counters *cnt) {
  struct sb_xp_pending_key pk = {.tgid = ev->tgid, .g = ev->g};
  for (int i = 0; i < SB_XP_MAX_POPS; i++) {
    if (gs->n == 0) return 0;
    __u64 top = gs->top_depth;
    if (top < ev->depth || (top == ev->depth && !or_equal)) return 0;
    pk.depth = top;
    struct sb_xp_pending *rec = bpf_map_lookup_elem(&pending, &pk);
    if (!rec) { /* cannot happen: records and tops are written together; reset */
      gs->n = 0;
      return 0;
    }
    if (ev->kind == SB_XP_ENTRY && top == ev->depth && rec->func == ev->func && is_restart(ev))
      return 1;
    struct sb_xp_stats *st = func_stats(rec->func);
    if (st) __sync_fetch_and_add(&st->aborted, 1);
    gs->top_depth = rec->prev_depth;
    gs->n -= 1;
    bpf_map_delete_elem(&pending, &pk);
  }
  if (gs->n > 0 && (gs->top_depth > ev->depth || (gs->top_depth == ev->depth && or_equal)))
    __sync_fetch_and_add(&cnt->pop_limit, 1);
  return 0;
}

static __always_inline void drop_if_empty(struct sb_xp_gkey *gk, struct sb_xp_gstate *gs) {
  if (gs->n == 0) bpf_map_delete_elem(&gstate, gk);
}

static __always_inline int on_entry(struct event *ev, struct sb_xp_counters *cnt) {
  struct sb_xp_gkey gk = {.tgid = ev->tgid, .g = ev->g};
  struct sb_xp_gstate *gs = bpf_map_lookup_elem(&gstate, &gk);
  struct sb_xp_stats *st = func_stats(ev->func);
  if (!st) return 0;
  if (gs && pop_orphans(gs, ev, 1, cnt)) {
    __sync_fetch_and_add(&st->restarts, 1);
    return 0;
  }
  __sync_fetch_and_add(&st->calls, 1);
  if (!gs) {
    struct sb_xp_gstate fresh = {.stack_hi = ev->stack_hi};
    if (bpf_map_update_elem(&gstate, &gk, &fresh, BPF_NOEXIST) != 0) {
      __sync_fetch_and_add(&cnt->gstate_full, 1);
      __sync_fetch_and_add(&st->dropped, 1);
      return 0;
    }
    gs = bpf_map_lookup_elem(&gstate, &gk);
    if (!gs) {
      __sync_fetch_and_add(&st->dropped, 1);
      return 0;
    }
  }
  struct sb_xp_pending_key pk = {.tgid = ev->tgid, .g = ev->g, .depth = ev->depth};
  struct sb_xp_pending rec = {
      .start_ns = ev->now, .prev_depth = gs->top_depth, .func = ev->func, .has_prev = gs->n > 0};
  if (bpf_map_update_elem(&pending, &pk, &rec, BPF_ANY) != 0) {
    __sync_fetch_and_add(&cnt->pending_full, 1);
    __sync_fetch_and_add(&st->dropped, 1);
    drop_if_empty(&gk, gs);
    return 0;
  }
  gs->top_depth = ev->depth;
  gs->n += 1;
  return 0;
}

/* The facts of process tgid, whose executable is loaded `bias` above its link-time addresses
 * (per_process_bias): its entry, made from the template on first sight and remade when the
 * tgid was reused by a process loaded elsewhere (text_start tells). Null when the map is full. */
static __always_inline const struct sb_proc_info *proc_facts_at(__u32 tgid, __u64 bias) {
  __u32 zero = 0;
  const struct sb_proc_info *t = bpf_map_lookup_elem(&proc_template, &zero);
  if (!t) return 0;
  const struct sb_proc_info *pi = bpf_map_lookup_elem(&proc_info, &tgid);
  if (pi && pi->text_start == t->text_start + bias) return pi;
  struct sb_proc_info *n = bpf_map_lookup_elem(&proc_scratch, &zero);
  if (!n) return 0;
  if (bpf_probe_read_kernel(n, sizeof(*n), t) != 0) return 0;
  sb_proc_info_add_bias(n, bias);
  /* Two CPUs may make the same entry at once: the same bytes, either store wins. */
  bpf_map_update_elem(&proc_info, &tgid, n, pi ? BPF_ANY : BPF_NOEXIST);
  pi = bpf_map_lookup_elem(&proc_info, &tgid);
  return pi && pi->text_start == n->text_start ? pi : 0;
}

/* The call path of an exit: the caller's stack unwound from the RET's registers (the frame is
 * torn down, SP at the return address: the core's leaf rule reads the caller from there),
 * with the goroutine's labels, sent to userspace. The body of the tail-called programs
 * xp_stack_multi / xp_stack: the verifier checks it (and the unwind core in it) apart from the
 * pairing logic, whose branches would otherwise multiply its states past the 1M-instruction
 * limit. */
static __always_inline int send_stack(struct pt_regs *ctx) {
  __u32 zero = 0;
  struct sb_xp_counters *cnt = bpf_map_lookup_elem(&counters, &zero);
  struct xp_pending_stack *ps = bpf_map_lookup_elem(&pending_stack, &zero);
  if (!cnt || !ps) return 0;
  __u32 tgid = ps->tgid, func = ps->func;
  __u64 ns = ps->ns, now = ps->now, bias = 0;
  const struct sb_proc_info *pi = 0;
  /* The RET site's link-time address is its function's start plus the cookie's offset. */
  struct sb_xp_func *fi = bpf_map_lookup_elem(&funcs, &func);
  if (fi) bias = PT_REGS_IP(ctx) - (fi->start + ps->site_off);
  if (per_process_bias) {
    if (fi) pi = proc_facts_at(tgid, bias);
  } else {
    pi = bpf_map_lookup_elem(&proc_info, &tgid);
    if (!pi) pi = bpf_map_lookup_elem(&proc_info, &zero);
  }
  struct sb_sample *s = bpf_map_lookup_elem(&stack_scratch, &zero);
  struct sb_xp_stack_buf *out = bpf_map_lookup_elem(&stack_buf, &zero);
  struct sb_counters *uc = bpf_map_lookup_elem(&unwind_counters, &zero);
  struct sb_regs *r = bpf_map_lookup_elem(&regs_scratch, &zero);
  if (!pi || !s || !out || !uc || !r) {
    __sync_fetch_and_add(&cnt->stack_no_proc, 1);
    return 0;
  }
  sb_sample_init(s, tgid, (__u32)bpf_get_current_pid_tgid(), now);
  r->pc = PT_REGS_IP(ctx);
  r->sp = PT_REGS_SP(ctx);
  r->fp = PT_REGS_FP(ctx);
  struct task_struct *task = bpf_get_current_task_btf();
#if defined(__TARGET_ARCH_arm64)
  r->lr = ctx->regs[30];
  r->g_reg = ctx->regs[28];
  r->tls_base = BPF_CORE_READ(task, thread.uw.tp_value);
#else
  r->lr = 0;
  r->g_reg = ctx->r14;
  r->tls_base = BPF_CORE_READ(task, thread.fsbase);
#endif
  __u32 wkey = 0;
  struct sb_walk *walk = bpf_map_lookup_elem(&walk_scratch, &wkey);
  if (!walk) return 0;
  sb_unwind_walk(pi, s, uc, 0, r, walk);
  if (want_labels && s->goid_g != 0) sb_read_goroutine_labels(0, pi, s->goid_g, &s->labels);
  out->h.func = func;
  out->h.pad = 0;
  out->h.ns = ns;
  out->h.bias = bias;
  /* Only what the path holds crosses the ring (no kernel stack at an exit probe). */
  __u64 size = sb_pack_sample_record(out->rec, s, 0);
  if (size == 0 || size > sizeof(out->rec)) {
    __sync_fetch_and_add(&cnt->stack_lost, 1);
    return 0;
  }
  size += sizeof(out->h);
  /* Waking the reader (an irq_work per record) costs most of a path's time: 4.5 -> 1.2 us of
   * BPF time per path without it, and ~10 us of the traced thread's CPU time per call
   * (docs/design/0009-packed-ring-record.md). Userspace reads the ring every
   * 100 ms anyway (Tracer::PollStacks polls, then consumes), so wake it only when a quarter of
   * the ring is used, as the sampler does. */
  __u64 wake = bpf_ringbuf_query(&stacks, BPF_RB_AVAIL_DATA) > (SB_XP_STACKS_RINGBUF_SIZE / 4)
                   ? BPF_RB_FORCE_WAKEUP
                   : BPF_RB_NO_WAKEUP;
  if (bpf_ringbuf_output(&stacks, out, size, wake) != 0)
    __sync_fetch_and_add(&cnt->stack_lost, 1);
  else
    __sync_fetch_and_add(&cnt->stack_sent, 1);
  return 0;
}

/* Returns 2 when the call path of this exit is to be sent (pending_stack filled). */
static __always_inline int on_exit(struct pt_regs *ctx, struct event *ev, struct sb_xp_counters *cnt) {
  int send = 0;
  struct sb_xp_gkey gk = {.tgid = ev->tgid, .g = ev->g};
  struct sb_xp_stats *st = func_stats(ev->func);
  if (!st) return 0;
  struct sb_xp_gstate *gs = bpf_map_lookup_elem(&gstate, &gk);
  if (!gs) {
    __sync_fetch_and_add(&st->unmatched, 1);
    return 0;
  }
  pop_orphans(gs, ev, 0, cnt);
  if (gs->n == 0 || gs->top_depth != ev->depth) {
    __sync_fetch_and_add(&st->unmatched, 1);
    drop_if_empty(&gk, gs);
    return 0;
  }
  struct sb_xp_pending_key pk = {.tgid = ev->tgid, .g = ev->g, .depth = ev->depth};
  struct sb_xp_pending *rec = bpf_map_lookup_elem(&pending, &pk);
  if (!rec) {
    gs->n = 0;
    drop_if_empty(&gk, gs);
    return 0;
  }
  if (rec->func == ev->func) {
    __u64 ns = ev->now - rec->start_ns;
    record_latency(st, ns);
    if (want_stacks) {
      __u32 zero = 0;
      struct xp_pending_stack *ps = bpf_map_lookup_elem(&pending_stack, &zero);
      if (ns < slower_than_ns) {
        __sync_fetch_and_add(&cnt->stack_fast, 1);
      } else if (ps) {
        ps->ns = ns;
        ps->now = ev->now;
        ps->tgid = ev->tgid;
        ps->func = ev->func;
        ps->site_off = ev->site_off;
        send = 1;
      }
    }
  } else {
    /* Another function's call ends here (it jumped into this one): that call is over. */
    struct sb_xp_stats *other = func_stats(rec->func);
    if (other) __sync_fetch_and_add(&other->aborted, 1);
    __sync_fetch_and_add(&st->unmatched, 1);
  }
  gs->top_depth = rec->prev_depth;
  gs->n -= 1;
  bpf_map_delete_elem(&pending, &pk);
  drop_if_empty(&gk, gs);
  return send ? 2 : 0;
}

static __always_inline int on_sweep(struct event *ev, struct sb_xp_counters *cnt) {
  struct sb_xp_gkey gk = {.tgid = ev->tgid, .g = ev->g};
  __sync_fetch_and_add(&cnt->sweeps, 1);
  struct sb_xp_gstate *gs = bpf_map_lookup_elem(&gstate, &gk);
  if (!gs) return 0;
  if (ev->kind == SB_XP_SWEEP_ALL) ev->depth = 0;
  pop_orphans(gs, ev, 1, cnt);
  drop_if_empty(&gk, gs);
  return 0;
}

static __always_inline int handle_site(struct pt_regs *ctx) {
  __u32 zero = 0;
  struct sb_xp_counters *cnt = bpf_map_lookup_elem(&counters, &zero);
  if (!cnt) return 0;
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32;
  if (cfg.target_tgid != 0 && tgid != cfg.target_tgid) return 0;
  __sync_fetch_and_add(&cnt->events, 1);

  __u64 cookie = bpf_get_attach_cookie(ctx);
  struct event ev = {};
  ev.kind = SB_XP_COOKIE_KIND(cookie);
  ev.func = SB_XP_COOKIE_FUNC(cookie);
  ev.site_off = SB_XP_COOKIE_OFF(cookie);
  ev.tgid = tgid;
  ev.now = bpf_ktime_get_ns();
  ev.ip = PT_REGS_IP(ctx);
  __u64 sp = PT_REGS_SP(ctx);
  if (ev.kind == SB_XP_RETPROBE) {
#if !defined(__TARGET_ARCH_arm64)
    sp -= 8; /* the RET popped the return address: back to the entry's SP */
#endif
    ev.kind = SB_XP_EXIT;
  }

  if (cfg.go) {
    ev.g = current_g(ctx, SB_XP_COOKIE_G_IN_REG(cookie));
    if (ev.g != 0 && bpf_probe_read_user(&ev.stack_hi, sizeof(ev.stack_hi), (const void *)(ev.g + cfg.g_stack_hi)))
      ev.g = 0;
    if (ev.g == 0) {
      __sync_fetch_and_add(&cnt->no_g, 1);
      if (ev.kind == SB_XP_ENTRY) {
        struct sb_xp_stats *st = func_stats(ev.func);
        if (st) {
          __sync_fetch_and_add(&st->calls, 1);
          __sync_fetch_and_add(&st->dropped, 1);
        }
      }
      return 0;
    }
    ev.depth = ev.stack_hi - sp;
  } else {
    ev.g = (__u32)id; /* thread id */
    ev.depth = 0 - sp;
  }

  switch (ev.kind) {
    case SB_XP_ENTRY:
      return on_entry(&ev, cnt);
    case SB_XP_EXIT:
      return on_exit(ctx, &ev, cnt);
    case SB_XP_SWEEP:
    case SB_XP_SWEEP_ALL:
      return on_sweep(&ev, cnt);
  }
  return 0;
}

/* Both probe kinds: pair the site, then (--stacks, a paired exit) tail-call the unwind. */
static __always_inline int site_then_stack(struct pt_regs *ctx) {
  /* want_stacks first: with it 0 (frozen) the verifier never compares the return value, which
   * would otherwise make it track r0 precisely through every path (6 s longer to load). */
  int r = handle_site(ctx);
  if (want_stacks && r == 2) {
    bpf_tail_call(ctx, &stack_progs, 0);
    struct sb_xp_counters *cnt = bpf_map_lookup_elem(&counters, &(__u32){0});
    if (cnt) __sync_fetch_and_add(&cnt->stack_no_proc, 1); /* the tail call failed */
  }
  return 0;
}

/* Loaded with expected attach type BPF_TRACE_UPROBE_MULTI (set by userspace: libbpf 1.1 does
 * not know SEC("uprobe.multi")): every site of the binary in one link. */
SEC("uprobe")
int xp_site_multi(struct pt_regs *ctx) { return site_then_stack(ctx); }

/* The same for kernels without uprobe_multi: one perf-event uprobe per site. */
SEC("uprobe")
int xp_site(struct pt_regs *ctx) { return site_then_stack(ctx); }

/* trace --stacks: the unwind of one exit (tail-called from the probe, see stack_progs). */
SEC("uprobe")
int xp_stack_multi(struct pt_regs *ctx) { return send_stack(ctx); }

SEC("uprobe")
int xp_stack(struct pt_regs *ctx) { return send_stack(ctx); }

/* Does nothing: the baseline of the benchmark (the cost of the trap alone). */
SEC("uprobe")
int xp_noop(struct pt_regs *ctx) { return 0; }
