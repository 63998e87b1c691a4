/* Types shared by the BPF programs, the host build of the unwind core and userspace.
 * Plain C, fixed-width fields only, no pointers: the same bytes cross the BPF maps and the
 * ring buffer. Included from BPF (after vmlinux.h) and from C/C++ userspace. */
#ifndef SWITCHBACK_UNWIND_TYPES_H
#define SWITCHBACK_UNWIND_TYPES_H

#ifndef __bpf__
#include <stdint.h>
typedef uint8_t sb_u8;
typedef uint16_t sb_u16;
typedef uint32_t sb_u32;
typedef int32_t sb_s32;
typedef uint64_t sb_u64;
typedef int64_t sb_s64;
#else
typedef __u8 sb_u8;
typedef __u16 sb_u16;
typedef __u32 sb_u32;
typedef __s32 sb_s32;
typedef __u64 sb_u64;
typedef __s64 sb_s64;
#endif

/* Layout checks both sides compile (the cache-line layouts below). */
#ifdef __cplusplus
#define SB_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define SB_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* Room for --max-frames up to 1024; a power of two so the verifier can mask indices. Samples
 * cross the ring buffer cut to their frames, so the room costs nothing per sample. */
#define SB_MAX_FRAMES 1024
/* Frames per stack unless --max-frames says otherwise: runtime/pprof's depth since Go 1.23. */
#define SB_DEFAULT_MAX_FRAMES 128
/* The special span's block bitmap (sb_proc_info.special_free): 16 words, 1024 blocks, two
 * cache lines; a Go runtime's span (the first range to the last: 160-400 KiB) gets blocks of
 * 256 or 512 bytes. */
#define SB_SPECIAL_WORDS 16
#define SB_SPECIAL_BLOCKS (SB_SPECIAL_WORDS * 64)
/* Plain frames the amd64 frame loop takes per iteration after a frame-pointer step
 * (walk_loop.h sb_plain_frames). */
#define SB_PLAIN_BURST 4
#define SB_MAX_RANGES 32
/* Return sites of calls to runtime.mcall per binary (runtime's ~16 plus inlined Gosched calls). */
#define SB_MAX_MCALL_SITES 64
/* arm64: functions with a single call to runtime.gogo (execute, recovery, ...), a power of two. */
#define SB_MAX_GOGO_CALLERS 8
#define SB_COMM_LEN 16

enum sb_arch {
  SB_ARCH_AMD64 = 1,
  SB_ARCH_ARM64 = 2,
};

/* Why a stack ended. Every sample carries exactly one. SB_STOP_ROOT, SB_STOP_GOROUTINE_EXITED and
 * SB_STOP_GOROUTINE_LEFT are "whole" (unwind::StopIsWhole). */
enum sb_stop_reason {
  SB_STOP_NONE = 0,         /* still walking (never in output) */
  SB_STOP_ROOT,             /* reached runtime.goexit / mstart / rt0_go (sigtramp without a context) */
  SB_STOP_BAD_FP,           /* frame pointer zero, misaligned or not moving up the stack */
  SB_STOP_READ_FAULT,       /* a memory read failed */
  SB_STOP_END_OF_CHAIN,     /* frame chain ended (pc 0) without reaching a root */
  SB_STOP_MAX_FRAMES,       /* the frame limit (--max-frames, sb_proc_info.max_frames) reached */
  SB_STOP_NO_OFFSETS,       /* runtime facts unknown for this binary: no switch was crossed */
  SB_STOP_STALE_GOROUTINE,  /* candidate goroutine failed the validity checks */
  SB_STOP_COPYSTACK,        /* goroutine stack being copied: saved sp/bp are stale */
  SB_STOP_BAD_G,            /* g from TLS failed validation */
  SB_STOP_NOT_GO,           /* pc outside the Go text with no frame pointer chain to follow */
  SB_STOP_GOROUTINE_EXITED, /* mcall(goexit0) after dropg: the goroutine is gone, the g0 stack is
                               all there is (a whole stack, like SB_STOP_ROOT) */
  SB_STOP_GOROUTINE_LEFT,   /* after dropg (the M works for no goroutine: schedule, wakep), the
                               goroutine that called into the scheduler, named for certain by mcall's
                               g0 slot or newstack's morebuf, has run elsewhere since: the g0 stack
                               is all there is, as in Go's own traceback (whole, like ROOT) */
  SB_STOP_MAX
};

