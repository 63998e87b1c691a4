#include "unwinder/go_offsets_table.h"

#include <gtest/gtest.h>

namespace sb::unwinder {
namespace {

// Values from DESIGN.md's table, verified on built binaries.
TEST(GoOffsetsTable, Go119) {
  auto o = GoOffsetsForVersion(1, 19);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->g_m, 48);
  EXPECT_EQ(o->g_sched, 56);
  EXPECT_EQ(o->g_goid, 152);
  EXPECT_EQ(o->g_atomicstatus, 144);
  EXPECT_EQ(o->gobuf_bp, 48);
  EXPECT_EQ(o->m_curg, 192);
  EXPECT_EQ(o->m_gsignal, 80);
  EXPECT_EQ(o->m_vdsosp, 800);
  EXPECT_EQ(o->m_vdsopc, 808);
}

TEST(GoOffsetsTable, LayoutChangesAcrossReleases) {
  EXPECT_EQ(GoOffsetsForVersion(1, 23)->g_goid, 160);
  EXPECT_EQ(GoOffsetsForVersion(1, 22)->m_vdsosp, 1120);
  auto o125 = GoOffsetsForVersion(1, 25);
  EXPECT_EQ(o125->gobuf_bp, 40);
  EXPECT_EQ(o125->m_curg, 184);
  EXPECT_EQ(o125->g_goid, 152);
  EXPECT_EQ(GoOffsetsForVersion(1, 27)->m_vdsosp, 896);
}

// Releases nobody verified get nothing, never a guess.
TEST(GoOffsetsTable, UnverifiedReleasesHaveNoOffsets) {
  EXPECT_FALSE(GoOffsetsForVersion(1, 18));
  EXPECT_FALSE(GoOffsetsForVersion(1, 28));
  EXPECT_FALSE(GoOffsetsForVersion(2, 0));
}

}  // namespace
}  // namespace sb::unwinder
