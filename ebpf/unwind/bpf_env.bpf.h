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

/* The sampler's per-CPU pcsp cache (SB_PCSP_CACHE, defined by sampler.bpf.c): direct-mapped,
 * keyed by the binary's table id (sb_proc_info.delta_table, never reused while the sampler runs)
 * and the pc's offset, so a hit is exact. A CPU profile's samples come back to the same hot pcs
 * over and over; each hit reads one line of this 32 KiB per-CPU array instead of the index cell
 * and the runs in the 16 MiB table (two cold lines and TLB misses on every sample). Per CPU
 * and written only by the sampler, which the kernel never runs twice at once on one CPU, so an
 * entry is never half-written when read. The exit probe (uprobes: preemptible) has none. */
#ifdef SB_PCSP_CACHE
#define SB_HAS_PCSP_CACHE 1
#define SB_PCSP_CACHE_BITS 11

struct sb_pcsp_cache_entry {
  __u32 table;
  __u32 pc_off;
  __s32 delta;
  __u32 pad;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1 << SB_PCSP_CACHE_BITS);
  __type(key, __u32);
  __type(value, struct sb_pcsp_cache_entry);
} pcsp_cache SEC(".maps");

SB_INLINE __u32 sb_pcsp_cache_slot(__u32 table, __u32 off) {
  return ((off ^ (table * 0x9E3779B1u)) * 0x9E3779B1u) >> (32 - SB_PCSP_CACHE_BITS);
}

SB_INLINE int sb_pcsp_cache_get(void *env, __u32 table, __u32 off, __s32 *delta) {
  __u32 slot = sb_pcsp_cache_slot(table, off);
  struct sb_pcsp_cache_entry *e = bpf_map_lookup_elem(&pcsp_cache, &slot);
  if (!e || e->table != table || e->pc_off != off) return -1;
  *delta = e->delta;
  return 0;
}

SB_INLINE void sb_pcsp_cache_put(void *env, __u32 table, __u32 off, __s32 delta) {
  __u32 slot = sb_pcsp_cache_slot(table, off);
  struct sb_pcsp_cache_entry *e = bpf_map_lookup_elem(&pcsp_cache, &slot);
  if (!e) return;
  e->table = table;
  e->pc_off = off;
  e->delta = delta;
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

#endif
