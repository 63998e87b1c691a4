// Go runtime struct offsets by release (DESIGN.md's table, checked on built binaries).
// This is the last resort: DWARF and the runtime's own assembly come first when available.
#pragma once

#include <optional>

#include "ebpf/unwind/unwind_types.h"

namespace sb::unwinder {

// Offsets for go1.<minor> (amd64 and arm64 share them). nullopt for releases we have not
// verified (before 1.19, after 1.27): such binaries get no guessed offsets.
std::optional<sb_go_offsets> GoOffsetsForVersion(int major, int minor);

}  // namespace sb::unwinder
