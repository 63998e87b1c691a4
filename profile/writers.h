// Output formats of a ProfileData.
#pragma once

#include <string>

#include "base/result.h"
#include "profile/profile_data.h"

namespace sb::profile {

// gzip-compressed profile.proto (pprof). Sample types: samples/count, cpu/nanoseconds.
// Labels become string labels, num_labels numeric labels. `go tool pprof` reads it.
Result<std::string> WritePprofGz(const ProfileData& p);

// One line per distinct stack: "root;...;leaf count" (inline frames expanded, root first).
std::string WriteFolded(const ProfileData& p);

// A self-contained SVG flame graph (root at the bottom), with hover titles showing the frame
// and its sample count and share; viewable in any browser.
std::string WriteFlameGraphSvg(const ProfileData& p, const std::string& title);

// Top functions by flat and cumulative samples, like `go tool pprof -top`, for the terminal.
std::string WriteTopTable(const ProfileData& p, size_t max_rows);

}  // namespace sb::profile
