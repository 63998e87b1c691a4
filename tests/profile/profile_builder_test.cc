#include <gtest/gtest.h>

#include "profile/profile_data.h"

namespace sb::profile {
namespace {

TEST(ProfileBuilder, MappingsDedupByRangeOffsetAndFile) {
  ProfileBuilder b;
  EXPECT_EQ(b.AddMapping({0x1000, 0x2000, 0, "/bin/a", ""}), 0);
  EXPECT_EQ(b.AddMapping({0x1000, 0x2000, 0, "/bin/a", "id"}), 0);  // same key
  EXPECT_EQ(b.AddMapping({0x1000, 0x2000, 0x100, "/bin/a", ""}), 1);
  EXPECT_EQ(b.AddMapping({0x1000, 0x2000, 0, "/bin/b", ""}), 2);
  ASSERT_EQ(b.data().mappings.size(), 3u);
  // A later sighting fills in a build id the first one lacked.
  EXPECT_EQ(b.data().mappings[0].build_id, "id");
}

TEST(ProfileBuilder, LocationsDedupByMappingAddressAndLines) {
  ProfileBuilder b;
  Location a{0, 0x10, {{"f", "f.go", 1}}};
  EXPECT_EQ(b.AddLocation(a), 0u);
  EXPECT_EQ(b.AddLocation(a), 0u);
  EXPECT_EQ(b.AddLocation({1, 0x10, {{"f", "f.go", 1}}}), 1u);  // other mapping
  EXPECT_EQ(b.AddLocation({0, 0x11, {{"f", "f.go", 1}}}), 2u);  // other address
  EXPECT_EQ(b.AddLocation({0, 0x10, {{"f", "f.go", 2}}}), 3u);  // other line
  EXPECT_EQ(b.AddLocation({0, 0x10, {{"g", "f.go", 1}, {"f", "f.go", 1}}}), 4u);  // inlined
  // Names are length-prefixed in the key, so shifting text between fields cannot collide.
  EXPECT_EQ(b.AddLocation({0, 0x10, {{"f", "", 1}}}), 5u);
  EXPECT_EQ(b.AddLocation({0, 0x10, {{"", "f", 1}}}), 6u);
  EXPECT_EQ(b.data().locations.size(), 7u);
}

TEST(ProfileBuilder, SamplesWithSameStackAndLabelsMerge) {
  ProfileBuilder b;
  b.AddSample({{0, 1}, 1, 10, {{"thread", "a"}}, {{"pid", 1}}});
  b.AddSample({{0, 1}, 2, 20, {{"thread", "a"}}, {{"pid", 1}}});
  ASSERT_EQ(b.data().samples.size(), 1u);
  EXPECT_EQ(b.data().samples[0].count, 3);
  EXPECT_EQ(b.data().samples[0].nanos, 30);
}

TEST(ProfileBuilder, SamplesDifferingInStackOrLabelsStaySeparate) {
  ProfileBuilder b;
  b.AddSample({{0, 1}, 1, 10, {{"thread", "a"}}, {{"pid", 1}}});
  b.AddSample({{1, 0}, 1, 10, {{"thread", "a"}}, {{"pid", 1}}});  // order matters
  b.AddSample({{0}, 1, 10, {{"thread", "a"}}, {{"pid", 1}}});
  b.AddSample({{0, 1}, 1, 10, {{"thread", "b"}}, {{"pid", 1}}});
  b.AddSample({{0, 1}, 1, 10, {{"thread", "a"}}, {{"pid", 2}}});
  b.AddSample({{0, 1}, 1, 10, {{"thread", "a"}}, {}});
  // A string label and a numeric label with the same key are different labels.
  b.AddSample({{0, 1}, 1, 10, {{"pid", "1"}}, {}});
  b.AddSample({{0, 1}, 1, 10, {}, {{"pid", 1}}});
  EXPECT_EQ(b.data().samples.size(), 8u);
}

TEST(ProfileBuilder, TakeMovesTheData) {
  ProfileBuilder b;
  b.AddMapping({1, 2, 0, "/x", ""});
  b.AddSample({{}, 4, 40, {}, {}});
  ProfileData p = b.Take();
  EXPECT_EQ(p.mappings.size(), 1u);
  ASSERT_EQ(p.samples.size(), 1u);
  EXPECT_EQ(p.samples[0].count, 4);
  // The builder starts over: nothing merges into the taken data.
  b.AddSample({{}, 1, 10, {}, {}});
  ASSERT_EQ(b.data().samples.size(), 1u);
  EXPECT_EQ(b.data().samples[0].count, 1);
  EXPECT_EQ(b.AddMapping({1, 2, 0, "/x", ""}), 0);
}

}  // namespace
}  // namespace sb::profile
