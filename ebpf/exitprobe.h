/* Types shared by exitprobe.bpf.c and its userspace loader (exitprobe/). Exit probes time
 * functions with a plain uprobe on the entry and one on every RET, and pair them per goroutine
 * by (pid, g, depth = g.stack.hi - SP): a depth survives the stack copies Go makes when a
 * stack grows, unlike a uretprobe's rewritten return address. */
#ifndef SWITCHBACK_EXITPROBE_H
#define SWITCHBACK_EXITPROBE_H

#include "unwind/unwind_types.h"
#include "sample_record.h" /* a call path crosses the ring as the sampler's sample record */
#include "unwind/proc_info_bias.h"

/* What a probe site is, in the low byte of its BPF cookie; the function index is above. */
enum sb_xp_kind {
  SB_XP_ENTRY = 0,      /* function entry (first instruction, or its stack-check branch) */
  SB_XP_EXIT = 1,       /* a RET instruction of the function */
  SB_XP_RETPROBE = 2,   /* a uretprobe (non-Go code only): SP is one word past the entry's */
  SB_XP_SWEEP = 3,      /* runtime.deferreturn: frames at or below this depth are gone */
  SB_XP_SWEEP_ALL = 4,  /* runtime.goexit1: every pending call of this goroutine is gone */
};

/* Cookie flag: the site is in Go code that checks its stack through the g register (R14 on
 * amd64, R28 on arm64), so that register holds g there and needs no check. */
#define SB_XP_G_IN_REG 0x80u

/* Cookie layout: bits 0-7 the kind (and SB_XP_G_IN_REG), bits 8-31 the function index, bits
 * 32-63 the site's offset from the function's link-time start. A probe thus knows the
 * link-time address of the site it runs at, and the process's load bias is exactly
 * PT_REGS_IP - (funcs[func].start + offset): how trace --stacks of a PIE binary relocates its
 * runtime facts for each process, in BPF, on the process's first exit. */
#define SB_XP_COOKIE_AT(func, kind, off) \
  ((((sb_u64)(off)) << 32) | ((((sb_u64)(func)) & 0xffffffu) << 8) | (sb_u64)(kind))
#define SB_XP_COOKIE(func, kind) SB_XP_COOKIE_AT(func, kind, 0)
#define SB_XP_COOKIE_FUNC(c) ((sb_u32)(((c) >> 8) & 0xffffffu))
#define SB_XP_COOKIE_KIND(c) ((sb_u32)((c)&0x7f))
#define SB_XP_COOKIE_G_IN_REG(c) (((c)&SB_XP_G_IN_REG) != 0)
#define SB_XP_COOKIE_OFF(c) ((sb_u32)((c) >> 32))
#define SB_XP_NO_FUNC 0xffffffu

/* Latency histogram: values below 8 ns have a bucket each; above, every power of two is split
 * into 8 linear sub-buckets (relative width <= 12.5%). */
#define SB_XP_SUB_BITS 3
#define SB_XP_SUBS (1 << SB_XP_SUB_BITS)
#define SB_XP_BUCKETS (SB_XP_SUBS + (64 - SB_XP_SUB_BITS) * SB_XP_SUBS)

/* Pops of orphaned records per event; more are left for the next event on that goroutine. */
#define SB_XP_MAX_POPS 256

/* How to find the current goroutine and its stack (userspace fills from the binary). */
struct sb_xp_config {
  sb_u32 target_tgid;    /* 0: every process running the binary */
  sb_u32 go;             /* 1: a Go binary (pairs by g), 0: pairs by thread */
  sb_s64 tls_g_offset;   /* amd64: g at fs_base + this; 0 when unknown */
  sb_u32 g_stack_hi;     /* offsetof(g, stack.hi) */
  sb_u32 g_m;            /* offsetof(g, m) */
  sb_u32 g_sched_pc;     /* offsetof(g, sched) + offsetof(gobuf, pc) */
  sb_u32 m_g0;           /* offsetof(m, g0) */
  sb_u32 m_curg;         /* offsetof(m, curg) */
  sb_u32 pad;
};

/* One traced function, indexed by the cookie's function number. Link-time addresses: the
 * process's load bias is the entry site's runtime address minus entry_site. */
