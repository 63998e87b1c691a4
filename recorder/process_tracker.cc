#include "recorder/process_tracker.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <system_error>
#include <vector>

#include "base/file_util.h"
#include "unwinder/bpf_sampler.h"

namespace sb::recorder {
namespace {

std::string ReadComm(uint32_t pid) {
  auto c = ReadFile("/proc/" + std::to_string(pid) + "/comm");
  if (!c.ok()) return "";
  std::string s = *c;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses:
// it ends at the last ')'), from field 3 (state) on; empty if gone.
std::vector<std::string> StatFields(uint32_t pid) {
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return {};
  size_t rp = stat->rfind(')');
  if (rp == std::string::npos || rp + 2 >= stat->size()) return {};
  std::istringstream in(stat->substr(rp + 2));
  std::vector<std::string> fields;
  for (std::string f; fields.size() < 20 && (in >> f);) fields.push_back(f);
  return fields;
}

// PID runs (not a zombie: no memory left to sample) and, when START_TIME is known, is the
// process that started then: a pid reused since is another process.
bool Alive(uint32_t pid, uint64_t start_time = 0) {
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  std::vector<std::string> f = StatFields(pid);
  if (f.empty() || f[0] == "Z") return false;
  return start_time == 0 || (f.size() >= 20 && strtoull(f[19].c_str(), nullptr, 10) == start_time);
}

}  // namespace

uint64_t ProcessStartTime(uint32_t pid) {
  std::vector<std::string> f = StatFields(pid);  // starttime is field 22
  return f.size() >= 20 ? strtoull(f[19].c_str(), nullptr, 10) : 0;
}

Result<std::shared_ptr<sym::Binary>> ProcessTracker::LoadFile(const TrackedProcess& p,
                                                             const unwinder::MemoryMapping& m) {
  if (!p.exited) {
    std::string proc = "/proc/" + std::to_string(p.pid);
    std::string via_root = proc + "/root" + m.path;
    struct stat st {};
    if (stat(via_root.c_str(), &st) == 0 && (m.inode == 0 || st.st_ino == m.inode)) {
      auto b = cache_->Get(via_root);
      if (b.ok()) return b;
    }
    // The mapped file itself (needs CAP_SYS_ADMIN, which the sampler needs anyway).
    char range[64];
    snprintf(range, sizeof range, "/map_files/%llx-%llx", static_cast<unsigned long long>(m.start),
             static_cast<unsigned long long>(m.end));
    auto b = cache_->Get(proc + range);
    if (b.ok()) return b;
  }
  return cache_->Get(m.path);
}

Result<std::shared_ptr<const unwinder::GoBinaryFacts>> ProcessTracker::FactsFor(
    const std::string& key, const sym::Binary& bin, const std::string& path, const std::string& dwarf_file) {
  if (auto it = facts_.find(key); it != facts_.end()) return it->second;
  auto f = unwinder::AnalyzeGoBinary(bin, path, dwarf_file);
  if (!f.ok()) return f;
  facts_[key] = *f;
  return f;
}

Result<TrackedProcess*> ProcessTracker::Track(uint32_t pid, bool require_go) {
  if (auto* p = Find(pid)) return p;
  std::string proc = "/proc/" + std::to_string(pid);
  std::string name = "process " + std::to_string(pid);
  auto gone = [&]() -> Result<TrackedProcess*> {
    return MakeError(name + " exited while switchback was attaching to it");
  };
  std::error_code ec;
  std::string exe = std::filesystem::read_symlink(proc + "/exe", ec).string();
  if (ec) {
    if (!std::filesystem::exists(proc)) return MakeError(name + " does not exist");
    if (!Alive(pid)) return MakeError(name + " has exited");
    if (ec == std::errc::permission_denied)
      return MakeError(name + ": permission denied reading " + proc +
                       "/exe (another user's process without CAP_SYS_PTRACE, or not dumpable)");
    if (ec == std::errc::no_such_file_or_directory)
      return MakeError(name + " has no executable (a kernel thread)");
    return MakeError(name + ": cannot read its executable (" + ec.message() + ")");
  }
  // The executable as the process starts being read: compared at the end to see an exec.
  struct stat at_start {};
  if (stat((proc + "/exe").c_str(), &at_start) != 0) {
    if (!Alive(pid)) return gone();
    return MakeError(name + ": cannot stat " + proc + "/exe (" + strerror(errno) + ")");
  }
  static constexpr std::string_view kDeleted = " (deleted)";
  bool deleted = exe.size() > kDeleted.size() && exe.ends_with(kDeleted);
  if (deleted) exe.resize(exe.size() - kDeleted.size());

  TrackedProcess p;
  p.pid = pid;
  p.start_time = ProcessStartTime(pid);
  p.exe = exe;
  p.comm = ReadComm(pid);
  auto maps = unwinder::ReadProcessMaps(static_cast<int>(pid));
  if (!maps.ok()) return Alive(pid) ? maps.take_error() : gone();
  p.maps = std::move(*maps);

  // /proc/PID/exe opens the very file the process runs, even if it was replaced on disk.
  auto bin = cache_->Get(proc + "/exe");
  if (!bin.ok()) {
    if (!Alive(pid)) return gone();
    return MakeError(name + " (" + exe + "): " + bin.error());
  }
  p.binary = *bin;
  // A binary rebuilt or upgraded while the process runs: the path now names another file
  // (another inode), or none. Symbols and facts come from the running one; say so, since
  // anyone symbolizing this profile later from the path would get them wrong.
  struct stat running {}, on_disk {};
  if (stat((proc + "/exe").c_str(), &running) == 0) {
    bool same = stat((proc + "/root" + exe).c_str(), &on_disk) == 0 && on_disk.st_dev == running.st_dev &&
                on_disk.st_ino == running.st_ino;
    if (!same || deleted)
      p.warnings.push_back(name + ": " + exe + " was replaced or deleted on disk after the process started; "
                           "using the running executable (" + proc + "/exe)");
  }
  if (p.binary->go() == nullptr) {
    if (require_go) {
      // Not kept: `record --all` checks every executable on the host once, and keeping them
      // all mapped made its RSS grow with the number of distinct binaries running.
      cache_->Forget(p.binary.get());
      return MakeError(name + " (" + exe + ") is not a Go program (no .gopclntab)");
    }
    procs_[pid] = std::move(p);
    return &procs_[pid];
  }
  std::string key = p.binary->build_id() + "|" + exe;
  auto facts = FactsFor(key, *p.binary, exe, proc + "/exe");
  if (!facts.ok()) return facts.take_error();
  p.facts = *facts;

  // The load bias: the executable mapping of the main binary.
  struct stat st {};
  bool have_stat = stat((proc + "/exe").c_str(), &st) == 0;
  for (const auto& m : p.maps) {
    if (!m.executable() || m.path != exe) continue;
    if (have_stat && m.inode != 0 && m.inode != st.st_ino) continue;
    if (auto b = unwinder::LoadBias(p.binary->elf(), m)) {
      p.bias = *b;
      break;
    }
  }

  if (sampler_ != nullptr) {
    sb_proc_info info = unwinder::MakeProcInfo(*p.facts, p.bias, 0);  // the sampler places the pcsp table
    for (const auto& m : p.maps)
      if (m.path == "[vdso]") {
        info.vdso_start = m.start;
        info.vdso_end = m.end;
      }
    if (auto s = sampler_->TrackProcess(pid, info, key, p.facts->pcsp.cells); !s.ok()) return MakeError(s.error());
    // An exec after this point is seen by the sampler (its exec hook drops what was just
    // handed over); one while the process was read here is seen by its executable, now
    // another file: the facts may describe the old program and the maps the new one.
    struct stat now {};
    if (stat((proc + "/exe").c_str(), &now) != 0 || now.st_dev != at_start.st_dev || now.st_ino != at_start.st_ino) {
      sampler_->UntrackProcess(pid);
      if (!Alive(pid)) return gone();
      return MakeError(name + " ran exec while switchback was attaching to it");
    }
  }
  procs_[pid] = std::move(p);
  return &procs_[pid];
}

TrackedProcess* ProcessTracker::Find(uint32_t pid) {
  auto it = procs_.find(pid);
  return it == procs_.end() ? nullptr : &it->second;
}

TrackedProcess* ProcessTracker::Adopt(TrackedProcess p) {
  uint32_t pid = p.pid;
  procs_[pid] = std::move(p);
  return &procs_[pid];
}

bool ProcessTracker::RefreshMaps(uint32_t pid) {
  auto* p = Find(pid);
  if (p == nullptr || p->exited) return false;
  auto maps = unwinder::ReadProcessMaps(static_cast<int>(pid));
  if (!maps.ok()) return false;
  p->maps = std::move(*maps);
  return true;
}

void ProcessTracker::Forget(uint32_t pid) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  // Also when it exited: the sampler then reports the pid again if it still runs (a new
  // program after exec), which it did not while the old one was kept here.
  if (sampler_ != nullptr) sampler_->UntrackProcess(pid);
  procs_.erase(it);
}

bool ProcessTracker::NoteExec(uint32_t pid) {
  auto* p = Find(pid);
  if (p == nullptr || p->exited) return false;
  p->ran_exec = true;
  return true;
}

size_t ProcessTracker::CheckAlive() {
  size_t alive = 0;
  for (auto& [pid, p] : procs_) {
    if (p.exited) continue;
    if (!p.ran_exec && Alive(pid, p.start_time)) {
      alive++;
    } else {
      p.exited = true;
      if (sampler_ != nullptr) sampler_->UntrackProcess(pid);
    }
  }
  return alive;
}

}  // namespace sb::recorder
