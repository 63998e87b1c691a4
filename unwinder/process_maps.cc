#include "unwinder/process_maps.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "base/file_util.h"

namespace sb::unwinder {

std::vector<MemoryMapping> ParseProcessMaps(std::string_view text) {
  std::vector<MemoryMapping> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string line(text.substr(pos, eol - pos));
    pos = eol + 1;
    MemoryMapping m;
    char perms[8] = {};
    unsigned dev_major = 0, dev_minor = 0;
    int path_at = -1;
    if (sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &m.start,
               &m.end, perms, &m.offset, &dev_major, &dev_minor, &m.inode, &path_at) < 7)
      continue;
    m.perms = perms;
    if (path_at > 0 && static_cast<size_t>(path_at) < line.size()) {
      m.path = line.substr(static_cast<size_t>(path_at));
      // A file replaced or removed after it was mapped.
      static constexpr std::string_view kDeleted = " (deleted)";
      if (m.path.size() > kDeleted.size() &&
          m.path.compare(m.path.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0)
        m.path.resize(m.path.size() - kDeleted.size());
    }
    if (m.end > m.start) out.push_back(std::move(m));
  }
  return out;
}

Result<std::vector<MemoryMapping>> ReadProcessMaps(int pid) {
  auto text = ReadFile("/proc/" + std::to_string(pid) + "/maps");
  if (!text.ok()) return MakeError("process " + std::to_string(pid) + " not found (" + text.error() + ")");
  return ParseProcessMaps(*text);
}

const MemoryMapping* FindMapping(const std::vector<MemoryMapping>& maps, uint64_t addr) {
  for (const auto& m : maps)
    if (addr >= m.start && addr < m.end) return &m;
  return nullptr;
}

std::optional<uint64_t> LoadBias(const sym::ElfFile& elf, const MemoryMapping& m) {
  for (const auto& seg : elf.segments()) {
    if (seg.type != 1 /* PT_LOAD */) continue;
    if (m.offset >= seg.offset && m.offset < seg.offset + std::max(seg.filesz, uint64_t{1})) {
      uint64_t link = seg.vaddr + (m.offset - seg.offset);
      return m.start - link;
    }
  }
  return std::nullopt;
}

std::vector<MemoryMapping> MappingsOfExecutable(const sym::ElfFile& elf, const std::string& path, uint64_t inode,
                                                uint64_t bias) {
  constexpr uint64_t kPage = 4096;  // the ELF loader's unit: every Go binary aligns to it or more
  std::vector<MemoryMapping> out;
  for (const auto& seg : elf.segments()) {
    if (seg.type != 1 /* PT_LOAD */ || seg.memsz == 0) continue;
    MemoryMapping m;
    m.start = (seg.vaddr & ~(kPage - 1)) + bias;
    m.end = ((seg.vaddr + seg.memsz + kPage - 1) & ~(kPage - 1)) + bias;
    m.offset = seg.offset & ~(kPage - 1);
    m.inode = inode;
    m.perms = std::string(seg.flags & 4 ? "r" : "-") + (seg.flags & 2 ? "w" : "-") + (seg.flags & 1 ? "x" : "-") + "p";
    m.path = path;
    out.push_back(m);
  }
  std::sort(out.begin(), out.end(), [](const MemoryMapping& a, const MemoryMapping& b) { return a.start < b.start; });
  return out;
}

std::optional<uint64_t> LowestExecutableVaddr(const sym::ElfFile& elf) {
  std::optional<uint64_t> lo;
  for (const auto& seg : elf.segments())
    if (seg.type == 1 /* PT_LOAD */ && (seg.flags & 1 /* PF_X */) && (!lo || seg.vaddr < *lo)) lo = seg.vaddr;
  return lo;
}

std::optional<uint64_t> RuntimeToLinkAddress(const sym::ElfFile& elf, const MemoryMapping& m,
                                             uint64_t addr) {
  auto bias = LoadBias(elf, m);
  if (!bias) return std::nullopt;
  return addr - *bias;
}

}  // namespace sb::unwinder
