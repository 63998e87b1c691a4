// Fuzz target: CoreFile on arbitrary bytes, then everything a replay reads: threads,
// mappings, auxv, and memory through the core and through a ProcessImage.
#include <string>

#include "coredump/core_file.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzCoreFile(const uint8_t* data, size_t size) {
  auto core = coredump::CoreFile::FromBytes(std::string(reinterpret_cast<const char*>(data), size),
                                            "fuzz");
  if (!core.ok()) return 0;
  const coredump::CoreFile& c = **core;
  (void)sym::ArchName(c.arch());
  (void)c.pid();
  (void)c.ExecutableName();
  (void)c.Auxv(33);
  (void)c.Auxv(9);
  uint8_t buf[64];
  for (const coredump::CoreThread& t : c.threads()) {
    (void)c.ReadMemory(t.pc, buf, 16);
    (void)c.ReadMemory(t.sp, buf, sizeof(buf));
    (void)c.ReadMemory(t.fp, buf, 8);
  }
  std::vector<coredump::BackingFile> files;
  for (const coredump::CoreFileMapping& m : c.mappings()) {
    (void)c.ReadMemory(m.start, buf, 8);
    (void)c.ReadMemory(m.end - 1, buf, 2);
    // Paths from the input are never opened (a fuzzer must not read arbitrary host files):
    // every mapping is backed by this very binary, a real ELF file of a few MB.
    files.push_back(coredump::BackingFile{"/proc/self/exe", m.start, m.end, m.offset});
  }
  for (const sym::ElfSegment& seg : c.elf().segments()) {
    (void)c.ReadMemory(seg.vaddr, buf, 8);
    (void)c.ReadMemory(seg.vaddr + seg.filesz - 4, buf, 8);
    (void)c.ReadMemory(seg.vaddr + seg.memsz - 1, buf, 1);
  }
  (void)c.ReadMemory(~0ull - 3, buf, 8);
  coredump::ProcessImage img(*core, files);
  for (const coredump::CoreThread& t : c.threads()) {
    (void)img.Read(t.pc, buf, 4);
    (void)img.Read(t.sp - 8, buf, sizeof(buf));
  }
  (void)img.Read(~0ull - 3, buf, 8);
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzCoreFile(data, size);
}
#endif
