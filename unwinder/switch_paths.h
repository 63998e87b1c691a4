// Which code of runtime.systemstack and runtime.asmcgocall runs after they switched to g0, and
// which runs on the stack they were called on. Both test first whether the caller already is
// on g0 (or gsignal); if so they take a direct path (systemstack's `noswitch`, a tail call;
// asmcgocall's `nosave`, a plain call) and never touch curg. A frame of theirs on g0 is the
// switch to cross only in the switched path: from the return site of their call to
// gosave_systemstack_switch (which saves curg's state) up to the direct path's first
// instruction. Elsewhere on g0 it is one more g0 frame (a nested systemstack sampled in its
// noswitch path ended with bad_fp: the walk crossed there and lost track of its stack).
// Decoded from the functions' own code (amd64 with Zydis, arm64 with arm64_decoder.h), so
// stripped binaries have it too: the direct path is the lowest target of the conditional
// branches before the gosave call that lies past it.
#pragma once

#include <cstdint>
#include <string>

#include "symbolizer/binary.h"

namespace sb::unwinder {

struct SwitchPaths {
  bool found = false;
  uint64_t switched_lo = 0;  // return site of the call to gosave_systemstack_switch (link-time)
  uint64_t direct_lo = 0;    // first instruction of the path taken already on g0 (link-time)
  // amd64 asmcgocall: where its direct path saves its entry SP, as an offset from SP at its
  // call (after it aligned SP): `MOVQ SP, DX` before any change of SP ... `MOVQ DX,
  // slot(SP)`; -1 when not so. The entry SP holds the return address into its Go caller, which
  // the frame-pointer step misses where asmcgocall has no frame record (Go 1.19: 40; from Go
  // 1.21 on it pushes BP first, the saved SP is not the entry SP: -1, and none is needed).
  int64_t entry_sp_slot = -1;
  std::string why;           // when not found: what was not where expected
};

// fn_name: "runtime.systemstack" or "runtime.asmcgocall".
SwitchPaths FindSwitchPaths(const sym::Binary& bin, const std::string& fn_name);

}  // namespace sb::unwinder
