#include "unwinder/gogo_window.h"

#include <Zydis/Zydis.h>

#include <cstring>
#include <map>

#include "unwinder/arm64_decoder.h"
#include "unwinder/call_sites.h"

namespace sb::unwinder {
namespace {

bool IsReg(const ZydisDecodedOperand& op, ZydisRegister r) { return op.type == ZYDIS_OPERAND_TYPE_REGISTER && op.reg.value == r; }

GogoWindow Fail(const std::string& why) {
  GogoWindow w;
  w.why = why;
  return w;
}

GogoWindow FindArm64(const sym::Binary& bin, const sym::GoPclntab& go) {
  GogoWindow w;
  auto fn = go.FindFuncByName("gogo");
  auto wrapper = go.FindFuncByName("runtime.gogo");
  if (!fn || fn->end <= fn->entry || !wrapper) return Fail("no function gogo / runtime.gogo");
  auto code = bin.elf().ReadVaddr(fn->entry, static_cast<size_t>(std::min<uint64_t>(fn->end - fn->entry, 128)));
  if (!code.ok()) return Fail("gogo unreadable");
  // 0: MOVD R6, R28 first; 1: BL save_g right after; 2: loads, then MOVD Rn, RSP; 3: the R29
  // and LR loads from gobuf's base register, then B (Rn).
  int step = 0, sp_src = -1, base = -1;
  int loaded_from[32];
  for (int& r : loaded_from) r = -1;
  for (size_t off = 0; off + 4 <= code->size() && step < 4; off += 4) {
    uint64_t pc = fn->entry + off, next = pc + 4;
    A64Insn in = DecodeA64At(code->data(), off, fn->entry);
    if (step == 0) {
      if (!(in.op == A64Op::kMovReg && in.rd == 28)) break;
      w.g0_lo = next;
      step = 1;
    } else if (step == 1) {
      if (in.op != A64Op::kBL) break;
      auto save_g = go.FindFunc(in.target);
      if (!save_g || save_g->entry != in.target) break;
      w.save_g_lo = save_g->entry;
      w.save_g_hi = save_g->end;
      step = 2;
    } else if (step == 2) {
      if (in.op == A64Op::kLoad && in.rt >= 0 && in.rt < 28 && in.index == A64Index::kOffset && in.rn != 31) {
        loaded_from[in.rt] = in.rn;
      } else if (in.op == A64Op::kAddImm && in.rd == 31 && in.imm == 0 && in.rn >= 0 && in.rn < 31 &&
                 loaded_from[in.rn] >= 0) {
        sp_src = in.rn;
        base = loaded_from[sp_src];
        w.g0_hi = next;  // MOVD R0, RSP has not run at its own pc
        w.gp_lo = next;
        step = 3;
      } else {
        break;
      }
    } else if (in.op == A64Op::kLoad && in.rn == base && (in.rt == 29 || in.rt == 30)) {
      (in.rt == 29 ? w.bp_loaded : w.lr_loaded) = next;
    } else if (in.op == A64Op::kBR) {
      if (w.bp_loaded == 0 || w.lr_loaded == 0) break;
      w.gp_hi = next;  // at the branch itself gp has not resumed yet
      step = 4;
    } else if (in.op == A64Op::kB || in.op == A64Op::kBL || in.op == A64Op::kBLR || in.op == A64Op::kRet ||
               in.op == A64Op::kBCond || (in.op == A64Op::kLoad && (in.rt == 29 || in.rt == 30))) {
      break;
    }
  }
  (void)sp_src;
  if (step != 4) {
    static const char* kWant[] = {"MOVD R6, R28 first", "BL runtime.save_g after it", "MOVD gobuf_sp(Rn), Rm; MOVD Rm, RSP",
                                  "R29 and LR loads from gobuf, then B (Rn)"};
    return Fail(std::string("gogo: no ") + kWant[step < 4 ? step : 3]);
  }
  // The callers of runtime.gogo, by function: those with one call only.
  std::map<uint64_t, std::vector<uint64_t>> by_fn;
  for (uint64_t site : ReturnSitesOfCallsTo(bin, wrapper->entry)) {
    if (auto caller = go.FindFunc(site - 4)) by_fn[caller->entry].push_back(site);
  }
  for (const auto& [entry, sites] : by_fn)
    if (sites.size() == 1) w.callers.push_back(GogoCaller{entry, sites[0]});
  w.found = true;
  return w;
}

}  // namespace

GogoWindow FindGogoWindow(const sym::Binary& bin) {
  GogoWindow w;
  const sym::GoPclntab* go = bin.go();
  if (go != nullptr && bin.elf().arch() == sym::Arch::kArm64) return FindArm64(bin, *go);
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
      // The first instruction must store g to the TLS slot (FS-relative), after the slot's
      // offset in a register in PIE builds (MOVQ $-8, CX; MOVQ DX, FS:0(CX)); else: unknown.
      if (mov && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) continue;
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
    return Fail(w.why);
  }
  w.found = true;
  return w;
}

}  // namespace sb::unwinder
