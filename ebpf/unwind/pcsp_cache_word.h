/* The sampler's pcsp cache entry (bpf_env.bpf.h): one 64-bit word per slot, so that one
 * aligned load or store moves a whole entry (single-copy atomic on x86-64 and arm64) and CPUs
 * can share the cache without a lock: two CPUs writing one slot leave one entry or the other,
 * never a mix of both. Plain C, shared by the BPF program and the unit test
 * (tests/unwind/pcsp_cache_word_test.cc), which checks that a hit is exact.
 *
 * A slot is the pc offset's low SB_PCSP_CACHE_BITS bits mixed with the table id's hash, so the
 * slot and the table give those bits back and the word keeps only the rest of the offset:
 *   bits 43-63  the pc offset's bits above the slot's (32 - SB_PCSP_CACHE_BITS of them)
 *   bits 16-42  the table id (sb_proc_info.delta_table); ids from 2^27 on are not cached
 *   bits  0-15  the pcsp delta; deltas from 64 KiB on (and negative ones) are not cached
 * Word 0 is an empty slot: table ids start at 1. */
#ifndef SWITCHBACK_PCSP_CACHE_WORD_H
#define SWITCHBACK_PCSP_CACHE_WORD_H

#include "unwind_types.h"

#define SB_PCSP_CACHE_BITS 11 /* 2048 slots, 16 KiB: see bpf_env.bpf.h for why that size */
#define SB_PCSP_TABLE_BITS 27
#define SB_PCSP_KEY_SHIFT 16  /* the word's bits above the delta: the key */
SB_STATIC_ASSERT(SB_PCSP_KEY_SHIFT + SB_PCSP_TABLE_BITS + (32 - SB_PCSP_CACHE_BITS) == 64,
                 "pcsp cache word: offset, table and delta fill 64 bits");

static inline sb_u32 sb_pcsp_cache_slot(sb_u32 table, sb_u32 off) {
  return (off ^ (table * 0x9E3779B1u)) & ((1u << SB_PCSP_CACHE_BITS) - 1);
}

static inline int sb_pcsp_cacheable_table(sb_u32 table) {
  return table != 0 && table < (1u << SB_PCSP_TABLE_BITS);
}

/* The key part of (table, off)'s word; the caller has checked sb_pcsp_cacheable_table. */
static inline sb_u64 sb_pcsp_cache_key(sb_u32 table, sb_u32 off) {
  return ((sb_u64)(off >> SB_PCSP_CACHE_BITS) << (SB_PCSP_KEY_SHIFT + SB_PCSP_TABLE_BITS)) |
         ((sb_u64)table << SB_PCSP_KEY_SHIFT);
}

/* The word to store for (table, off) -> delta; 0 (store nothing) when it cannot be cached. */
static inline sb_u64 sb_pcsp_cache_word(sb_u32 table, sb_u32 off, sb_s32 delta) {
  if (!sb_pcsp_cacheable_table(table) || delta < 0 || delta > 0xffff) return 0;
  return sb_pcsp_cache_key(table, off) | (sb_u64)delta;
}

/* Whether word, read from (table, off)'s slot, is that pc's entry; its delta in *delta. */
static inline int sb_pcsp_cache_match(sb_u64 word, sb_u32 table, sb_u32 off, sb_s32 *delta) {
  if (word == 0 || !sb_pcsp_cacheable_table(table)) return 0;
  if ((word >> SB_PCSP_KEY_SHIFT) != (sb_pcsp_cache_key(table, off) >> SB_PCSP_KEY_SHIFT)) return 0;
  *delta = (sb_s32)(word & 0xffff);
  return 1;
}

#endif
