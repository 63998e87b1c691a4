#include "unwinder/newstack_morebuf.h"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <cstring>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "unwinder/arm64_decoder.h"
#include "unwinder/offset_fields.h"

namespace sb::unwinder {
namespace {

// One register space for both instruction sets: general registers 0..30 (amd64 by Zydis id,
// RAX=0 ... R15=15), vector registers 32..63. SP is not a register here: its value at every
// pc is known from pcsp.
constexpr int kNoReg = -1;
constexpr int kZero = -2;  // stored value: the zero register / immediate 0
constexpr int kSp = 31;    // as a memory base or LEA/ADD source
constexpr int kRegs = 64;

enum class Flow { kNext, kJump, kCond, kCall, kStop, kIndirect, kBad };
enum class Kind { kOther, kLoad, kStore, kAddr, kCopy };

struct Mem {
  int base = kNoReg, index = kNoReg;
  int64_t disp = 0;  // address = base + disp (post-index: base)
  int size = 0;      // bytes written/read in all; < 0 unknown (REP)
  int64_t wb = 0;    // writeback: base += wb afterwards (arm64 pre/post index)
  bool has_wb = false;
};

struct Op {
  uint64_t pc = 0, next = 0, target = 0;
  Flow flow = Flow::kNext;
  Kind kind = Kind::kOther;
  bool has_mem = false, mem_write = false, unmodelled_mem = false;
  Mem mem;
  int regs[2] = {kNoReg, kNoReg};  // kLoad: destinations; kStore: stored values (kZero)
  int nregs = 0;
  int dst = kNoReg, src = kNoReg;  // kAddr: dst = src + imm; kCopy: dst = src
  int64_t imm = 0;
  uint64_t reads = 0, writes = 0;  // register masks
};

uint64_t Bit(int r) { return r >= 0 && r < kRegs ? 1ull << r : 0; }

// ---- amd64 -----------------------------------------------------------------------------

int Amd64Reg(ZydisRegister r) {
  if (r == ZYDIS_REGISTER_NONE) return kNoReg;
  ZydisRegisterClass c = ZydisRegisterGetClass(r);
  if (c == ZYDIS_REGCLASS_GPR8 || c == ZYDIS_REGCLASS_GPR16 || c == ZYDIS_REGCLASS_GPR32 ||
      c == ZYDIS_REGCLASS_GPR64) {
    ZydisRegister big = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
    if (big == ZYDIS_REGISTER_RSP) return kSp;
    return ZydisRegisterGetId(big);
  }
  if (c == ZYDIS_REGCLASS_XMM || c == ZYDIS_REGCLASS_YMM || c == ZYDIS_REGCLASS_ZMM) return 32 + ZydisRegisterGetId(r);
  return kNoReg;  // flags, RIP, segment, mask registers: never frame addresses
}

bool IsPureMove(ZydisMnemonic m) {
  return m == ZYDIS_MNEMONIC_MOV || m == ZYDIS_MNEMONIC_MOVUPS || m == ZYDIS_MNEMONIC_MOVAPS ||
         m == ZYDIS_MNEMONIC_MOVDQU || m == ZYDIS_MNEMONIC_MOVDQA || m == ZYDIS_MNEMONIC_MOVQ ||
         m == ZYDIS_MNEMONIC_MOVUPD || m == ZYDIS_MNEMONIC_MOVAPD;
}

std::optional<Op> DecodeAmd64(const ZydisDecoder& dec, const uint8_t* p, size_t n, uint64_t pc) {
  ZydisDecodedInstruction in;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, p, n, &in, ops))) return std::nullopt;
  Op op;
  op.pc = pc;
  op.next = pc + in.length;
  switch (in.meta.category) {
    case ZYDIS_CATEGORY_COND_BR: op.flow = Flow::kCond; break;
    case ZYDIS_CATEGORY_UNCOND_BR: op.flow = Flow::kJump; break;
    case ZYDIS_CATEGORY_CALL: op.flow = Flow::kCall; break;
    case ZYDIS_CATEGORY_RET: op.flow = Flow::kStop; break;
    default: break;
  }
  if (in.mnemonic == ZYDIS_MNEMONIC_INT3 || in.mnemonic == ZYDIS_MNEMONIC_UD2 || in.mnemonic == ZYDIS_MNEMONIC_HLT)
    op.flow = Flow::kStop;
  if (op.flow == Flow::kCond || op.flow == Flow::kJump || op.flow == Flow::kCall) {
    if (in.operand_count_visible >= 1 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
      ZyanU64 t = 0;
      if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &ops[0], pc, &t))) return std::nullopt;
      op.target = t;
    } else if (op.flow == Flow::kJump) {
      op.flow = Flow::kIndirect;
    } else if (op.flow == Flow::kCond) {
      return std::nullopt;
    }
  }
  bool rep = (in.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE)) != 0;
  int mem_i = -1, agen_i = -1;
  for (int i = 0; i < in.operand_count; i++) {
    const ZydisDecodedOperand& o = ops[i];
    if (o.type == ZYDIS_OPERAND_TYPE_REGISTER) {
      int r = Amd64Reg(o.reg.value);
      if (r == kSp || r == kNoReg) continue;
      if (o.actions & ZYDIS_OPERAND_ACTION_MASK_READ) op.reads |= Bit(r);
      if (o.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) op.writes |= Bit(r);
    } else if (o.type == ZYDIS_OPERAND_TYPE_MEMORY) {
      if (o.mem.type == ZYDIS_MEMOP_TYPE_AGEN) {
        agen_i = i;
        continue;
      }
      if (mem_i >= 0) return std::nullopt;  // two memory operands (MOVS): not in Go code
      mem_i = i;
    }
  }
  if (mem_i >= 0) {
    const ZydisDecodedOperand& o = ops[mem_i];
    op.has_mem = true;
    op.mem_write = (o.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0;
    if (o.mem.segment == ZYDIS_REGISTER_FS || o.mem.segment == ZYDIS_REGISTER_GS || o.mem.base == ZYDIS_REGISTER_RIP) {
      op.mem.base = kNoReg;  // TLS or static data: not the frame
    } else {
      op.mem.base = Amd64Reg(o.mem.base);
      op.mem.index = Amd64Reg(o.mem.index);
      if (o.mem.index != ZYDIS_REGISTER_NONE && op.mem.index == kNoReg) return std::nullopt;
      if (op.mem.index == kSp) return std::nullopt;
    }
    op.mem.disp = o.mem.disp.value;
    op.mem.size = rep ? -1 : static_cast<int>(o.size / 8);
    bool hidden_stack = o.visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN && op.mem.base == kSp;
    if (hidden_stack && (in.mnemonic == ZYDIS_MNEMONIC_PUSH || in.mnemonic == ZYDIS_MNEMONIC_CALL)) {
      op.mem.disp = -8;  // the push's slot below the current SP
      op.mem.size = 8;
    } else if (hidden_stack && (in.mnemonic == ZYDIS_MNEMONIC_POP || in.mnemonic == ZYDIS_MNEMONIC_RET)) {
      op.mem_write = false;
    } else if (hidden_stack) {
      return std::nullopt;  // another implicit stack access (ENTER, LEAVE, PUSHF): not modelled
    }
  }
  int nvis = in.operand_count_visible;
  if (IsPureMove(in.mnemonic) && nvis == 2 && mem_i >= 0 && !rep) {
    if (mem_i == 0 && ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER) {
      op.kind = Kind::kStore;
      op.regs[0] = Amd64Reg(ops[1].reg.value);
      op.nregs = 1;
    } else if (mem_i == 0 && ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
      op.kind = Kind::kStore;
      op.regs[0] = ops[1].imm.value.u == 0 ? kZero : kNoReg;
      op.nregs = 1;
    } else if (mem_i == 1 && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER) {
      op.kind = Kind::kLoad;
      op.regs[0] = Amd64Reg(ops[0].reg.value);
      op.nregs = 1;
    }
  } else if (in.mnemonic == ZYDIS_MNEMONIC_LEA && agen_i == 1 && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
             ops[1].mem.index == ZYDIS_REGISTER_NONE && ops[1].mem.base != ZYDIS_REGISTER_RIP) {
    op.kind = Kind::kAddr;
    op.dst = Amd64Reg(ops[0].reg.value);
    op.src = Amd64Reg(ops[1].mem.base);
    op.imm = ops[1].mem.disp.value;
    if (ops[0].size != 64) op.kind = Kind::kOther;
  } else if (in.mnemonic == ZYDIS_MNEMONIC_MOV && nvis == 2 && mem_i < 0 && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
             ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[0].size == 64 && ops[1].size == 64) {
    op.kind = Kind::kCopy;
    op.dst = Amd64Reg(ops[0].reg.value);
    op.src = Amd64Reg(ops[1].reg.value);
    if (op.src == kSp) op.kind = Kind::kAddr;  // MOVQ SP, BP: SP + 0
  } else if ((in.mnemonic == ZYDIS_MNEMONIC_XOR || in.mnemonic == ZYDIS_MNEMONIC_SUB ||
              in.mnemonic == ZYDIS_MNEMONIC_XORPS || in.mnemonic == ZYDIS_MNEMONIC_PXOR) &&
             nvis == 2 && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
             ops[0].reg.value == ops[1].reg.value) {
    op.reads = 0;  // the zeroing idiom: the result depends on no input
  } else if ((in.mnemonic == ZYDIS_MNEMONIC_ADD || in.mnemonic == ZYDIS_MNEMONIC_SUB) && nvis == 2 && mem_i < 0 &&
             ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[0].size == 64 &&
             ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
    op.kind = Kind::kAddr;
    op.dst = op.src = Amd64Reg(ops[0].reg.value);
    op.imm = in.mnemonic == ZYDIS_MNEMONIC_ADD ? ops[1].imm.value.s : -ops[1].imm.value.s;
  }
  if ((op.kind == Kind::kAddr || op.kind == Kind::kCopy) && op.dst == kSp) op.kind = Kind::kOther;  // SP itself: pcsp knows it
  if (agen_i >= 0 && op.kind != Kind::kAddr) {
    // A LEA this model does not follow (index, 32-bit): its result is derived from the base.
    int b = Amd64Reg(ops[agen_i].mem.base), x = Amd64Reg(ops[agen_i].mem.index);
    op.reads |= Bit(b) | Bit(x);
    if (b == kSp || x == kSp) {  // a frame address this model does not follow
      op.unmodelled_mem = true;
      if (!op.has_mem) op.mem.base = kSp;
    }
  }
  return op;
}

