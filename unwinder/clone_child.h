// runtime.clone (newosproc's new thread): where the child runs, decoded from clone's own code
// so stripped binaries have it too. The child starts with the parent's frame pointer and an
// empty stack: walked as any other thread, a new thread's first samples end with end_of_chain,
// read_fault or bad_fp, or show the parent's frames (seen live on lefthook).
// amd64 (Go 1.19-1.27, sys_linux_amd64.s):
//   SYSCALL                 clone(2): the child starts at the next instruction, SP = the new
//   CMPQ AX, $0             }  g0 stack's top (nothing above it), fs_base = the new m's TLS,
//   JEQ child               }  whose g slot is still 0: [shared_lo, shared_hi) is the child
//   MOVL AX, ret+40(FP)     }  only where the TLS g is 0 (the parent's is its g)
//   RET                     }
// child: MOVQ SI, SP ...    [child_lo, child_hi): the child alone, a new thread's root
// arm64 (sys_linux_arm64.s): SVC ; CMP ZR, R0 ; BEQ child ; MOVW R0, ret ; RET ; child: ...
//   only the child's own code is decoded (shared_lo = shared_hi = 0): the branch's target, the
//   instruction after the parent's RET, proves where it starts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "symbolizer/binary.h"

namespace sb::unwinder {

struct CloneChild {
  bool found = false;
  uint64_t shared_lo = 0, shared_hi = 0;  // link-time: after the SYSCALL up to the child's code
  uint64_t child_lo = 0, child_hi = 0;    // link-time: the child's code to clone's end
  std::string why;
};

CloneChild FindCloneChild(const sym::Binary& bin);
// The same from CODE, runtime.clone's bytes loaded at ENTRY (unit tests, fuzzing).
CloneChild FindCloneChildInCode(sym::Arch arch, uint64_t entry, std::string_view code);

}  // namespace sb::unwinder
