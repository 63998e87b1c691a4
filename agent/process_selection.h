// Which processes the agent follows: every Go process (the default), or those whose
// executable path matches --exe, or those in a cgroup directory or below it (--cgroup, in the
// unified v2 hierarchy or any v1 hierarchy), or the --pid list. --exe and --cgroup combine.
#pragma once

#include <chrono>
#include <cstdint>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"

namespace sb::agent {

struct SelectionOptions {
  std::vector<uint32_t> pids;
  std::string exe_regex;  // POSIX extended, searched in the executable's path
  std::string cgroup;     // a directory under /sys/fs/cgroup
};

class ProcessSelector {
 public:
  static Result<ProcessSelector> Make(const SelectionOptions& opts);
  // Whether new processes are looked for (false with --pid: only those are followed).
  bool discovers() const { return opts_.pids.empty(); }
  // Whether PID passes --exe and --cgroup (true when neither is given).
  bool Wants(uint32_t pid);
  bool ExeMatches(const std::string& exe) const;
  const SelectionOptions& options() const { return opts_; }
  // "all Go processes", "Go processes in cgroup /sys/fs/cgroup/unified/x" ...
  std::string Describe() const;

 private:
  bool InCgroup(uint32_t pid);
  SelectionOptions opts_;
  std::regex exe_re_;
  std::set<uint32_t> cgroup_pids_;
  std::chrono::steady_clock::time_point cgroup_read_{};
};

// The pids in cgroup directory DIR and every directory below it (cgroup.procs of each).
std::set<uint32_t> PidsInCgroupTree(const std::string& dir);

}  // namespace sb::agent
