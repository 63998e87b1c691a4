// The labels that name a process on every sample of its window files: host, exe, pid,
// go_version, build_id, container_id, unit (empty ones are left out).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace sb::agent {

struct ProcessFacts {
  std::string host;
  std::string exe;
  uint32_t pid = 0;
  std::string go_version;
  std::string build_id;
  std::string cgroup_file;  // text of /proc/PID/cgroup
};

std::map<std::string, std::string> ProcessLabels(const ProcessFacts& f);
std::string HostName();

}  // namespace sb::agent
