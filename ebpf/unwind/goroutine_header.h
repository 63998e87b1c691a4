/* The unwind core: a goroutine's header (g.m, g.sched, status, goid) in one read, its m and its
 * g0, and naming the goroutine of a sample. Part of unwind_core.h (read its head for what the
 * includer defines); the same code for the BPF programs and for the host. */
#ifndef SWITCHBACK_UNWIND_GOROUTINE_HEADER_H
#define SWITCHBACK_UNWIND_GOROUTINE_HEADER_H

#include "memory_reads.h"

/* The g header: SB_GHDR_BYTES from g.m hold g.m, g.sched, atomicstatus and goid in every
 * release (g.m at 48, goid at 152 or 160). Not g.stack (at 0): the buffer is on the BPF stack,
 * and the exit probe's frames leave room for 120 bytes, not 176. */
#define SB_GHDR_BYTES 120
#define SB_GHDR_WORDS (SB_GHDR_BYTES / 8)

/* The word of buf at byte offset off (u32 fields: off % 8 == 4 is the upper half), or -1 when
 * off + size is outside the first span bytes. Little-endian, as amd64 and arm64 are. */
SB_INLINE int sb_ghdr_word(const sb_u64 *buf, sb_u32 span, sb_u32 off, sb_u32 size, sb_u64 *v) {
  if (off + size > span || (off & (size - 1)) != 0) return -1;
  sb_u64 i = off >> 3;
  SB_OPAQUE(i); /* the bound below must stay on the index register (a stack read) */
  if (i >= SB_GHDR_WORDS) return -1;
  sb_u64 word = buf[i];
  *v = size == 8 ? word : (word >> ((off & 4) * 8)) & 0xffffffffull;
  return 0;
}

/* Reads gp's header into w->hdr_* in one read. 0 when it did; -1 (w->hdr_g 0) when the fields
 * do not all lie in SB_GHDR_BYTES or the read failed: the callers then read each field as
 * before, so a fault gives the stop it gave. */
SB_SUBPROG long sb_ghdr_read(struct sb_walk *w, const struct sb_proc_info *pi, sb_u64 gp) {
  if (!w || !pi) return -1;
  w->hdr_g = 0;
  if (gp == 0) return -1;
  const struct sb_go_offsets *o = &pi->off;
  /* Offsets from g.m, the lowest field read; every field must lie at or above it. */
  sb_u32 base = o->g_m;
  if (o->g_sched < base || o->g_atomicstatus < base || o->g_goid < base) return -1;
  sb_u32 sched = o->g_sched - base, status_off = o->g_atomicstatus - base, goid_off = o->g_goid - base;
  sb_u32 span = goid_off + 8;
  /* No array here: the exit probe's three frames have 512 bytes in all. */
  sb_u32 end = status_off + 4u;
  if (end > span) span = end;
  end = sched + 8u + (o->gobuf_bp > o->gobuf_sp ? o->gobuf_bp : o->gobuf_sp);
  if (end > span) span = end;
  end = sched + 8u + o->gobuf_pc;
  if (end > span) span = end;
  sb_u64 size = span;
  SB_OPAQUE(size); /* the verifier must see the bound on the register the read gets */
  if (size > SB_GHDR_BYTES) return -1;
  sb_u64 buf[SB_GHDR_WORDS] = {};
  if (sb_read((void *)(unsigned long)w->env, buf, (sb_u32)size, gp + base)) return -1;
  sb_u64 status = 0;
  if (sb_ghdr_word(buf, span, 0, 8, &w->hdr_m) ||
      sb_ghdr_word(buf, span, sched + o->gobuf_sp, 8, &w->hdr_sp) ||
      sb_ghdr_word(buf, span, sched + o->gobuf_pc, 8, &w->hdr_pc) ||
      sb_ghdr_word(buf, span, sched + o->gobuf_bp, 8, &w->hdr_bp) ||
      sb_ghdr_word(buf, span, goid_off, 8, &w->hdr_goid) ||
      sb_ghdr_word(buf, span, status_off, 4, &status))
    return -1;
  w->hdr_status = (sb_u32)status;
  w->hdr_g = gp;
  return 0;
}

/* Whether gp's header is in the walk (read now if it is not). */
SB_INLINE int sb_ghdr(struct sb_unwind_state *st, sb_u64 gp) {
  if (gp == 0) return 0;
  if (st->w->hdr_g == gp) return 1;
  return sb_ghdr_read(st->w, st->pi, gp) == 0;
}

/* g.m of gp: from its header, else one read. */
SB_INLINE int sb_read_g_m(struct sb_unwind_state *st, sb_u64 gp, sb_u64 *m) {
  if (sb_ghdr(st, gp)) {
    *m = st->w->hdr_m;
    return 0;
  }
  return sb_read_u64(st, gp + st->pi->off.g_m, m);
}

/* m.g0 of the sampled thread's m, read the first time it is needed: a sample on a user
 * goroutine (g = m.curg) never needs it unless it crosses into g0 (cgocallback, the gogo
 * window). Every walk on g0 has it: on_g0 is only ever set after this. 0 when unreadable. */
SB_INLINE sb_u64 sb_g0(struct sb_unwind_state *st) {
  if (!st->w->g0_loaded) {
    sb_u64 g0 = 0;
    if (st->w->m == 0 || sb_read_u64(st, st->w->m + st->pi->off.m_g0, &g0)) g0 = 0;
    st->w->g0 = g0;
    st->w->g0_loaded = 1;
  }
  return st->w->g0;
}

/* Labels the sample with goroutine gp: its goid, and gp itself in st->w->label_g. */
SB_INLINE void sb_name_goroutine(struct sb_unwind_state *st, sb_u64 gp) {
  sb_u64 goid = 0;
  if (gp == 0) return;
  if (sb_ghdr(st, gp)) goid = st->w->hdr_goid;
  else if (sb_read_u64(st, gp + st->pi->off.g_goid, &goid)) return;
  if (goid == 0) return;
  st->out->goid = goid;
  st->out->flags |= SB_SAMPLE_HAS_GOID;
  st->w->label_g = gp;
  st->out->goid_g = gp;  /* whose labels the sample carries (goroutine_labels.h) */
}

#endif /* SWITCHBACK_UNWIND_GOROUTINE_HEADER_H */
