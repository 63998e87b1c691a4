// The child side of runtime.clone. After the clone syscall returns 0 in the new thread, that
// thread runs the rest of clone on its new stack (the new m's g0 stack, empty) until it calls
// mstart, with the parent's frame pointer still in BP / R29. A frame-pointer walk from there
// follows the parent's chain and shows the parent's callers under the new thread (found live in
// lefthook, which starts threads all the time: runtime.clone <- runtime.(*mheap).initSpan ...).
// Nothing is above clone on the new stack: the child side is the base of a new thread, a root.
// Decoded from clone's own code, the same in Go 1.19-1.27 (sys_linux_amd64.s / _arm64.s):
//   amd64: SYSCALL ; CMPQ AX, $0 ; JEQ child ; MOVL AX, ret+40(FP) ; RET ; child: ...
//   arm64: SVC     ; CMP ZR, R0  ; BEQ child ; MOVW R0, ret+40(FP) ; RET ; child: ...
// The child side is [child, end of clone), proven by the branch: its target is the instruction
// after the parent's RET. (The two instructions between the syscall and the branch are run by
// both threads and are not marked.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "symbolizer/elf_file.h"

namespace sb::unwinder {

struct CloneChild {
  bool found = false;
  uint64_t lo = 0, hi = 0;  // [lo, hi): link-time pcs of the child side
  std::string why;          // when not found: what was not where expected
};

// CODE is runtime.clone's bytes, loaded at ENTRY.
CloneChild FindCloneChild(sym::Arch arch, uint64_t entry, std::string_view code);

}  // namespace sb::unwinder
