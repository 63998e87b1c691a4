#include "recorder/process_tracker.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
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

// MAPS has an executable mapping of the file EXE (the program's text is mapped).
bool MapsExecutable(const std::vector<unwinder::MemoryMapping>& maps, const std::string& exe) {
  for (const auto& m : maps)
    if (m.executable() && m.path == exe) return true;
  return false;
}

bool MapsVdso(const std::vector<unwinder::MemoryMapping>& maps) {
  for (const auto& m : maps)
    if (m.path == "[vdso]") return true;
  return false;
}

}  // namespace

uint64_t ProcessStartTime(uint32_t pid) {
  std::vector<std::string> f = StatFields(pid);  // starttime is field 22
  return f.size() >= 20 ? strtoull(f[19].c_str(), nullptr, 10) : 0;
}

sb_exe_key ExeKeyOf(const struct stat& st) {
  sb_exe_key k{};
  // The kernel's own dev_t (MKDEV: major << 20 | minor), which stat encodes otherwise.
  k.dev = (static_cast<uint64_t>(major(st.st_dev)) << 20) | minor(st.st_dev);
  k.ino = st.st_ino;
  k.size = static_cast<uint64_t>(st.st_size);
  k.ctime_sec = st.st_ctim.tv_sec;
  return k;
}

namespace {

std::string KeyString(const sb_exe_key& k) {
  return std::to_string(k.dev) + ":" + std::to_string(k.ino) + ":" + std::to_string(k.size) + ":" +
         std::to_string(k.ctime_sec);
}

// /proc/PID/stat's starttime (clock ticks) from the kernel's start_boottime (ns).
uint64_t BoottimeToTicks(uint64_t ns) {
  long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? ns / (1000000000ULL / static_cast<uint64_t>(hz)) : 0;
}

}  // namespace

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
      if (templates_on_ && sampler_ != nullptr) {  // final: none of its processes is looked at again
        sampler_->MarkNotGo(ExeKeyOf(at_start));
        sampler_->ClearPending(pid);
        SayBinary(ExeKeyOf(at_start), "not go",
                  exe + " is not a Go program (no .gopclntab): its processes are not looked at again");
      }
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
  if (!facts.ok()) {
    // Not remembered: the next process of this executable is analysed again.
    if (sampler_ != nullptr) sampler_->ClearPending(pid);
    SayBinary(ExeKeyOf(at_start), "failed",
              exe + ": analysis failed (" + facts.error() + "); its next process is analysed again");
    return facts.take_error();
  }
  p.facts = *facts;
  exe_paths_[KeyString(ExeKeyOf(at_start))] = exe;
  // Before the maps: a process that is gone already (it lived a few milliseconds) still leaves
  // its executable's template, so the next one is followed from its exec.
  if (templates_on_ && sampler_ != nullptr) AddTemplate(ExeKeyOf(at_start), p, key);

  // Read in the middle of its execve (a process reported at exec, or sampled just before it),
  // /proc/PID/exe is the new file already while the new image's segments are not mapped yet:
  // its maps are read again until they show the executable (microseconds, rarely more).
  auto maps = unwinder::ReadProcessMaps(static_cast<int>(pid));
  bool want_vdso = sampler_ != nullptr && sampler_->vdso_size() != 0;  // the kernel maps one last
  for (int i = 0; i < 50 && maps.ok() && !(MapsExecutable(*maps, exe) && (!want_vdso || MapsVdso(*maps))); i++) {
    usleep(1000);
    maps = unwinder::ReadProcessMaps(static_cast<int>(pid));
  }
  if (!maps.ok()) return Alive(pid) ? maps.take_error() : gone();
  if (!MapsExecutable(*maps, exe)) return Alive(pid) ? MakeError(name + " (" + exe + ") has no executable mapping of its program") : gone();
  p.maps = std::move(*maps);

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
    sb_exe_key exe_key = ExeKeyOf(at_start);
    auto tracked = sampler_->TrackProcess(pid, info, key, p.facts->pcsp.cells, &exe_key);
    // The templates hold tables too: when the array is full, the least recently used give way.
    while (!tracked.ok() && !templates_.empty()) {
      DropOldestTemplate();
      tracked = sampler_->TrackProcess(pid, info, key, p.facts->pcsp.cells, &exe_key);
    }
    if (!tracked.ok()) return MakeError(tracked.error());
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

