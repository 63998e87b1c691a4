// arm64 half of the asm offset derivation: arm64_decoder instructions lifted to asm_trace
// operations, and the arm64 register conventions of a trace.
#include <cstring>

#include "unwinder/arm64_decoder.h"
#include "unwinder/asm_lift.h"

namespace sb::unwinder {
namespace {

using asmtrace::Insn;
using asmtrace::kSP;
using asmtrace::kZR;
using asmtrace::Op;
using asmtrace::OpKind;

constexpr int kFP = 29, kLR = 30, kG = 28;

int R(int n, bool sp) { return n == 31 ? (sp ? kSP : kZR) : n; }

// Loads and stores, with pre/post-index writeback as a separate SP/base update.
void LiftMemory(const A64Insn& d, std::vector<Op>* o) {
  bool load = d.op == A64Op::kLoad || d.op == A64Op::kLoadPair;
  bool pair = d.op == A64Op::kLoadPair || d.op == A64Op::kStorePair;
  int base = R(d.rn, true);
  int64_t off = d.index == A64Index::kOffset ? d.imm : 0;
  auto wb = [&]() {
    Op add{OpKind::kAddImm};
    add.dst = add.src = base;
    add.imm = d.imm;
    o->push_back(add);
  };
  if (d.index == A64Index::kPre) wb();
  for (int i = 0; i < (pair ? 2 : 1); i++) {
    int rt = R(i == 0 ? d.rt : d.rt2, false);
    Op m{load ? OpKind::kLoad : OpKind::kStore};
    m.base = base;
    m.index = d.rm >= 0 ? R(d.rm, false) : -1;
    m.imm = off + i * d.size;
    m.size = d.size;
    if (load) m.dst = rt == kZR ? -1 : rt;
    else m.src = rt;
    o->push_back(m);
  }
  if (d.index == A64Index::kPost) wb();
}

void Lift(const A64Insn& d, Insn* out) {
  auto& o = out->ops;
  switch (d.op) {
    case A64Op::kLoad:
    case A64Op::kStore:
    case A64Op::kLoadPair:
    case A64Op::kStorePair: LiftMemory(d, &o); return;
    case A64Op::kAddImm: {
      Op add{OpKind::kAddImm};
      add.dst = R(d.rd, d.rd_is_sp);
      add.src = R(d.rn, true);
      add.imm = d.imm;
      o.push_back(add);
      return;
    }
    case A64Op::kMovReg: {
      Op m{OpKind::kMov};
      m.dst = R(d.rd, false);
      m.src = R(d.rm, false);
      o.push_back(m);
      return;
    }
    case A64Op::kMovWide: {
      Op m{d.keep_rd ? OpKind::kMovK : OpKind::kConst};
      m.dst = R(d.rd, false);
      m.imm = d.keep_rd ? (d.imm >> d.shift) & 0xffff : d.imm;
      m.size = d.shift;
      o.push_back(m);
      return;
    }
    case A64Op::kAdr: {
      Op c{OpKind::kConst};
      c.dst = R(d.rd, false);
      c.imm = d.imm;
      o.push_back(c);
      return;
    }
    case A64Op::kMrsTpidr: {
      Op t{OpKind::kTpidr};
      t.dst = R(d.rd, false);
      o.push_back(t);
      return;
    }
    case A64Op::kCmpReg: {
      Op c{OpKind::kCmp};
      c.src = R(d.rn, d.rn_is_sp);
      c.dst = R(d.rm, false);
      o.push_back(c);
      return;
    }
    case A64Op::kB:
    case A64Op::kBCond: {
      Op j{d.op == A64Op::kB ? OpKind::kJump : OpKind::kCondJump};
      j.target = d.target;
      o.push_back(j);
      return;
    }
    case A64Op::kBL:
    case A64Op::kBLR: {
      Op c{d.op == A64Op::kBL ? OpKind::kCall : OpKind::kCallIndirect};
      c.target = d.target;
      c.src = d.op == A64Op::kBLR ? R(d.rn, false) : -1;
      o.push_back(c);
      Op lr{OpKind::kClobber};
      lr.dst = kLR;
      o.push_back(lr);
      return;
    }
    case A64Op::kBR: {
      Op j{OpKind::kJumpIndirect};
      j.src = R(d.rn, false);
      o.push_back(j);
      return;
    }
    case A64Op::kRet:
    case A64Op::kUdf: o.push_back(Op{OpKind::kStop}); return;
    case A64Op::kOther:
      if (d.writes_rd) {
        Op c{OpKind::kClobber};
        c.dst = R(d.rd, d.rd_is_sp);
        o.push_back(c);
      }
      return;
  }
}

}  // namespace

std::vector<Insn> LiftArm64(std::string_view code, uint64_t address, size_t max_insns) {
  std::vector<Insn> out;
  for (size_t off = 0; off + 4 <= code.size() && out.size() < max_insns; off += 4) {
    uint32_t w = 0;
    memcpy(&w, code.data() + off, 4);
    Insn li;
    li.pc = address + off;
    li.length = 4;
    Lift(DecodeA64(w, li.pc), &li);
    out.push_back(std::move(li));
  }
  return out;
}

asmtrace::TraceConfig Arm64Config(bool go_code) {
  asmtrace::TraceConfig c;
  c.go_code = go_code;
  c.fp_reg = kFP;
  c.lr_reg = kLR;
  c.g_reg = kG;
  c.arg_reg = 0;
  c.regs.push_back({kG, asmtrace::Named("g")});
  c.regs.push_back({kFP, asmtrace::Named("fp0")});
  c.regs.push_back({kLR, asmtrace::Named("ret")});
  for (int i = 0; i < 16; i++) c.regs.push_back({i, asmtrace::Named("arg" + std::to_string(i))});
  c.tls = asmtrace::Named("g");
  return c;
}

}  // namespace sb::unwinder
