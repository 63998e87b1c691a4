#include "symbolizer/go_moduledata.h"

#include <elf.h>

#include <set>
#include <string_view>

#include "symbolizer/byte_reader.h"

namespace sb::sym {
namespace {

// Slice header {ptr, len, cap} at word i must describe [table+off, ...) inside the pclntab.
bool SliceAt(const std::vector<uint64_t>& w, int i, const PclnLayout& l, uint64_t off) {
  if (i + 2 >= static_cast<int>(w.size())) return false;
  uint64_t ptr = w[i], len = w[i + 1], cap = w[i + 2];
  if (ptr != l.table_vaddr + off) return false;
  if (len > cap || off > l.table_size || len > l.table_size - off) return false;
  return true;
}

bool Validate(const std::vector<uint64_t>& w, const PclnLayout& l) {
  if (w.size() < 24 || w[0] != l.table_vaddr) return false;
  if (!SliceAt(w, 1, l, l.funcname_off)) return false;
  if (!SliceAt(w, 4, l, l.cu_off)) return false;
  if (!SliceAt(w, 7, l, l.filetab_off)) return false;
  if (!SliceAt(w, 10, l, l.pctab_off)) return false;
  if (!SliceAt(w, 13, l, l.pcln_off)) return false;
  // ftab is a view of the start of pclntable with nfunc+1 entries.
  if (w[16] != w[13] || w[17] != l.nfunc + 1) return false;
  uint64_t minpc = w[GoModuleData::kMinPc], maxpc = w[GoModuleData::kMaxPc];
  uint64_t text = w[GoModuleData::kText], etext = w[GoModuleData::kEtext];
  return minpc <= maxpc && text <= minpc && text <= etext;
}

}  // namespace

std::optional<GoModuleData> FindGoModuleData(const ElfFile& elf, const PclnLayout& layout) {
  // Regions to scan: the writable sections where the linker puts moduledata (.noptrdata in
  // executables, .data.rel.ro in PIE/shared, .go.module in newer toolchains), else every
  // writable PT_LOAD (section headers may be absent: cores, sstripped files).
  std::vector<std::string_view> regions;
  std::vector<uint64_t> region_vaddr;
  for (const char* name : {".go.module", ".noptrdata", ".data.rel.ro", ".data"}) {
    if (const ElfSection* s = elf.FindSection(name)) {
      std::string_view d = elf.SectionData(*s);
      if (!d.empty()) {
        regions.push_back(d);
        region_vaddr.push_back(s->addr);
      }
    }
  }
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type != PT_LOAD || (seg.flags & PF_W) == 0) continue;
    auto d = ByteView(elf.bytes()).Sub(seg.offset, seg.filesz);
    if (d && !d->empty()) {
      regions.push_back(*d);
      region_vaddr.push_back(seg.vaddr);
    }
  }
  std::set<uint64_t> tried;
  for (size_t r = 0; r < regions.size(); r++) {
    ByteView v(regions[r]);
    for (uint64_t off = 0; off + 8 <= v.size(); off += 8) {
      if (*v.U64(off) != layout.table_vaddr) continue;
      uint64_t vaddr = region_vaddr[r] + off;
      if (!tried.insert(vaddr).second) continue;
      GoModuleData md;
      md.vaddr = vaddr;
      for (int i = 0; i < GoModuleData::kWords; i++) {
        auto w = v.U64(off + 8 * static_cast<uint64_t>(i));
        if (!w) break;
        md.words.push_back(*w);
      }
      if (Validate(md.words, layout)) return md;
    }
  }
  return std::nullopt;
}

std::vector<int> GoFuncWordCandidates(bool go120_format) {
  if (go120_format) return {40, 43, 41, 42, 44, 39};
  return {38, 37, 39};
}

}  // namespace sb::sym
