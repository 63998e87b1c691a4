#include <gtest/gtest.h>

#include "profile/writers.h"
#include "test_profile.h"

namespace sb::profile {
namespace {

TEST(FoldedWriter, RootFirstInlineExpandedSorted) {
  EXPECT_EQ(WriteFolded(testing::MakeTestProfile()),
            "[stopped: bad_fp];main.work 2\n"
            "main.main;main.other 3\n"
            "main.main;main.work;main.leaf;main.inlinedLeaf 5\n");
}

TEST(FoldedWriter, StacksDifferingOnlyInLabelsMerge) {
  ProfileData p = testing::MakeTestProfile();
  Sample extra = p.samples[0];
  extra.labels["thread"] = "other";
  extra.count = 4;
  p.samples.push_back(extra);
  EXPECT_NE(WriteFolded(p).find("main.main;main.work;main.leaf;main.inlinedLeaf 9\n"),
            std::string::npos);
}

TEST(FoldedWriter, SeparatorsInNamesAreReplaced) {
  ProfileData p;
  p.locations.push_back({-1, 0, {{"a;b\nc", "", 0}}});
  p.locations.push_back({-1, 0x1234, {}});  // unsymbolized: shown by address
  p.samples.push_back({{0, 1}, 1, 0, {}, {}});
  p.samples.push_back({{}, 2, 0, {}, {}});   // no stack still counts
  p.samples.push_back({{0}, 0, 0, {}, {}});  // zero-count samples are left out
  EXPECT_EQ(WriteFolded(p), "0x1234;a_b_c 1\n[no stack] 2\n");
}

TEST(FoldedWriter, EmptyProfileIsEmpty) { EXPECT_EQ(WriteFolded(ProfileData{}), ""); }

}  // namespace
}  // namespace sb::profile
