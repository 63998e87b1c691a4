/* The unwind core: reading the sampled process's memory (through the stack window where there is
 * one). Part of unwind_core.h (read its head for what the includer defines); the same code for
 * the BPF programs and for the host. */
#ifndef SWITCHBACK_UNWIND_MEMORY_READS_H
#define SWITCHBACK_UNWIND_MEMORY_READS_H

#include "walk_state.h"

SB_INLINE int sb_read_u64(struct sb_unwind_state *st, sb_u64 addr, sb_u64 *v) {
  *v = 0;
  if (addr == 0) return -1;
  return sb_read(SB_ENV(st), v, sizeof(*v), addr);
}

/* A frame record (saved frame pointer, return address) in one read: one helper call per frame
 * instead of two (bpf_probe_read_user is most of a frame's cost).
 *
 * With a stack window (SB_HAS_STACK_WINDOW: the BPF sampler and the host replay; not the exit
 * probe, whose uprobe programs can be preempted mid-walk and would share a per-CPU buffer), a
 * record outside the walk's window reads the stack from it to the end of its page (at most
 * SB_STACK_WINDOW_BYTES) in one read, and the records above it on that page come from that
 * copy. A walk's records lie one above the other, and their addresses depend on each other:
 * read one by one, each is a helper call and, on a stack not touched since it was left (a
 * goroutine's, crossed from g0), a cache miss the next cannot overlap; one copy of the page
 * pays the call once and lets the CPU fetch the lines together. Exact: the same bytes, read a
 * few microseconds earlier within one sample (the thread is stopped; a goroutine stack another
 * thread is writing is as racy either way). Never past the page: a read that would fail where
 * the record's own read succeeds (the next page unmapped or not present) is never made; a
 * record that straddles the page's end, or a window read that failed, takes the plain read. */
SB_INLINE int sb_read_record(struct sb_unwind_state *st, sb_u64 addr, sb_u64 rec[2]) {
  if (addr == 0) return -1;
#ifdef SB_HAS_STACK_WINDOW
  struct sb_walk *w = st->w;
  sb_u64 off = addr - w->win_base;
  if (w->win_len < 16 || off > w->win_len - 16) {
    sb_u64 len = 4096 - (addr & 4095); /* to the end of addr's (4 KiB or larger) page */
    if (len > SB_STACK_WINDOW_BYTES) len = SB_STACK_WINDOW_BYTES;
    w->win_len = 0;
    if (len >= 16 && sb_window_fill(SB_ENV(st), addr, (sb_u32)len) == 0) {
      w->win_base = addr;
      w->win_len = len;
      off = 0;
    }
  }
  if (w->win_len >= 16 && off <= w->win_len - 16 && (off & 7) == 0 && sb_window_get(SB_ENV(st), off, rec) == 0)
    return 0;
#endif
  return sb_read(SB_ENV(st), rec, 2 * sizeof(sb_u64), addr);
}

#endif /* SWITCHBACK_UNWIND_MEMORY_READS_H */
