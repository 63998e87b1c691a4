#include "tests/coredump/core_test_util.h"

#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

extern char** environ;

namespace sb::coredump::test {
namespace fs = std::filesystem;

std::string MakeTempDir(const std::string& tag) {
  return sb::test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", tag);
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteWholeFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

// ---- Synthetic cores ----------------------------------------------------------------------

namespace {

template <typename T>
void Put(std::string* s, size_t off, const T& v) {
  if (s->size() < off + sizeof(T)) s->resize(off + sizeof(T), '\0');
  std::memcpy(s->data() + off, &v, sizeof(T));
}

void AddNote(std::string* notes, const std::string& name, uint32_t type, const std::string& desc) {
  auto pad4 = [](std::string* s) { while (s->size() % 4 != 0) s->push_back('\0'); };
  uint32_t hdr[3] = {static_cast<uint32_t>(name.size() + 1), static_cast<uint32_t>(desc.size()), type};
  notes->append(reinterpret_cast<const char*>(hdr), sizeof(hdr));
  notes->append(name);
  notes->push_back('\0');
  pad4(notes);
  notes->append(desc);
  pad4(notes);
}

}  // namespace

std::string BuildMiniCore(const MiniCore& c) {
  const bool arm = c.machine == EM_AARCH64;
  const size_t nregs = arm ? 34 : 27;
  std::string notes;
  if (c.pid != 0 || !c.fname.empty()) {
    std::string ps(136, '\0');
    Put<uint32_t>(&ps, 24, c.pid);
    std::memcpy(ps.data() + 40, c.fname.data(), std::min<size_t>(c.fname.size(), 15));  // comm: 15 + NUL
    AddNote(&notes, "CORE", NT_PRPSINFO, ps);
  }
  for (const MiniThread& t : c.threads) {
    size_t size = t.prstatus_size != 0 ? t.prstatus_size : (arm ? 392 : 336);
    std::string pr(size, '\0');
    Put<int16_t>(&pr, 12, t.signal);
    Put<uint32_t>(&pr, 32, t.lwp);
    for (size_t i = 0; i < nregs && i < t.regs.size(); i++) {
      if (112 + i * 8 + 8 <= size) Put<uint64_t>(&pr, 112 + i * 8, t.regs[i]);
    }
    pr.resize(size);
    AddNote(&notes, "CORE", NT_PRSTATUS, pr);
    AddNote(&notes, "CORE", NT_FPREGSET, std::string(arm ? 528 : 512, '\0'));
    if (t.arm_tls) {
      std::string tls(8, '\0');
      Put<uint64_t>(&tls, 0, *t.arm_tls);
      AddNote(&notes, "LINUX", NT_ARM_TLS, tls);
    }
  }
  if (!c.auxv.empty()) {
    std::string av;
    for (auto [k, v] : c.auxv) {
      Put<uint64_t>(&av, av.size(), k);
      Put<uint64_t>(&av, av.size(), v);
    }
    Put<uint64_t>(&av, av.size(), 0);
    Put<uint64_t>(&av, av.size(), 0);
    AddNote(&notes, "CORE", NT_AUXV, av);
  }
  if (!c.files.empty()) {
    std::string nf;
    Put<uint64_t>(&nf, 0, c.files.size());
    Put<uint64_t>(&nf, 8, c.page_size);
    for (const MiniFile& f : c.files) {
      Put<uint64_t>(&nf, nf.size(), f.start);
      Put<uint64_t>(&nf, nf.size(), f.end);
      Put<uint64_t>(&nf, nf.size(), f.page_offset);
    }
    for (const MiniFile& f : c.files) {
      nf += f.path;
      nf.push_back('\0');
    }
    AddNote(&notes, "CORE", NT_FILE, nf);
  }

  const size_t nph = 1 + c.loads.size();
  std::string out(sizeof(Elf64_Ehdr) + nph * sizeof(Elf64_Phdr), '\0');
  const size_t note_off = out.size();
  out += notes;
  std::vector<Elf64_Phdr> ph;
  Elf64_Phdr note{};
  note.p_type = PT_NOTE;
  note.p_offset = note_off;
  note.p_filesz = notes.size();
  note.p_align = 4;
  ph.push_back(note);
  for (const MiniLoad& l : c.loads) {
    while (out.size() % 16 != 0) out.push_back('\0');
    Elf64_Phdr p{};
    p.p_type = PT_LOAD;
    p.p_flags = l.flags;
    p.p_offset = out.size();
    p.p_vaddr = l.vaddr;
    p.p_filesz = l.data.size();
    p.p_memsz = l.memsz != 0 ? l.memsz : l.data.size();
    p.p_align = 1;
    ph.push_back(p);
    out += l.data;
  }
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = c.e_type;
  eh.e_machine = c.machine;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = static_cast<uint16_t>(nph);
  std::memcpy(out.data(), &eh, sizeof(eh));
  for (size_t i = 0; i < ph.size(); i++) {
    std::memcpy(out.data() + sizeof(eh) + i * sizeof(Elf64_Phdr), &ph[i], sizeof(Elf64_Phdr));
  }
  return out;
}

// ---- Real cores ---------------------------------------------------------------------------

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The cache key: the test binary itself. A rebuild makes (and keeps) fresh cores.
std::string CacheKey() {
  struct stat st{};
  stat("/proc/self/exe", &st);
  return std::to_string(st.st_size) + "-" + std::to_string(st.st_mtim.tv_sec) + "-" +
         std::to_string(st.st_mtim.tv_nsec);
}

// Holds an exclusive flock on the cache for as long as it lives.
class CacheLock {
 public:
  CacheLock() {
    fs::create_directories(SB_TEST_BUILD_DIR "/cores");
    fd_ = open(SB_TEST_BUILD_DIR "/cores/.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~CacheLock() {
    if (fd_ >= 0) close(fd_);
  }

 private:
  int fd_ = -1;
};

// The cache directory for this test binary; older ones (earlier builds) are removed.
std::string CacheDir() {
  std::string root = SB_TEST_BUILD_DIR "/cores";
  std::string key = CacheKey();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (e.is_directory() && e.path().filename() != key) fs::remove_all(e.path(), ec);
  }
  std::string dir = root + "/" + key;
  fs::create_directories(dir, ec);
  return dir;
}

std::string GoEnv(const std::string& goarch) {
  return "env GOCACHE=" + Quote(SB_GOCACHE) +
         " GO111MODULE=off GOFLAGS= GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0 GOOS=linux GOARCH=" +
         goarch + " ";
}

std::string BuildProgram(const std::string& dir, const std::string& goarch, std::string* error) {
  std::string out = dir + "/coretest";
  auto r = RunCommand("cd " + Quote(dir) + " && " + GoEnv(goarch) + Quote(SB_GO_EXECUTABLE) +
                      " build -o " + Quote(out) + " " +
                      Quote(SB_TEST_SOURCE_DIR "/testdata/coretest/main.go"));
  if (r.status != 0) {
    *error = "go build (" + goarch + ") failed: " + r.out;
    return "";
  }
  return out;
}

bool HaveTool(const std::string& name) {
  return RunCommand("command -v " + Quote(name) + " >/dev/null").status == 0;
}

// Starts argv in cwd with stdout on a pipe and stderr in stderr_path.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& cwd,
            const std::vector<std::string>& extra_env, const std::string& stderr_path,
            bool unlimited_core, int* stdout_fd) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; e++) {
    std::string s = *e;
    bool overridden = false;
    for (const std::string& x : extra_env) {
      if (s.compare(0, x.find('=') + 1, x, 0, x.find('=') + 1) == 0) overridden = true;
    }
    if (!overridden) env.push_back(s);
  }
  for (const std::string& x : extra_env) env.push_back(x);
  std::vector<char*> cenv, cargv;
  for (std::string& s : env) cenv.push_back(s.data());
  cenv.push_back(nullptr);
  std::vector<std::string> args = argv;
  for (std::string& s : args) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(cwd.c_str()) != 0) _exit(126);
    dup2(p[1], 1);
    int efd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (efd >= 0) dup2(efd, 2);
    struct rlimit rl{};
    if (unlimited_core) rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
    setrlimit(RLIMIT_CORE, &rl);  // no host core unless asked for
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(p[1]);
  *stdout_fd = p[0];
  return pid;
}

