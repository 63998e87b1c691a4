#include "unwinder/clone_child.h"

#include <Zydis/Zydis.h>

#include <cstring>

namespace sb::unwinder {
namespace {

CloneChild NotFound(const std::string& why) {
  CloneChild c;
  c.why = why;
  return c;
}

CloneChild FindAmd64(uint64_t entry, std::string_view code) {
  const uint64_t end = entry + code.size();
  ZydisDecoder dec;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
    return NotFound("runtime.clone unreadable");
  auto decode = [&](uint64_t pc, ZydisDecodedInstruction* in, ZydisDecodedOperand* ops) {
    if (pc < entry || pc >= end) return false;
    size_t off = static_cast<size_t>(pc - entry);
    return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code.data() + off, code.size() - off, in, ops));
  };
  ZydisDecodedInstruction in;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  uint64_t pc = entry;
  // The first SYSCALL (clone(2) itself), linear from the entry.
  bool ok = false;
  while ((ok = decode(pc, &in, ops)) && in.mnemonic != ZYDIS_MNEMONIC_SYSCALL) pc += in.length;
  if (!ok) return NotFound("runtime.clone: no SYSCALL");
  uint64_t post = pc + in.length;
  // CMPQ AX, $0 ; JEQ child
  if (!decode(post, &in, ops) || in.mnemonic != ZYDIS_MNEMONIC_CMP || in.operand_count_visible != 2 ||
      ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[0].reg.value != ZYDIS_REGISTER_RAX ||
      ops[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE || ops[1].imm.value.u != 0)
    return NotFound("runtime.clone: no CMPQ AX, $0 after the SYSCALL");
  uint64_t jeq = post + in.length;
  ZyanU64 target = 0;
  if (!decode(jeq, &in, ops) || in.mnemonic != ZYDIS_MNEMONIC_JZ || ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
      !ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &ops[0], jeq, &target)))
    return NotFound("runtime.clone: no JEQ to the child");
  uint64_t child = target;
  // The parent's way out before it: nothing but the return value's store and RET.
  bool ret = false;
  for (uint64_t p = jeq + in.length; p < child;) {
    if (!decode(p, &in, ops) || !(in.mnemonic == ZYDIS_MNEMONIC_MOV || in.mnemonic == ZYDIS_MNEMONIC_RET))
      return NotFound("runtime.clone: the parent's return is not MOVL AX, ret(FP); RET");
    ret = in.mnemonic == ZYDIS_MNEMONIC_RET;
    p += in.length;
  }
  if (!ret) return NotFound("runtime.clone: JEQ does not skip the parent's RET");
  // The child switches to its stack first: MOVQ SI, SP.
  if (child <= jeq || !decode(child, &in, ops) || in.mnemonic != ZYDIS_MNEMONIC_MOV ||
      ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[0].reg.value != ZYDIS_REGISTER_RSP ||
      ops[1].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[1].reg.value != ZYDIS_REGISTER_RSI)
    return NotFound("runtime.clone: the child does not start with MOVQ SI, SP");
  CloneChild c;
  c.found = true;
  c.shared_lo = post;
  c.shared_hi = child;
  c.child_lo = child;
  c.child_hi = end;
  return c;
}

// arm64: fixed 4-byte instructions; the child's own code only.
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
      if ((in & 0x7F20001Fu) != 0x6B00001Fu) return NotFound("runtime.clone: no CMP after the SVC");  // SUBS ZR, ..
      step = 2;
    } else if (step == 2) {
      if ((in & 0xFF00001Fu) != 0x54000000u) return NotFound("runtime.clone: no BEQ after the SVC");  // B.EQ imm19
      int64_t imm19 = static_cast<int64_t>((in >> 5) & 0x7FFFF);
      if (imm19 & 0x40000) imm19 -= 0x80000;
      target = pc + static_cast<uint64_t>(imm19 * 4);
      step = 3;
    } else if (in == 0xD65F03C0u) {  // RET
      if (target != pc + 4) return NotFound("runtime.clone: BEQ does not skip the parent's RET");
      CloneChild c;
      c.found = true;
      c.child_lo = pc + 4;
      c.child_hi = entry + (code.size() & ~size_t{3});
      return c;
    } else if (++between > 2) {
      return NotFound("runtime.clone: no RET on the parent's path");
    }
  }
  return NotFound(step == 0 ? "runtime.clone: no SVC" : "runtime.clone: ends inside the parent's path");
}

}  // namespace

CloneChild FindCloneChildInCode(sym::Arch arch, uint64_t entry, std::string_view code) {
  if (arch == sym::Arch::kAmd64) return FindAmd64(entry, code);
  if (arch == sym::Arch::kArm64) return FindArm64(entry, code);
  return NotFound("not amd64 or arm64");
}

CloneChild FindCloneChild(const sym::Binary& bin) {
  const sym::GoPclntab* go = bin.go();
  if (go == nullptr) return NotFound("not Go");
  auto fn = go->FindFuncByName("runtime.clone");
  if (!fn || fn->end <= fn->entry || fn->end - fn->entry > 512) return NotFound("no function runtime.clone");
  auto code = bin.elf().ReadVaddr(fn->entry, static_cast<size_t>(fn->end - fn->entry));
  if (!code.ok()) return NotFound("runtime.clone unreadable");
  return FindCloneChildInCode(bin.elf().arch(), fn->entry, *code);
}

}  // namespace sb::unwinder
