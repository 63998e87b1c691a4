// What /proc/PID/cgroup says about a process: the container it runs in (docker, containerd,
// cri-o, podman) and its systemd unit. Outside input: every line shape is accepted, nothing
// recognised gives empty fields.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sb::agent {

struct CgroupEntry {
  std::string hierarchy_id;  // "0" for the unified (v2) hierarchy
  std::string controllers;   // "" for v2, "cpu,cpuacct", "name=systemd" ...
  std::string path;          // "/system.slice/docker-<id>.scope"
};

struct CgroupInfo {
  std::vector<CgroupEntry> entries;
  std::string container_id;  // 64 hex digits, "" when not in a container
  std::string unit;          // "nginx.service", "docker-<id>.scope", "user-1000.slice" ...
};

CgroupInfo ParseProcCgroup(std::string_view text);
// The container id in one cgroup path, or "".
std::string ContainerIdFromPath(std::string_view path);
// The innermost systemd unit or slice named in a cgroup path, or "".
std::string UnitFromPath(std::string_view path);

}  // namespace sb::agent
