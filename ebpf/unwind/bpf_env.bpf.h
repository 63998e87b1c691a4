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
