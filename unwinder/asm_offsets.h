// Go runtime struct offsets and TLS facts read from the runtime's own machine code: the
// hand-written assembly that saves and restores goroutine state (runtime.mcall, systemstack,
// morestack, gosave_systemstack_switch, gogo, nanotime1, rt0_go, save_g/load_g) and one
// compiled function whose shape is stable (runtime.goroutineheader: g.atomicstatus, g.goid).
// Works on stripped binaries (functions are found through the pclntab). The second source after
// DWARF and before the version table; see unwinder/README.md for which field comes from where.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "symbolizer/binary.h"

namespace sb::unwinder {

struct AsmFact {
  int64_t value = 0;
  std::string source;  // "asm:runtime.mcall,runtime.systemstack" (every function that agreed)
};

struct AsmOffsets {
  std::map<std::string, AsmFact> fields;  // by kOffsetFields name
  std::vector<std::string> conflicts;     // fields whose functions disagreed (then not in fields)
  std::vector<std::string> missing_functions;
  // arm64: g's TLS slot, TPIDR_EL0-relative (runtime.save_g / load_g), and the address of the
  // byte runtime.iscgo that says whether the runtime writes that slot.
  std::optional<AsmFact> arm64_tls_g_offset;
  std::optional<AsmFact> iscgo_address;
};

// One function's bytes.
struct FuncCode {
  std::string name;  // pclntab name: "runtime.mcall", "gogo", ...
  uint64_t entry = 0;
  std::string_view bytes;
};

// The functions read, by pclntab name.
const std::vector<std::string>& AsmOffsetFunctions();

// The core, on code already in memory (what the fuzz target drives). `name_at` names a direct
// call target ("" when unknown).
AsmOffsets DeriveOffsetsFromCode(sym::Arch arch, const std::vector<FuncCode>& funcs,
                                 const std::function<std::string(uint64_t)>& name_at);

// Finds AsmOffsetFunctions() through the pclntab and derives what they show.
AsmOffsets DeriveOffsetsFromAsm(const sym::Binary& bin);

}  // namespace sb::unwinder
