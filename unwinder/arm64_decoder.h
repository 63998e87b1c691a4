// A small fixed-width AArch64 decoder: just the instruction forms the Go runtime's hand-written
// assembly and the compiler's prologues use to reach g, m and their fields (loads and stores with
// immediate, register and pair addressing, MOV/ADD/SUB immediate, MOVZ/MOVK, ADRP/ADR, MRS
// TPIDR_EL0, branches). Anything else decodes as kOther with the register it may write, so a
// caller tracking register contents can forget that register instead of trusting a stale value.
#pragma once

#include <cstdint>
#include <cstring>

namespace sb::unwinder {

enum class A64Op {
  kOther,      // not modelled; writes `rd` when writes_rd
  kLoad,       // rt = [rn + imm] (or [rn + rm] when has_rm); size bytes; writeback per mode
  kStore,      // [rn + imm] = rt
  kLoadPair,   // rt, rt2 = [rn + imm], [rn + imm + size]
  kStorePair,
  kAddImm,     // rd = rn + imm (SUB: imm negative); register 31 is SP here
  kMovReg,     // rd = rm (ORR rd, zr, rm)
  kMovWide,    // MOVZ/MOVN: rd = imm; MOVK: keep_rd, insert imm16 at shift
  kAdr,        // rd = imm (absolute: ADRP page or ADR address)
  kMrsTpidr,   // rd = TPIDR_EL0
  kCmpReg,     // flags = rn - rm (SUBS zr, rn, rm)
  kB,          // target
  kBL,         // target; writes x30
  kBCond,      // conditional: B.cond, CBZ/CBNZ, TBZ/TBNZ; target
  kBR,         // jump to rn
  kBLR,        // call rn; writes x30
  kRet,        // RET / RETAA / RETAB
  kUdf,        // permanently undefined (0x00000000 padding)
};

enum class A64Index { kOffset, kPre, kPost };

struct A64Insn {
  A64Op op = A64Op::kOther;
  int rd = -1, rn = -1, rm = -1, rt = -1, rt2 = -1;  // 0..30, 31 = SP or ZR (see `sp_*`)
  bool rn_is_sp = false;   // register 31 in rn means SP (addressing, ADD/SUB imm)
  bool rd_is_sp = false;   // register 31 in rd means SP (ADD/SUB imm without S, logical imm)
  bool writes_rd = false;  // kOther: rd is written
  bool keep_rd = false;    // kMovWide: MOVK
  int shift = 0;           // kMovWide: bit position of imm16
  int size = 0;            // memory access size in bytes
  bool is64 = true;
  A64Index index = A64Index::kOffset;
  int64_t imm = 0;         // offset, immediate, or absolute address (kAdr)
  uint64_t target = 0;     // branches: absolute target
};

// Decodes one little-endian instruction word located at `pc`.
A64Insn DecodeA64(uint32_t word, uint64_t pc);

// Decodes the instruction at byte `off` of `code` (the function's bytes from `entry`; the caller
// keeps off + 4 <= size): the decoders of the runtime's switch code walk it word by word.
inline A64Insn DecodeA64At(const char* code, size_t off, uint64_t entry) {
  uint32_t word = 0;
  std::memcpy(&word, code + off, 4);  // little-endian, as arm64 Linux runs
  return DecodeA64(word, entry + off);
}

}  // namespace sb::unwinder
