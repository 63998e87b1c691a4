// Helpers shared by the coredump tests: running commands, a generator of small synthetic
// cores, and two real cores made at test time (amd64 with gcore, arm64 with qemu-user).
// The real cores are made once per build of the test binary and cached under the build
// tree (a gcore of a Go program is ~700 MB), so that every test process reuses them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/shell_util.h"

namespace sb::coredump::test {

using sb::test::CommandResult;
using sb::test::Quote;
using sb::test::RunCommand;

// A fresh directory under the build tree (left for post-mortem inspection).
std::string MakeTempDir(const std::string& tag);
std::string ReadWholeFile(const std::string& path);
void WriteWholeFile(const std::string& path, const std::string& data);

// ---- Synthetic cores ----------------------------------------------------------------------

struct MiniThread {
  uint32_t lwp = 0;
  int16_t signal = 0;
  std::vector<uint64_t> regs;              // 27 (amd64) or 34 (arm64); shorter is zero-padded
  std::optional<uint64_t> arm_tls;         // NT_ARM_TLS after this thread's NT_PRSTATUS
  size_t prstatus_size = 0;                // 0: the kernel's size for the machine
};
struct MiniLoad {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;  // 0: data.size()
  uint32_t flags = 4;  // PF_R
  std::string data;    // the file-backed part (filesz)
};
struct MiniFile {
  uint64_t start, end, page_offset;
  std::string path;
};
struct MiniCore {
  uint16_t machine = 62;  // EM_X86_64; EM_AARCH64 is 183
  uint16_t e_type = 4;    // ET_CORE
  uint32_t pid = 0;       // NT_PRPSINFO pr_pid (no NT_PRPSINFO when 0 and fname empty)
  std::string fname;
  std::vector<MiniThread> threads;
  std::vector<MiniLoad> loads;
  std::vector<MiniFile> files;  // NT_FILE (absent when empty)
  uint64_t page_size = 4096;
  std::vector<std::pair<uint64_t, uint64_t>> auxv;  // NT_AUXV (absent when empty)
};
// ELF header, program headers (PT_NOTE first, then PT_LOADs), notes, then load contents.
std::string BuildMiniCore(const MiniCore& c);

// ---- Real cores ---------------------------------------------------------------------------

// The tests/coredump/testdata/coretest program cored by gcore on this host: started, stopped
// with SIGSTOP once it prints "ready" (so no thread comes or goes), cored, then killed.
struct Amd64Core {
  std::string error;  // non-empty when the core could not be made (the test must fail)
  std::string binary;
  std::string core;
  uint32_t pid = 0;
  std::vector<uint32_t> tids;                // /proc/PID/task, the same before and after gcore
  uint64_t vdso_start = 0, vdso_end = 0;     // [vdso] in /proc/PID/maps
  // What gdb prints for `info registers fs_base rip rsp` per LWP (name -> value). The
  // process is SIGSTOPped before gdb and gcore attach, so both see the same registers.
  std::map<uint32_t, std::map<std::string, uint64_t>> gdb_regs;
  double gcore_seconds = 0;
};
const Amd64Core& GetAmd64Core();

// The same program cross-built for arm64, run under qemu-aarch64 with GOTRACEBACK=crash and
// killed with SIGABRT: qemu writes qemu_<prog>_<date>_<pid>.core in its working directory.
struct Arm64Core {
  std::string error;
  std::string binary;
  std::string core;
  std::string dir;
  uint32_t qemu_pid = 0;
  size_t host_tasks = 0;  // /proc/QEMU_PID/task just before SIGABRT (includes qemu's own)
  std::vector<std::string> other_files;  // other core-like files found in dir (then removed)
  double dump_seconds = 0;               // SIGABRT to exit
};
const Arm64Core& GetArm64Core();

}  // namespace sb::coredump::test
