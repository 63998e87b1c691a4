/* Types shared by sampler.bpf.c and its userspace loader (besides unwind/unwind_types.h). */
#ifndef SWITCHBACK_SAMPLER_H
#define SWITCHBACK_SAMPLER_H

#include "unwind/unwind_types.h"
#include "sample_record.h" /* the ring record (sb_sample_record) and the kernel stack */

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

/* One sample whole: the sampler's per-CPU scratch that the unwind fills, and what userspace
 * unpacks each ring record (sb_sample_record) into (unwinder/sample_record.h). sb_sample stays
 * the unwind core's own type. */
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
