#include <gtest/gtest.h>

#include "profile/writers.h"
#include "test_profile.h"

namespace sb::profile {
namespace {

TEST(TopTable, FlatAndCumLikePprof) {
  // flat: samples where the function is the leaf; cum: samples with it anywhere. The inlined
  // function and its host are separate rows. Ties on flat are broken by name, as in
  // `go tool pprof -top` (whose output for this profile has the same rows in the same order).
  EXPECT_EQ(WriteTopTable(testing::MakeTestProfile(), 0),
            "Total: 10 samples, 0.100s cpu\n"
            "Showing top 6 of 6 functions\n"
            "      flat  flat%   sum%        cum   cum%\n"
            "         5 50.00% 50.00%          5 50.00%  main.inlinedLeaf\n"
            "         3 30.00% 80.00%          3 30.00%  main.other\n"
            "         2 20.00%   100%          7 70.00%  main.work\n"
            "         0     0%   100%          2 20.00%  [stopped: bad_fp]\n"
            "         0     0%   100%          5 50.00%  main.leaf\n"
            "         0     0%   100%          8 80.00%  main.main\n");
}

TEST(TopTable, MaxRowsLimitsOutput) {
  std::string t = WriteTopTable(testing::MakeTestProfile(), 2);
  EXPECT_NE(t.find("Showing top 2 of 6 functions\n"), std::string::npos);
  EXPECT_NE(t.find("main.other\n"), std::string::npos);
  EXPECT_EQ(t.find("main.work"), std::string::npos);
}

TEST(TopTable, RecursionCountsOncePerSample) {
  ProfileData p;
  p.locations.push_back({-1, 1, {{"f", "", 0}}});
  p.locations.push_back({-1, 2, {{"g", "", 0}}});
  p.samples.push_back({{0, 1, 0, 1}, 4, 0, {}, {}});  // f <- g <- f <- g
  std::string t = WriteTopTable(p, 0);
  EXPECT_NE(t.find("         4   100%   100%          4   100%  f\n"), std::string::npos) << t;
  EXPECT_NE(t.find("         0     0%   100%          4   100%  g\n"), std::string::npos) << t;
}

TEST(TopTable, EmptyProfile) {
  EXPECT_EQ(WriteTopTable(ProfileData{}, 10),
            "Total: 0 samples, 0.000s cpu\n"
            "Showing top 0 of 0 functions\n"
            "      flat  flat%   sum%        cum   cum%\n");
}

}  // namespace
}  // namespace sb::profile