// Reads fd until a line starting with "ready" arrives (or timeout).
bool WaitReady(int fd, double timeout_s, std::string* seen) {
  double deadline = Now() + timeout_s;
  while (Now() < deadline) {
    struct pollfd pfd{fd, POLLIN, 0};
    int r = poll(&pfd, 1, 100);
    if (r <= 0) continue;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) return false;
    seen->append(buf, static_cast<size_t>(n));
    if (seen->find("ready") != std::string::npos && seen->find('\n') != std::string::npos) return true;
  }
  return false;
}

std::vector<uint32_t> Tasks(pid_t pid) {
  std::vector<uint32_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    out.push_back(static_cast<uint32_t>(std::stoul(e.path().filename().string())));
  }
  std::sort(out.begin(), out.end());
  return out;
}

void KillAndReap(pid_t pid, int sig) {
  kill(pid, sig);
  int st;
  waitpid(pid, &st, 0);
}

// Parses `thread apply all info registers ...`: "Thread N (LWP X ...):" then "name 0x.. ..".
std::map<uint32_t, std::map<std::string, uint64_t>> ParseGdbRegisters(const std::string& out) {
  std::map<uint32_t, std::map<std::string, uint64_t>> m;
  std::istringstream in(out);
  std::string line;
  uint32_t lwp = 0;
  while (std::getline(in, line)) {
    size_t p = line.find("(LWP ");
    if (line.rfind("Thread ", 0) == 0 && p != std::string::npos) {
      lwp = static_cast<uint32_t>(std::strtoul(line.c_str() + p + 5, nullptr, 10));
      continue;
    }
    std::istringstream ls(line);
    std::string name, hex;
    if (lwp != 0 && (ls >> name >> hex) && hex.rfind("0x", 0) == 0) {
      m[lwp][name] = std::strtoull(hex.c_str(), nullptr, 16);
    }
  }
  return m;
}

