// Instruction lifters for asm_trace: machine code of one function -> asmtrace::Insn, and the
// architecture's register conventions for a trace. Internal to the asm offset derivation.
#pragma once

#include <string_view>
#include <vector>

#include "unwinder/asm_trace.h"

namespace sb::unwinder {

// Decodes up to `max_insns` instructions of code located at `address`; stops at the first
// undecodable byte sequence.
std::vector<asmtrace::Insn> LiftAmd64(std::string_view code, uint64_t address, size_t max_insns = 4096);
std::vector<asmtrace::Insn> LiftArm64(std::string_view code, uint64_t address, size_t max_insns = 4096);

// Entry state shared by every traced function: SP = "sp", g register = "g", frame pointer =
// "fp0", the return address = "ret" (amd64 at [sp+0], arm64 in x30), argument registers
// "arg0".. in the Go internal ABI order, the TLS g slot = "g".
asmtrace::TraceConfig Amd64Config(bool go_code);
asmtrace::TraceConfig Arm64Config(bool go_code);
// Register holding the Go internal ABI's argument `n` (amd64: AX BX CX DI SI R8..R11; arm64: Xn).
int Amd64ArgReg(int n);

}  // namespace sb::unwinder