/* What a function range means to the unwinder. Userspace fills ranges by function name. */
enum sb_func_kind {
  SB_FN_NONE = 0,
  SB_FN_ROOT,         /* goexit, mstart, rt0_go: TOPFRAME functions */
  SB_FN_SYSTEMSTACK,  /* runtime.systemstack */
  SB_FN_MCALL,        /* runtime.mcall */
  SB_FN_MORESTACK,    /* runtime.morestack */
  SB_FN_ASMCGOCALL,   /* runtime.asmcgocall: C code called from Go */
  SB_FN_MCALL_SPILLER, /* an mcall callee that spills its g argument to the g0 slot (arm64) */
  SB_FN_ASYNCPREEMPT, /* runtime.asyncPreempt: called by a signal handler's injected call */
  SB_FN_VDSO_CALLER,  /* runtime.nanotime1, runtime.walltime, time.now: set m.vdsoSP/PC */
  SB_FN_SIGTRAMP,     /* runtime.sigtramp, cgoSigtramp (TOPFRAME): entered by the kernel with a
                         signal frame (ucontext) at its entry SP */
  SB_FN_SIGRETURN,    /* amd64 runtime.sigreturn(__sigaction): the restorer, SP at the ucontext */
  SB_FN_CGOCALLBACK,  /* runtime.cgocallback: C calling Go; a fake frame on the goroutine stack */
  SB_FN_SCHEDULE,     /* runtime.schedule: below it on g0, m.curg is the next goroutine (execute) */
  SB_FN_GOEXIT0,      /* runtime.goexit0: mcall's callee when a goroutine exits; after its dropg
                         the g0 slot names a dead g that gfput may hand to a new goroutine */
  SB_FN_FRAMELESS_CALLER, /* amd64: calls with no frame of its own (Go 1.19-1.20 gcWriteBarrierDX
                         ...; unwinder/frameless_callers.h): its caller is stepped to by SP */
  SB_FN_CROSSCALL2,   /* crosscall2 (runtime/cgo): C calls it to call Go; its caller, the C stub,
                         is found by its pcsp, not by its frame records (sb_g_step_crosscall2) */
};

/* Crossings the unwinder can make; each has attempts / crossed / stopped counters. */
enum sb_crossing {
  SB_CROSS_LEAF = 0,     /* caller of a frame whose frame pointer is not set up (pcsp) */
  SB_CROSS_SYSTEMSTACK,
  SB_CROSS_MCALL,
  SB_CROSS_MORESTACK,
  SB_CROSS_VDSO,         /* vDSO code called from nanotime1 / time.now / walltime */
  SB_CROSS_ASMCGOCALL,   /* C code called through cgo */
  SB_CROSS_SIGNAL,       /* signal handler on gsignal -> the interrupted context (ucontext) */
  SB_CROSS_CGOCALLBACK,  /* Go called back from C: goroutine stack -> the C frames on g0 */
  SB_CROSS_ASYNCPREEMPT, /* asyncPreempt's injected call -> the interrupted function */
  SB_CROSS_MAX
};

enum sb_counter_kind { SB_CNT_ATTEMPTS = 0, SB_CNT_CROSSED = 1, SB_CNT_STOPPED = 2 };

/* Go runtime struct field offsets (bytes). 0xffff = unknown. */
struct sb_go_offsets {
  sb_u16 g_stack_lo;
  sb_u16 g_stack_hi;
  sb_u16 g_m;
  sb_u16 g_sched;
  sb_u16 g_atomicstatus;
  sb_u16 g_goid;
  sb_u16 gobuf_sp;
  sb_u16 gobuf_pc;
  sb_u16 gobuf_bp;
  sb_u16 gobuf_lr;
  sb_u16 m_g0;
  sb_u16 m_curg;
  sb_u16 m_gsignal;
  sb_u16 m_vdsosp;
  sb_u16 m_vdsopc;
  sb_u16 g_labels;  /* optional (goroutine pprof labels): 0xffff leaves samples without labels */
};

/* SB_FN_ROOT ranges kept beside the spans (sb_proc_info.roots): goexit, mstart, rt0_go and
 * clone's child have them. */
#define SB_MAX_ROOTS 4
struct sb_root_range {
  sb_u32 lo; /* offsets from text_start, [lo, hi) */
  sb_u32 hi;
};

