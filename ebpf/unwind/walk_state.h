/* The unwind core: the walk's state (struct sb_walk, struct sb_unwind_state) and the core's
 * constants. Part of unwind_core.h (read its head for what the includer defines); the same code
 * for the BPF programs and for the host. */
#ifndef SWITCHBACK_UNWIND_WALK_STATE_H
#define SWITCHBACK_UNWIND_WALK_STATE_H

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

#endif /* SWITCHBACK_UNWIND_WALK_STATE_H */
