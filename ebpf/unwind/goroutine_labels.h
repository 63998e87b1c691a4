/* Goroutine pprof labels (runtime/pprof.SetGoroutineLabels, pprof.Do): read from g.labels, for
 * the BPF sampler and, through host_unwind.cc, for unit tests over synthetic memory. Same
 * includer contract as unwind_core.h (sb_read, SB_INLINE, SB_SUBPROG); include it after that.
 *
 * g.labels is an unsafe.Pointer set by runtime_setProfLabel to what the context holds, whose
 * layout is runtime/pprof's (read from each release's runtime/pprof/label.go, 1.19-1.27):
 *   Go 1.19-1.23: *labelMap, labelMap = map[string]string: g.labels -> a word -> the hmap
 *     (runtime/map.go: count int @0, B uint8 @9, buckets @16, oldbuckets @24; a bucket is
 *     tophash [8]uint8, keys [8]string, elems [8]string, overflow pointer: 272 bytes).
 *     WithLabels builds a fresh map and never changes it once published, so what is read is
 *     stable; with more than 8 labels the map may still be growing (oldbuckets set): entries
 *     not yet evacuated are read from the old bucket.
 *   Go 1.24+: *labelMap, labelMap = struct{ LabelSet{ list []label{key, value string} } }
 *     (1.26+: internal/runtime/pprof/label.Set{List []Label}, the same bytes): g.labels -> the
 *     slice header, entries of 32 bytes, sorted by key.
 * The layout is passed as SB_PI_LABELS_HMAP / SB_PI_LABELS_SLICE; without one, or without the
 * g.labels offset, a sample gets SB_LABELS_NO_FACT: never a guess.
 *
 * Global (SB_SUBPROG) functions, so the BPF verifier checks each once, apart from the unwind. */
#ifndef SWITCHBACK_GOROUTINE_LABELS_H
#define SWITCHBACK_GOROUTINE_LABELS_H

#include "unwind_types.h"

#define SB_HMAP_COUNT 0
#define SB_HMAP_B 9
#define SB_HMAP_BUCKETS 16
#define SB_HMAP_OLDBUCKETS 24
#define SB_BUCKET_SLOTS 8
#define SB_BMAP_KEYS 8
#define SB_BMAP_ELEMS (8 + 8 * 16)
#define SB_BMAP_SIZE (8 + 16 * 16 + 8)
#define SB_MIN_TOPHASH 5 /* tophash below: empty or evacuated (runtime/map.go minTopHash) */
/* Buckets read: B <= 1 holds up to 13 labels (load factor 6.5), plus one old bucket. */
#define SB_HMAP_MAX_BUCKETS 2
#define SB_SLICE_ENTRY 32 /* label{key, value string} */

/* Copies one Go string (header at hdr: data pointer, length) into dst (cap bytes). Returns the
 * bytes kept, -1 on a read fault; *cut is set when the string was longer. */
SB_INLINE int sb_label_string(sb_u64 env, sb_u64 hdr, char *dst, sb_u32 cap, sb_u8 *cut) {
  sb_u64 sh[2] = {0, 0};
  if (sb_read((void *)env, sh, sizeof(sh), hdr)) return -1;
  sb_u64 len = sh[1];
  sb_u32 n = len > cap ? cap : (sb_u32)len;
  *cut = len > cap;
  if (n == 0) return 0;
  if (sh[0] == 0) return -1;
  /* Bounded for the verifier: cap is a power of two (64 or 128) and n <= cap. */
  if (cap == SB_LABEL_KEY_LEN) {
    if (n > SB_LABEL_KEY_LEN) return -1;
    if (sb_read((void *)env, dst, n, sh[0])) return -1;
  } else {
    if (n > SB_LABEL_VAL_LEN) return -1;
    if (sb_read((void *)env, dst, n, sh[0])) return -1;
  }
  return (int)n;
}

/* One label from the key and value string headers. 0, or -1 on a read fault. */
SB_SUBPROG int sb_read_label(sb_u64 env, sb_u64 key_hdr, sb_u64 val_hdr, struct sb_label *l) {
  if (!l) return -1;
  sb_u8 kcut = 0, vcut = 0;
  int k = sb_label_string(env, key_hdr, l->key, SB_LABEL_KEY_LEN, &kcut);
  if (k < 0) return -1;
  int v = sb_label_string(env, val_hdr, l->val, SB_LABEL_VAL_LEN, &vcut);
  if (v < 0) return -1;
  l->key_len = (sb_u8)k;
  l->val_len = (sb_u8)v;
  l->flags = (kcut ? SB_LABEL_KEY_CUT : 0) | (vcut ? SB_LABEL_VAL_CUT : 0);
  return 0;
}