struct sb_range {
  sb_u64 start; /* runtime addresses, [start, end) */
  sb_u64 end;
  sb_u32 kind;  /* enum sb_func_kind */
  sb_u32 arg;   /* SB_FN_MCALL_SPILLER: the g slot's offset from g0.sched.sp (signed) */
};

/* Process flags. */
#define SB_PI_GO 0x1                   /* a Go executable */
#define SB_PI_HAS_OFFSETS 0x2          /* struct offsets known: switches may be crossed */
#define SB_PI_HAS_TLS 0x4              /* tls_g_offset known: g can be read */
#define SB_PI_SYSTEMSTACK_SCHED 0x8    /* systemstack leaves its caller only in curg.sched (amd64 <1.21) */
#define SB_PI_SWITCH_SCHED_BP 0x10     /* systemstack/asmcgocall: continue at curg.sched.bp (arm64 <1.25) */
#define SB_PI_HAS_ISCGO 0x20           /* arm64: iscgo_addr known; the TLS g slot is live while *iscgo == 1 */
#define SB_PI_LABELS_HMAP 0x40         /* g.labels -> *map[string]string (Go 1.19-1.23), see goroutine_labels.h */
#define SB_PI_LABELS_SLICE 0x80        /* g.labels -> sorted []{key, value string} (Go 1.24+) */
/* Set by the sampler's exec tracepoint, never by userspace: the process ran execve and its
 * event could not be queued (process ring full). Its facts are the old image's: no sample is
 * unwound with them, and each sample retries the event until it is queued (sampler.bpf.c). */
#define SB_PI_EXEC_PENDING 0x100
/* amd64: the frame pointer mcall's callee saves on g0 (BP at mcall's CALL) names the gobuf that
 * very mcall saved (gobuf_resume.h sb_mcall_link_ok). Go 1.25+ clears BP there: neither flag. */
#define SB_PI_MCALL_LINK_BP 0x200    /* Go 1.19: mcall has no frame; that BP is gobuf.bp */
#define SB_PI_MCALL_LINK_FRAME 0x400 /* Go 1.21-1.24: mcall's own frame record, at gobuf.sp - 16 */

/* The function an mcall call site passes to mcall: [lo, hi) as offsets from text_start. */
struct sb_mcall_fn {
  sb_u32 lo;
  sb_u32 hi;
};

/* arm64: a function that calls runtime.gogo once: its entry and that call's return site,
 * offsets from text_start (sb_proc_info.gogo_callers). */
struct sb_gogo_caller {
  sb_u32 entry;
  sb_u32 site;
};

/* Per-process facts, keyed by tgid in the proc_info map. The fields every sample reads come
 * right after the first word, in three cache lines: a sample finds this map value cold (1 ms
 * and a busy program since the last one), and each other line it touches costs a miss (about
 * 100 ns on the VMs measured); the rest is read only inside a switch function or a window.
 * Where the lines fall: a preallocated BPF hash map keeps its elements back to back in one
 * page-aligned area, each a 48-byte header (struct htab_elem, Linux 6.x), the key rounded up
 * to 8, then the value. With this struct's size 8 more than a multiple of 64 (asserted below)
 * every element is a whole number of lines and every value starts 8 bytes before a line
 * boundary (measured: 56 mod 64), so the first word is alone on its line and the hot fields
 * after it start a line. Laid out without that, the hot fields fall one line off (flags and
 * arch alone on a line every sample touches). */
