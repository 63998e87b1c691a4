#include "coredump/replay/core_slim.h"

#include <elf.h>

#include <cstring>
#include <vector>

namespace sb::coredump {
namespace {

bool AllZero(std::string_view bytes) {
  const char* p = bytes.data();
  size_t n = bytes.size();
  static const char kZeros[4096] = {};
  while (n >= sizeof(kZeros)) {
    if (std::memcmp(p, kZeros, sizeof(kZeros)) != 0) return false;
    p += sizeof(kZeros);
    n -= sizeof(kZeros);
  }
  return std::memcmp(p, kZeros, n) == 0;
}

}  // namespace

Result<std::string> SlimCore(std::string_view core, SlimStats* stats) {
  if (core.size() < sizeof(Elf64_Ehdr) || std::memcmp(core.data(), ELFMAG, SELFMAG) != 0)
    return MakeError("slim: not an ELF file");
  Elf64_Ehdr eh;
  std::memcpy(&eh, core.data(), sizeof(eh));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_CORE)
    return MakeError("slim: not a 64-bit little-endian core file");
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > core.size() ||
      uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr) > core.size() - eh.e_phoff)
    return MakeError("slim: truncated program headers");
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  std::memcpy(ph.data(), core.data() + eh.e_phoff, ph.size() * sizeof(Elf64_Phdr));

  SlimStats st;
  st.segments = ph.size();
  st.bytes_before = core.size();
  // New layout: header, program headers, then each kept segment's bytes in order.
  uint64_t off = sizeof(Elf64_Ehdr) + ph.size() * sizeof(Elf64_Phdr);
  std::string out(off, '\0');
  for (auto& p : ph) {
    if (p.p_filesz == 0) {
      p.p_offset = 0;
      continue;
    }
    if (p.p_offset > core.size() || p.p_filesz > core.size() - p.p_offset)
      return MakeError("slim: segment at offset " + std::to_string(p.p_offset) + " is truncated");
    std::string_view data = core.substr(p.p_offset, p.p_filesz);
    if (p.p_type == PT_LOAD && !(p.p_flags & PF_W) && AllZero(data)) {
      p.p_filesz = 0;
      p.p_offset = 0;
      st.dropped++;
      continue;
    }
    // Keep alignment of note data; loads are byte-aligned in gdb and kernel cores alike.
    if (p.p_type == PT_NOTE) {
      while (out.size() % 4) out.push_back('\0');
    }
    p.p_offset = out.size();
    out.append(data);
  }
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_shoff = 0;
  eh.e_shnum = 0;
  eh.e_shstrndx = 0;
  std::memcpy(out.data(), &eh, sizeof(eh));
  std::memcpy(out.data() + sizeof(eh), ph.data(), ph.size() * sizeof(Elf64_Phdr));
  st.bytes_after = out.size();
  if (stats) *stats = st;
  return out;
}

}  // namespace sb::coredump
