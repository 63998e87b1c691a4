// Return sites of the direct calls to one function in a Go executable's text: the pc right
// after each `CALL target` (amd64) or `BL target` (arm64). The unwinder accepts a goroutine's
// saved sched.pc as mcall's save only if it is one of these (mcall saves its own return address).
#pragma once

#include <cstdint>
#include <vector>

#include "symbolizer/binary.h"

namespace sb::unwinder {

// Link-time return sites, ascending. amd64: every E8 rel32 whose target is `target` is confirmed
// by decoding its function linearly from its entry (Zydis), so a byte pattern inside another
// instruction never counts; arm64: every BL word of the (fixed-width) Go text.
std::vector<uint64_t> ReturnSitesOfCallsTo(const sym::Binary& bin, uint64_t target);

}  // namespace sb::unwinder
