/* Types shared by sampler.bpf.c and its userspace loader (besides unwind/unwind_types.h). */
#ifndef SWITCHBACK_SAMPLER_H
#define SWITCHBACK_SAMPLER_H

#include "unwind/unwind_types.h"

#define SB_MAX_PROCESSES 4096

/* Sent when --all is on and a sample lands in a process userspace does not track yet. */
struct sb_new_process {
  sb_u32 pid;
  sb_u32 pad;
};

#endif
