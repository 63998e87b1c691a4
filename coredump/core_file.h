// CoreFile: an ELF core dump of an amd64 or arm64 Linux process, read on any host.
// ProcessImage: the memory of that process as the unwinder sees it: the core's PT_LOAD
// contents first, then every page the core lacks (text, rodata, pclntab) from the backing
// binaries. Truncated or foreign files give a one-line error, never a crash.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "ebpf/unwind/host_unwind.h"
#include "symbolizer/elf_file.h"

namespace sb::coredump {

struct CoreThread {
  uint32_t lwp = 0;
  int signal = 0;         // pr_cursig
  uint64_t pc = 0;
  uint64_t sp = 0;
  uint64_t fp = 0;        // amd64 rbp, arm64 x29
  uint64_t lr = 0;        // arm64 x30
  uint64_t tls_base = 0;  // amd64 fs_base (from NT_PRSTATUS), arm64 TPIDR_EL0 (NT_ARM_TLS)
  bool has_tls = false;
  std::vector<uint64_t> regs;  // all general registers in the kernel's user_regs_struct order
};

// One NT_FILE entry: [start, end) maps `path` from file offset `offset`.
struct CoreFileMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  std::string path;
};

class CoreFile {
 public:
  static Result<std::shared_ptr<CoreFile>> Open(const std::string& path);
  static Result<std::shared_ptr<CoreFile>> FromBytes(std::string bytes, std::string name);

  sym::Arch arch() const { return arch_; }
  const std::vector<CoreThread>& threads() const { return threads_; }
  const std::vector<CoreFileMapping>& mappings() const { return mappings_; }  // empty for qemu cores
  std::optional<uint64_t> Auxv(uint64_t type) const;  // AT_SYSINFO_EHDR (33), AT_ENTRY (9), AT_PHDR (3)
  std::string ExecutableName() const;                  // NT_PRPSINFO pr_fname, "" if absent
  uint32_t pid() const { return pid_; }

  // Copies n bytes at addr from the core's own PT_LOAD contents (filesz part only).
  bool ReadMemory(uint64_t addr, void* dst, size_t n) const;
  const sym::ElfFile& elf() const { return *elf_; }

 private:
  friend class ProcessImage;
  struct LoadRange {  // a PT_LOAD's file-backed part, sorted by vaddr
    uint64_t vaddr = 0;
    uint64_t filesz = 0;
    uint64_t offset = 0;
  };
  CoreFile() = default;
  static Result<std::shared_ptr<CoreFile>> Make(std::shared_ptr<const sym::ElfFile> elf);
  Status Parse();
  // Copies the longest prefix of [addr, addr+n) that the core holds; returns its length.
  size_t CopyPrefix(uint64_t addr, void* dst, size_t n) const;
  std::vector<LoadRange> loads_;
  std::shared_ptr<const sym::ElfFile> elf_;
  sym::Arch arch_ = sym::Arch::kUnknown;
  uint32_t pid_ = 0;
  std::vector<CoreThread> threads_;
  std::vector<CoreFileMapping> mappings_;
  std::vector<std::pair<uint64_t, uint64_t>> auxv_;
  std::string exe_name_;
};

// A file that backs part of the address space: `path` on this host holds the bytes that the
// process had mapped at [start, end) from file offset `offset`.
struct BackingFile {
  std::string path;
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
};

class ProcessImage : public unwind::MemoryView {
 public:
  ProcessImage(std::shared_ptr<const CoreFile> core, std::vector<BackingFile> files);
  // MemoryView: core first, then backing files; false if any byte is missing.
  bool Read(uint64_t addr, void* dst, size_t n) const override;

  // For an executable whose mapping the core does not list (qemu cores have no NT_FILE): its
  // PT_LOAD segments placed at link address + bias.
  static std::vector<BackingFile> SegmentsOf(const sym::ElfFile& elf, const std::string& path, uint64_t bias);

 private:
  std::shared_ptr<const CoreFile> core_;
  std::vector<BackingFile> files_;
  std::vector<std::shared_ptr<const sym::ElfFile>> opened_;  // parallel to files_ (null if unreadable)
};

}  // namespace sb::coredump
