// WriteFolded: the "collapsed stacks" text format of Brendan Gregg's flamegraph.pl, also
// read by speedscope, inferno and most flame graph tools.
#include <map>
#include <string>

#include "profile/frames.h"
#include "profile/writers.h"

namespace sb::profile {
namespace {

// ';' separates frames and '\n' separates stacks, so neither may appear inside a name.
std::string SanitizeFrame(std::string name) {
  for (char& c : name) {
    if (c == ';' || c == '\n' || c == '\r') c = '_';
  }
  return name;
}

}  // namespace

std::string WriteFolded(const ProfileData& p) {
  // A std::map both merges identical stacks (they may differ only by labels) and sorts
  // the lines, so the output is deterministic and diffable.
  std::map<std::string, int64_t> stacks;
  for (const Sample& s : p.samples) {
    if (s.count <= 0) continue;
    std::string line;
    for (const std::string& frame : RootFirstFrames(p, s)) {
      if (!line.empty()) line += ';';
      line += SanitizeFrame(frame);
    }
    stacks[line] += s.count;
  }
  std::string out;
  for (const auto& [stack, count] : stacks) {
    out += stack;
    out += ' ';
    out += std::to_string(count);
    out += '\n';
  }
  return out;
}

}  // namespace sb::profile