/* Go 1.24+: the sorted slice. */
SB_INLINE void sb_labels_slice(sb_u64 env, sb_u64 set, struct sb_labels *out) {
  sb_u64 hdr[2] = {0, 0}; /* data, len */
  if (sb_read((void *)env, hdr, sizeof(hdr), set)) {
    out->status = SB_LABELS_READ_FAULT;
    return;
  }
  if (hdr[1] == 0) {
    out->status = SB_LABELS_NONE;
    return;
  }
  out->total = hdr[1] > 0xffffffffull ? 0xffffffffu : (sb_u32)hdr[1];
  for (sb_u32 i = 0; i < SB_MAX_LABELS; i++) {
    if (i >= hdr[1]) break;
    sb_u64 e = hdr[0] + (sb_u64)i * SB_SLICE_ENTRY;
    if (sb_read_label(env, e, e + 16, &out->l[i & (SB_MAX_LABELS - 1)]) != 0) {
      out->status = SB_LABELS_READ_FAULT;
      return;
    }
    out->count = (sb_u8)(i + 1);
  }
  /* More entries than the header's count: a map written while we read it (or garbage); what
   * was read is what there is, so total is at least count and OK means count == total. */
  if (out->count > out->total) out->total = out->count;
  out->status = out->total > out->count ? SB_LABELS_TRUNCATED : SB_LABELS_OK;
}

/* Go 1.19-1.23: the map's buckets (and the old bucket while it grows). */
SB_INLINE void sb_labels_hmap(sb_u64 env, sb_u64 map_var, struct sb_labels *out) {
  sb_u64 hm = 0;
  if (sb_read((void *)env, &hm, sizeof(hm), map_var)) {
    out->status = SB_LABELS_READ_FAULT;
    return;
  }
  if (hm == 0) {
    out->status = SB_LABELS_NONE;
    return;
  }
  sb_u64 h[4] = {0, 0, 0, 0}; /* count, flags/B/noverflow/hash0, buckets, oldbuckets */
  if (sb_read((void *)env, h, sizeof(h), hm + SB_HMAP_COUNT)) {
    out->status = SB_LABELS_READ_FAULT;
    return;
  }
  if (h[0] == 0) {
    out->status = SB_LABELS_NONE;
    return;
  }
  out->total = h[0] > 0xffffffffull ? 0xffffffffu : (sb_u32)h[0];
  sb_u32 b = (sb_u32)((h[1] >> 8) & 0xff); /* B, the byte at offset 9 */
  sb_u32 nb = b >= 1 ? SB_HMAP_MAX_BUCKETS : 1;
  for (sb_u32 bi = 0; bi < SB_HMAP_MAX_BUCKETS + 1; bi++) {
    sb_u64 bucket;
    if (bi < nb) bucket = h[2] + (sb_u64)bi * SB_BMAP_SIZE;
    else if (bi == SB_HMAP_MAX_BUCKETS && h[3] != 0) bucket = h[3]; /* growing: old bucket 0 */
    else continue;
    if (bucket == 0) continue;
    sb_u8 top[SB_BUCKET_SLOTS];
    if (sb_read((void *)env, top, sizeof(top), bucket)) {
      out->status = SB_LABELS_READ_FAULT;
      return;
    }
    for (sb_u32 i = 0; i < SB_BUCKET_SLOTS; i++) {
      if (top[i] < SB_MIN_TOPHASH) continue;
      if (out->count >= SB_MAX_LABELS) break;
      sb_u64 k = bucket + SB_BMAP_KEYS + (sb_u64)i * 16;
      sb_u64 v = bucket + SB_BMAP_ELEMS + (sb_u64)i * 16;
      if (sb_read_label(env, k, v, &out->l[out->count & (SB_MAX_LABELS - 1)]) != 0) {
        out->status = SB_LABELS_READ_FAULT;
        return;
      }
      out->count++;
    }
  }
  /* More entries than the header's count: a map written while we read it (or garbage); what
   * was read is what there is, so total is at least count and OK means count == total. */
  if (out->count > out->total) out->total = out->count;
  out->status = out->total > out->count ? SB_LABELS_TRUNCATED : SB_LABELS_OK;
}

/* The labels of goroutine g into out (status, count, total, l[]). */
SB_SUBPROG int sb_read_goroutine_labels(sb_u64 env, const struct sb_proc_info *pi, sb_u64 g,
                                        struct sb_labels *out) {
  if (!out) return 0;
  out->count = 0;
  out->total = 0;
  out->status = SB_LABELS_OFF;
  if (!pi || g == 0) return 0;
  sb_u32 layout = pi->flags & (SB_PI_LABELS_HMAP | SB_PI_LABELS_SLICE);
  if (pi->off.g_labels == 0xffff || (layout != SB_PI_LABELS_HMAP && layout != SB_PI_LABELS_SLICE)) {
    out->status = SB_LABELS_NO_FACT;
    return 0;
  }
  sb_u64 set = 0;
  if (sb_read((void *)env, &set, sizeof(set), g + pi->off.g_labels)) {
    out->status = SB_LABELS_READ_FAULT;
    return 0;
  }
  if (set == 0) {
    out->status = SB_LABELS_NONE;
    return 0;
  }
  if (layout == SB_PI_LABELS_SLICE) sb_labels_slice(env, set, out);
  else sb_labels_hmap(env, set, out);
  return out->count;
}

#endif /* SWITCHBACK_GOROUTINE_LABELS_H */
