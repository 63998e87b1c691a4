// amd64 probe sites, decoded with Zydis.
//
// Which instructions the kernel emulates for a uprobe (arch/x86/kernel/uprobes.c, 6.x): relative
// jmp, jcc and call, nop, and push of a register. Everything else is single-stepped out of
// line, which costs several times more per hit (measured: ~0.9 us against ~5 us here).
#include <Zydis/Zydis.h>

#include <cstdint>

#include "exitprobe/code_sites.h"

namespace sb::exitprobe {
namespace {

bool IsEmulated(const ZydisDecodedInstruction& insn, const uint8_t* bytes) {
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_NOP:
      return true;
    case ZYDIS_MNEMONIC_JMP:
    case ZYDIS_MNEMONIC_CALL:
      return insn.raw.imm[0].is_relative;  // rel8 / rel32, not indirect
    case ZYDIS_MNEMONIC_PUSH:
      // push r64: 0x50+r, with an optional REX.B prefix for r8-r15.
      if (insn.length == 1) return bytes[0] >= 0x50 && bytes[0] <= 0x57;
      if (insn.length == 2) return bytes[0] == 0x41 && bytes[1] >= 0x50 && bytes[1] <= 0x57;
      return false;
    default:
      break;
  }
  if (insn.meta.category == ZYDIS_CATEGORY_COND_BR && insn.mnemonic != ZYDIS_MNEMONIC_JRCXZ &&
      insn.mnemonic != ZYDIS_MNEMONIC_LOOP && insn.mnemonic != ZYDIS_MNEMONIC_LOOPE &&
      insn.mnemonic != ZYDIS_MNEMONIC_LOOPNE)
    return true;
  return false;
}

bool WritesSp(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops) {
  for (int i = 0; i < insn.operand_count; i++) {
    const auto& op = ops[i];
    if (op.type == ZYDIS_OPERAND_TYPE_REGISTER && (op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
        (op.reg.value == ZYDIS_REGISTER_RSP || op.reg.value == ZYDIS_REGISTER_ESP ||
         op.reg.value == ZYDIS_REGISTER_SP))
      return true;
  }
  return false;
}

bool IsControlTransfer(const ZydisDecodedInstruction& insn) {
  switch (insn.meta.category) {
    case ZYDIS_CATEGORY_COND_BR:
    case ZYDIS_CATEGORY_UNCOND_BR:
    case ZYDIS_CATEGORY_CALL:
    case ZYDIS_CATEGORY_RET:
    case ZYDIS_CATEGORY_INTERRUPT:
    case ZYDIS_CATEGORY_SYSCALL:
      return true;
    default:
      return false;
  }
}

std::string Format(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops, uint64_t vaddr) {
  ZydisFormatter fmt;
  if (!ZYAN_SUCCESS(ZydisFormatterInit(&fmt, ZYDIS_FORMATTER_STYLE_INTEL))) return "?";
  char buf[128];
  if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&fmt, &insn, ops, insn.operand_count_visible, buf,
                                                    sizeof(buf), vaddr, nullptr)))
    return "?";
  return buf;
}

// Go's stack check: `CMP RSP, [R14+16]` (small frames) or `CMP R12, [R14+16]` after
// `LEA R12, [RSP-N]` (large frames); the branch after it goes to morestack.
bool IsStackCheckCmp(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops) {
  if (insn.mnemonic != ZYDIS_MNEMONIC_CMP || insn.operand_count_visible != 2) return false;
  for (int i = 0; i < 2; i++)
    if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.base == ZYDIS_REGISTER_R14 &&
        ops[i].mem.disp.value == 16)
      return true;
  return false;
}

}  // namespace

CodeSites FindCodeSitesAmd64(std::string_view code, uint64_t vaddr, EntryPlacement placement) {
  CodeSites out;
  ZydisDecoder decoder;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
    out.decode_error = true;
    return out;
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(code.data());
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  bool entry_open = true;  // still in the straight-line prefix where SP has not changed
  bool saw_stack_check = false;
  size_t off = 0;
  int index = 0;
  while (off < code.size()) {
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, bytes + off, code.size() - off, &insn, ops))) {
      // Go pads between functions with INT3 (always decodable); anything else ends the scan.
      out.decode_error = true;
      break;
    }
    uint64_t pc = vaddr + off;
    if (index < 3 && IsStackCheckCmp(insn, ops)) out.g_stack_check = true;
    bool emulated = IsEmulated(insn, bytes + off);
    if (index == 0) {
      out.first = {pc, emulated, Format(insn, ops, pc)};
      out.entry = out.first;
      out.entry_how = "first instruction";
      if (placement == EntryPlacement::kFirstInstruction) entry_open = false;
    }
    if (entry_open && index < 8) {
      if (emulated) {
        if (index > 0) {
          out.entry = {pc, true, Format(insn, ops, pc)};
          out.entry_how = saw_stack_check && insn.meta.category == ZYDIS_CATEGORY_COND_BR
                              ? "stack-check branch"
                              : "first emulated instruction";
        } else {
          out.entry_how = "first instruction (emulated)";
        }
        entry_open = false;
      } else if (WritesSp(insn, ops) || IsControlTransfer(insn)) {
        entry_open = false;
      } else if (IsStackCheckCmp(insn, ops)) {
        saw_stack_check = true;
      }
    } else {
      entry_open = false;
    }
    if (insn.meta.category == ZYDIS_CATEGORY_RET) out.rets.push_back({pc, false, Format(insn, ops, pc)});
    off += insn.length;
    index++;
  }
  return out;
}

CodeSites FindCodeSites(sym::Arch arch, std::string_view code, uint64_t vaddr, EntryPlacement placement) {
  if (arch == sym::Arch::kArm64) return FindCodeSitesArm64(code, vaddr, placement);
  return FindCodeSitesAmd64(code, vaddr, placement);
}

}  // namespace sb::exitprobe