// ---- arm64 -----------------------------------------------------------------------------

uint32_t Bits(uint32_t w, int hi, int lo) { return (w >> lo) & ((1u << (hi - lo + 1)) - 1); }
int64_t SignExtend(uint64_t v, int bits) {
  uint64_t m = 1ull << (bits - 1);
  v &= (1ull << bits) - 1;
  return static_cast<int64_t>((v ^ m) - m);
}

// SIMD&FP loads and stores with immediate offsets (LDR/STR Q/D/S, LDUR/STUR, LDP/STP): the
// forms Go uses to move structs. False: not one of them.
bool DecodeA64Vector(uint32_t w, Op* op) {
  int rn = static_cast<int>(Bits(w, 9, 5)), rt = static_cast<int>(Bits(w, 4, 0));
  op->mem.base = rn == 31 ? kSp : rn;
  auto single_size = [&](int* bytes) {
    uint32_t size = Bits(w, 31, 30), opc = Bits(w, 23, 22);
    if (opc & 2) {
      if (size != 0) return false;
      *bytes = 16;
    } else {
      *bytes = 1 << size;
    }
    return true;
  };
  int bytes = 0;
  bool load = false;
  if ((w & 0x3F000000) == 0x3D000000) {  // unsigned scaled imm12
    if (!single_size(&bytes)) return false;
    load = Bits(w, 22, 22) != 0;
    op->mem.disp = static_cast<int64_t>(Bits(w, 21, 10)) * bytes;
  } else if ((w & 0x3F200000) == 0x3C000000) {  // imm9: unscaled, post, pre
    uint32_t mode = Bits(w, 11, 10);
    if (mode == 2 || !single_size(&bytes)) return false;
    load = Bits(w, 22, 22) != 0;
    int64_t imm = SignExtend(Bits(w, 20, 12), 9);
    op->mem.disp = mode == 1 ? 0 : imm;
    if (mode != 0) {
      op->mem.has_wb = true;
      op->mem.wb = imm;
    }
  } else if ((w & 0x3C000000) == 0x2C000000) {  // pairs
    uint32_t opc = Bits(w, 31, 30), type = Bits(w, 24, 23);
    if (opc == 3) return false;
    int elem = 4 << opc;
    bytes = 2 * elem;
    load = Bits(w, 22, 22) != 0;
    int64_t imm = SignExtend(Bits(w, 21, 15), 7) * elem;
    op->mem.disp = type == 1 ? 0 : imm;
    if (type == 1 || type == 3) {
      op->mem.has_wb = true;
      op->mem.wb = imm;
    }
    op->regs[1] = 32 + static_cast<int>(Bits(w, 14, 10));
    op->nregs = 2;
  } else {
    return false;
  }
  op->regs[0] = 32 + rt;
  if (op->nregs == 0) op->nregs = 1;
  op->has_mem = true;
  op->mem.size = bytes;
  op->mem_write = !load;
  op->kind = load ? Kind::kLoad : Kind::kStore;
  if (op->mem.base != kSp) op->reads |= Bit(op->mem.base);
  if (op->mem.has_wb && op->mem.base != kSp) op->writes |= Bit(op->mem.base);
  return true;
}

