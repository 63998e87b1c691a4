#include "unwinder/systemstack_window.h"

#include <Zydis/Zydis.h>

#include <cstring>

#include "unwinder/arm64_decoder.h"

namespace sb::unwinder {
namespace {

bool WritesReg(const ZydisDecodedInstruction& in, const ZydisDecodedOperand& op0, ZydisRegister r) {
  return in.operand_count_visible >= 1 && op0.type == ZYDIS_OPERAND_TYPE_REGISTER && op0.reg.value == r;
}

bool TlsStore(const ZydisDecodedInstruction& in, const ZydisDecodedOperand* ops) {
  return in.mnemonic == ZYDIS_MNEMONIC_MOV && in.operand_count_visible == 2 && ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY &&
         ops[0].mem.segment == ZYDIS_REGISTER_FS && ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER;
}

bool Branch(const ZydisDecodedInstruction& in) { return in.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE; }

bool A64Branch(const A64Insn& in) {
  return in.op == A64Op::kB || in.op == A64Op::kBL || in.op == A64Op::kBLR || in.op == A64Op::kBR ||
         in.op == A64Op::kRet || in.op == A64Op::kBCond;
}

// `MOVD Rn, RSP` (ADD SP, Rn, #0) from a register just loaded from memory.
bool A64SpLoad(const A64Insn& in, const bool* loaded) {
  return in.op == A64Op::kAddImm && in.rd == 31 && in.imm == 0 && in.rn >= 0 && in.rn < 31 && loaded[in.rn];
}

// arm64: the two windows of runtime.systemstack or runtime.asmcgocall (`cgo`), each opened by
// a `BL runtime.save_g` after g (R28) is set and closed by the move into RSP. asmcgocall aligns
// SP on g0 before its call (MOVD RSP, R13; SUB; MOVD R13, RSP), keeps the C result in R9 around
// its way back (MOVD R0, R9 before the load of g), and computes the goroutine's SP from its
// stack top and the saved depth (two loads, SUB, MOVD R9, R0, then MOVD R5, RSP).
SystemstackWindow FindArm64(const sym::Binary& bin, const sym::GoPclntab& go, const char* fn_name, bool cgo) {
  SystemstackWindow w;
  auto fn = go.FindFuncByName(fn_name);
  auto save = go.FindFuncByName("gosave_systemstack_switch");
  if (!fn || fn->end <= fn->entry || !save) {
    w.why = fn ? "no function gosave_systemstack_switch" : std::string("no function ") + fn_name;
    return w;
  }
  auto code = bin.elf().ReadVaddr(fn->entry, static_cast<size_t>(std::min<uint64_t>(fn->end - fn->entry, 256)));
  if (!code.ok()) {
    w.why = std::string(fn_name) + " unreadable";
    return w;
  }
  // 0: want BL gosave_systemstack_switch; 1: MOVD R5, R28 right after it; 2: BL save_g right
  // after; 3: loads, then MOVD Rn, RSP; 4: BL (Rn) (fn), nothing writing SP or branching
  // before it (asmcgocall: SP from a register); 5: loads (asmcgocall: and register moves), the
  // last into R28; 6: BL save_g (the same); 7: a load, then MOVD Rn, RSP (asmcgocall: Rn
  // computed from loads).
  int step = 0;
  bool loaded[32] = {};
  for (size_t off = 0; off + 4 <= code->size() && step < 8; off += 4) {
    uint64_t next = fn->entry + off + 4;
    A64Insn in = DecodeA64At(code->data(), off, fn->entry);
    bool load = in.op == A64Op::kLoad && in.index == A64Index::kOffset && in.rt >= 0 && in.rt < 31;
    if (step == 0) {
      if (in.op == A64Op::kBL && in.target == save->entry) step = 1;
    } else if (step == 1) {
      if (!(in.op == A64Op::kMovReg && in.rd == 28)) break;
      w.g0_lo = next;
      step = 2;
    } else if (step == 2 || step == 6) {
      auto callee = in.op == A64Op::kBL ? go.FindFunc(in.target) : std::nullopt;
      if (!callee || callee->entry != in.target || (step == 6 && callee->entry != w.save_g_lo)) break;
      w.save_g_lo = callee->entry;
      w.save_g_hi = callee->end;
      std::memset(loaded, 0, sizeof(loaded));
      step++;
    } else if (step == 3 || step == 7) {
      bool computed = cgo && step == 7 && in.op == A64Op::kOther && in.writes_rd && in.rd >= 0 && in.rd < 28;
      if (A64SpLoad(in, loaded)) {
        (step == 3 ? w.g0_hi : w.gp_hi) = next;  // the SP load has not run at its own pc
        step++;
      } else if (load && in.rt != 28 && in.rt != 29 && in.rt != 30) {
        loaded[in.rt] = true;
      } else if (computed) {
        loaded[in.rd] = true;  // SUB R6, R5, R5: the stack top less the saved depth
      } else if (cgo && step == 7 && in.op == A64Op::kMovReg && in.rd >= 0 && in.rd < 28) {
        loaded[in.rd] = false;  // MOVD R9, R0: the C result back, not the SP
      } else {
        break;
      }
    } else if (step == 4) {
      bool sp_write = in.op == A64Op::kAddImm && in.rd == 31 && in.rd_is_sp;
      if (in.op == A64Op::kBLR) step = 5;
      else if (A64Branch(in) || (sp_write && !(cgo && in.imm == 0 && in.rn >= 0 && in.rn < 28))) break;
    } else if (step == 5) {
      if (!load && !(cgo && in.op == A64Op::kMovReg && in.rd >= 0 && in.rd < 28)) break;
      if (load && in.rt == 28) {
        w.gp_lo = next;
        step = 6;
      }
    }
  }
  if (step != 8) {
    static const char* kWant[] = {"BL gosave_systemstack_switch",
                                  "MOVD R5, R28 right after it",
                                  "BL runtime.save_g after MOVD R5, R28",
                                  "MOVD gobuf_sp(R28), Rn; MOVD Rn, RSP",
                                  "BL (Rn)",
                                  "MOVD m_curg(Rn), R28 after the call",
                                  "BL runtime.save_g after it",
                                  "MOVD gobuf_sp(R28), Rn; MOVD Rn, RSP after it"};
    w = SystemstackWindow{};
    w.why = std::string(fn_name) + ": no " + kWant[step];
    return w;
  }
  w.found = true;
  return w;
}

// amd64: the two windows of runtime.systemstack or runtime.asmcgocall, which switch the same way
// (gosave_systemstack_switch, then g and SP one instruction apart each way); asmcgocall aligns
// SP on g0 and saves g and the stack depth there before its call, and restores SP from a
// register. `cgo` selects asmcgocall's shape.
SystemstackWindow FindAmd64(const sym::Binary& bin, const sym::GoPclntab& go, const char* fn_name, bool cgo) {
  SystemstackWindow w;
  auto fn = go.FindFuncByName(fn_name);
  auto save = go.FindFuncByName("gosave_systemstack_switch");
  if (!fn || fn->end <= fn->entry || !save) {
    w.why = fn ? "no function gosave_systemstack_switch" : std::string("no function ") + fn_name;
    return w;
  }
  auto code = bin.elf().ReadVaddr(fn->entry, static_cast<size_t>(std::min<uint64_t>(fn->end - fn->entry, 256)));
  ZydisDecoder dec;
  if (!code.ok() || !ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
    w.why = std::string(fn_name) + " unreadable";
    return w;
  }
  // 0: want CALL gosave_systemstack_switch; 1: the TLS store of g0 right after it; 2: the SP
  // load (only register moves before it); 3: the call on g0 (systemstack: CALL reg, fn;
  // asmcgocall: CALL AX or its landing pad, after SUBQ/ANDQ of SP); 4: the TLS store of curg;
  // 5: the SP load right after it (no branch between; asmcgocall's from a register).
  int step = 0;
  size_t off = 0;
  while (off < code->size() && step < 6) {
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code->data() + off, code->size() - off, &in, ops))) break;
    uint64_t pc = fn->entry + off, next = pc + in.length;
    off += in.length;
    bool mov = in.mnemonic == ZYDIS_MNEMONIC_MOV && in.operand_count_visible == 2;
    bool writes_sp = WritesReg(in, ops[0], ZYDIS_REGISTER_RSP);
    bool call = in.mnemonic == ZYDIS_MNEMONIC_CALL;
    if (step == 0) {
      if (call && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
          next + static_cast<uint64_t>(ops[0].imm.value.s) == save->entry)
        step = 1;
    } else if (step == 1) {
      if (!TlsStore(in, ops)) break;
      w.g0_lo = next;
      step = 2;
    } else if (step == 2) {
      if (mov && writes_sp) {
        w.g0_hi = next;  // the load has not run at its own pc
        step = 3;
      } else if (!mov || Branch(in) || ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER) {
        break;  // only MOVQ DX, R14 and the load of g0.sched.sp into a scratch register
      }
    } else if (step == 3) {
      bool sp_arith = writes_sp && (in.mnemonic == ZYDIS_MNEMONIC_SUB || in.mnemonic == ZYDIS_MNEMONIC_AND) &&
                      ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE;
      if (call && (cgo || ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER)) step = 4;
      else if (Branch(in) || (writes_sp && !(cgo && sp_arith))) break;
    } else if (step == 4) {
      if (TlsStore(in, ops)) {
        w.gp_lo = next;
        step = 5;
      } else if (Branch(in) || writes_sp) {
        break;
      }
    } else {
      if (mov && writes_sp && ops[1].type == (cgo ? ZYDIS_OPERAND_TYPE_REGISTER : ZYDIS_OPERAND_TYPE_MEMORY)) {
        w.gp_hi = next;
        step = 6;
      } else {
        break;
      }
    }
  }
  if (step != 6) {
    static const char* kWant[] = {"CALL gosave_systemstack_switch",
                                  "MOVQ g0, FS:slot after it",
                                  "MOVQ ..., SP after the TLS store",
                                  "CALL on g0",
                                  "MOVQ curg, FS:slot after the call",
                                  "MOVQ ..., SP right after it"};
    w = SystemstackWindow{};
    w.why = std::string(fn_name) + ": no " + kWant[step];
    return w;
  }
  w.found = true;
  return w;
}

// The same dispatch for both functions: they switch the same way on each architecture.
SystemstackWindow FindForArch(const sym::Binary& bin, const char* fn_name, bool cgo) {
  const sym::GoPclntab* go = bin.go();
  if (go != nullptr && bin.elf().arch() == sym::Arch::kArm64) return FindArm64(bin, *go, fn_name, cgo);
  if (go != nullptr && bin.elf().arch() == sym::Arch::kAmd64) return FindAmd64(bin, *go, fn_name, cgo);
  SystemstackWindow w;
  w.why = "not amd64 or arm64 Go";
  return w;
}

}  // namespace

SystemstackWindow FindSystemstackWindow(const sym::Binary& bin) {
  return FindForArch(bin, "runtime.systemstack", /*cgo=*/false);
}

SystemstackWindow FindAsmcgocallWindow(const sym::Binary& bin) {
  return FindForArch(bin, "runtime.asmcgocall", /*cgo=*/true);
}

}  // namespace sb::unwinder
