#include "unwinder/clone_child.h"

#include <Zydis/Zydis.h>

#include <cstring>

namespace sb::unwinder {
namespace {

CloneChild NotFound(const std::string& why) { return CloneChild{false, 0, 0, "runtime.clone: " + why}; }

// amd64: a linear decode from the entry (clone is straight-line assembly up to its syscall).
CloneChild FindAmd64(uint64_t entry, std::string_view code) {
  ZydisDecoder dec;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
    return NotFound("no decoder");
  size_t off = 0;
  int step = 0;  // 0: want SYSCALL, 1: CMP, 2: JZ, 3: RET
  uint64_t target = 0;
  int between = 0;
  while (off < code.size()) {
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code.data() + off, code.size() - off, &in, ops)))
      return NotFound("undecodable instruction at +" + std::to_string(off));
    uint64_t pc = entry + off, next = pc + in.length;
    off += in.length;
    if (step == 0) {
      if (in.mnemonic == ZYDIS_MNEMONIC_SYSCALL) step = 1;
    } else if (step == 1) {
      if (!(in.mnemonic == ZYDIS_MNEMONIC_CMP || in.mnemonic == ZYDIS_MNEMONIC_TEST))
        return NotFound("no CMP after the clone syscall");
      step = 2;
    } else if (step == 2) {
      if (in.mnemonic != ZYDIS_MNEMONIC_JZ || ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
        return NotFound("no JEQ after the clone syscall");
      target = next + static_cast<uint64_t>(ops[0].imm.value.s);
      step = 3;
    } else if (in.mnemonic == ZYDIS_MNEMONIC_RET) {
      if (target != next) return NotFound("JEQ does not skip the parent's RET");
      return CloneChild{true, next, entry + code.size(), ""};
    } else if (++between > 2) {
      return NotFound("no RET on the parent's path");
    }
  }
  return NotFound(step == 0 ? "no SYSCALL" : "ends inside the parent's path");
}

// arm64: fixed 4-byte instructions.
CloneChild FindArm64(uint64_t entry, std::string_view code) {
  int step = 0;  // 0: want SVC, 1: CMP, 2: B.EQ, 3: RET
  uint64_t target = 0;
  int between = 0;
  for (size_t off = 0; off + 4 <= code.size(); off += 4) {
    uint32_t in = 0;
    memcpy(&in, code.data() + off, 4);
    uint64_t pc = entry + off;
    if (step == 0) {
      if (in == 0xD4000001u) step = 1;  // SVC #0
    } else if (step == 1) {
      if ((in & 0x7F20001Fu) != 0x6B00001Fu) return NotFound("no CMP after the clone SVC");  // SUBS XZR/WZR, .., ..
      step = 2;
    } else if (step == 2) {
      if ((in & 0xFF00001Fu) != 0x54000000u) return NotFound("no BEQ after the clone SVC");  // B.EQ imm19
      int64_t imm19 = static_cast<int64_t>((in >> 5) & 0x7FFFF);
      if (imm19 & 0x40000) imm19 -= 0x80000;
      target = pc + static_cast<uint64_t>(imm19 * 4);
      step = 3;
    } else if (in == 0xD65F03C0u) {  // RET
      if (target != pc + 4) return NotFound("BEQ does not skip the parent's RET");
      return CloneChild{true, pc + 4, entry + (code.size() & ~size_t{3}), ""};
    } else if (++between > 2) {
      return NotFound("no RET on the parent's path");
    }
  }
  return NotFound(step == 0 ? "no SVC" : "ends inside the parent's path");
}

}  // namespace

CloneChild FindCloneChild(sym::Arch arch, uint64_t entry, std::string_view code) {
  if (arch == sym::Arch::kAmd64) return FindAmd64(entry, code);
  if (arch == sym::Arch::kArm64) return FindArm64(entry, code);
  return NotFound("unknown architecture");
}

}  // namespace sb::unwinder
