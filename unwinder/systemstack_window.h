// The windows of amd64 runtime.systemstack in which the TLS g names one goroutine and SP is on
// the other's stack: decoded from the function's own code, so stripped binaries have them too.
//   CALL gosave_systemstack_switch
//   MOVQ DX, FS:g          TLS g = g0                      } g0 window: SP still the
//   MOVQ DX, R14                                           }   goroutine's (F called
//   [MOVQ g_sched+gobuf_sp(DX), BX] MOVQ ..., SP           }   systemstack there)
//   ... CALL DI (fn on g0) ...
//   MOVQ AX, FS:g          TLS g = m.curg                  } gp window: SP still on g0,
//   MOVQ g_sched+gobuf_sp(AX), SP                          }   where fn has returned
#pragma once

#include <cstdint>
#include <string>

#include "symbolizer/binary.h"

namespace sb::unwinder {

struct SystemstackWindow {
  bool found = false;
  uint64_t g0_lo = 0, g0_hi = 0;  // [lo, hi): TLS g is g0, SP still on the goroutine (link-time)
  uint64_t gp_lo = 0, gp_hi = 0;  // [lo, hi): TLS g is m.curg again, SP still on g0
  std::string why;                // when not found: which instruction was not where expected
};

// amd64 only (arm64 is not decoded: found = false).
SystemstackWindow FindSystemstackWindow(const sym::Binary& bin);

}  // namespace sb::unwinder
