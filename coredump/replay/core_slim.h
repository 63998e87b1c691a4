// Shrinks a core for storage as test data: the contents of PT_LOAD segments that are all
// zeros and not writable are dropped (p_filesz = 0). In a Go process these are the heap arena
// reservations (PROT_NONE, which gdb's gcore writes out as ~1 GB of zeros): no read could have
// succeeded there in the live process, and none succeeds in the slimmed core either. Notes and
// every other byte are kept; section headers (gdb's copy of the segment table) are dropped.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace sb::coredump {

struct SlimStats {
  size_t segments = 0;
  size_t dropped = 0;
  uint64_t bytes_before = 0;
  uint64_t bytes_after = 0;
};

Result<std::string> SlimCore(std::string_view core, SlimStats* stats = nullptr);

}  // namespace sb::coredump
