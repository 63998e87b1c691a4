/* The ring-buffer record of one stack sample, shared by the BPF programs that send samples (the
 * sampler, sampler.h; the exit probe's call paths, exitprobe.h) and the userspace that unpacks
 * it (unwinder/sample_record.h). Packed in BPF by sample_pack.bpf.h. One definition, so the two
 * programs' records cannot drift apart. */
#ifndef SWITCHBACK_SAMPLE_RECORD_H
#define SWITCHBACK_SAMPLE_RECORD_H

#include "unwind/unwind_types.h"

/* Kernel frames (--kernel): the sample's kernel stack from bpf_get_stack, leaf first. 64
 * is deeper than any syscall or fault path (perf's own default limit is 127 for user and kernel
 * together); a deeper stack keeps its leaf side. */
#define SB_MAX_KERNEL_FRAMES 64

enum sb_kstack_status {
  SB_KSTACK_OFF = 0, /* not asked for (and the exit probe's records, which have none) */
  SB_KSTACK_USER,    /* the sample interrupted user code: there is no kernel stack */
  SB_KSTACK_OK,      /* nframes kernel frames */
  SB_KSTACK_ERROR,   /* it interrupted the kernel, but bpf_get_stack failed (err) or gave none */
};

/* A sample's kernel stack (the sampler's --kernel), as the sampler keeps it before packing and
 * userspace after unpacking (sampler.h sb_cpu_sample). */
struct sb_kernel_stack {
  sb_u8 status; /* enum sb_kstack_status */
  sb_u8 pad;
  sb_u16 nframes;
  sb_s32 err; /* bpf_get_stack's error (negative errno) */
  sb_u64 frames[SB_MAX_KERNEL_FRAMES];
};

/* One sample as sent through a ring buffer: this header, then only what the sample holds,
 * packed one after the other (each part starts 8-byte aligned):
 *   sb_u64 frames[nframes]                   the user stack, leaf first
 *   sb_u64 exact[(nframes + 63) / 64]        bit i: frames[i] is an exact pc
 *   sb_u64 kernel_frames[kernel_nframes]     the kernel stack (--kernel), leaf first
 *   struct sb_label labels[labels_count]     the goroutine's pprof labels
 * Userspace unpacks it into sb_cpu_sample (unwinder/sample_record.h; the exit probe's, behind
 * a header of its own, into sb_xp_stack: exitprobe/stack_record.h). Sending sb_cpu_sample
 * itself cut after its frames would be 2,280 bytes plus 8 per frame whatever the sample held
 * (the kernel-stack slot and every label slot sent empty), and copying that into the ring costs
 * a fifth of the sampler's time; the exit probe's call paths, sent that way, cost 1,784 bytes
 * plus 8 per frame (docs/design/0009-packed-ring-record.md). */
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

/* The largest record: the size of the per-CPU buffer each program packs it in. */
#define SB_SAMPLE_RECORD_MAX                                                                          \
  (sizeof(struct sb_sample_record) + (SB_MAX_FRAMES + SB_MAX_FRAMES / 64 + SB_MAX_KERNEL_FRAMES) * 8 + \
   SB_MAX_LABELS * sizeof(struct sb_label))

#endif
