// Chooses each runtime struct offset from the sources a binary offers, in order: DWARF (the
// compiler's own description), the runtime's machine code (asm_offsets.h), and only then the
// version table, which is used only for a Go release it knows. A field needed on the binary's
// architecture that no source gives leaves the binary without offsets (samples say
// `no_offsets`): never a guess. Every field keeps the value of each source for `inspect`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "ebpf/unwind/unwind_types.h"
#include "symbolizer/elf_file.h"
#include "unwinder/asm_offsets.h"

namespace sb::unwinder {

struct FieldChoice {
  std::string name;                 // "g.m"
  bool needed = true;               // read by the unwinder on this architecture
  bool optional = false;            // missing only costs what it serves (kOptionalOffsetFields)
  int value = -1;                   // chosen; -1 none
  std::string source;               // "dwarf", "asm:runtime.mcall,...", "table go1.27", "none"
  std::optional<int> dwarf, asm_value, table;
  std::string asm_source;
  bool agree = true;                // every present source gives the same value
};

struct OffsetChoice {
  bool complete = false;  // every needed field has a value
  sb_go_offsets offsets{};
  std::vector<FieldChoice> fields;
  std::string summary;               // one line for inspect / record stats
  std::vector<std::string> missing;  // needed fields with no source
};

OffsetChoice ChooseOffsets(sym::Arch arch, const Result<sb_go_offsets>& dwarf, const AsmOffsets& asm_facts,
                           const std::optional<sb_go_offsets>& table, const std::string& go_version);

}  // namespace sb::unwinder