// Waits until every thread of pid is in group stop ('T').
bool WaitStopped(pid_t pid, double timeout_s) {
  double deadline = Now() + timeout_s;
  while (Now() < deadline) {
    bool all = true;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
      std::string stat = ReadWholeFile(e.path().string() + "/stat");
      size_t rp = stat.rfind(')');
      if (rp == std::string::npos || rp + 2 >= stat.size() || stat[rp + 2] != 'T') all = false;
    }
    if (all && !ec) return true;
    usleep(10000);
  }
  return false;
}

std::map<std::string, std::vector<std::string>> ReadFacts(const std::string& path) {
  std::map<std::string, std::vector<std::string>> m;
  std::istringstream in(ReadWholeFile(path));
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    m[line.substr(0, sp)].push_back(line.substr(sp + 1));
  }
  return m;
}

std::string First(const std::map<std::string, std::vector<std::string>>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() || it->second.empty() ? "" : it->second.front();
}

Amd64Core MakeAmd64Core(const std::string& dir) {
  Amd64Core c;
  for (const char* tool : {"gdb", "gcore"}) {
    if (!HaveTool(tool)) {
      c.error = std::string(tool) + " not found: install it with tools/install-deps.sh (package gdb)";
      return c;
    }
  }
  c.binary = BuildProgram(dir, "amd64", &c.error);
  if (c.binary.empty()) return c;
  for (int attempt = 0; attempt < 3; attempt++) {
    int out_fd = -1;
    pid_t pid = Spawn({c.binary}, dir, {}, dir + "/coretest.stderr", false, &out_fd);
    if (pid <= 0) {
      c.error = "cannot start " + c.binary;
      return c;
    }
    std::string seen;
    if (!WaitReady(out_fd, 30, &seen)) {
      close(out_fd);
      KillAndReap(pid, SIGKILL);
      c.error = "coretest did not print ready: " + seen + ReadWholeFile(dir + "/coretest.stderr");
      return c;
    }
    close(out_fd);
    c.pid = static_cast<uint32_t>(pid);
    std::string maps = ReadWholeFile("/proc/" + std::to_string(pid) + "/maps");
    std::istringstream ms(maps);
    std::string line;
    while (std::getline(ms, line)) {
      if (line.find("[vdso]") != std::string::npos) {
        c.vdso_start = std::strtoull(line.c_str(), nullptr, 16);
        c.vdso_end = std::strtoull(line.c_str() + line.find('-') + 1, nullptr, 16);
      }
    }
    kill(pid, SIGSTOP);
    if (!WaitStopped(pid, 10)) {
      KillAndReap(pid, SIGKILL);
      c.error = "coretest did not stop on SIGSTOP";
      return c;
    }
    std::vector<uint32_t> before = Tasks(pid);
    auto g = RunCommand("gdb -nx -batch -p " + std::to_string(pid) +
                        " -ex 'thread apply all info registers fs_base rip rsp' </dev/null");
    c.gdb_regs = ParseGdbRegisters(g.out);
    std::string prefix = dir + "/core";
    double t0 = Now();
    auto r = RunCommand("gcore -o " + Quote(prefix) + " " + std::to_string(pid) + " </dev/null");
    c.gcore_seconds = Now() - t0;
    std::vector<uint32_t> after = Tasks(pid);
    KillAndReap(pid, SIGKILL);
    c.core = prefix + "." + std::to_string(pid);
    if (r.status != 0 || !fs::exists(c.core)) {
      c.error = "gcore failed: " + r.out;
      return c;
    }
    if (before != after) {  // a thread started or ended around gcore: try again
      fs::remove(c.core);
      c.error = "the thread list changed during gcore three times (process stopped?)";
      continue;
    }
    c.tids = before;
    c.error.clear();
    return c;
  }
  return c;
}

