// Fuzz target: GoPclntab (and Binary on top of it) on arbitrary ELF bytes, all queries made.
#include <string>

#include "symbolizer/binary.h"
#include "symbolizer/go_pclntab.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzPclntab(const uint8_t* data, size_t size) {
  auto elf = sym::ElfFile::FromBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!elf.ok()) return 0;
  auto tab = sym::GoPclntab::Parse(*elf);
  if (tab.ok()) {
    const sym::GoPclntab& t = **tab;
    (void)t.FindFuncByName("main.main");
    (void)t.FindFuncByName("");
    // Bounded work per input keeps the fuzzer fast on seeds with thousands of functions.
    size_t n = t.num_funcs();
    size_t step = n > 2000 ? n / 2000 : 1;
    for (size_t i = 0; i <= n; i += step) {
      auto f = t.FuncAt(i);
      if (!f.ok()) continue;
      (void)t.FindFunc(f->entry);
      (void)t.FindFuncByName(f->name);
      for (uint64_t pc : {f->entry, f->entry + 1, f->end - 1, f->end}) {
        (void)t.Symbolize(pc);
        (void)t.SpDelta(pc);
        (void)t.FileLine(pc);
      }
      (void)t.SpDeltaRuns(*f);
    }
    (void)t.Symbolize(0);
    (void)t.Symbolize(~0ull);
    (void)t.Symbolize(t.text_start());
  }
  auto bin = sym::Binary::FromElf(*elf);
  if (bin.ok()) {
    (void)(*bin)->build_id();
    for (const sym::ElfSegment& seg : (*elf)->segments()) {
      (void)(*bin)->Symbolize(seg.vaddr);
      (void)(*bin)->Symbolize(seg.vaddr + seg.memsz / 2);
    }
  }
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzPclntab(data, size);
}
#endif
