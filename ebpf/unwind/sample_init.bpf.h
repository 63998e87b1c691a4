/* The start of every stack sample the BPF programs send (the sampler, the exit probe's call
 * paths): sb_sample's header reset in their per-CPU scratch, which is reused, before the unwind
 * core fills the frames. One place, so a field added to sb_sample is reset for both. */
#ifndef SWITCHBACK_SAMPLE_INIT_H
#define SWITCHBACK_SAMPLE_INIT_H

#include "unwind_types.h"

static __always_inline void sb_sample_init(struct sb_sample *s, sb_u32 pid, sb_u32 tid, sb_u64 time_ns) {
  s->pid = pid;
  s->tid = tid;
  s->time_ns = time_ns;
  s->goid = 0;
  s->goid_g = 0;
  s->labels.status = SB_LABELS_OFF;
  s->labels.count = 0;
  s->labels.total = 0;
  s->nframes = 0;
  s->stop_reason = SB_STOP_NONE;
  s->flags = 0;
  s->crossed = 0;
  for (int i = 0; i < SB_MAX_FRAMES / 64; i++) s->exact[i] = 0; /* frames are sent up to nframes */
  bpf_get_current_comm(s->comm, sizeof(s->comm));
}

#endif
