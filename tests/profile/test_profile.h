// The profile every tests/profile test uses, so expectations can be cross-checked between
// formats. Period 10ms, 10 samples in total:
//   5  main.main -> main.work -> main.leaf -> main.inlinedLeaf (inlined into main.leaf)
//   3  main.main -> main.other
//   2  [stopped: bad_fp] -> main.work  (unwinding gave up; the marker stands in for the root)
#pragma once

#include "profile/profile_data.h"

namespace sb::profile::testing {

inline constexpr int64_t kPeriod = 10'000'000;

inline ProfileData MakeTestProfile() {
  ProfileBuilder b;
  int app = b.AddMapping({0x400000, 0x500000, 0, "/usr/bin/app", "abc123"});
  uint32_t leaf = b.AddLocation(
      {app, 0x401000, {{"main.inlinedLeaf", "/src/app/leaf.go", 12}, {"main.leaf", "/src/app/leaf.go", 30}}});
  uint32_t work = b.AddLocation({app, 0x402000, {{"main.work", "/src/app/main.go", 50}}});
  uint32_t main = b.AddLocation({app, 0x403000, {{"main.main", "/src/app/main.go", 10}}});
  uint32_t stop = b.AddLocation({-1, 0, {{"[stopped: bad_fp]", "", 0}}});
  uint32_t other = b.AddLocation({app, 0x404000, {{"main.other", "/src/app/main.go", 70}}});

  Sample s0{{leaf, work, main}, 5, 5 * kPeriod, {{"thread", "worker"}}, {{"pid", 42}, {"tid", 43}}};
  Sample s1{{other, main}, 3, 3 * kPeriod, {{"thread", "main"}}, {{"pid", 42}, {"tid", 42}}};
  Sample s2{{work, stop}, 2, 2 * kPeriod, {{"stop", "bad_fp"}}, {{"pid", 42}, {"tid", 44}}};
  b.AddSample(s0);
  b.AddSample(s1);
  b.AddSample(s2);

  ProfileData p = b.Take();
  p.period_nanos = kPeriod;
  p.start_time_nanos = 1'700'000'000'000'000'000;
  p.duration_nanos = 2'000'000'000;
  p.comments = {"switchback test profile"};
  return p;
}

}  // namespace sb::profile::testing