struct sb_proc_info {
  sb_u64 iscgo_addr;    /* arm64: runtime address of the byte runtime.iscgo (SB_PI_HAS_ISCGO); first:
                           rarely read, it takes the word before the first line boundary */
  sb_u32 flags;
  sb_u32 arch;          /* enum sb_arch */
  sb_u64 text_start;    /* Go text, runtime addresses (PIE bias applied) */
  sb_u64 text_end;
  sb_s64 tls_g_offset;  /* amd64: g = *(fs_base + tls_g_offset); arm64: *(TPIDR_EL0 + tls_g_offset) */
  sb_u32 delta_first;   /* this binary's pcsp table in the sp_deltas array: its runs, */
  sb_u32 delta_count;   /*   delta_count of them, then its bucket index (delta_index.h) */
  /* pcsp bucket index (delta_index.h): after the delta_count runs, one u32 per bucket of
   * 1 << delta_index_shift bytes of text (entries 0 ... delta_buckets, two per cell): the run
   * covering the bucket's first byte, so a lookup searches the one or two runs between entries
   * k and k + 1 instead of the whole binary. delta_buckets 0: no index. */
  sb_u32 delta_index_shift;
  sb_u32 delta_buckets;
  /* Names this binary's table for the sampler's per-CPU pcsp cache (bpf_env.bpf.h): set by
   * the sampler when it uploads the table, never reused while it runs; 0: no caching. */
  sb_u32 delta_table;
  sb_u32 max_frames;    /* frames per stack, at most SB_MAX_FRAMES; 0: SB_DEFAULT_MAX_FRAMES */
  sb_u32 nranges;
  sb_u32 go_minor;      /* 19 for go1.19 ... */
  struct sb_go_offsets off;
  /* The fields below up to `ranges` are read by nearly every sample, and so packed in as few
   * cache lines as they fit (each further line a sample touches is a miss at the sampling rate:
   * 100-200 ns here): with off, line 1 holds both spans' bounds a frame is tested against, line
   * 2 the windows' span, the roots and the first words of the bitmap. */
  /* [special_lo, special_hi): the span of `ranges` (proc_info_spans.h), so one test answers
   * every frame of a program's own code (sb_outside_special). */
  sb_u64 special_lo;
  sb_u64 special_hi;
  sb_u64 vdso_start;    /* this process's [vdso] mapping */
  sb_u64 vdso_end;
  /* [windows_lo, windows_hi): the span of every window a sample's pc is tested against before
   * the walk (gogo, systemstack, clone, save_g below; proc_info_spans.h): outside it (nearly
   * every sample) none is read. 0, 0: none decoded. */
  sb_u64 windows_lo;
  sb_u64 windows_hi;
  /* Inside that span, which blocks of 1 << special_shift bytes hold no part of any range (bit
   * set; proc_info_spans.h): most return addresses in the runtime's own code are answered by
   * one bit instead of sb_classify's search. All clear (the default): every pc is searched. */
  sb_u32 special_shift;
  /* The SB_FN_ROOT ranges of `ranges` (goexit, mstart, ...: nearly every stack ends at one),
   * as offsets from text_start, [lo, hi); nroots of them (proc_info_spans.h). sb_frame_kind
   * answers a root from here instead of searching `ranges` (up to five more lines). */
  sb_u32 nroots;
  struct sb_root_range roots[SB_MAX_ROOTS];
  sb_u64 special_free[SB_SPECIAL_WORDS];
  struct sb_range ranges[SB_MAX_RANGES]; /* ascending by start, disjoint (sb_classify searches) */
  /* The save points a goroutine's gobuf may hold when a crossing resumes it (the saved-pc
   * rule, gobuf_resume.h sb_gobuf_resume). Runtime addresses; 0 when not found. */
  sb_u64 morestack;          /* runtime.morestack: morestack saves the pc after f's call to it */
  sb_u64 morestack_noctxt;   /*   or to runtime.morestack_noctxt */
  sb_u64 sswitch_start;      /* runtime.systemstack_switch: gosave_systemstack_switch saves a pc */
  sb_u64 sswitch_end;        /*   in it */
  sb_u32 nmcall_sites;
  sb_u32 pad_mcall;
  /* mcall saves its own return address: the return sites of every call to runtime.mcall,
   * ascending, as offsets from text_start. */
  sb_u32 mcall_sites[SB_MAX_MCALL_SITES];
  /* newstack's copy of m.morebuf (docs/unwinder.md, morestack): where DWARF's location list puts
   * runtime.newstack's local `morebuf` (a runtime.gobuf: f's caller's pc and sp, and g) at a
   * fixed offset from newstack's CFA, for return addresses in [newstack_lo, newstack_hi)
   * (offsets from text_start). After newstack preempted the goroutine (gopreempt_m -> dropg ->
   * schedule) it is the one record left on this M of which goroutine grew its stack here.
   * newstack_hi 0: not proven (no DWARF), the goroutine is not recovered. */
  sb_u32 newstack_lo;
  sb_u32 newstack_hi;
  sb_s32 morebuf_cfa_off;    /* morebuf is at newstack's CFA + this */
  sb_u16 gobuf_g;            /* offset of gobuf.g (from the same DWARF) */
  sb_u16 pad_morebuf;
  /* amd64 gogo's windows (unwinder/gogo_window.h), runtime addresses, 0: not
   * decoded. [gogo_g0_lo, gogo_g0_hi): TLS g is already the goroutine, SP still on g0;
   * [gogo_gp_lo, gogo_gp_hi): SP is the goroutine's sched.sp, BP its own from gogo_bp_loaded,
   * and it resumes at sched.pc. */
  sb_u64 gogo_g0_lo;
  sb_u64 gogo_g0_hi;
  sb_u64 gogo_gp_lo;
  sb_u64 gogo_gp_hi;
  sb_u64 gogo_bp_loaded;
  /* The saved-pc rule's callee check (unwinder/mcall_callees.h): the function mcall_sites[i]
   * passes to mcall (park_m, gosched_m, exitsyscall0, ...), [lo, hi) as offsets from
   * text_start, beside mcall_sites[i]; hi 0: not decoded, no check. */
  struct sb_mcall_fn mcall_fns[SB_MAX_MCALL_SITES];
  /* runtime.systemstack's windows (unwinder/systemstack_window.h), runtime addresses, 0: not
   * decoded. [sstack_g0_lo, _hi): TLS g (arm64: R28) is already g0, SP still the goroutine's;
   * [sstack_gp_lo, _hi): g is m.curg again, SP still on g0. arm64: each window opens with its
   * BL save_g, so inside save_g with LR sstack_g0_lo + 4 or sstack_gp_lo + 4 the thread is in
   * that window too. */
  sb_u64 sstack_g0_lo;
  sb_u64 sstack_g0_hi;
  sb_u64 sstack_gp_lo;
  sb_u64 sstack_gp_hi;
  /* runtime.asmcgocall's windows of the same kind (amd64 only; unwinder/systemstack_window.h
   * FindAsmcgocallWindow), runtime addresses, 0: not decoded. */
  sb_u64 acgo_g0_lo;
  sb_u64 acgo_g0_hi;
  sb_u64 acgo_gp_lo;
  sb_u64 acgo_gp_hi;
  sb_u64 pad_acgo_windows[4]; /* the size stays 8 mod 64 (below) */
  /* arm64 gogo (unwinder/gogo_window.h; the gogo_* windows above hold arm64's too): LR is
   * gp's from gogo_lr_loaded on (before it, gobuf.lr in memory); gogo's BL save_g leaves LR
   * at gogo_g0_lo + 4, so in runtime.save_g [save_g_lo, _hi) (arm64: from gogo's or
   * systemstack's decoding, 0 else) with that LR the thread is in the g0 window too. The
   * caller of runtime.gogo is then in no register: gogo_callers names, for each function
   * with a single call to runtime.gogo, its entry and that call's return site (offsets from
   * text_start), found from the BL at [SP] - 4 in its caller. */
  sb_u64 gogo_lr_loaded;
  sb_u64 save_g_lo;
  sb_u64 save_g_hi;
  sb_u32 ngogo_callers;
  sb_u32 pad_gogo;
  struct sb_gogo_caller gogo_callers[SB_MAX_GOGO_CALLERS];
  /* amd64 runtime.clone's new thread (unwinder/clone_child.h), runtime addresses, 0: not
   * decoded. At [clone_shared_lo, clone_shared_hi) (after clone's SYSCALL, before the child's
   * own code) both threads run; the child is the one whose TLS g is still 0, and its stack is
   * the new g0 stack's empty top: the sample is whole with clone alone. */
  sb_u64 clone_shared_lo;
  sb_u64 clone_shared_hi;
  /* runtime.systemstack and runtime.asmcgocall (unwinder/switch_paths.h), offsets from
   * text_start, hi 0: not decoded (every frame of theirs on g0 is crossed, as before). On g0 a
   * frame of theirs is the switch to cross only at a pc in [switched_lo, direct_lo): from the
   * return site of their call to gosave_systemstack_switch to their direct path (systemstack's
   * noswitch, asmcgocall's nosave), which runs on the g0 stack it was called on. */
  sb_u32 sstack_switched_lo;
  sb_u32 sstack_direct_lo;
  sb_u32 acgo_switched_lo;
  sb_u32 acgo_direct_lo;
  /* amd64 asmcgocall before Go 1.21 has no frame record: its direct path saved its entry SP
   * (where the return address into its Go caller is) at [SP + acgo_entry_sp_slot - 1] of its
   * aligned frame before the call. 0: not decoded (Go 1.21+: it pushes BP, and the
   * frame-pointer step keeps the caller). */
  sb_u32 acgo_entry_sp_slot;
  sb_u32 pad_acgo;
};
/* The hash map's elements a whole number of cache lines (see above): a field added to
 * sb_proc_info must keep its size at 8 mod 64 (pad it). */