Arm64Core MakeArm64Core(const std::string& dir) {
  Arm64Core c;
  c.dir = dir;
  if (!HaveTool("qemu-aarch64")) {
    c.error = "qemu-aarch64 not found: install it with tools/install-deps.sh (package qemu-user)";
    return c;
  }
  c.binary = BuildProgram(dir, "arm64", &c.error);
  if (c.binary.empty()) return c;
  // A directory named "core" keeps a kernel with core_pattern "core" from writing a core of
  // qemu itself here (it cannot replace a directory); other patterns are ignored below.
  fs::create_directories(dir + "/core");
  std::string qemu = RunCommand("command -v qemu-aarch64").out;
  while (!qemu.empty() && (qemu.back() == '\n' || qemu.back() == ' ')) qemu.pop_back();
  int out_fd = -1;
  pid_t pid = Spawn({qemu, c.binary}, dir, {"GOTRACEBACK=crash"}, dir + "/coretest.stderr", true, &out_fd);
  if (pid <= 0) {
    c.error = "cannot start qemu-aarch64";
    return c;
  }
  c.qemu_pid = static_cast<uint32_t>(pid);
  std::string seen;
  if (!WaitReady(out_fd, 60, &seen)) {
    close(out_fd);
    KillAndReap(pid, SIGKILL);
    c.error = "coretest under qemu did not print ready: " + seen + ReadWholeFile(dir + "/coretest.stderr");
    return c;
  }
  close(out_fd);
  c.host_tasks = Tasks(pid).size();
  double t0 = Now();
  KillAndReap(pid, SIGABRT);
  c.dump_seconds = Now() - t0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (!e.is_regular_file()) continue;
    if (name.rfind("qemu_", 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) == ".core") {
      c.core = e.path().string();
    } else if (name == "core" ||
               (name.rfind("core.", 0) == 0 &&
                name.find_first_not_of("0123456789", 5) == std::string::npos)) {
      c.other_files.push_back(name);
      fs::remove(e.path(), ec);  // a host core of qemu itself: large and not ours
    }
  }
  if (c.core.empty()) {
    c.error = "qemu-aarch64 wrote no qemu_*.core in " + dir + "; stderr: " +
              ReadWholeFile(dir + "/coretest.stderr").substr(0, 2000);
  }
  return c;
}

}  // namespace