Op DecodeArm64(uint32_t w, uint64_t pc) {
  Op op;
  op.pc = pc;
  op.next = pc + 4;
  bool ls_class = (w & 0x0A000000) == 0x08000000;
  if (ls_class && Bits(w, 26, 26) != 0) {
    if (DecodeA64Vector(w, &op)) return op;
    op = Op{};
    op.pc = pc;
    op.next = pc + 4;
    op.unmodelled_mem = true;  // another vector load/store (LD1/ST1, ...): Rn/Rt checked by the caller
    op.mem.base = Bits(w, 9, 5) == 31 ? kSp : static_cast<int>(Bits(w, 9, 5));
    return op;
  }
  A64Insn in = DecodeA64(w, pc);
  auto gpr = [](int r, bool sp) { return r == 31 ? (sp ? kSp : kZero) : r; };
  switch (in.op) {
    case A64Op::kB: op.flow = Flow::kJump; op.target = in.target; return op;
    case A64Op::kBL: op.flow = Flow::kCall; op.target = in.target; op.writes = Bit(30); return op;
    case A64Op::kBCond: op.flow = Flow::kCond; op.target = in.target; op.reads = Bit(static_cast<int>(Bits(w, 4, 0))); return op;
    case A64Op::kBR: op.flow = Flow::kIndirect; return op;
    case A64Op::kBLR: op.flow = Flow::kCall; op.target = 0; op.reads = Bit(in.rn); op.writes = Bit(30); return op;
    case A64Op::kRet: op.flow = Flow::kStop; return op;
    case A64Op::kUdf: op.flow = Flow::kStop; return op;
    case A64Op::kLoad:
    case A64Op::kStore:
    case A64Op::kLoadPair:
    case A64Op::kStorePair: {
      bool pair = in.op == A64Op::kLoadPair || in.op == A64Op::kStorePair;
      bool store = in.op == A64Op::kStore || in.op == A64Op::kStorePair;
      op.has_mem = true;
      op.mem_write = store;
      op.kind = store ? Kind::kStore : Kind::kLoad;
      op.mem.base = gpr(in.rn, true);
      if (op.mem.base == kZero) op.mem.base = kNoReg;
      op.mem.index = in.rm >= 0 ? gpr(in.rm, false) : kNoReg;
      if (op.mem.index == kZero) op.mem.index = kNoReg;
      op.mem.disp = in.index == A64Index::kPost ? 0 : in.imm;
      if (in.index != A64Index::kOffset) {
        op.mem.has_wb = true;
        op.mem.wb = in.imm;
      }
      op.mem.size = in.size * (pair ? 2 : 1);
      op.nregs = pair ? 2 : 1;
      int rt = gpr(in.rt, false), rt2 = pair ? gpr(in.rt2, false) : kNoReg;
      if (store) {
        op.regs[0] = rt;
        op.regs[1] = rt2;
        op.reads |= Bit(rt) | Bit(rt2);
      } else {
        op.regs[0] = rt == kZero ? kNoReg : rt;
        op.regs[1] = rt2 == kZero ? kNoReg : rt2;
        op.writes |= Bit(op.regs[0]) | Bit(op.regs[1]);
      }
      if (!in.is64 && !store) {
        // 32-bit or narrower loads still load a value (never a frame address): fine.
      }
      op.reads |= Bit(op.mem.base) | Bit(op.mem.index);
      if (op.mem.has_wb) op.writes |= Bit(op.mem.base);
      return op;
    }
    case A64Op::kAddImm:
      if (in.rd_is_sp && in.rd == 31) return op;  // SP: pcsp knows it
      op.kind = Kind::kAddr;
      op.dst = in.rd;
      op.src = gpr(in.rn, true);
      op.imm = in.imm;
      if (!in.is64) op.kind = Kind::kOther;
      op.reads = Bit(op.src);
      op.writes = Bit(op.dst);
      return op;
    case A64Op::kMovReg:
      op.kind = in.rm == 31 ? Kind::kOther : Kind::kCopy;
      op.dst = in.rd;
      op.src = in.rm;
      op.reads = Bit(in.rm == 31 ? kNoReg : in.rm);
      op.writes = Bit(in.rd);
      return op;
    case A64Op::kMovWide:
    case A64Op::kAdr:
    case A64Op::kMrsTpidr:
      op.writes = Bit(in.rd);
      if (in.op == A64Op::kMovWide && in.keep_rd) op.reads = Bit(in.rd);
      return op;
    case A64Op::kCmpReg:
      op.reads = Bit(in.rn) | Bit(in.rm);
      return op;
    case A64Op::kOther:
      break;
  }
  if (ls_class) {
    // A general load/store this model does not follow (exclusive, register-extended...).
    op.unmodelled_mem = true;
    op.mem.base = Bits(w, 9, 5) == 31 ? kSp : static_cast<int>(Bits(w, 9, 5));
    op.reads = Bit(static_cast<int>(Bits(w, 4, 0))) | Bit(static_cast<int>(Bits(w, 14, 10))) |
               Bit(static_cast<int>(Bits(w, 20, 16)));
    if (in.writes_rd) op.writes = Bit(in.rd);
    return op;
  }
  // Data processing: the source fields Rn, Rm, Ra (wherever they are register numbers; reading
  // them as such where they are immediates only taints more). SIMD&FP instructions may move
  // between general and vector registers: both files count.
  uint64_t fields = Bit(static_cast<int>(Bits(w, 9, 5))) | Bit(static_cast<int>(Bits(w, 20, 16))) |
                    Bit(static_cast<int>(Bits(w, 14, 10)));
  fields &= ~Bit(31);
  op.reads = fields;
  if (in.writes_rd && !(in.rd_is_sp && in.rd == 31)) op.writes = Bit(in.rd);
  if (Bits(w, 27, 25) == 7) {  // SIMD & FP
    op.reads = fields | (fields << 32);
    int rd = static_cast<int>(Bits(w, 4, 0));
    op.writes = Bit(rd == 31 ? kNoReg : rd) | Bit(32 + rd);
  }
  return op;
}