struct sb_xp_func {
  sb_u64 start;
  sb_u64 end;
  sb_u64 entry_site;
};

/* Per function and per CPU. */
struct sb_xp_stats {
  sb_u64 calls;      /* entries, not counting a restart after morestack */
  sb_u64 exits;      /* exits paired with their entry */
  sb_u64 aborted;    /* pending calls found orphaned (a panic or Goexit unwound them) */
  sb_u64 dropped;    /* calls not tracked: the pending map was full, or no g was found */
  sb_u64 unmatched;  /* exits with no pending entry (entered before the probes were attached) */
  sb_u64 restarts;   /* entries that re-ran after morestack (same call, not counted) */
  sb_u64 sum_ns;
  sb_u64 min_ns;     /* 0: none yet */
  sb_u64 max_ns;
  sb_u64 hist[SB_XP_BUCKETS];
};

/* Whole-program counters, per CPU. */
struct sb_xp_counters {
  sb_u64 events;
  sb_u64 no_g;          /* no valid g (register, TLS slot), or its stack bound unreadable */
  sb_u64 pending_full;  /* a pending record could not be stored */
  sb_u64 gstate_full;   /* a goroutine's stack top could not be stored */
  sb_u64 pop_limit;     /* SB_XP_MAX_POPS reached in one event */
  sb_u64 sweeps;        /* deferreturn / goexit1 hits */
  /* trace --stacks: exits whose caller's stack was unwound and sent (stack_sent), left out by
   * --slower-than (stack_fast), lost to a full ring buffer (stack_lost; also a record that
   * could not be packed, never seen), or of a process with no runtime facts in proc_info
   * (stack_no_proc). Their sum is the paired exits. */
  sb_u64 stack_sent;
  sb_u64 stack_fast;
  sb_u64 stack_lost;
  sb_u64 stack_no_proc;
};

/* trace --stacks: one exit's call path as sent through the `stacks` ring buffer: this header,
 * then the path as the sampler sends a sample, packed (sample_record.h sb_sample_record: only
 * the frames, exact words and labels it holds; never kernel frames, kernel_status
 * SB_KSTACK_OFF). Its size is a multiple of 8, so the record's parts stay 8-byte aligned. */
struct sb_xp_stack_record {
  sb_u32 func;
  sb_u32 pad;
  sb_u64 ns;
  sb_u64 bias;  /* the process's load bias (runtime - link-time address of the RET site) */
};

/* The largest such record: the size of the per-CPU buffer it is packed in. */
#define SB_XP_STACK_RECORD_MAX (sizeof(struct sb_xp_stack_record) + SB_SAMPLE_RECORD_MAX)

/* One exit's call path unpacked (exitprobe/stack_record.h), what the call-path consumers take.
 * s is unwound by the shared unwind core from the RET's registers, so s.frames[0] is the traced
 * function itself and its callers follow. Until the record above (the same fields), this struct
 * itself crossed the ring, cut after s.frames[s.nframes]: 1,784 bytes plus 8 per frame, every
 * label slot and the exact words included whatever the path held. */
struct sb_xp_stack {
  sb_u32 func;
  sb_u32 pad;
  sb_u64 ns;
  sb_u64 bias;  /* the process's load bias (runtime - link-time address of the RET site) */
  struct sb_sample s;
};


/* Pending call: one per (process, goroutine, depth). Records of one goroutine form a stack
 * linked through prev_depth; the goroutine's top is in the gstate map. */
struct sb_xp_pending_key {
  sb_u32 tgid;
  sb_u32 pad;
  sb_u64 g;      /* goroutine (Go) or thread id (non-Go) */
  sb_u64 depth;  /* stack.hi - SP at the entry (Go); -SP (non-Go) */
};

struct sb_xp_pending {
  sb_u64 start_ns;
  sb_u64 prev_depth;
  sb_u32 func;
  sb_u32 has_prev;
};

struct sb_xp_gkey {
  sb_u32 tgid;
  sb_u32 pad;
  sb_u64 g;
};

struct sb_xp_gstate {
  sb_u64 top_depth;
  sb_u64 stack_hi;  /* for userspace: where the goroutine's stack ends */
  sb_u32 n;         /* pending records of this goroutine */
  sb_u32 pad;
};

#endif
