/* BPF environment of the unwind core: memory reads through bpf_probe_read_user, pcsp runs
 * from the sp_deltas array map, the frame loop through bpf_loop (kernel 5.17+), which the
 * verifier checks once instead of once per iteration. */
#ifndef SWITCHBACK_BPF_ENV_BPF_H
#define SWITCHBACK_BPF_ENV_BPF_H

#define SB_INLINE static __always_inline
/* Global functions are verified once, independently of their callers. */
#define SB_SUBPROG __attribute__((noinline))

/* 16 MiB of pcsp runs: room for several large Go binaries at once. */
#define SB_SP_DELTA_ENTRIES (1u << 21)

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, SB_SP_DELTA_ENTRIES);
  __type(key, __u32);
  __type(value, struct sb_sp_delta);
} sp_deltas SEC(".maps");

SB_INLINE int sb_read(void *env, void *dst, __u32 size, __u64 addr) {
  return bpf_probe_read_user(dst, size, (const void *)addr);
}

SB_INLINE int sb_delta_entry(void *env, __u32 index, struct sb_sp_delta *out) {
  struct sb_sp_delta *e = bpf_map_lookup_elem(&sp_deltas, &index);
  if (!e) return -1;
  *out = *e;
  return 0;
}

/* The sampler's pcsp cache (SB_PCSP_CACHE, defined by sampler.bpf.c): direct-mapped, keyed by
 * the binary's table id (sb_proc_info.delta_table, never reused while the sampler runs) and the
 * pc's offset, so a hit is exact. A CPU profile's samples come back to the same hot pcs over and
 * over; a hit reads one word instead of the index cell and the runs in the 16 MiB table. The
 * exit probe (uprobes: preemptible) has none.
 *
 * Where it lives is most of what a lookup costs: the line is cold (the sampled program ran
 * since the last sample), and a cold line of vmalloc'd memory (a per-CPU map's values, a large
 * array) misses the TLB too, which in a virtual machine is a two-level page walk: with the cache
 * in a per-CPU array, touching a slot just before the unwind takes 165-270 ns off a goroutine's
 * sample here, touching another line of its page 116 ns (docs/design/0006-pcsp-index-and-cache.md).
 * So it is one array shared by every CPU, 16 KiB: the kernel allocates an array map of up to
 * 32 KiB from the slab, in the direct map, whose huge pages rarely miss. Shared, each entry is
 * one word (pcsp_cache_word.h), read and written whole. */
#ifdef SB_PCSP_CACHE
#define SB_HAS_PCSP_CACHE 1
#include "pcsp_cache_word.h"

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1 << SB_PCSP_CACHE_BITS);
  __type(key, __u32);
  __type(value, __u64);
} pcsp_cache SEC(".maps");

SB_INLINE int sb_pcsp_cache_get(void *env, __u32 table, __u32 off, __s32 *delta) {
  __u32 slot = sb_pcsp_cache_slot(table, off);
  __u64 *e = bpf_map_lookup_elem(&pcsp_cache, &slot);
  if (!e) return -1;
  __u64 word = *(volatile __u64 *)e; /* one load: the entry as one writer left it */
  return sb_pcsp_cache_match(word, table, off, delta) ? 0 : -1;
}

SB_INLINE void sb_pcsp_cache_put(void *env, __u32 table, __u32 off, __s32 delta) {
  __u32 slot = sb_pcsp_cache_slot(table, off);
  __u64 *e = bpf_map_lookup_elem(&pcsp_cache, &slot);
  __u64 word = sb_pcsp_cache_word(table, off, delta);
  if (e && word != 0) *(volatile __u64 *)e = word; /* one store */
}
#endif

#define SB_LOOP(n, callback, ctx) bpf_loop((n), (callback), (ctx), 0)

/* Hides what the compiler knows of x, so that a mask applied after it stays in the code (the
 * verifier needs the mask to bound an array index; clang drops it when a compare implies it). */
#define SB_OPAQUE(x) asm volatile("" : "+r"(x))

/* A BPF program samples processes of the kernel's architecture only (see unwind_core.h). */
#if defined(__TARGET_ARCH_arm64)
#define SB_ARM64(st) 1
#elif defined(__TARGET_ARCH_x86)
#define SB_ARM64(st) 0
#else
#error "the sampler is built for x86 or arm64 (-D__TARGET_ARCH_...)"
#endif

#ifdef SB_STACK_WINDOW
#define SB_HAS_STACK_WINDOW 1

/* Words, not bytes: a record is two aligned 8-byte loads (a byte array would be copied byte by
 * byte, the compiler not knowing the offset's alignment). */
struct sb_stack_window_buf {
  __u64 words[SB_STACK_WINDOW_BYTES / 8];
};

/* The sampler's stack window (memory_reads.h sb_read_record): per CPU, like the pcsp cache, and
 * valid for one walk only (the walk's win_len says how much of it is). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_stack_window_buf);
} stack_window SEC(".maps");

SB_INLINE int sb_window_fill(void *env, __u64 addr, __u32 len) {
  __u32 zero = 0;
  struct sb_stack_window_buf *b = bpf_map_lookup_elem(&stack_window, &zero);
  if (!b || len == 0 || len > SB_STACK_WINDOW_BYTES) return -1;
  return bpf_probe_read_user(b->words, len, (const void *)addr);
}

/* The record at byte offset off of the window (8-aligned, at most SB_STACK_WINDOW_BYTES - 16). */
SB_INLINE int sb_window_get(void *env, __u64 off, __u64 rec[2]) {
  __u32 zero = 0;
  struct sb_stack_window_buf *b = bpf_map_lookup_elem(&stack_window, &zero);
  if (!b) return -1;
  __u64 i = off >> 3;
  SB_OPAQUE(i); /* the bound below must stay on the index register */
  if (i > SB_STACK_WINDOW_BYTES / 8 - 2) return -1;
  rec[0] = b->words[i];
  rec[1] = b->words[i + 1];
  return 0;
}
#endif

#endif
