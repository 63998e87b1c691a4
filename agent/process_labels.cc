#include "agent/process_labels.h"

#include <unistd.h>

#include "agent/cgroup_info.h"

namespace sb::agent {

std::map<std::string, std::string> ProcessLabels(const ProcessFacts& f) {
  std::map<std::string, std::string> l;
  auto put = [&](const char* k, const std::string& v) {
    if (!v.empty()) l[k] = v;
  };
  put("host", f.host);
  put("exe", f.exe);
  put("pid", std::to_string(f.pid));
  put("go_version", f.go_version);
  put("build_id", f.build_id);
  CgroupInfo cg = ParseProcCgroup(f.cgroup_file);
  put("container_id", cg.container_id);
  put("unit", cg.unit);
  return l;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

}  // namespace sb::agent
