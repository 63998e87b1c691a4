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

/* Per-CPU counters of the kernel stacks (a map of their own beside sb_counters). */
struct sb_kernel_counters {
  sb_u64 in_kernel; /* samples of tracked processes that interrupted the kernel */
  sb_u64 stacks;    /* of those, with a kernel stack */
  sb_u64 errors;    /* of those, bpf_get_stack failed or returned no frame */
};

#endif
