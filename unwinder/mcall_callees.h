// The function each call site of runtime.mcall passes to it (gopark -> mcall(park_m),
// Gosched -> mcall(gosched_m), goexit1 -> mcall(goexit0), ...), decoded from the code around the
// call: every mcall in Go 1.19-1.27 passes a static funcval (its closures capture nothing),
// loaded into the first argument register right before the call (amd64 ABIInternal:
// `LEAQ fn·f(SB), AX`; arm64: `ADRP`/`ADD` into R0), whose first word, in the binary's data, is
// the function's entry. On g0 the frame just below mcall is that function, so a goroutine
// whose sched.pc is site i is this mcall's caller only if the callee frame is in site i's
// function (gobuf_resume.h sb_mcall_callee_is).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbolizer/binary.h"

namespace sb::unwinder {

struct McallCallee {
  uint64_t site = 0;                 // return site of the call (link-time)
  uint64_t fn_entry = 0, fn_end = 0;  // the function passed; 0: not decoded (then no check)
  std::string why;                   // when not decoded: what was not where expected
};

// One entry per site, in the order given. A site counts as decoded only when the instruction
// before the call (NOPs skipped) loads the argument register with a pc-relative address that
// no branch of the function jumps past, and the word there is the entry of a Go function.
std::vector<McallCallee> DecodeMcallCallees(const sym::Binary& bin, const std::vector<uint64_t>& sites);

}  // namespace sb::unwinder
