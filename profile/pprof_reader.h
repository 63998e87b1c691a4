// Reads pprof files back into ProfileData: for tests that check what the writer produced,
// and for tools that post-process or merge recorded profiles.
#pragma once

#include <string_view>

#include "base/result.h"
#include "profile/profile_data.h"

namespace sb::profile {

// BYTES is a pprof profile, gzip-compressed or not. Sample values are mapped back by type:
// "samples" -> count and "cpu"/"nanoseconds" -> nanos (value 0 is the count when no type
// matches). String labels become labels, numeric ones num_labels. Any malformed input
// (bad gzip, bad protobuf, dangling ids or string indices) gives a one-line error.
Result<ProfileData> ReadPprofGz(std::string_view bytes);

}  // namespace sb::profile
