// Locating the Go runtime's moduledata (runtime.firstmoduledata) in a binary without symbols:
// it is the only structure whose first word is the pclntab's address and whose next slice
// headers point at the pclntab's sub-tables. The pclntab alone lacks two facts we need from
// it: the text start (Go 1.26+ writes 0 in the header) and the go:func.* base that funcdata
// offsets (the inline tree) are relative to (Go 1.18+).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "symbolizer/elf_file.h"

namespace sb::sym {

// What the pclntab header says, for matching against candidate moduledata words.
struct PclnLayout {
  uint64_t table_vaddr = 0;  // pcHeader address
  uint64_t table_size = 0;   // bytes available from the header on
  uint64_t funcname_off = 0, cu_off = 0, filetab_off = 0, pctab_off = 0, pcln_off = 0;
  uint64_t nfunc = 0;
};

struct GoModuleData {
  uint64_t vaddr = 0;
  std::vector<uint64_t> words;  // the first kWords 8-byte words (fewer if the file ends)
  static constexpr int kWords = 64;
  // Word indexes shared by every layout since Go 1.16 (runtime/symtab.go moduledata).
  static constexpr int kMinPc = 20, kMaxPc = 21, kText = 22, kEtext = 23;
  uint64_t Word(int i) const { return i < static_cast<int>(words.size()) ? words[i] : 0; }
};

// Scans the writable data of ELF for a word equal to layout.table_vaddr followed by slice
// headers that match the layout. Returns the first candidate that validates.
std::optional<GoModuleData> FindGoModuleData(const ElfFile& elf, const PclnLayout& layout);

// Word indexes where the gofunc field may sit, most likely first, for a pclntab format:
// 1.18/1.19: 38; 1.20-1.26: 40 (covctrs/ecovctrs added before end); 1.27: 43 (observed on a
// real Go 1.27.0 binary: types, ?, etypes, ?, ?, rodata, gofunc, epclntab). Callers validate.
std::vector<int> GoFuncWordCandidates(bool go120_format);

}  // namespace sb::sym
