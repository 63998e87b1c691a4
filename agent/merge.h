// `switchback merge`: the windows of DIR that match a process and a time range, merged into
// one profile (equal stacks with equal labels become one sample, values summed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/window_index.h"
#include "base/result.h"
#include "profile/profile_data.h"

namespace sb::agent {

struct MergeQuery {
  std::string exe_regex;  // "" any
  uint32_t pid = 0;       // 0 any
  int64_t from_unix_ns = 0;  // windows overlapping [from, to); 0: unbounded
  int64_t to_unix_ns = 0;
};

// The index entries of DIR matching Q, oldest first.
Result<std::vector<IndexEntry>> SelectWindows(const std::string& dir, const MergeQuery& q);
// Adds every profile to one (mappings and locations deduplicated, samples with the same
// locations and labels summed); the start is the earliest, the duration reaches the latest end.
profile::ProfileData MergeProfiles(const std::vector<profile::ProfileData>& profiles);

struct MergeResult {
  profile::ProfileData profile;
  size_t windows = 0;
  std::vector<std::string> skipped;  // one line per unreadable window file
};
Result<MergeResult> MergeWindows(const std::string& dir, const MergeQuery& q);

// "2026-12-01T21:00:00Z" (UTC) or unix seconds -> unix nanoseconds.
Result<int64_t> ParseTime(const std::string& text);

}  // namespace sb::agent
