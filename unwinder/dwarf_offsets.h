// Go runtime struct offsets from the binary's own DWARF (libdwarf): the members of
// runtime.g, runtime.m, runtime.gobuf and runtime.stack. First choice whenever DWARF is there
// (binaries built without -w); the version table is the last resort.
#pragma once

#include <string>

#include "base/result.h"
#include "ebpf/unwind/unwind_types.h"

namespace sb::unwinder {

// Errors: no DWARF, or a needed member not found (named).
Result<sb_go_offsets> GoOffsetsFromDwarf(const std::string& path);

}  // namespace sb::unwinder