const Amd64Core& GetAmd64Core() {
  static Amd64Core core;
  static std::once_flag once;
  std::call_once(once, [] {
    CacheLock lock;
    std::string dir = CacheDir() + "/amd64";
    std::string facts = dir + "/facts";
    if (!fs::exists(facts)) {
      fs::remove_all(dir);
      fs::create_directories(dir);
      Amd64Core c = MakeAmd64Core(dir);
      if (!c.error.empty()) {
        core = c;
        return;
      }
      std::ostringstream f;
      f << "binary " << c.binary << "\ncore " << c.core << "\npid " << c.pid << "\nvdso "
        << c.vdso_start << " " << c.vdso_end << "\ngcore_seconds " << c.gcore_seconds << "\n";
      for (uint32_t t : c.tids) f << "tid " << t << "\n";
      for (const auto& [lwp, regs] : c.gdb_regs) {
        for (const auto& [name, v] : regs) f << "reg " << lwp << " " << name << " " << v << "\n";
      }
      WriteWholeFile(facts + ".tmp", f.str());
      fs::rename(facts + ".tmp", facts);
    }
    auto m = ReadFacts(facts);
    core.binary = First(m, "binary");
    core.core = First(m, "core");
    core.pid = static_cast<uint32_t>(std::stoul("0" + First(m, "pid")));
    std::istringstream vs(First(m, "vdso"));
    vs >> core.vdso_start >> core.vdso_end;
    core.gcore_seconds = std::atof(First(m, "gcore_seconds").c_str());
    for (const std::string& t : m["tid"]) core.tids.push_back(static_cast<uint32_t>(std::stoul(t)));
    for (const std::string& s : m["reg"]) {
      std::istringstream ls(s);
      uint32_t lwp = 0;
      std::string name;
      uint64_t v = 0;
      ls >> lwp >> name >> v;
      core.gdb_regs[lwp][name] = v;
    }
    if (core.core.empty() || !fs::exists(core.core)) core.error = "cached core missing in " + dir;
  });
  return core;
}

const Arm64Core& GetArm64Core() {
  static Arm64Core core;
  static std::once_flag once;
  std::call_once(once, [] {
    CacheLock lock;
    std::string dir = CacheDir() + "/arm64";
    std::string facts = dir + "/facts";
    if (!fs::exists(facts)) {
      fs::remove_all(dir);
      fs::create_directories(dir);
      Arm64Core c = MakeArm64Core(dir);
      if (!c.error.empty()) {
        core = c;
        return;
      }
      std::ostringstream f;
      f << "binary " << c.binary << "\ncore " << c.core << "\ndir " << c.dir << "\nqemu_pid "
        << c.qemu_pid << "\nhost_tasks " << c.host_tasks << "\ndump_seconds " << c.dump_seconds << "\n";
      for (const std::string& o : c.other_files) f << "other " << o << "\n";
      WriteWholeFile(facts + ".tmp", f.str());
      fs::rename(facts + ".tmp", facts);
    }
    auto m = ReadFacts(facts);
    core.binary = First(m, "binary");
    core.core = First(m, "core");
    core.dir = First(m, "dir");
    core.qemu_pid = static_cast<uint32_t>(std::stoul("0" + First(m, "qemu_pid")));
    core.host_tasks = std::stoul("0" + First(m, "host_tasks"));
    core.dump_seconds = std::atof(First(m, "dump_seconds").c_str());
    core.other_files = m["other"];
    if (core.core.empty() || !fs::exists(core.core)) core.error = "cached core missing in " + dir;
  });
  return core;
}

}  // namespace sb::coredump::test