// ---- the analysis ----------------------------------------------------------------------

struct Code {
  sym::Arch arch;
  uint64_t entry = 0, end = 0;
  std::map<uint64_t, Op> ops;  // reachable instructions
  std::set<uint64_t> targets;  // branch targets inside the function
  std::vector<sym::SpDeltaRun> pcsp;
  int fp = 0;                  // frame pointer register: RBP (5) / R29
  std::set<uint64_t> noreturn;  // entries of functions that never return (throw)
  std::string why;
};

std::optional<int32_t> DeltaAt(const Code& c, uint64_t pc) {
  std::optional<int32_t> d;
  for (const auto& r : c.pcsp) {
    if (r.pc > pc) break;
    d = r.delta;
  }
  return d;
}

// The frame offset (from newstack's CFA, as DWARF's fbreg) of SP + disp at pc.
std::optional<int64_t> SpToCfa(const Code& c, uint64_t pc, int64_t disp) {
  auto d = DeltaAt(c, pc);
  if (!d) return std::nullopt;
  return disp - *d - (c.arch == sym::Arch::kAmd64 ? 8 : 0);
}

bool DecodeReachable(const sym::Binary& bin, Code* c) {
  auto bytes = bin.elf().ReadVaddr(c->entry, static_cast<size_t>(c->end - c->entry));
  if (!bytes.ok()) {
    c->why = "newstack's code unreadable";
    return false;
  }
  const auto* p = reinterpret_cast<const uint8_t*>(bytes->data());
  ZydisDecoder dec;
  if (c->arch == sym::Arch::kAmd64 &&
      !ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
    c->why = "decoder";
    return false;
  }
  std::vector<uint64_t> work{c->entry};
  while (!work.empty()) {
    uint64_t pc = work.back();
    work.pop_back();
    if (c->ops.count(pc)) continue;
    if (pc < c->entry || pc >= c->end || c->ops.size() > 20000) {
      c->why = "a branch leaves newstack at " + std::to_string(pc);
      return false;
    }
    size_t off = static_cast<size_t>(pc - c->entry);
    std::optional<Op> op;
    if (c->arch == sym::Arch::kAmd64) {
      op = DecodeAmd64(dec, p + off, bytes->size() - off, pc);
    } else if ((pc & 3) == 0 && off + 4 <= bytes->size()) {
      uint32_t w = static_cast<uint32_t>(p[off]) | static_cast<uint32_t>(p[off + 1]) << 8 |
                   static_cast<uint32_t>(p[off + 2]) << 16 | static_cast<uint32_t>(p[off + 3]) << 24;
      op = DecodeArm64(w, pc);
    }
    if (!op) {
      c->why = "undecodable instruction at newstack+" + std::to_string(pc - c->entry);
      return false;
    }
    if (op->flow == Flow::kIndirect) {
      c->why = "indirect jump at newstack+" + std::to_string(pc - c->entry);
      return false;
    }
    if (op->flow == Flow::kCall && c->noreturn.count(op->target)) op->flow = Flow::kStop;
    c->ops[pc] = *op;
    bool falls = op->flow == Flow::kNext || op->flow == Flow::kCond || op->flow == Flow::kCall;
    if (falls && op->next < c->end) work.push_back(op->next);
    if (op->flow == Flow::kCond || op->flow == Flow::kJump) {
      c->targets.insert(op->target);
      work.push_back(op->target);
    }
  }
  return true;
}

