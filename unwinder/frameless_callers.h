// amd64 functions that call another function without a frame of their own: assembly with a $0
// frame, Go 1.19-1.20's gcWriteBarrierCX ... gcWriteBarrierR9 (`XCHGQ; CALL gcWriteBarrier;
// XCHGQ; RET`). Their callee's frame record links straight to their caller's caller, so a
// frame-pointer walk loses their caller (the frame that wrote the pointer, or park_m under
// mcall). The unwinder steps out of them by SP instead (SB_FN_FRAMELESS_CALLER): their return
// address is at their SP, which is exact right above their callee's frame record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbolizer/binary.h"

namespace sb::unwinder {

struct FramelessCaller {
  std::string name;
  uint64_t entry = 0;  // link-time [entry, end)
  uint64_t end = 0;
};

// Every function whose pcsp is 0 at every pc (it never moves SP: no frame, not even a pushed
// BP) and whose linear decode from its entry (Zydis; Go text holds no data between
// instructions) holds a CALL. amd64 only (arm64 Go frames are walked by SP and pcsp anyway):
// empty for other binaries.
std::vector<FramelessCaller> FindFramelessCallers(const sym::Binary& bin);

}  // namespace sb::unwinder
