// Fuzz target: the exit-probe site finder (exitprobe/code_sites.h) on arbitrary machine code.
// The first byte picks the instruction set (even: amd64, odd: arm64); the rest is the function.
#include <string_view>

#include "exitprobe/code_sites.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzCodeSites(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view code(reinterpret_cast<const char*>(data) + 1, size - 1);
  sym::Arch arch = (data[0] & 1) ? sym::Arch::kArm64 : sym::Arch::kAmd64;
  for (auto placement : {exitprobe::EntryPlacement::kAuto, exitprobe::EntryPlacement::kFirstInstruction}) {
    exitprobe::CodeSites s = exitprobe::FindCodeSites(arch, code, 0x400000, placement);
    // Every site lies inside the function.
    for (const auto& r : s.rets)
      if (r.vaddr < 0x400000 || r.vaddr >= 0x400000 + code.size()) __builtin_trap();
    // The entry site, when the first instruction decoded, is inside too.
    if (s.first.vaddr == 0x400000 && (s.entry.vaddr < 0x400000 || s.entry.vaddr >= 0x400000 + code.size()))
      __builtin_trap();
  }
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzCodeSites(data, size);
}
#endif
