// Fuzz target: ElfFile on arbitrary bytes, every accessor exercised.
#include <string>

#include "symbolizer/elf_file.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzElf(const uint8_t* data, size_t size) {
  auto elf = sym::ElfFile::FromBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!elf.ok()) return 0;
  const sym::ElfFile& f = **elf;
  (void)sym::ArchName(f.arch());
  for (const sym::ElfSection& s : f.sections()) {
    (void)f.SectionData(s);
    (void)f.SectionContents(s);
    (void)f.FindSection(s.name);
  }
  for (const sym::ElfSegment& seg : f.segments()) {
    (void)f.ReadVaddr(seg.vaddr, 16);
    (void)f.ReadVaddr(seg.vaddr + seg.filesz - 1, 2);
    (void)f.VaddrToFileOffset(seg.vaddr + seg.memsz);
    (void)f.FileOffsetToVaddr(seg.offset);
  }
  (void)f.Notes();
  (void)f.BuildId();
  (void)f.GoBuildId();
  (void)f.Symbols();
  (void)f.ReadVaddr(~0ull - 3, 8);
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzElf(data, size);
}
#endif