// arm64 runtime.duffcopy entered at `at`: n pairs of LDP.P 16(R20), (R26, R27) / STP.P (R26,
// R27), 16(R21) up to its RET. 0: not that shape.
int DuffcopyPairs(const sym::Binary& bin, uint64_t at, uint64_t end) {
  int pairs = 0;
  for (uint64_t pc = at; pc + 4 <= end && pairs < 128; pc += 8) {
    auto b = bin.elf().ReadVaddr(pc, 4);
    if (!b.ok()) return 0;
    uint32_t w0 = 0;
    std::memcpy(&w0, b->data(), 4);
    if (w0 == 0xD65F03C0) return pairs;  // RET
    if (pc + 8 > end) return 0;
    auto b1 = bin.elf().ReadVaddr(pc + 4, 4);
    if (!b1.ok()) return 0;
    uint32_t w1 = 0;
    std::memcpy(&w1, b1->data(), 4);
    if (w0 != 0xA8C16E9A || w1 != 0xA8816EBA) return 0;  // LDP x26, x27, [x20], #16 / STP ..., [x21], #16
    pairs++;
  }
  return 0;
}

// Symbolic values along newstack's straight-line entry path (the copy's provenance).
struct Sym {
  enum K { kUnk, kG, kMptr, kFrame, kMbytes } k = kUnk;
  int64_t off = 0;
  int size = 0;
};

struct CopyFacts {
  struct Seg {
    int64_t frame;
    int bytes;
    uint64_t pc;
  };
  std::map<int64_t, Seg> segs;  // m offset -> where it went (every store of m's bytes into the frame)
  std::set<int64_t> dups;  // m offsets stored into the frame more than once
  std::set<uint64_t> store_pcs;
  uint64_t first_store = 0, last_store = 0;
  std::vector<std::pair<uint64_t, int64_t>> clears;  // (pc, m offset) of 8-byte zero stores
};

bool FindCopy(const sym::Binary& bin, const Code& c, const sb_go_offsets& off, uint64_t duff_lo, uint64_t duff_hi,
              CopyFacts* cf, std::string* why) {
  std::array<Sym, kRegs> r{};
  int g = c.arch == sym::Arch::kAmd64 ? 14 : 28;  // R14 / R28 hold g in Go code
  r[g].k = Sym::kG;
  auto addr_of = [&](const Op& op) -> Sym {  // the memory operand's address
    Sym a;
    if (op.mem.index != kNoReg) return a;
    if (op.mem.base == kSp) {
      auto f = SpToCfa(c, op.pc, op.mem.disp);
      if (f) a = Sym{Sym::kFrame, *f, 0};
      return a;
    }
    if (op.mem.base < 0) return a;
    const Sym& b = r[op.mem.base];
    if (b.k == Sym::kFrame || b.k == Sym::kMptr) a = Sym{b.k, b.off + op.mem.disp, 0};
    if (b.k == Sym::kG) a = Sym{Sym::kG, op.mem.disp, 0};
    return a;
  };
  for (auto it = c.ops.find(c.entry); it != c.ops.end(); it = c.ops.find(it->second.next)) {
    const Op& op = it->second;
    if (op.pc != c.entry && c.targets.count(op.pc)) break;  // another way in: values unknown
    Sym a = op.has_mem ? addr_of(op) : Sym{};
    std::array<Sym, kRegs> before = r;
    for (int i = 0; i < kRegs; i++)
      if (op.writes & Bit(i)) r[i] = Sym{};
    if (op.kind == Kind::kLoad) {
      int elem = op.mem.size / std::max(op.nregs, 1);
      for (int i = 0; i < op.nregs; i++) {
        if (op.regs[i] < 0) continue;
        Sym v;
        if (a.k == Sym::kG && a.off == off.g_m && elem == 8 && op.nregs == 1) v = Sym{Sym::kMptr, 0, 0};
        if (a.k == Sym::kMptr) v = Sym{Sym::kMbytes, a.off + i * elem, elem};
        r[op.regs[i]] = v;
      }
    } else if (op.kind == Kind::kStore) {
      int elem = op.mem.size / std::max(op.nregs, 1);
      for (int i = 0; i < op.nregs; i++) {
        int v = op.regs[i];
        if (a.k == Sym::kFrame && v >= 0 && before[v].k == Sym::kMbytes && before[v].size == elem) {
          if (cf->segs.count(before[v].off)) cf->dups.insert(before[v].off);
          cf->segs[before[v].off] = {a.off + i * elem, elem, op.pc};
        } else if (a.k == Sym::kMptr && v == kZero && elem == 8) {
          cf->clears.push_back({op.pc, a.off + i * elem});
        }
      }
    } else if (op.kind == Kind::kAddr && op.dst >= 0) {
      Sym s;
      if (op.src == kSp) {
        auto f = SpToCfa(c, op.pc, op.imm);
        if (f) s = Sym{Sym::kFrame, *f, 0};
      } else if (op.src >= 0 && (before[op.src].k == Sym::kMptr || before[op.src].k == Sym::kFrame)) {
        s = Sym{before[op.src].k, before[op.src].off + op.imm, 0};
      }
      r[op.dst] = s;
    } else if (op.kind == Kind::kCopy && op.dst >= 0 && op.src >= 0) {
      r[op.dst] = before[op.src];
    }
    if (op.has_mem && op.mem.has_wb && op.mem.base >= 0) {
      const Sym& b = before[op.mem.base];
      r[op.mem.base] = (b.k == Sym::kFrame || b.k == Sym::kMptr) ? Sym{b.k, b.off + op.mem.wb, 0} : Sym{};
    }
    if (op.flow == Flow::kCall) {
      if (c.arch != sym::Arch::kArm64 || op.target < duff_lo || op.target >= duff_hi) break;
      int pairs = DuffcopyPairs(bin, op.target, duff_hi);
      const Sym &src = before[20], &dst = before[21];
      if (pairs == 0 || src.k != Sym::kMptr || dst.k != Sym::kFrame) break;
      for (int i = 0; i < 2 * pairs; i++) {
        if (cf->segs.count(src.off + 8 * i)) cf->dups.insert(src.off + 8 * i);
        cf->segs[src.off + 8 * i] = {dst.off + 8 * i, 8, op.pc};
      }
      r = before;
      r[20] = Sym{Sym::kMptr, src.off + 16 * pairs, 0};
      r[21] = Sym{Sym::kFrame, dst.off + 16 * pairs, 0};
      r[26] = r[27] = r[30] = Sym{};
      continue;
    }
    if (op.flow != Flow::kNext && op.flow != Flow::kCond) break;
  }
  if (cf->segs.empty()) {
    *why = "no copy of m.morebuf into the frame on newstack's entry path";
    return false;
  }
  return true;
}

