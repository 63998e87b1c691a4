#include "agent/process_selection.h"

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <system_error>

#include "base/file_util.h"

namespace sb::agent {

namespace fs = std::filesystem;

std::set<uint32_t> PidsInCgroupTree(const std::string& dir) {
  std::set<uint32_t> pids;
  auto add = [&](const fs::path& d) {
    auto text = ReadFile((d / "cgroup.procs").string());
    if (!text.ok()) return;
    std::istringstream in(*text);
    unsigned long v;
    while (in >> v)
      if (v > 0 && v <= 0xffffffffUL) pids.insert(static_cast<uint32_t>(v));
  };
  add(dir);
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2) && !it->is_symlink(ec2)) add(it->path());
  }
  return pids;
}

Result<ProcessSelector> ProcessSelector::Make(const SelectionOptions& opts) {
  ProcessSelector s;
  s.opts_ = opts;
  if (!opts.pids.empty() && (!opts.exe_regex.empty() || !opts.cgroup.empty()))
    return MakeError("--pid excludes --exe and --cgroup");
  if (!opts.exe_regex.empty()) {
    try {
      s.exe_re_ = std::regex(opts.exe_regex, std::regex::extended | std::regex::nosubs);
    } catch (const std::regex_error& e) {
      return MakeError("bad --exe regular expression '" + opts.exe_regex + "': " + e.what());
    }
  }
  if (!opts.cgroup.empty()) {
    std::error_code ec;
    if (!fs::exists(fs::path(opts.cgroup) / "cgroup.procs", ec))
      return MakeError("--cgroup " + opts.cgroup + " is not a cgroup directory (no cgroup.procs)");
  }
  return s;
}

bool ProcessSelector::ExeMatches(const std::string& exe) const {
  return opts_.exe_regex.empty() || std::regex_search(exe, exe_re_);
}

bool ProcessSelector::InCgroup(uint32_t pid) {
  // Reading the tree for every new process would cost a walk per process during the start
  // scan; the membership of the last half second is enough.
  auto now = std::chrono::steady_clock::now();
  if (now - cgroup_read_ > std::chrono::milliseconds(500)) {
    cgroup_pids_ = PidsInCgroupTree(opts_.cgroup);
    cgroup_read_ = now;
  }
  return cgroup_pids_.count(pid) > 0;
}

bool ProcessSelector::Wants(uint32_t pid) {
  if (!opts_.pids.empty()) {
    for (uint32_t p : opts_.pids)
      if (p == pid) return true;
    return false;
  }
  if (!opts_.exe_regex.empty()) {
    std::error_code ec;
    std::string exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
    if (ec || !ExeMatches(exe)) return false;
  }
  if (!opts_.cgroup.empty() && !InCgroup(pid)) return false;
  return true;
}

std::string ProcessSelector::Describe() const {
  if (!opts_.pids.empty()) return std::to_string(opts_.pids.size()) + " process(es) given by --pid";
  std::string s = "all Go processes";
  if (!opts_.exe_regex.empty()) s += " whose executable matches '" + opts_.exe_regex + "'";
  if (!opts_.cgroup.empty()) s += std::string(opts_.exe_regex.empty() ? "" : " and") + " in cgroup " + opts_.cgroup;
  return s;
}

}  // namespace sb::agent
