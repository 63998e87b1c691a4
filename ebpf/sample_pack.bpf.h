/* Packs a stack sample into its ring record (sample_record.h sb_sample_record): the header, then
 * only the frames, exact bits, kernel frames and labels it holds. Shared by the BPF programs that
 * send samples, the sampler and the exit probe's call paths (never copied), so both send the one
 * format userspace unpacks (unwinder/sample_record.h). */
#ifndef SWITCHBACK_SAMPLE_PACK_BPF_H
#define SWITCHBACK_SAMPLE_PACK_BPF_H

#ifndef SWITCHBACK_BPF_ENV_BPF_H
#error "include unwind/bpf_env.bpf.h first: the packing bounds its sizes with its SB_OPAQUE"
#endif

#include "unwind/unwind_types.h"
#include "sample_record.h"

/* Appends one part of the record: size bytes of src at *off in b, then moves *off past them.
 * size is made opaque and checked against max (the part's largest, a constant), so the verifier
 * sees that bound on the very register the read gets (clang would otherwise drop the check as
 * implied by the caller's clamp) and *off stays within the sum of the parts' largest,
 * SB_SAMPLE_RECORD_MAX. Returns 0, or -1 when the part could not be packed. */
static __always_inline int sb_pack_part(__u8 *b, __u64 *off, const void *src, __u64 size, __u64 max) {
  SB_OPAQUE(size);
  if (size > max) return -1;
  if (bpf_probe_read_kernel(b + *off, size, src)) return -1;
  *off += size;
  return 0;
}

/* Packs sample s into b, a buffer of SB_SAMPLE_RECORD_MAX bytes (a per-CPU map value: far over
 * BPF's 512-byte stack), with its kernel stack k, or none (null: the exit probe; status
 * SB_KSTACK_OFF). Returns the record's size, 0 when it could not be packed. An empty part is
 * skipped here, not in sb_pack_part: no helper call for it (most samples have no kernel frames
 * and no labels), and the verifier walks no more of the sampler's paths than with each part
 * written out inline (a size-0 test inside the helper makes it walk 1.5% more; measured as in
 * docs/verifier-budget.md). */
static __always_inline __u64 sb_pack_sample_record(__u8 *b, const struct sb_sample *s,
                                                   const struct sb_kernel_stack *k) {
  struct sb_sample_record *h = (struct sb_sample_record *)b;
  h->pid = s->pid;
  h->tid = s->tid;
  h->time_ns = s->time_ns;
  h->goid = s->goid;
  h->goid_g = s->goid_g;
  h->stop_reason = s->stop_reason;
  h->flags = s->flags;
  h->crossed = s->crossed;
  h->labels_status = s->labels.status;
  h->labels_total = s->labels.total;
  h->kernel_status = k ? k->status : SB_KSTACK_OFF;
  h->kernel_err = k ? k->err : 0;
  h->pad = 0;
  h->pad2 = 0;
  __builtin_memcpy(h->comm, s->comm, sizeof(h->comm));

  __u64 off = sizeof(*h);
  __u32 n = s->nframes;
  if (n > SB_MAX_FRAMES) n = SB_MAX_FRAMES;
  h->nframes = n;
  if (n > 0 && (sb_pack_part(b, &off, s->frames, (__u64)n * 8, SB_MAX_FRAMES * 8) ||
                sb_pack_part(b, &off, s->exact, (n + 63) / 64 * 8, SB_MAX_FRAMES / 64 * 8)))
    return 0;

  __u32 kn = k && k->status == SB_KSTACK_OK ? k->nframes : 0;
  if (kn > SB_MAX_KERNEL_FRAMES) kn = SB_MAX_KERNEL_FRAMES;
  h->kernel_nframes = (__u16)kn;
  if (kn > 0 && sb_pack_part(b, &off, k->frames, (__u64)kn * 8, SB_MAX_KERNEL_FRAMES * 8)) return 0;

  __u32 c = s->labels.count;
  if (c > SB_MAX_LABELS) c = SB_MAX_LABELS;
  h->labels_count = (__u8)c;
  if (c > 0 &&
      sb_pack_part(b, &off, s->labels.l, (__u64)c * sizeof(struct sb_label), SB_MAX_LABELS * sizeof(struct sb_label)))
    return 0;
  return off;
}

#endif
