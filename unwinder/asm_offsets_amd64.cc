// amd64 half of the asm offset derivation: Zydis-decoded instructions lifted to asm_trace
// operations, and the amd64 register conventions of a trace.
#include <Zydis/Zydis.h>

#include "unwinder/asm_lift.h"

namespace sb::unwinder {
namespace {

using asmtrace::Insn;
using asmtrace::kSP;
using asmtrace::kTmp;
using asmtrace::Op;
using asmtrace::OpKind;

constexpr int kRBP = 5;
constexpr int kR14 = 14;  // g in Go's internal ABI

// Zydis register -> trace register (RAX..R15 in encoding order, RSP -> kSP); -1 otherwise.
int Reg(ZydisRegister r) {
  if (r == ZYDIS_REGISTER_NONE) return -1;
  ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
  if (full < ZYDIS_REGISTER_RAX || full > ZYDIS_REGISTER_R15) return -1;
  int n = full - ZYDIS_REGISTER_RAX;
  return n == 4 ? kSP : n;
}

// Adds the ops that compute a memory operand's address into (base, index, imm); false when the
// address is not modelled (scaled index, segment other than FS handled by callers).
bool MemAddress(const ZydisDecodedOperand& m, uint64_t next_pc, std::vector<Op>* ops, int* base,
                int* index, int64_t* imm) {
  *imm = m.mem.disp.has_displacement ? m.mem.disp.value : 0;
  *index = -1;
  if (m.mem.base == ZYDIS_REGISTER_RIP) {
    Op c{OpKind::kConst};
    c.dst = kTmp;
    c.imm = static_cast<int64_t>(next_pc + static_cast<uint64_t>(*imm));
    ops->push_back(c);
    *base = kTmp;
    *imm = 0;
    return true;
  }
  if (m.mem.index != ZYDIS_REGISTER_NONE && m.mem.scale > 1) return false;
  *base = Reg(m.mem.base);
  if (m.mem.index != ZYDIS_REGISTER_NONE) *index = Reg(m.mem.index);
  if (*base < 0 && m.mem.base != ZYDIS_REGISTER_NONE) return false;
  if (*base < 0) {  // absolute address
    Op c{OpKind::kConst};
    c.dst = kTmp;
    c.imm = *imm;
    ops->push_back(c);
    *base = kTmp;
    *imm = 0;
  }
  return true;
}

// Clobbers every register the instruction writes (the conservative default).
void ClobberWritten(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops, std::vector<Op>* out) {
  for (int i = 0; i < insn.operand_count; i++) {
    if (ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER) continue;
    if (!(ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)) continue;
    int r = Reg(ops[i].reg.value);
    if (r < 0) continue;
    Op c{OpKind::kClobber};
    c.dst = r;
    out->push_back(c);
  }
}

void Lift(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops, uint64_t pc, Insn* out) {
  uint64_t next = pc + insn.length;
  const int nvis = insn.operand_count_visible;
  auto& o = out->ops;
  const ZydisDecodedOperand* a = nvis > 0 ? &ops[0] : nullptr;
  const ZydisDecodedOperand* b = nvis > 1 ? &ops[1] : nullptr;
  auto is_reg = [](const ZydisDecodedOperand* x) { return x && x->type == ZYDIS_OPERAND_TYPE_REGISTER; };
  auto is_mem = [](const ZydisDecodedOperand* x) { return x && x->type == ZYDIS_OPERAND_TYPE_MEMORY; };
  auto is_imm = [](const ZydisDecodedOperand* x) { return x && x->type == ZYDIS_OPERAND_TYPE_IMMEDIATE; };
  auto imm_of = [](const ZydisDecodedOperand* x) {
    return x->imm.is_signed ? x->imm.value.s : static_cast<int64_t>(x->imm.value.u);
  };
  auto fs = [](const ZydisDecodedOperand* x) { return x->mem.segment == ZYDIS_REGISTER_FS; };
  // Emits a load of memory operand m into register dst (FS-relative: the TLS g slot).
  auto load = [&](const ZydisDecodedOperand* m, int dst) {
    if (fs(m)) {
      Op t{OpKind::kTlsLoad};
      t.dst = dst;
      o.push_back(t);
      return;
    }
    Op l{OpKind::kLoad};
    l.dst = dst;
    l.size = m->size / 8;
    if (!MemAddress(*m, next, &o, &l.base, &l.index, &l.imm)) {
      Op c{OpKind::kClobber};
      c.dst = dst;
      o.push_back(c);
      return;
    }
    o.push_back(l);
  };

  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_MOV:
    case ZYDIS_MNEMONIC_MOVZX:
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD:
      if (is_reg(a) && is_mem(b)) {
        load(b, Reg(a->reg.value));
        return;
      }
      if (is_mem(a) && (is_reg(b) || is_imm(b))) {
        int src = is_reg(b) ? Reg(b->reg.value) : -1;
        if (fs(a)) {
          Op t{OpKind::kTlsStore};
          t.src = src;
          t.imm2 = is_imm(b) ? imm_of(b) : 0;
          o.push_back(t);
          return;
        }
        Op s{OpKind::kStore};
        s.src = src;
        s.imm2 = is_imm(b) ? imm_of(b) : 0;
        s.size = a->size / 8;
        if (is_reg(b) && src < 0) break;  // a store of a vector register: not modelled
        if (MemAddress(*a, next, &o, &s.base, &s.index, &s.imm)) o.push_back(s);
        return;
      }
      if (is_reg(a) && is_reg(b) && insn.mnemonic == ZYDIS_MNEMONIC_MOV) {
        Op m{OpKind::kMov};
        m.dst = Reg(a->reg.value);
        m.src = Reg(b->reg.value);
        if (m.dst >= 0 && m.src >= 0) {
          o.push_back(m);
          return;
        }
      }
      if (is_reg(a) && is_imm(b)) {
        Op c{OpKind::kConst};
        c.dst = Reg(a->reg.value);
        c.imm = imm_of(b);
        o.push_back(c);
        return;
      }
      break;
    case ZYDIS_MNEMONIC_LEA:
      if (is_reg(a) && is_mem(b)) {
        Op add{OpKind::kAddImm};
        add.dst = Reg(a->reg.value);
        int index = -1;
        if (MemAddress(*b, next, &o, &add.src, &index, &add.imm) && index < 0) {
          o.push_back(add);
          return;
        }
      }
      break;
    case ZYDIS_MNEMONIC_ADD:
    case ZYDIS_MNEMONIC_SUB:
      if (is_reg(a) && is_imm(b) && Reg(a->reg.value) >= 0) {
        Op add{OpKind::kAddImm};
        add.dst = add.src = Reg(a->reg.value);
        add.imm = insn.mnemonic == ZYDIS_MNEMONIC_ADD ? imm_of(b) : -imm_of(b);
        o.push_back(add);
        return;
      }
      break;
    case ZYDIS_MNEMONIC_PUSH: {
      Op dec{OpKind::kAddImm};
      dec.dst = dec.src = kSP;
      dec.imm = -8;
      o.push_back(dec);
      Op s{OpKind::kStore};
      s.base = kSP;
      s.src = is_reg(a) ? Reg(a->reg.value) : -1;
      s.imm2 = is_imm(a) ? imm_of(a) : 0;
      if (is_mem(a)) {
        s.kind = OpKind::kClobber;  // PUSH mem: contents unknown; keep SP right
        s.dst = kTmp;
      }
      o.push_back(s);
      return;
    }
    case ZYDIS_MNEMONIC_POP: {
      Op l{OpKind::kLoad};
      l.base = kSP;
      l.dst = is_reg(a) ? Reg(a->reg.value) : -1;
      o.push_back(l);
      Op inc{OpKind::kAddImm};
      inc.dst = inc.src = kSP;
      inc.imm = 8;
      o.push_back(inc);
      return;
    }
    case ZYDIS_MNEMONIC_CMP:
      if (a && b) {
        int x = -1, y = -1;
        if (is_mem(a)) {
          load(a, kTmp);
          x = kTmp;
        } else if (is_reg(a)) {
          x = Reg(a->reg.value);
        }
        if (is_mem(b)) {
          load(b, kTmp);
          y = kTmp;
        } else if (is_reg(b)) {
          y = Reg(b->reg.value);
        }
        if (x >= 0 && y >= 0) {
          Op c{OpKind::kCmp};
          c.src = x;
          c.dst = y;
          o.push_back(c);
        }
        return;
      }
      break;
    case ZYDIS_MNEMONIC_CALL:
    case ZYDIS_MNEMONIC_JMP: {
      bool call = insn.mnemonic == ZYDIS_MNEMONIC_CALL;
      if (is_imm(a)) {
        Op j{call ? OpKind::kCall : OpKind::kJump};
        j.target = next + static_cast<uint64_t>(imm_of(a));
        o.push_back(j);
        return;
      }
      Op j{call ? OpKind::kCallIndirect : OpKind::kJumpIndirect};
      if (is_reg(a)) {
        j.src = Reg(a->reg.value);
      } else if (is_mem(a)) {
        load(a, kTmp);
        j.src = kTmp;
      }
      o.push_back(j);
      return;
    }
    case ZYDIS_MNEMONIC_RET:
    case ZYDIS_MNEMONIC_INT3:
    case ZYDIS_MNEMONIC_UD2:
    case ZYDIS_MNEMONIC_HLT:
      o.push_back(Op{OpKind::kStop});
      return;
    default:
      if (insn.meta.category == ZYDIS_CATEGORY_COND_BR && is_imm(a)) {
        Op j{OpKind::kCondJump};
        j.target = next + static_cast<uint64_t>(imm_of(a));
        o.push_back(j);
        return;
      }
      break;
  }
  ClobberWritten(insn, ops, &o);
}

}  // namespace