enum class T : uint8_t { kClean, kExact, kAny };
struct Taint {
  T t = T::kClean;
  int64_t off = 0;
  bool operator==(const Taint& o) const { return t == o.t && (t != T::kExact || off == o.off); }
};
using State = std::array<Taint, kRegs>;

Taint Merge(const Taint& a, const Taint& b) {
  if (a == b) return a;
  if (a.t == T::kClean && b.t == T::kClean) return a;
  return Taint{T::kAny, 0};
}

bool IsArgReg(sym::Arch arch, int r) {
  if (r >= 32) return true;  // vector registers carry float arguments
  if (arch == sym::Arch::kAmd64) return r == 0 || r == 1 || r == 2 || r == 3 || r == 6 || r == 7 || (r >= 8 && r <= 11);
  return r <= 15 || r == 26;  // R0-R15 and the closure context; R16/R17 are linker scratch
}

// Proves that no instruction but the copy's writes [slot, slot + len) of the frame, and that no
// frame address leaves newstack. Empty: proven; else what was found.
std::string ProveSlotUntouched(const sym::Binary& bin, const Code& c, const CopyFacts& cf, int64_t slot, int64_t len,
                               uint64_t duff_lo, uint64_t duff_hi, const std::set<uint64_t>& after_copy,
                               const std::set<uint64_t>& to_call) {
  std::map<uint64_t, State> in;
  in[c.entry] = State{};
  std::vector<uint64_t> work{c.entry};
  auto where = [&](uint64_t pc) { return "newstack+" + std::to_string(pc - c.entry); };
  size_t steps = 0;
  while (!work.empty()) {
    if (++steps > 400000) return "dataflow did not settle";
    uint64_t pc = work.back();
    work.pop_back();
    const Op& op = c.ops.at(pc);
    State s = in[pc];
    // Only what runs between the copy and a preempting call can change the slot they see;
    // a frame address that escapes matters on any path that reaches such a call.
    const bool matters = to_call.count(pc) != 0, writes_matter = matters && after_copy.count(pc) != 0;
    auto tainted = [&](int r) { return r >= 0 && r < kRegs && s[r].t != T::kClean; };
    // Memory writes into the frame.
    auto check_write = [&](int64_t a, int64_t size) -> std::string {
      if (!writes_matter) return "";
      if (size < 0) return "a write of unknown length into the frame at " + where(pc);
      if (a < slot + len && a + size > slot && !cf.store_pcs.count(pc))
        return "newstack writes its morebuf slot at " + where(pc);
      return "";
    };
    uint64_t tmask = 0;
    for (int i = 0; i < kRegs; i++)
      if (s[i].t != T::kClean) tmask |= Bit(i);
    if (matters && op.unmodelled_mem && (op.mem.base == kSp || (Bit(op.mem.base) & tmask) || (op.reads & tmask & ~Bit(c.fp))))
      return "an instruction not modelled touches a frame address at " + where(pc);
    if (op.has_mem && (op.mem_write || op.kind == Kind::kStore)) {
      std::optional<int64_t> a;
      if (op.mem.base == kSp && op.mem.index == kNoReg) {
        a = SpToCfa(c, pc, op.mem.disp);
        if (!a) return "no pcsp at " + where(pc);
      } else if (tainted(op.mem.base) || tainted(op.mem.index)) {
        if ((op.mem.index != kNoReg || s[op.mem.base].t != T::kExact) && writes_matter)
          return "a write through a frame address of unknown offset at " + where(pc);
        if (op.mem.index == kNoReg && s[op.mem.base].t == T::kExact) a = s[op.mem.base].off + op.mem.disp;
      } else if (op.mem.base == kSp && writes_matter) {
        return "an indexed write into the frame at " + where(pc);
      }
      if (a) {
        std::string e = check_write(*a, op.mem.size);
        if (!e.empty()) return e;
      }
      // A frame address stored to memory escapes (the frame pointer aside: Go code never
      // writes through a saved frame pointer).
      uint64_t vals = op.kind == Kind::kStore ? (Bit(op.regs[0]) | Bit(op.regs[1])) : op.reads;
      for (int i = 0; i < kRegs; i++)
        if (matters && (vals & Bit(i)) && i != c.fp && tainted(i)) return "a frame address stored to memory at " + where(pc);
    }
    // Calls.
    bool duff = c.arch == sym::Arch::kArm64 && op.flow == Flow::kCall && op.target >= duff_lo && op.target < duff_hi &&
                duff_hi > duff_lo;
    if (op.flow == Flow::kCall && duff) {
      int pairs = DuffcopyPairs(bin, op.target, duff_hi);
      if (pairs == 0 && matters) return "a call into duffcopy not decoded at " + where(pc);
      if ((s[20].t == T::kAny || s[21].t == T::kAny) && matters) return "duffcopy with a frame address of unknown offset at " + where(pc);
      if (s[21].t == T::kExact) {
        std::string e = check_write(s[21].off, 16 * pairs);
        if (!e.empty()) return e;
      }
      if (s[20].t == T::kExact) s[20].off += 16 * pairs;
      if (s[21].t == T::kExact) s[21].off += 16 * pairs;
      s[26] = s[27] = s[30] = Taint{};
    } else if (op.flow == Flow::kCall) {
      for (int i = 0; i < kRegs; i++)
        if (matters && i != c.fp && tainted(i) && IsArgReg(c.arch, i))
          return "a frame address may be passed to the call at " + where(pc);
      for (int i = 0; i < kRegs; i++)
        if (i != c.fp) s[i] = Taint{};
    } else {
      // Register results.
      bool any_in = false;
      for (int i = 0; i < kRegs; i++)
        if ((op.reads & Bit(i)) && tainted(i)) any_in = true;
      State before = s;
      for (int i = 0; i < kRegs; i++)
        if (op.writes & Bit(i)) s[i] = any_in && op.kind != Kind::kLoad ? Taint{T::kAny, 0} : Taint{};
      if (op.kind == Kind::kLoad)
        for (int i = 0; i < op.nregs; i++)
          if (op.regs[i] >= 0) s[op.regs[i]] = Taint{};
      if (op.kind == Kind::kAddr && op.dst >= 0) {
        if (op.src == kSp) {
          auto f = SpToCfa(c, pc, op.imm);
          if (!f) return "no pcsp at " + where(pc);
          s[op.dst] = Taint{T::kExact, *f};
        } else if (op.src >= 0 && before[op.src].t == T::kExact) {
          s[op.dst] = Taint{T::kExact, before[op.src].off + op.imm};
        } else if (op.src >= 0) {
          s[op.dst] = before[op.src];
        } else {
          s[op.dst] = Taint{};
        }
      } else if (op.kind == Kind::kCopy && op.dst >= 0 && op.src >= 0) {
        s[op.dst] = before[op.src];
      }
      if (op.has_mem && op.mem.has_wb && op.mem.base >= 0) {
        const Taint& b = before[op.mem.base];
        s[op.mem.base] = b.t == T::kExact ? Taint{T::kExact, b.off + op.mem.wb} : b;
      }
    }
    std::vector<uint64_t> succ;
    bool falls = op.flow == Flow::kNext || op.flow == Flow::kCond || op.flow == Flow::kCall;
    if (falls && op.next < c.end) succ.push_back(op.next);
    if (op.flow == Flow::kCond || op.flow == Flow::kJump) succ.push_back(op.target);
    for (uint64_t n : succ) {
      auto f = in.find(n);
      if (f == in.end()) {
        in[n] = s;
        work.push_back(n);
        continue;
      }
      State m = f->second;
      bool changed = false;
      for (int i = 0; i < kRegs; i++) {
        Taint t = Merge(m[i], s[i]);
        if (!(t == m[i])) {
          m[i] = t;
          changed = true;
        }
      }
      if (changed) {
        f->second = m;
        work.push_back(n);
      }
    }
  }
  return "";
}

