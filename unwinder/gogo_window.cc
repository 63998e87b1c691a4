#include "unwinder/gogo_window.h"

#include <Zydis/Zydis.h>

namespace sb::unwinder {
namespace {

bool IsReg(const ZydisDecodedOperand& op, ZydisRegister r) { return op.type == ZYDIS_OPERAND_TYPE_REGISTER && op.reg.value == r; }

}  // namespace

GogoWindow FindGogoWindow(const sym::Binary& bin) {
  GogoWindow w;
  const sym::GoPclntab* go = bin.go();
  if (go == nullptr || bin.elf().arch() != sym::Arch::kAmd64) {
    w.why = "not amd64 Go";
    return w;
  }
  auto fn = go->FindFuncByName("gogo");  // gogo<>: the body that runtime.gogo jumps to
  if (!fn || fn->end <= fn->entry) {
    w.why = "no function gogo";
    return w;
  }
  auto code = bin.elf().ReadVaddr(fn->entry, static_cast<size_t>(std::min<uint64_t>(fn->end - fn->entry, 128)));
  ZydisDecoder dec;
  if (!code.ok() || !ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
    w.why = "gogo unreadable";
    return w;
  }
  // gobuf's base register: the one SP is loaded from.
  size_t off = 0;
  int step = 0;  // 0: want the TLS store, 1: the SP load, 2: the BP load, 3: JMP reg
  ZydisRegister base = ZYDIS_REGISTER_NONE;
  while (off < code->size() && step < 4) {
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code->data() + off, code->size() - off, &in, ops))) break;
    uint64_t pc = fn->entry + off, next = pc + in.length;
    off += in.length;
    bool mov = in.mnemonic == ZYDIS_MNEMONIC_MOV && in.operand_count_visible == 2;
    if (step == 0) {
      // The first instruction must store g to the TLS slot (FS-relative); anything else: unknown.
      if (!(mov && ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[0].mem.segment == ZYDIS_REGISTER_FS)) break;
      w.g0_lo = next;
      step = 1;
    } else if (step == 1) {
      if (mov && IsReg(ops[0], ZYDIS_REGISTER_RSP) && ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY) {
        base = ops[1].mem.base;
        w.g0_hi = next;  // the load itself has not run at its own pc
        w.gp_lo = next;
        step = 2;
      } else if (mov && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[0].reg.value == ZYDIS_REGISTER_R14) {
        // MOVQ DX, R14 (the g register): changes nothing for the walk.
      } else {
        break;
      }
    } else if (step == 2) {
      if (mov && IsReg(ops[0], ZYDIS_REGISTER_RBP) && ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[1].mem.base == base) {
        w.bp_loaded = next;
        step = 3;
      } else if (in.mnemonic == ZYDIS_MNEMONIC_JMP || in.mnemonic == ZYDIS_MNEMONIC_CALL ||
                 in.mnemonic == ZYDIS_MNEMONIC_RET) {
        break;
      }
    } else if (in.mnemonic == ZYDIS_MNEMONIC_JMP) {
      if (!(in.operand_count_visible == 1 && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER)) break;
      w.gp_hi = next;  // at the JMP itself gp has not resumed yet
      step = 4;
    } else if (in.mnemonic == ZYDIS_MNEMONIC_CALL || in.mnemonic == ZYDIS_MNEMONIC_RET) {
      break;
    }
  }
  if (step != 4) {
    static const char* kWant[] = {"MOVQ g, FS:slot first", "MOVQ gobuf_sp(REG), SP", "MOVQ gobuf_bp(REG), BP",
                                  "JMP REG"};
    w.why = std::string("gogo: no ") + kWant[step < 4 ? step : 3];
    w = GogoWindow{false, 0, 0, 0, 0, 0, w.why};
    return w;
  }
  w.found = true;
  return w;
}

}  // namespace sb::unwinder
