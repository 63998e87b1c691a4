// Opening a file's DWARF with libdwarf and visiting its compilation units: the part every DWARF
// reader of unwinder/ shares (runtime struct offsets, the mcall spill proof).
#pragma once

#include <libdwarf/libdwarf.h>

#include <functional>
#include <string>

#include "base/result.h"

namespace sb::unwinder {

// Calls VISIT with each compilation unit's DIE (owned by the caller of VISIT, freed after it
// returns) until VISIT returns false or the units end. Errors: the file cannot be opened,
// "no DWARF", "unreadable DWARF".
Status ForEachDwarfUnit(const std::string& path, const std::function<bool(Dwarf_Debug, Dwarf_Die)>& visit);

// DW_AT_name of DIE, or "" when it has none (or it cannot be read).
std::string DieName(Dwarf_Debug dbg, Dwarf_Die die);

}  // namespace sb::unwinder