int Amd64ArgReg(int n) {
  static constexpr int kArgs[] = {0 /*AX*/, 3 /*BX*/, 1 /*CX*/, 7 /*DI*/, 6 /*SI*/, 8, 9, 10, 11};
  return n >= 0 && n < 9 ? kArgs[n] : -1;
}

std::vector<Insn> LiftAmd64(std::string_view code, uint64_t address, size_t max_insns) {
  std::vector<Insn> out;
  ZydisDecoder decoder;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) return out;
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  size_t off = 0;
  while (off < code.size() && out.size() < max_insns) {
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code.data() + off, code.size() - off, &insn, ops))) break;
    Insn li;
    li.pc = address + off;
    li.length = insn.length;
    Lift(insn, ops, li.pc, &li);
    out.push_back(std::move(li));
    off += insn.length;
  }
  return out;
}

asmtrace::TraceConfig Amd64Config(bool go_code) {
  asmtrace::TraceConfig c;
  c.go_code = go_code;
  c.fp_reg = kRBP;
  c.g_reg = kR14;
  c.arg_reg = 0;
  c.regs.push_back({kR14, asmtrace::Named("g")});
  c.regs.push_back({kRBP, asmtrace::Named("fp0")});
  for (int i = 0; i < 9; i++) c.regs.push_back({Amd64ArgReg(i), asmtrace::Named("arg" + std::to_string(i))});
  c.stack.push_back({0, asmtrace::Named("ret")});
  c.tls = asmtrace::Named("g");
  return c;
}

}  // namespace sb::unwinder
