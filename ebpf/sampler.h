/* Types shared by sampler.bpf.c and its userspace loader (besides unwind/unwind_types.h). */
#ifndef SWITCHBACK_SAMPLER_H
#define SWITCHBACK_SAMPLER_H

#include "unwind/unwind_types.h"

#define SB_MAX_PROCESSES 4096

/* What sb_new_process reports. */
enum sb_process_event {
  /* --all: a sample landed in a process userspace does not track (once per process image). */
  SB_PROCESS_SAMPLED = 0,
  /* A tracked process ran execve: its facts described the old image and are gone from
   * proc_info already; userspace ends that process (its new image is a new process). */
  SB_PROCESS_EXEC = 1,
};

struct sb_new_process {
  sb_u32 pid;
  sb_u32 kind; /* enum sb_process_event */
};

/* Kernel frames (--kernel): the sample's kernel stack from bpf_get_stack, leaf first. 64 is
 * deeper than any syscall or fault path (perf's own default limit is 127 for user and kernel
 * together); a deeper stack keeps its leaf side. */
#define SB_MAX_KERNEL_FRAMES 64

enum sb_kstack_status {
  SB_KSTACK_OFF = 0, /* not asked for */
  SB_KSTACK_USER,    /* the sample interrupted user code: there is no kernel stack */
  SB_KSTACK_OK,      /* nframes kernel frames */
  SB_KSTACK_ERROR,   /* it interrupted the kernel, but bpf_get_stack failed (err) or gave none */
};

struct sb_kernel_stack {
  sb_u8 status; /* enum sb_kstack_status */
  sb_u8 pad;
  sb_u16 nframes;
  sb_s32 err; /* bpf_get_stack's error (negative errno) */
  sb_u64 frames[SB_MAX_KERNEL_FRAMES];
};

/* What the sampler sends through its ring buffer: the kernel stack, then the user sample,
 * cut to its frames (so it comes last). sb_sample stays the unwind core's own type. */
struct sb_cpu_sample {
  struct sb_kernel_stack kernel;
  struct sb_sample s;
};

/* What the sampler sends through its ring buffer for one sample: this header, then only what
 * the sample holds, packed one after the other (each part starts 8-byte aligned):
 *   sb_u64 frames[nframes]                   the user stack, leaf first
 *   sb_u64 exact[(nframes + 63) / 64]        bit i: frames[i] is an exact pc
 *   sb_u64 kernel_frames[kernel_nframes]     the kernel stack (--kernel), leaf first
 *   struct sb_label labels[labels_count]     the goroutine's pprof labels
 * Userspace unpacks it into sb_cpu_sample (unwinder/sample_record.h). Until session 24 the
 * record was sb_cpu_sample itself cut after its frames: 2,280 bytes plus 8 per frame whatever
 * the sample held (the kernel-stack slot and every label slot were sent empty), and copying it
 * into the ring was a fifth of the sampler's time (README "Session 24"). */
struct sb_sample_record {
  sb_u32 pid;
  sb_u32 tid;
  sb_u64 time_ns;
  sb_u64 goid;
  sb_u64 goid_g;
  sb_u32 nframes;
  sb_u8 stop_reason;    /* enum sb_stop_reason */
  sb_u8 flags;          /* SB_SAMPLE_* */
  sb_u16 crossed;
  sb_u8 labels_status;  /* enum sb_labels_status */
  sb_u8 labels_count;
  sb_u8 kernel_status;  /* enum sb_kstack_status */
  sb_u8 pad;
  sb_u16 kernel_nframes;
  sb_u16 pad2;
  sb_u32 labels_total;
  sb_s32 kernel_err;
  char comm[SB_COMM_LEN];
};

/* The largest record: the sampler's per-CPU buffer that it is packed in. */
#define SB_SAMPLE_RECORD_MAX                                                                          \
  (sizeof(struct sb_sample_record) + (SB_MAX_FRAMES + SB_MAX_FRAMES / 64 + SB_MAX_KERNEL_FRAMES) * 8 + \
   SB_MAX_LABELS * sizeof(struct sb_label))

/* Per-CPU counters of the kernel stacks (a map of their own beside sb_counters). */
struct sb_kernel_counters {
  sb_u64 in_kernel; /* samples of tracked processes that interrupted the kernel */
  sb_u64 stacks;    /* of those, with a kernel stack */
  sb_u64 errors;    /* of those, bpf_get_stack failed or returned no frame */
};

#endif