SB_STATIC_ASSERT(sizeof(struct sb_proc_info) % 64 == 8, "sb_proc_info: size must stay 8 mod 64");

/* One run of the pcsp table: from text_start + pc_off on, SP is `delta` bytes below the
 * function's entry SP (so the return address is at SP + delta on amd64). */
struct sb_sp_delta {
  sb_u32 pc_off;
  sb_s32 delta;
};

/* The registers an unwind starts from. */
struct sb_regs {
  sb_u64 pc;
  sb_u64 sp;
  sb_u64 fp;        /* amd64 rbp, arm64 x29 */
  sb_u64 lr;        /* arm64 x30 (0 on amd64) */
  sb_u64 g_reg;     /* arm64 x28 (Go keeps g there), amd64 r14 (ABIInternal code only) */
  sb_u64 tls_base;  /* amd64 fs_base, arm64 TPIDR_EL0 */
};

/* Sample flags. */
#define SB_SAMPLE_ON_G0 0x1       /* the sampled thread was on its g0 stack */
#define SB_SAMPLE_HAS_GOID 0x2

/* Goroutine pprof labels (runtime/pprof), read by goroutine_labels.h. Lengths are the bytes
 * kept; a key or value longer than its buffer is cut and flagged. */
#define SB_MAX_LABELS 8
#define SB_LABEL_KEY_LEN 64
#define SB_LABEL_VAL_LEN 128
#define SB_LABEL_KEY_CUT 0x1
#define SB_LABEL_VAL_CUT 0x2
struct sb_label {
  sb_u8 key_len;
  sb_u8 val_len;
  sb_u8 flags;  /* SB_LABEL_*_CUT */
  sb_u8 pad;
  char key[SB_LABEL_KEY_LEN];
  char val[SB_LABEL_VAL_LEN];
};

