#include "unwinder/clone_child.h"

#include <Zydis/Zydis.h>

namespace sb::unwinder {

CloneChild FindCloneChild(const sym::Binary& bin) {
  CloneChild c;
  const sym::GoPclntab* go = bin.go();
  if (go == nullptr || bin.elf().arch() != sym::Arch::kAmd64) {
    c.why = "not amd64 Go";
    return c;
  }
  auto fn = go->FindFuncByName("runtime.clone");
  if (!fn || fn->end <= fn->entry || fn->end - fn->entry > 512) {
    c.why = "no function runtime.clone";
    return c;
  }
  auto code = bin.elf().ReadVaddr(fn->entry, static_cast<size_t>(fn->end - fn->entry));
  ZydisDecoder dec;
  if (!code.ok() || !ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
    c.why = "runtime.clone unreadable";
    return c;
  }
  auto decode = [&](uint64_t pc, ZydisDecodedInstruction* in, ZydisDecodedOperand* ops) {
    if (pc < fn->entry || pc >= fn->end) return false;
    size_t off = static_cast<size_t>(pc - fn->entry);
    return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code->data() + off, code->size() - off, in, ops));
  };
  ZydisDecodedInstruction in;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  uint64_t pc = fn->entry;
  // The first SYSCALL (clone(2) itself), linear from the entry.
  while (decode(pc, &in, ops) && in.mnemonic != ZYDIS_MNEMONIC_SYSCALL) pc += in.length;
  if (pc >= fn->end || in.mnemonic != ZYDIS_MNEMONIC_SYSCALL) {
    c.why = "runtime.clone: no SYSCALL";
    return c;
  }
  uint64_t post = pc + in.length;
  // CMPQ AX, $0 ; JEQ child
  if (!decode(post, &in, ops) || in.mnemonic != ZYDIS_MNEMONIC_CMP || in.operand_count_visible != 2 ||
      ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[0].reg.value != ZYDIS_REGISTER_RAX ||
      ops[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE || ops[1].imm.value.u != 0) {
    c.why = "runtime.clone: no CMPQ AX, $0 after the SYSCALL";
    return c;
  }
  uint64_t jeq = post + in.length, child = 0;
  ZyanU64 target = 0;
  if (!decode(jeq, &in, ops) || in.mnemonic != ZYDIS_MNEMONIC_JZ || ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
      !ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &ops[0], jeq, &target))) {
    c.why = "runtime.clone: no JEQ to the child";
    return c;
  }
  child = target;
  // The parent's way out before it: nothing but the return value's store and RET.
  for (uint64_t p = jeq + in.length; p < child;) {
    if (!decode(p, &in, ops) || !(in.mnemonic == ZYDIS_MNEMONIC_MOV || in.mnemonic == ZYDIS_MNEMONIC_RET)) {
      c.why = "runtime.clone: the parent's return is not MOVL AX, ret(FP); RET";
      return c;
    }
    p += in.length;
  }
  // The child switches to its stack first: MOVQ SI, SP.
  if (child <= jeq || !decode(child, &in, ops) || in.mnemonic != ZYDIS_MNEMONIC_MOV ||
      ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[0].reg.value != ZYDIS_REGISTER_RSP ||
      ops[1].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[1].reg.value != ZYDIS_REGISTER_RSI) {
    c.why = "runtime.clone: the child does not start with MOVQ SI, SP";
    return c;
  }
  c.found = true;
  c.shared_lo = post;
  c.shared_hi = child;
  c.child_lo = child;
  c.child_hi = fn->end;
  return c;
}

}  // namespace sb::unwinder
