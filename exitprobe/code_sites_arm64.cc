// arm64 probe sites: instructions are 4 bytes, so a function is an array of words.
//
// Which instructions the kernel simulates for a uprobe (arch/arm64/kernel/probes/decode-insn.c):
// B, BL, B.cond, CBZ/CBNZ, TBZ/TBNZ, BR/BLR/RET, ADR/ADRP, LDR (literal) and NOP. The rest is
// single-stepped out of line. Go's prologue is `MOVD 16(g), R16; CMP R16, RSP; BLS morestack`
// (large frames: `SUB $N, RSP, R17; CMP R16, R17; BLS`), then `MOVD.W R30, -N(RSP)`, so the BLS
// is the cheap entry site, reached before SP changes.
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "exitprobe/code_sites.h"

namespace sb::exitprobe {
namespace {

bool IsRet(uint32_t w) {
  return (w & 0xfffffc1fu) == 0xd65f0000u  // RET Xn
         || w == 0xd65f0bffu               // RETAA
         || w == 0xd65f0fffu;              // RETAB
}

bool IsSimulated(uint32_t w) {
  return (w & 0xff000010u) == 0x54000000u     // B.cond
         || (w & 0x7c000000u) == 0x14000000u  // B, BL
         || (w & 0x7e000000u) == 0x34000000u  // CBZ, CBNZ
         || (w & 0x7e000000u) == 0x36000000u  // TBZ, TBNZ
         || (w & 0xff9ffc1fu) == 0xd61f0000u  // BR, BLR, RET (Xn)
         || (w & 0x1f000000u) == 0x10000000u  // ADR, ADRP
         || (w & 0x3b000000u) == 0x18000000u  // LDR/LDRSW (literal)
         || w == 0xd503201fu;                 // NOP
}

// Instructions Go puts before its stack-check branch, known not to write SP or branch.
bool IsPrologueSafe(uint32_t w) {
  uint32_t rd = w & 0x1f;
  if ((w & 0xffc00000u) == 0xf9400000u) return rd != 31;  // LDR Xt, [Xn, #imm]
  if ((w & 0xff200000u) == 0xeb000000u) return rd == 31;  // SUBS XZR, Xn, Xm (CMP, shifted)
  if ((w & 0xffe00000u) == 0xeb200000u) return rd == 31;  // SUBS XZR, Xn|SP, Xm (CMP, extended)
  if ((w & 0xff800000u) == 0xd1000000u) return rd != 31;  // SUB Xd, Xn|SP, #imm
  if ((w & 0xff800000u) == 0x91000000u) return rd != 31;  // ADD Xd, Xn|SP, #imm
  if ((w & 0xffe0ffe0u) == 0xaa0003e0u) return rd != 31;  // MOV Xd, Xm (ORR)
  return false;
}

std::string Describe(uint32_t w) {
  if (IsRet(w)) return w == 0xd65f0bffu ? "retaa" : w == 0xd65f0fffu ? "retab" : "ret";
  if ((w & 0xff000010u) == 0x54000000u) return fmt::format("b.cond ({:08x})", w);
  if (w == 0xd503201fu) return "nop";
  return fmt::format(".word {:08x}", w);
}

}  // namespace

CodeSites FindCodeSitesArm64(std::string_view code, uint64_t vaddr, EntryPlacement placement) {
  CodeSites out;
  size_t n = code.size() / 4;
  if (code.size() % 4 != 0) out.decode_error = true;  // a partial instruction at the end
  bool entry_open = placement == EntryPlacement::kAuto;
  for (size_t i = 0; i < n; i++) {
    uint32_t w;
    std::memcpy(&w, code.data() + 4 * i, 4);  // arm64 Linux is little-endian
    uint64_t pc = vaddr + 4 * i;
    bool simulated = IsSimulated(w);
    if (i < 3 && (w & 0xffffffe0u) == 0xf9400b80u) out.g_stack_check = true;  // LDR Rt, [R28, #16]
    if (i == 0) {
      out.first = {pc, simulated, Describe(w)};
      out.entry = out.first;
      out.entry_how = simulated ? "first instruction (emulated)" : "first instruction";
      if (simulated) entry_open = false;
    } else if (entry_open && i < 8) {
      if (simulated) {
        out.entry = {pc, true, Describe(w)};
        out.entry_how = (w & 0xff000010u) == 0x54000000u ? "stack-check branch" : "first emulated instruction";
        entry_open = false;
      } else if (!IsPrologueSafe(w)) {
        entry_open = false;
      }
    }
    if (i == 0 && entry_open && !IsPrologueSafe(w)) entry_open = false;
    if (IsRet(w)) out.rets.push_back({pc, true, Describe(w)});  // RET is simulated on arm64
  }
  return out;
}

}  // namespace sb::exitprobe