/* Why a sample has the labels it has (one per sample). */
enum sb_labels_status {
  SB_LABELS_OFF = 0,      /* not asked for (--no-labels), or no goroutine (g0, C threads) */
  SB_LABELS_NONE,         /* the goroutine has no labels */
  SB_LABELS_OK,           /* count labels read, every one there was */
  SB_LABELS_TRUNCATED,    /* more labels than SB_MAX_LABELS: count kept, the rest dropped */
  SB_LABELS_NO_FACT,      /* g.labels offset or the layout unknown for this binary */
  SB_LABELS_READ_FAULT,   /* a read failed: count labels kept up to there */
  SB_LABELS_MAX
};

struct sb_labels {
  sb_u8 status;  /* enum sb_labels_status */
  sb_u8 count;
  sb_u16 pad;
  sb_u32 total;  /* labels the goroutine has (>= count) */
  struct sb_label l[SB_MAX_LABELS];
};

/* The stack window (memory_reads.h sb_read_record): frame records are served from one read of up
 * to this many bytes of their page (a multiple of 8: the BPF side keeps it as words). */
#define SB_STACK_WINDOW_BYTES 2048

/* One stack sample, as sent through the ring buffer (frames truncated to nframes). */
struct sb_sample {
  sb_u32 pid;
  sb_u32 tid;
  sb_u64 time_ns;
  sb_u64 goid;
  sb_u64 goid_g;       /* the g whose id is goid (the crossed goroutine under a switch), 0 unknown */
  struct sb_labels labels; /* that goroutine's pprof labels (filled by the includer, not the core) */
  sb_u32 nframes;
  sb_u8 stop_reason;   /* enum sb_stop_reason */
  sb_u8 flags;
  sb_u16 crossed;      /* bit (1 << enum sb_crossing) for each switch crossed */
  sb_u64 exact[SB_MAX_FRAMES / 64]; /* bit i set: frames[i] is an exact pc (not a return address) */
  char comm[SB_COMM_LEN];
  sb_u64 frames[SB_MAX_FRAMES];
};

/* --compare-fp-walk: both walks' time and frames by where the sample was taken, so that a
 * workload's ratio can be read by what the unwinder does there and the plain walk does not (on
 * g0 the plain walk ends at the g0 stack's end; the unwinder crosses into the goroutine). */
