#include "unwinder/arm64_decoder.h"

namespace sb::unwinder {
namespace {

int64_t SignExtend(uint64_t v, int bits) {
  uint64_t m = 1ull << (bits - 1);
  v &= (1ull << bits) - 1;
  return static_cast<int64_t>((v ^ m) - m);
}

uint32_t Bits(uint32_t w, int hi, int lo) { return (w >> lo) & ((1u << (hi - lo + 1)) - 1); }

// Loads and stores of general registers (V = 0). Returns false when not one of the modelled forms.
bool DecodeLoadStore(uint32_t w, A64Insn* in) {
  int size_log = static_cast<int>(Bits(w, 31, 30));
  in->rt = static_cast<int>(Bits(w, 4, 0));
  in->rn = static_cast<int>(Bits(w, 9, 5));
  in->rn_is_sp = true;
  in->size = 1 << size_log;
  uint32_t opc = Bits(w, 23, 22);
  auto set_kind = [&](bool* ok) {
    // opc 00 store, 01 load, 10/11 sign-extending load (size 3 with opc 10 is PRFM).
    *ok = true;
    if (opc == 0) in->op = A64Op::kStore;
    else if (opc == 1 || (opc == 2 && size_log < 3) || (opc == 3 && size_log < 2)) in->op = A64Op::kLoad;
    else *ok = false;
  };
  bool ok = false;
  if ((w & 0x3F000000) == 0x39000000) {  // unsigned scaled imm12
    in->imm = static_cast<int64_t>(Bits(w, 21, 10)) << size_log;
    set_kind(&ok);
    return ok;
  }
  if ((w & 0x3F200000) == 0x38000000) {  // imm9: unscaled, post-index, pre-index
    uint32_t mode = Bits(w, 11, 10);
    if (mode == 2) return false;  // unprivileged
    in->imm = SignExtend(Bits(w, 20, 12), 9);
    in->index = mode == 1 ? A64Index::kPost : mode == 3 ? A64Index::kPre : A64Index::kOffset;
    set_kind(&ok);
    return ok;
  }
  if ((w & 0x3F200C00) == 0x38200800) {  // register offset
    uint32_t option = Bits(w, 15, 13);
    bool scaled = Bits(w, 12, 12) != 0 && size_log != 0;
    if (option != 3 || scaled) {  // extended or scaled index: address not modelled
      set_kind(&ok);
      if (ok && in->op == A64Op::kLoad) {
        in->op = A64Op::kOther;
        in->rd = in->rt;
        in->writes_rd = in->rt != 31;
        return true;
      }
      if (ok) {
        in->op = A64Op::kOther;  // a store through an unmodelled address writes no register
        return true;
      }
      return false;
    }
    in->rm = static_cast<int>(Bits(w, 20, 16));
    set_kind(&ok);
    return ok;
  }
  if ((w & 0x3C000000) == 0x28000000) {  // pairs (LDP/STP, 32- or 64-bit)
    uint32_t pair_opc = Bits(w, 31, 30);
    if (pair_opc != 0 && pair_opc != 2) return false;
    in->size = pair_opc == 2 ? 8 : 4;
    in->rt2 = static_cast<int>(Bits(w, 14, 10));
    in->imm = SignExtend(Bits(w, 21, 15), 7) * in->size;
    uint32_t type = Bits(w, 24, 23);
    in->index = type == 1 ? A64Index::kPost : type == 3 ? A64Index::kPre : A64Index::kOffset;
    in->op = Bits(w, 22, 22) ? A64Op::kLoadPair : A64Op::kStorePair;
    return true;
  }
  if ((w & 0x3F000000) == 0x08000000) {  // exclusive / acquire-release / CAS
    bool load = Bits(w, 22, 22) != 0;
    bool cas = Bits(w, 23, 23) != 0 && Bits(w, 21, 21) != 0;
    in->imm = 0;
    if (load && !cas) {
      in->op = A64Op::kLoad;
      return true;
    }
    // Store-exclusive and CAS write their status / old value into Rs.
    in->op = A64Op::kOther;
    int rs = static_cast<int>(Bits(w, 20, 16));
    bool writes_rs = cas || Bits(w, 23, 23) == 0;  // STXR/STLXR (o2 = 0) write a status
    in->rd = rs;
    in->writes_rd = writes_rs && rs != 31;
    return true;
  }
  return false;
}

// The bitmask immediate of logical instructions (Arm ARM DecodeBitMasks, imm form only).
bool DecodeBitMask(uint32_t n, uint32_t imms, uint32_t immr, bool is64, uint64_t* out) {
  uint32_t combined = (n << 6) | (~imms & 0x3f);
  if (combined == 0) return false;
  int len = 31 - __builtin_clz(combined);
  if (len < 1 || (!is64 && n != 0)) return false;
  uint32_t levels = (1u << len) - 1;
  uint32_t s = imms & levels, r = immr & levels;
  if (s == levels) return false;
  int esize = 1 << len;
  uint64_t emask = esize == 64 ? ~0ull : (1ull << esize) - 1;
  uint64_t welem = (s + 1 == 64) ? ~0ull : (1ull << (s + 1)) - 1;
  uint64_t elem = r == 0 ? welem : ((welem >> r) | (welem << (esize - r))) & emask;
  uint64_t v = 0;
  for (int i = 0; i < 64; i += esize) v |= elem << i;
  *out = is64 ? v : (v & 0xffffffffull);
  return true;
}

}  // namespace

A64Insn DecodeA64(uint32_t w, uint64_t pc) {
  A64Insn in;
  if ((w >> 16) == 0) {
    in.op = A64Op::kUdf;
    return in;
  }
  if ((w & 0xFC000000) == 0x14000000 || (w & 0xFC000000) == 0x94000000) {
    in.op = (w & 0x80000000) ? A64Op::kBL : A64Op::kB;
    in.target = pc + static_cast<uint64_t>(SignExtend(Bits(w, 25, 0), 26) * 4);
    return in;
  }
  if ((w & 0xFF000010) == 0x54000000 || (w & 0x7E000000) == 0x34000000) {
    in.op = A64Op::kBCond;
    in.target = pc + static_cast<uint64_t>(SignExtend(Bits(w, 23, 5), 19) * 4);
    return in;
  }
  if ((w & 0x7E000000) == 0x36000000) {
    in.op = A64Op::kBCond;
    in.target = pc + static_cast<uint64_t>(SignExtend(Bits(w, 18, 5), 14) * 4);
    return in;
  }
  uint32_t br = w & 0xFFFFFC1F;
  if (br == 0xD61F0000 || br == 0xD63F0000) {
    in.op = br == 0xD61F0000 ? A64Op::kBR : A64Op::kBLR;
    in.rn = static_cast<int>(Bits(w, 9, 5));
    return in;
  }
  if (br == 0xD65F0000 || w == 0xD65F0BFF || w == 0xD65F0FFF) {
    in.op = A64Op::kRet;
    return in;
  }
  if ((w & 0xFFFFFFE0) == 0xD53BD040) {
    in.op = A64Op::kMrsTpidr;
    in.rd = static_cast<int>(Bits(w, 4, 0));
    return in;
  }
  in.is64 = (w & 0x80000000) != 0;
  if ((w & 0x1F000000) == 0x10000000) {  // ADR / ADRP
    int64_t imm = SignExtend((Bits(w, 23, 5) << 2) | Bits(w, 30, 29), 21);
    in.op = A64Op::kAdr;
    in.rd = static_cast<int>(Bits(w, 4, 0));
    in.imm = (w & 0x80000000) ? static_cast<int64_t>((pc & ~0xfffull) + static_cast<uint64_t>(imm << 12))
                              : static_cast<int64_t>(pc + static_cast<uint64_t>(imm));
    return in;
  }
  if ((w & 0x1F800000) == 0x11000000) {  // ADD/SUB (immediate)
    bool sub = Bits(w, 30, 30) != 0, setflags = Bits(w, 29, 29) != 0;
    int64_t imm = static_cast<int64_t>(Bits(w, 21, 10)) << (Bits(w, 22, 22) ? 12 : 0);
    in.rd = static_cast<int>(Bits(w, 4, 0));
    in.rn = static_cast<int>(Bits(w, 9, 5));
    in.rn_is_sp = true;
    if (setflags) {  // ADDS/SUBS: rd 31 is ZR (CMP/CMN)
      in.op = A64Op::kOther;
      in.writes_rd = in.rd != 31;
      return in;
    }
    in.op = A64Op::kAddImm;
    in.rd_is_sp = true;
    in.imm = sub ? -imm : imm;
    return in;
  }
  if ((w & 0x1F800000) == 0x12800000) {  // MOVN / MOVZ / MOVK
    uint32_t opc = Bits(w, 30, 29);
    in.rd = static_cast<int>(Bits(w, 4, 0));
    if (opc == 1 || in.rd == 31) {
      in.op = A64Op::kOther;
      return in;
    }
    in.op = A64Op::kMovWide;
    in.shift = static_cast<int>(Bits(w, 22, 21)) * 16;
    int64_t v = static_cast<int64_t>(static_cast<uint64_t>(Bits(w, 20, 5)) << in.shift);
    in.keep_rd = opc == 3;
    in.imm = opc == 0 ? ~v : v;
    if (!in.is64 && opc != 3) in.imm &= 0xffffffff;
    return in;
  }
  if ((w & 0x1F000000) == 0x0A000000) {  // logical (shifted register)
    in.rd = static_cast<int>(Bits(w, 4, 0));
    in.rn = static_cast<int>(Bits(w, 9, 5));
    in.rm = static_cast<int>(Bits(w, 20, 16));
    bool orr = Bits(w, 30, 29) == 1 && Bits(w, 21, 21) == 0;
    if (orr && in.rn == 31 && Bits(w, 15, 10) == 0 && Bits(w, 23, 22) == 0 && in.is64 && in.rd != 31) {
      in.op = A64Op::kMovReg;
      return in;
    }
    in.op = A64Op::kOther;
    in.writes_rd = in.rd != 31;
    return in;
  }
  if ((w & 0x1F000000) == 0x0B000000) {  // ADD/SUB (shifted or extended register)
    bool extended = Bits(w, 21, 21) != 0;
    bool sub = Bits(w, 30, 30) != 0, setflags = Bits(w, 29, 29) != 0;
    in.rd = static_cast<int>(Bits(w, 4, 0));
    in.rn = static_cast<int>(Bits(w, 9, 5));
    in.rm = static_cast<int>(Bits(w, 20, 16));
    in.rn_is_sp = extended;
    if (sub && setflags && in.rd == 31) {
      in.op = A64Op::kCmpReg;
      return in;
    }
    in.op = A64Op::kOther;
    in.rd_is_sp = extended && !setflags;
    in.writes_rd = in.rd != 31 || in.rd_is_sp;
    return in;
  }
  if ((w & 0x1F800000) == 0x12000000) {  // logical (immediate): rd 31 is SP unless ANDS
    uint64_t mask = 0;
    if (Bits(w, 30, 29) == 1 && Bits(w, 9, 5) == 31 && Bits(w, 4, 0) != 31 &&
        DecodeBitMask(Bits(w, 22, 22), Bits(w, 15, 10), Bits(w, 21, 16), in.is64, &mask)) {
      in.op = A64Op::kMovWide;  // ORR rd, zr, #imm: the assembler's MOV of a bitmask constant
      in.rd = static_cast<int>(Bits(w, 4, 0));
      in.imm = static_cast<int64_t>(mask);
      return in;
    }
    in.op = A64Op::kOther;
    in.rd = static_cast<int>(Bits(w, 4, 0));
    in.rd_is_sp = Bits(w, 30, 29) != 3;
    in.writes_rd = in.rd != 31 || in.rd_is_sp;
    return in;
  }
  if ((w & 0x0A000000) == 0x08000000) {  // loads and stores
    if (Bits(w, 26, 26) == 0 && DecodeLoadStore(w, &in)) return in;
    in = A64Insn{};
    in.is64 = (w & 0x80000000) != 0;
    in.op = A64Op::kOther;
    // Unmodelled general-register loads (literal, unprivileged, PRFM...) may write Rt; vector
    // loads write none.
    if (Bits(w, 26, 26) == 0 && Bits(w, 22, 22) != 0) {
      in.rd = static_cast<int>(Bits(w, 4, 0));
      in.writes_rd = in.rd != 31;
    }
    if ((w & 0x3B000000) == 0x18000000 && Bits(w, 26, 26) == 0) {  // LDR (literal)
      in.rd = static_cast<int>(Bits(w, 4, 0));
      in.writes_rd = in.rd != 31;
    }
    return in;
  }
  if ((w & 0x0E000000) == 0x0A000000 || (w & 0x1C000000) == 0x10000000) {
    // Other data processing (register or immediate): writes Rd (31 = ZR here).
    in.op = A64Op::kOther;
    in.rd = static_cast<int>(Bits(w, 4, 0));
    in.writes_rd = in.rd != 31;
    return in;
  }
  if ((w & 0xFFF00000) == 0xD5300000) {  // other MRS
    in.op = A64Op::kOther;
    in.rd = static_cast<int>(Bits(w, 4, 0));
    in.writes_rd = in.rd != 31;
    return in;
  }
  in.op = A64Op::kOther;  // system, vector, SVE: no general register written
  return in;
}

}  // namespace sb::unwinder
