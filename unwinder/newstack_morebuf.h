// Where runtime.newstack keeps its local `morebuf` (its copy of m.morebuf: the goroutine that
// grew its stack, and f's caller's pc and sp), derived from newstack's machine code, so that
// stripped binaries have it too (dwarf_spill_proof.h proves the same slot
// from DWARF where there is DWARF). The shape it must find, or it reports not found:
//   morebuf := thisg.m.morebuf      loads of [g.m + K, + gobuf size) stored into one frame slot
//   thisg.m.morebuf.pc = 0 (lr, sp, g)  four zero stores to m + K + gobuf.{pc,lr,sp,g}
//   ... gopreempt_m / goschedImpl / preemptPark calls
// and it proves, over every instruction reachable from newstack's entry, that
//   - the copy is straight-line code every path to a preempting call passes through;
//   - nothing else writes the slot: every store into newstack's frame has a known address
//     (SP-relative by pcsp, or through a register whose frame offset is tracked), no frame
//     address is stored to memory or passed to a call (but the frame pointer itself, which
//     Go code never writes through), and no store through an unknown frame address exists.
#pragma once

#include <cstdint>
#include <string>

#include "ebpf/unwind/unwind_types.h"
#include "symbolizer/binary.h"

namespace sb::unwinder {

struct MorebufFromCode {
  bool found = false;
  // Link-time [lo, hi): a return address r into newstack with r - 1 in it is the return site of
  // one of the preempting calls (every call in the range is dominated by the copy).
  uint64_t lo = 0, hi = 0;
  int32_t cfa_off = 0;   // morebuf starts at newstack's CFA + cfa_off (as DWARF's DW_OP_fbreg)
  uint16_t gobuf_g = 0;  // offset of gobuf.g: the zero store that is none of sp, pc, lr
  int calls = 0;         // preempting calls covered
  std::string why;       // when not found: what did not match
};

// amd64 (Zydis) and arm64. `off` supplies g.m and gobuf.sp/pc/lr/bp (gobuf.bp is its last
// field: the copy must cover exactly [K, K + gobuf.bp + 8)).
MorebufFromCode NewstackMorebufFromCode(const sym::Binary& bin, const sb_go_offsets& off);

}  // namespace sb::unwinder
