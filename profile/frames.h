// Frame names of a sample as the text formats show them. Shared by the folded, SVG and top
// writers so the three always name and order frames identically.
#pragma once

#include <string>
#include <vector>

#include "profile/profile_data.h"

namespace sb::profile {

// Shown for a sample that has no locations at all, so its samples still count somewhere.
inline constexpr char kNoStackFrame[] = "[no stack]";

// The display name of one frame: the function, or the hex address for an unsymbolized
// location (lines empty or function unnamed).
std::string FrameName(const Location& loc, const Line* line);

// The stack of S, root first, with inlined frames expanded (caller before inlinee).
// Location indices out of range are shown as "[bad location N]" rather than crashing.
std::vector<std::string> RootFirstFrames(const ProfileData& p, const Sample& s);

}  // namespace sb::profile
