// /proc/PID/maps: the address space of a process, and the load bias of its executable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "symbolizer/elf_file.h"

namespace sb::unwinder {

struct MemoryMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  uint64_t inode = 0;
  std::string perms;  // "r-xp"
  std::string path;   // "" for anonymous, "[vdso]", "[stack]", or a file path
  bool executable() const { return perms.size() > 2 && perms[2] == 'x'; }
  bool file_backed() const { return !path.empty() && path[0] == '/'; }
};

std::vector<MemoryMapping> ParseProcessMaps(std::string_view text);
Result<std::vector<MemoryMapping>> ReadProcessMaps(int pid);

// The mapping containing addr, or null.
const MemoryMapping* FindMapping(const std::vector<MemoryMapping>& maps, uint64_t addr);

// The mappings the kernel makes for ELF's PT_LOAD segments loaded BIAS above their link-time
// addresses (page-aligned as the ELF loader maps them), named PATH: what /proc/PID/maps showed
// for the executable of a process that is gone before it could be read.
std::vector<MemoryMapping> MappingsOfExecutable(const sym::ElfFile& elf, const std::string& path, uint64_t inode,
                                                uint64_t bias);

// The lowest link-time address of an executable PT_LOAD segment: the kernel's mm->start_code
// is this plus the load bias. nullopt if there is none.
std::optional<uint64_t> LowestExecutableVaddr(const sym::ElfFile& elf);

// Runtime address minus link-time address for code in mapping m of ELF file elf
// (0 for ET_EXEC). nullopt if no PT_LOAD covers the mapping's file offset.
std::optional<uint64_t> LoadBias(const sym::ElfFile& elf, const MemoryMapping& m);

// Link-time address of runtime address addr inside mapping m.
std::optional<uint64_t> RuntimeToLinkAddress(const sym::ElfFile& elf, const MemoryMapping& m,
                                             uint64_t addr);

}  // namespace sb::unwinder
