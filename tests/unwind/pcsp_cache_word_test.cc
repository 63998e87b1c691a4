// The sampler's pcsp cache entry (ebpf/unwind/pcsp_cache_word.h): a hit must be exact, because
// a wrong delta is a wrong stack. The word keeps only part of the pc offset (the slot holds the
// rest), so these tests pin that two keys meeting in one slot never match each other's word.
#include "ebpf/unwind/pcsp_cache_word.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace {

TEST(PcspCacheWord, StoredWordMatchesItsOwnKeyWithItsDelta) {
  for (uint32_t table : {1u, 2u, 77u, (1u << 27) - 1}) {
    for (uint32_t off : {0u, 1u, 0x7ffu, 0x800u, 0x12345u, 0xfffffffeu, 0xffffffffu}) {
      for (int32_t delta : {0, 8, 0x58, 0xffff}) {
        uint64_t w = sb_pcsp_cache_word(table, off, delta);
        ASSERT_NE(w, 0u) << table << " " << off << " " << delta;
        int32_t got = -1;
        ASSERT_TRUE(sb_pcsp_cache_match(w, table, off, &got)) << table << " " << off;
        EXPECT_EQ(got, delta);
      }
    }
  }
}

// Every pair of keys that share a slot (the only words a lookup ever sees for its key) is told
// apart, over random keys and the edges: the offset bits the word drops are the slot's.
TEST(PcspCacheWord, KeysSharingASlotNeverMatchEachOther) {
  std::mt19937 rng(13);
  const uint32_t mask = (1u << SB_PCSP_CACHE_BITS) - 1;
  int checked = 0;
  for (int i = 0; i < 200000; i++) {
    uint32_t t1 = 1 + rng() % 40, t2 = i % 2 ? t1 : 1 + rng() % 40;
    uint32_t o1 = rng();
    // o2: the offset of table t2 that lands in o1's slot (a slot is the offset's low bits XOR
    // the table's: slot(t2, 0) is t2's part), with its upper bits random or (every fourth key)
    // o1's with one bit flipped.
    uint32_t upper = i % 4 == 0 ? (o1 ^ (1u << (rng() % 32))) : rng();
    uint32_t o2 = (upper & ~mask) | (sb_pcsp_cache_slot(t1, o1) ^ sb_pcsp_cache_slot(t2, 0));
    ASSERT_EQ(sb_pcsp_cache_slot(t1, o1), sb_pcsp_cache_slot(t2, o2));
    if (t1 == t2 && o1 == o2) continue;
    checked++;
    int32_t got = -1;
    EXPECT_FALSE(sb_pcsp_cache_match(sb_pcsp_cache_word(t1, o1, 24), t2, o2, &got))
        << "(" << t1 << ", " << o1 << ") read as (" << t2 << ", " << o2 << ")";
  }
  EXPECT_GT(checked, 190000);
}

// Same table, offsets that differ only in the slot's bits land in different slots; offsets that
// differ only above them share a slot and are told apart by the word.
TEST(PcspCacheWord, OffsetBitsAreSplitBetweenSlotAndWord) {
  const uint32_t table = 9, off = 0x2468ac;
  const uint32_t low_bit = 1u << 3, high_bit = 1u << (SB_PCSP_CACHE_BITS + 2);
  EXPECT_NE(sb_pcsp_cache_slot(table, off), sb_pcsp_cache_slot(table, off ^ low_bit));
  EXPECT_EQ(sb_pcsp_cache_slot(table, off), sb_pcsp_cache_slot(table, off ^ high_bit));
  int32_t got = -1;
  EXPECT_FALSE(sb_pcsp_cache_match(sb_pcsp_cache_word(table, off, 16), table, off ^ high_bit, &got));
  // Another table at the same offset: the hash moves it to another slot, and where it does not,
  // the word's table bits differ.
  EXPECT_FALSE(sb_pcsp_cache_match(sb_pcsp_cache_word(table, off, 16), table + 1, off, &got));
}

TEST(PcspCacheWord, WhatDoesNotFitIsNotCached) {
  EXPECT_EQ(sb_pcsp_cache_word(0, 100, 8), 0u) << "table 0: no caching";
  EXPECT_EQ(sb_pcsp_cache_word(1u << 27, 100, 8), 0u) << "table ids from 2^27";
  EXPECT_EQ(sb_pcsp_cache_word(5, 100, 0x10000), 0u) << "deltas from 64 KiB";
  EXPECT_EQ(sb_pcsp_cache_word(5, 100, -8), 0u) << "negative deltas";
  int32_t got = -1;
  EXPECT_FALSE(sb_pcsp_cache_match(0, 1, 0, &got)) << "an empty slot";
  // Word 0 is empty only because no table is 0: table 1, offset 0, delta 0 is not word 0.
  EXPECT_NE(sb_pcsp_cache_word(1, 0, 0), 0u);
  EXPECT_FALSE(sb_pcsp_cache_match(sb_pcsp_cache_word(1, 0, 0), 1u << 27, 0, &got));
}

}  // namespace
