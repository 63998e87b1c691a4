#include "agent/cgroup_info.h"

#include <cctype>

namespace sb::agent {
namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t b = 0;
  for (size_t i = 0; i <= s.size(); i++) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(b, i - b));
      b = i + 1;
    }
  }
  return out;
}

bool IsHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool EndsWith(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}

}  // namespace

std::string ContainerIdFromPath(std::string_view path) {
  // Shapes seen in practice (the id is 64 hex digits):
  //   docker (cgroupfs driver)      /docker/<id>
  //   docker (systemd driver)       /system.slice/docker-<id>.scope
  //   containerd / kubernetes       /kubepods/besteffort/pod<uid>/<id>
  //                                 /kubepods.slice/.../cri-containerd-<id>.scope
  //                                 /system.slice/containerd.service/kubepods-...slice:cri-containerd:<id>
  //   cri-o                         /kubepods.slice/.../crio-<id>.scope
  //   podman                        /machine.slice/libpod-<id>.scope[/container]
  // The innermost match wins (a container in a pod in a slice).
  std::string found;
  for (std::string_view comp : Split(path, '/')) {
    for (std::string_view part : Split(comp, ':')) {
      std::string_view s = part;
      if (EndsWith(s, ".scope")) s.remove_suffix(6);
      if (s.starts_with("crio-conmon-")) continue;  // cri-o's monitor, not the container
      for (std::string_view prefix : {"docker-", "cri-containerd-", "crio-", "libpod-", "containerd-"})
        if (s.starts_with(prefix)) {
          s.remove_prefix(prefix.size());
          break;
        }
      if (IsHex64(s)) found.assign(s);
    }
  }
  return found;
}

std::string UnitFromPath(std::string_view path) {
  std::string unit;
  for (std::string_view comp : Split(path, '/')) {
    if (comp.find(':') != std::string_view::npos) continue;  // containerd's "slice:prefix:id"
    for (std::string_view suf : {".service", ".scope", ".slice", ".socket", ".mount", ".swap"})
      if (EndsWith(comp, suf) && comp.size() > suf.size()) unit.assign(comp);
  }
  return unit;
}

CgroupInfo ParseProcCgroup(std::string_view text) {
  CgroupInfo info;
  std::string v2_path, systemd_path, any_id;
  for (std::string_view line : Split(text, '\n')) {
    if (line.empty()) continue;
    size_t a = line.find(':');
    if (a == std::string_view::npos) continue;
    size_t b = line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    CgroupEntry e{std::string(line.substr(0, a)), std::string(line.substr(a + 1, b - a - 1)),
                  std::string(line.substr(b + 1))};
    if (e.hierarchy_id == "0" && e.controllers.empty()) v2_path = e.path;
    if (e.controllers == "name=systemd") systemd_path = e.path;
    if (any_id.empty()) any_id = ContainerIdFromPath(e.path);
    info.entries.push_back(std::move(e));
  }
  // The unified hierarchy, then systemd's own v1 hierarchy, name the unit; the container id
  // may be in any hierarchy (cgroupfs-driver docker on v1 hosts puts it in every one).
  const std::string& unit_path = !systemd_path.empty() ? systemd_path : v2_path;
  info.unit = UnitFromPath(unit_path.empty() ? v2_path : unit_path);
  if (info.unit.empty()) info.unit = UnitFromPath(v2_path);
  info.container_id = ContainerIdFromPath(v2_path);
  if (info.container_id.empty()) info.container_id = ContainerIdFromPath(systemd_path);
  if (info.container_id.empty()) info.container_id = any_id;
  return info;
}

}  // namespace sb::agent
