#include "unwinder/runtime_offsets.h"

#include "unwinder/offset_fields.h"

namespace sb::unwinder {

OffsetChoice ChooseOffsets(sym::Arch arch, const Result<sb_go_offsets>& dwarf, const AsmOffsets& asm_facts,
                           const std::optional<sb_go_offsets>& table, const std::string& go_version) {
  OffsetChoice c;
  int from_dwarf = 0, from_asm = 0, from_table = 0, disagree = 0;
  auto choose = [&](const OffsetField& f, bool optional) {
    FieldChoice fc;
    fc.name = f.name;
    fc.needed = !optional && (arch == sym::Arch::kArm64 || f.used_on_amd64);
    fc.optional = optional;
    // An optional field DWARF or the table does not know is marked kUnknownOffset there.
    auto known = [&](int v) { return !optional || v != kUnknownOffset; };
    if (dwarf.ok() && known((*dwarf).*(f.member))) fc.dwarf = (*dwarf).*(f.member);
    if (auto it = asm_facts.fields.find(f.name); it != asm_facts.fields.end()) {
      fc.asm_value = static_cast<int>(it->second.value);
      fc.asm_source = it->second.source;
    }
    if (table && known((*table).*(f.member))) fc.table = (*table).*(f.member);
    if (fc.dwarf) {
      fc.value = *fc.dwarf;
      fc.source = "dwarf";
      from_dwarf++;
    } else if (fc.asm_value) {
      fc.value = *fc.asm_value;
      fc.source = fc.asm_source;
      from_asm++;
    } else if (fc.table) {
      fc.value = *fc.table;
      fc.source = "table " + go_version;
      from_table++;
    } else {
      fc.source = "none";
    }
    for (const auto& v : {fc.dwarf, fc.asm_value, fc.table}) {
      if (v && fc.value >= 0 && *v != fc.value) fc.agree = false;
    }
    if (!fc.agree) disagree++;
    c.offsets.*(f.member) = fc.value >= 0 ? static_cast<sb_u16>(fc.value) : kUnknownOffset;
    if (fc.needed && fc.value < 0) c.missing.push_back(f.name);
    c.fields.push_back(fc);
  };
  for (const OffsetField& f : kOffsetFields) choose(f, false);
  for (const OffsetField& f : kOptionalOffsetFields) choose(f, true);
  c.complete = c.missing.empty();
  if (!c.complete) {
    std::string names;
    for (const auto& m : c.missing) names += (names.empty() ? "" : ", ") + m;
    c.summary = "none: no source for " + names +
                (dwarf.ok() ? "" : " (DWARF: " + dwarf.error() + ")") +
                (table ? "" : go_version.empty() ? "; Go version unknown" : "; no table for " + go_version);
    return c;
  }
  c.summary = std::to_string(from_dwarf) + " from DWARF, " + std::to_string(from_asm) + " from the runtime's code, " +
              std::to_string(from_table) + " from the " + (table ? go_version : std::string("(no)")) + " table; " +
              (disagree == 0 ? "all sources present agree" : std::to_string(disagree) + " fields where sources disagree");
  return c;
}

}  // namespace sb::unwinder