void ProcessTracker::AddTemplate(const sb_exe_key& key, const TrackedProcess& p, const std::string& binary_key) {
  for (auto& [id, t] : templates_)
    if (std::memcmp(&t.key, &key, sizeof key) == 0) {
      t.last_used = ++use_clock_;
      return;
    }
  auto exec_vaddr = unwinder::LowestExecutableVaddr(p.binary->elf());
  if (!exec_vaddr) return;
  while (templates_.size() >= SB_MAX_TEMPLATES) DropOldestTemplate();
  sb_proc_info at0 = unwinder::MakeProcInfo(*p.facts, 0, 0);
  auto id = sampler_->AddTemplate(key, at0, *exec_vaddr, binary_key, p.facts->pcsp.cells);
  while (!id.ok() && !templates_.empty()) {  // the pcsp array is full: older templates give way
    DropOldestTemplate();
    id = sampler_->AddTemplate(key, at0, *exec_vaddr, binary_key, p.facts->pcsp.cells);
  }
  if (!id.ok()) {  // its processes are followed from their first sample, as without one
    SayBinary(key, "no template",
              p.exe + ": analysed, but its facts could not be kept for later processes (" + id.error() + ")");
    return;
  }
  SayBinary(key, "template",
            p.exe + ": analysed (" + p.facts->go_version + "); its later processes are followed from their exec");
  ExeTemplate t;
  t.key = key;
  t.exe = p.exe;
  t.binary_key = binary_key;
  t.binary = p.binary;
  t.build_id = p.binary->build_id();
  t.facts = p.facts;
  t.last_used = ++use_clock_;
  templates_[*id] = std::move(t);
}

void ProcessTracker::SayBinary(const sb_exe_key& key, const std::string& outcome, const std::string& line) {
  std::string& said = binary_said_[KeyString(key)];
  if (said == outcome) return;
  said = outcome;
  // Bounded like the sampler's maps: an agent that runs for weeks sees many executables.
  if (binary_said_.size() > 4 * SB_MAX_NOT_GO) binary_said_.clear();
  if (on_binary_) on_binary_(line);
}

void ProcessTracker::DropOldestTemplate() {
  auto oldest = templates_.begin();
  for (auto it = templates_.begin(); it != templates_.end(); ++it)
    if (it->second.last_used < oldest->second.last_used) oldest = it;
  if (oldest == templates_.end()) return;
  sampler_->RemoveTemplate(oldest->first);
  templates_.erase(oldest);
}

Status ProcessTracker::AnalyzeExecutable(const std::string& path, const sb_exe_key& key) {
  if (!templates_on_ || sampler_ == nullptr) return Status::Ok();
  for (const auto& [id, t] : templates_)
    if (std::memcmp(&t.key, &key, sizeof key) == 0) return Status::Ok();
  struct stat st {};
  if (path.empty() || path[0] != '/' || stat(path.c_str(), &st) != 0)
    return MakeError(path + ": cannot be found again (a relative name, or gone)");
  sb_exe_key now = ExeKeyOf(st);
  if (std::memcmp(&now, &key, sizeof key) != 0) return MakeError(path + " is not the file that ran (replaced since)");
  auto bin = cache_->Get(path);
  if (!bin.ok()) return MakeError(path + ": " + bin.error());
  if ((*bin)->go() == nullptr) {
    sampler_->MarkNotGo(key);
    cache_->Forget(bin->get());
    SayBinary(key, "not go", path + " is not a Go program (no .gopclntab): its processes are not looked at again");
    return Status::Ok();
  }
  std::string binary_key = (*bin)->build_id() + "|" + path;
  auto facts = FactsFor(binary_key, **bin, path, path);
  if (!facts.ok()) {
    SayBinary(key, "failed", path + ": analysis failed (" + facts.error() + "); its next process is analysed again");
    return MakeError(path + ": " + facts.error());
  }
  exe_paths_[KeyString(key)] = path;
  TrackedProcess p;
  p.exe = path;
  p.binary = *bin;
  p.facts = *facts;
  AddTemplate(key, p, binary_key);
  return Status::Ok();
}

