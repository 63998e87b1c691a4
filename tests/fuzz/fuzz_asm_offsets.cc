// Fuzz target: the runtime-code offset derivation (arm64 decoder, Zydis lifter, symbolic tracer,
// rules) on arbitrary function bytes. Input: byte 0 picks the arch (bit 0: arm64), byte 1 the
// function the bytes stand for (0xff: every function at once), the rest is the code. Call
// targets get names from a small set so the no-return and printuint paths run too.
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_targets.h"
#include "unwinder/asm_offsets.h"

namespace sb::fuzz {

int FuzzAsmOffsets(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  sym::Arch arch = (data[0] & 1) ? sym::Arch::kArm64 : sym::Arch::kAmd64;
  const auto& names = unwinder::AsmOffsetFunctions();
  std::string_view code(reinterpret_cast<const char*>(data + 2), size - 2);
  std::vector<unwinder::FuncCode> funcs;
  for (size_t i = 0; i < names.size(); i++) {
    if (data[1] != 0xff && data[1] % names.size() != i) continue;
    funcs.push_back(unwinder::FuncCode{names[i], 0x401000 + 0x10000 * i, code});
  }
  auto name_at = [](uint64_t pc) -> std::string {
    switch (pc & 3) {
      case 0: return "runtime.printuint";
      case 1: return "runtime.throw";
      case 2: return "";
      default: return "runtime.save_g";
    }
  };
  auto out = unwinder::DeriveOffsetsFromCode(arch, funcs, name_at);
  for (const auto& [name, fact] : out.fields) {
    if (fact.value < 0 || fact.value > 0xfffe || fact.source.rfind("asm:", 0) != 0) __builtin_trap();
  }
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzAsmOffsets(data, size);
}
#endif
