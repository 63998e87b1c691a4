#include "profile/frames.h"

#include <cinttypes>
#include <cstdio>

namespace sb::profile {

std::string FrameName(const Location& loc, const Line* line) {
  if (line != nullptr && !line->function.empty()) return line->function;
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, loc.address);
  return buf;
}

std::vector<std::string> RootFirstFrames(const ProfileData& p, const Sample& s) {
  std::vector<std::string> out;
  if (s.locations.empty()) {
    out.emplace_back(kNoStackFrame);
    return out;
  }
  // Sample locations are leaf first and each location's lines innermost first, so walking
  // both backwards yields root first with callers ahead of the functions inlined into them.
  for (auto it = s.locations.rbegin(); it != s.locations.rend(); ++it) {
    if (*it >= p.locations.size()) {
      out.push_back("[bad location " + std::to_string(*it) + "]");
      continue;
    }
    const Location& loc = p.locations[*it];
    if (loc.lines.empty()) {
      out.push_back(FrameName(loc, nullptr));
      continue;
    }
    for (auto l = loc.lines.rbegin(); l != loc.lines.rend(); ++l) out.push_back(FrameName(loc, &*l));
  }
  return out;
}

}  // namespace sb::profile