enum sb_cmp_kind {
  SB_CMP_GOROUTINE = 0, /* not on g0: a goroutine's own stack (and the rare gsignal sample) */
  SB_CMP_G0_MORESTACK,  /* on g0, crossed by morestack: a goroutine growing its stack */
  SB_CMP_G0_OTHER,      /* on g0 otherwise: systemstack, mcall, the scheduler, ... */
  SB_CMP_KINDS
};
enum sb_cmp_field { SB_CMP_SAMPLES = 0, SB_CMP_UNWIND_NS, SB_CMP_UNWIND_FRAMES, SB_CMP_FP_NS, SB_CMP_FP_FRAMES, SB_CMP_FIELDS };

/* Counters kept by the unwinder (per CPU in BPF, per run on the host). */
struct sb_counters {
  /* Laid out by which cache line a sample writes (the per-CPU array's value starts on a line,
   * measured), so that a sample writes as few lines as it can. (This order and proc_info's
   * above, two lines fewer per sample, do not show above the benchmark's noise; they cost
   * nothing.) Line 0: what every sample writes: samples, the unwind's time and frames, the
   * labels' time, the pcsp counters and stop[0..1] (stop[SB_STOP_ROOT]: nearly every stack). */
  sb_u64 samples;
  sb_u64 unwind_ns;       /* time spent unwinding tracked samples (BPF: bpf_ktime_get_ns) */
  sb_u64 unwind_frames;   /* frames those unwinds produced */
  sb_u64 labels_ns;       /* time spent reading goroutine labels (goroutine_labels.h) */
  sb_u64 pcsp_lookups;    /* pcsp values looked up (the leaf, SP walks, some crossings) */
  sb_u64 pcsp_cache_hits; /*   of which the sampler's pcsp cache answered (bpf_env.bpf.h) */
  sb_u64 stop[SB_STOP_MAX]; /* from offset 48: stop[SB_STOP_ROOT] at 56, still line 0 */
  sb_u64 lost;            /* ring buffer full */
  sb_u64 unknown_pid;     /* samples of processes not (yet) tracked */
  sb_u64 exiting;         /* samples of tasks tearing down (PF_EXITING or no mm): not unwound */
  sb_u64 in_exec;         /* samples of tasks inside execve (the image being replaced): not unwound;
                             also keeps labels[SB_LABELS_NONE] at the start of line 3 */
  /* Line 3 (offset 192) holds labels[SB_LABELS_NONE .. SB_LABELS_MAX - 1] (every sample of a
   * goroutine writes one) and crossing[SB_CROSS_LEAF] (half the samples): labels starts at 184. */
  sb_u64 labels[SB_LABELS_MAX]; /* samples by enum sb_labels_status */
  sb_u64 crossing[SB_CROSS_MAX][3]; /* line 4: systemstack, mcall and morestack's first two */
  /* Last: the benchmark build's only. */
  sb_u64 fp_walk_ns;      /* --compare-fp-walk: time of a plain frame-pointer walk of the same */
  sb_u64 fp_walk_frames;  /*   samples, and the frames it found */
  sb_u64 floor_ns;        /* --compare-floor: the plain walk plus the reads naming the goroutine */
  sb_u64 floor_frames;    /*   (sb_fp_walk_floor), on the same samples, and its frames */
  sb_u64 cmp[SB_CMP_KINDS][SB_CMP_FIELDS]; /* --compare-fp-walk: the above by enum sb_cmp_kind */
  /* Process events (a new process sampled under --all, an exec) that found the process ring
   * full; each is sent again at the process's next sample. Rare: last, off the hot lines. */
  sb_u64 process_events_lost;
  /* Following processes from their exec (sampler.bpf.c on_exec): process images made from
   * their executable's template, and samples of a process whose executable was still being
   * analysed (also counted in unknown_pid; by executable in the not_analyzed map). */
  sb_u64 from_template;
  sb_u64 not_analyzed;
};
SB_STATIC_ASSERT(__builtin_offsetof(struct sb_counters, stop) + SB_STOP_ROOT * 8 < 64,
                 "sb_counters: stop[ROOT] off line 0");
SB_STATIC_ASSERT(__builtin_offsetof(struct sb_counters, labels) + 8 == 192 &&
                     __builtin_offsetof(struct sb_counters, crossing) + 3 * 8 <= 256,
                 "sb_counters: labels and the leaf crossing off line 3");

#endif /* SWITCHBACK_UNWIND_TYPES_H */