std::string ProcessTracker::ExePathOf(const sb_exe_key& key) const {
  auto it = exe_paths_.find(KeyString(key));
  return it == exe_paths_.end() ? "" : it->second;
}

Result<TrackedProcess*> ProcessTracker::AdoptFromTemplate(const sb_new_process& ev) {
  uint32_t pid = ev.pid;
  std::string name = "process " + std::to_string(pid);
  auto t = templates_.find(ev.template_id);
  if (t == templates_.end() || sampler_ == nullptr) {
    if (sampler_ != nullptr) sampler_->UntrackProcess(pid);
    return MakeError(name + ": the template it was made from is gone; it is followed from its next sample");
  }
  ExeTemplate& tm = t->second;
  tm.last_used = ++use_clock_;
  const std::string tm_key_copy = tm.binary_key;  // tm goes if the template is dropped below
  std::string proc = "/proc/" + std::to_string(pid);
  TrackedProcess p;
  p.pid = pid;
  p.from_template = true;
  p.start_time = BoottimeToTicks(ev.start_boottime);
  p.exe = tm.exe;
  p.facts = tm.facts;
  p.bias = ev.bias;
  bool alive = Alive(pid, p.start_time);
  if (alive) p.comm = ReadComm(pid);
  if (p.comm.empty()) p.comm = tm.exe.substr(tm.exe.rfind('/') + 1).substr(0, 15);
  p.binary = tm.binary.lock();
  if (!p.binary) {  // the cache let it go: the running file, else the path if it is the same build
    auto b = alive ? cache_->Get(proc + "/exe") : cache_->Get(tm.exe);
    if (b.ok() && (*b)->build_id() == tm.build_id) p.binary = *b;
  }
  if (!p.binary) {
    sampler_->UntrackProcess(pid);
    return MakeError(name + " (" + tm.exe + "): its executable can no longer be read");
  }
  if (auto s = sampler_->AdoptFromTemplate(pid, ev.template_id); !s.ok()) return MakeError(name + ": " + s.error());
  auto maps = alive ? unwinder::ReadProcessMaps(static_cast<int>(pid)) : Result<std::vector<unwinder::MemoryMapping>>(
                                                                              MakeError("gone"));
  if (maps.ok() && Alive(pid, p.start_time)) {
    p.maps = std::move(*maps);
    // The bias the exec proved must be the one the maps show; if not, the facts are made again
    // from the maps (and the template is not to be trusted for this executable).
    for (const auto& m : p.maps) {
      if (!m.executable() || m.path != p.exe) continue;
      auto b = unwinder::LoadBias(p.binary->elf(), m);
      if (b && *b != p.bias) {
        p.warnings.push_back(name + ": its load bias is " + std::to_string(*b) + ", not the " +
                             std::to_string(p.bias) + " its exec gave; its facts were made again");
        p.bias = *b;
        sb_proc_info info = unwinder::MakeProcInfo(*p.facts, p.bias, 0);
        for (const auto& v : p.maps)
          if (v.path == "[vdso]") {
            info.vdso_start = v.start;
            info.vdso_end = v.end;
          }
        sampler_->RemoveTemplate(t->first);
        templates_.erase(t);
        if (auto s = sampler_->TrackProcess(pid, info, tm_key_copy, p.facts->pcsp.cells, &ev.exe); !s.ok()) {
          sampler_->UntrackProcess(pid);
          return MakeError(name + ": " + s.error());
        }
      }
      break;
    }
  } else {
    p.maps = unwinder::MappingsOfExecutable(p.binary->elf(), p.exe, tm.key.ino, p.bias);
    if (ev.vdso_start != 0) {
      unwinder::MemoryMapping v;
      v.start = ev.vdso_start;
      v.end = ev.vdso_start + sampler_->vdso_size();
      v.perms = "r-xp";
      v.path = "[vdso]";
      p.maps.push_back(v);
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