// Whether `pc` is reachable from newstack's entry without passing `block`.
std::set<uint64_t> ReachableAvoiding(const Code& c, uint64_t block) {
  std::set<uint64_t> seen;
  std::vector<uint64_t> work{c.entry};
  while (!work.empty()) {
    uint64_t pc = work.back();
    work.pop_back();
    if (pc == block || seen.count(pc) || !c.ops.count(pc)) continue;
    seen.insert(pc);
    const Op& op = c.ops.at(pc);
    bool falls = op.flow == Flow::kNext || op.flow == Flow::kCond || op.flow == Flow::kCall;
    if (falls && op.next < c.end) work.push_back(op.next);
    if (op.flow == Flow::kCond || op.flow == Flow::kJump) work.push_back(op.target);
  }
  return seen;
}

}  // namespace

MorebufFromCode NewstackMorebufFromCode(const sym::Binary& bin, const sb_go_offsets& off) {
  MorebufFromCode out;
  const sym::GoPclntab* go = bin.go();
  sym::Arch arch = bin.elf().arch();
  if (go == nullptr || (arch != sym::Arch::kAmd64 && arch != sym::Arch::kArm64)) {
    out.why = "not amd64/arm64 Go";
    return out;
  }
  for (sb_u16 f : {off.g_m, off.gobuf_sp, off.gobuf_pc, off.gobuf_lr, off.gobuf_bp})
    if (f == kUnknownOffset) {
      out.why = "g.m or a gobuf offset unknown";
      return out;
    }
  auto ns = go->FindFuncByName("runtime.newstack");
  if (!ns || ns->end <= ns->entry || ns->end - ns->entry > (1u << 16)) {
    out.why = "no function runtime.newstack";
    return out;
  }
  Code c;
  c.arch = arch;
  c.entry = ns->entry;
  c.end = ns->end;
  c.fp = arch == sym::Arch::kAmd64 ? 5 : 29;
  auto runs = go->SpDeltaRuns(*ns);
  if (!runs.ok() || runs->empty()) {
    out.why = "newstack has no pcsp table";
    return out;
  }
  c.pcsp = *runs;
  // Functions that never return (the compiler's own list has more; fewer only adds paths).
  for (const char* name : {"runtime.throw", "runtime.fatal", "runtime.fatalthrow", "runtime.gopanic"})
    if (auto fn = go->FindFuncByName(name)) c.noreturn.insert(fn->entry);
  if (!DecodeReachable(bin, &c)) {
    out.why = c.why;
    return out;
  }
  uint64_t duff_lo = 0, duff_hi = 0;
  if (auto d = go->FindFuncByName("runtime.duffcopy")) {
    duff_lo = d->entry;
    duff_hi = d->end;
  }
  CopyFacts cf;
  cf.first_store = UINT64_MAX;
  if (!FindCopy(bin, c, off, duff_lo, duff_hi, &cf, &out.why)) return out;

  // The clears name m.morebuf (at K) and gobuf.g: sp, pc, lr and one more field.
  int64_t len = off.gobuf_bp + 8;
  std::set<int64_t> cleared;
  for (const auto& cl : cf.clears) cleared.insert(cl.second);
  std::optional<int64_t> base;
  int64_t g_field = -1;
  for (int64_t cl : cleared) {
    int64_t k = cl - off.gobuf_sp;
    if (k < 0 || !cleared.count(k + off.gobuf_pc) || !cleared.count(k + off.gobuf_lr)) continue;
    std::vector<int64_t> rest;
    for (int64_t x : cleared)
      if (x != k + off.gobuf_sp && x != k + off.gobuf_pc && x != k + off.gobuf_lr) rest.push_back(x - k);
    if (cleared.size() != 4 || cf.clears.size() != 4 || rest.size() != 1 || rest[0] < 0 || rest[0] + 8 > len ||
        rest[0] == off.gobuf_bp || base) {
      out.why = "not the four clears of m.morebuf.pc, lr, sp, g";
      return out;
    }
    base = k;
    g_field = rest[0];
  }
  if (!base) {
    out.why = "no clears of m.morebuf.pc, lr, sp after the copy";
    return out;
  }
  // The copy: exactly [K, K + gobuf.bp + 8) of m, in order, into one frame slot, before the clears.
  int64_t k = *base;
  auto first = cf.segs.lower_bound(k);
  if (first == cf.segs.end() || first->first != k) {
    out.why = "m.morebuf is not copied into the frame";
    return out;
  }
  if (first != cf.segs.begin() && std::prev(first)->first + std::prev(first)->second.bytes > k) {
    out.why = "a copy overlaps m.morebuf's start";
    return out;
  }
  int64_t slot = first->second.frame, at = k;
  for (auto it = first; it != cf.segs.end() && it->first < k + len; ++it) {
    if (it->first != at || it->second.frame != slot + (it->first - k)) {
      out.why = "the copy of m.morebuf is not one contiguous slot";
      return out;
    }
    at += it->second.bytes;
    cf.first_store = std::min(cf.first_store, it->second.pc);
    cf.last_store = std::max(cf.last_store, it->second.pc);
    cf.store_pcs.insert(it->second.pc);
  }
  for (int64_t d : cf.dups)
    if (d >= k && d < k + len) {
      out.why = "m.morebuf+" + std::to_string(d - k) + " stored into the frame twice";
      return out;
    }
  if (at - k != len) {
    out.why = "the copy is " + std::to_string(at - k) + " bytes, gobuf " + std::to_string(len);
    return out;
  }
  for (const auto& cl : cf.clears)
    if (cl.first < cf.last_store) {
      out.why = "m.morebuf cleared before it was copied";
      return out;
    }
  // The straight-line copy: nothing jumps into it, nothing leaves it.
  for (auto it = c.ops.find(cf.first_store); it != c.ops.end() && it->first <= cf.last_store; ++it) {
    if (it->first != cf.first_store && c.targets.count(it->first)) {
      out.why = "a branch into the copy";
      return out;
    }
    bool duff = it->second.flow == Flow::kCall && cf.store_pcs.count(it->first);
    if (it->second.flow != Flow::kNext && !duff) {
      out.why = "control flow inside the copy";
      return out;
    }
  }
  // The preempting calls, each dominated by the copy.
  std::vector<uint64_t> callees;
  for (const char* name : {"runtime.gopreempt_m", "runtime.goschedImpl", "runtime.preemptPark"})
    if (auto fn = go->FindFuncByName(name)) callees.push_back(fn->entry);
  std::set<uint64_t> unguarded = ReachableAvoiding(c, cf.last_store);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& [pc, op] : c.ops) {
    if (op.flow != Flow::kCall || std::find(callees.begin(), callees.end(), op.target) == callees.end()) continue;
    if (unguarded.count(pc)) {
      out.why = "a path reaches the preempting call at newstack+" + std::to_string(pc - c.entry) + " without the copy";
      return out;
    }
    lo = std::min(lo, pc);
    hi = std::max(hi, op.next);
    out.calls++;
  }
  if (out.calls == 0) {
    out.why = "no call from newstack to gopreempt_m/goschedImpl/preemptPark";
    return out;
  }
  for (const auto& [pc, op] : c.ops)
    if (pc >= lo && pc < hi && op.flow == Flow::kCall && unguarded.count(pc)) {
      out.why = "a call between the preempting calls is not dominated by the copy";
      return out;
    }
  // after_copy: reachable from the copy's last store; to_call: can reach a preempting call.
  std::set<uint64_t> after_copy, to_call;
  {
    std::vector<uint64_t> work{cf.last_store};
    while (!work.empty()) {
      uint64_t pc = work.back();
      work.pop_back();
      if (after_copy.count(pc) || !c.ops.count(pc)) continue;
      after_copy.insert(pc);
      const Op& op = c.ops.at(pc);
      bool falls = op.flow == Flow::kNext || op.flow == Flow::kCond || op.flow == Flow::kCall;
      if (falls && op.next < c.end) work.push_back(op.next);
      if (op.flow == Flow::kCond || op.flow == Flow::kJump) work.push_back(op.target);
    }
    std::map<uint64_t, std::vector<uint64_t>> preds;
    for (const auto& [pc, op] : c.ops) {
      bool falls = op.flow == Flow::kNext || op.flow == Flow::kCond || op.flow == Flow::kCall;
      if (falls && op.next < c.end) preds[op.next].push_back(pc);
      if (op.flow == Flow::kCond || op.flow == Flow::kJump) preds[op.target].push_back(pc);
    }
    std::vector<uint64_t> back;
    for (const auto& [pc, op] : c.ops)
      if (op.flow == Flow::kCall && std::find(callees.begin(), callees.end(), op.target) != callees.end())
        back.push_back(pc);
    while (!back.empty()) {
      uint64_t pc = back.back();
      back.pop_back();
      if (to_call.count(pc)) continue;
      to_call.insert(pc);
      for (uint64_t p : preds[pc]) back.push_back(p);
    }
  }
  std::string e = ProveSlotUntouched(bin, c, cf, slot, len, duff_lo, duff_hi, after_copy, to_call);
  if (!e.empty()) {
    out.why = e;
    return out;
  }
  out.found = true;
  out.lo = lo;
  out.hi = hi;
  out.cfa_off = static_cast<int32_t>(slot);
  out.gobuf_g = static_cast<uint16_t>(g_field);
  return out;
}

}  // namespace sb::unwinder
