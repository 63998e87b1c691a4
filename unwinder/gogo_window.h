// The windows of amd64 `gogo` (the runtime's resume of a goroutine from its gobuf) in which
// the TLS g is already the goroutine while the registers are not yet all its: decoded from the
// function's own code, so stripped binaries have them too (issue 13 item 4).
//   MOVQ DX, FS:g        TLS g = gp                      } on_g0: SP is still on g0 (execute
//   MOVQ DX, R14                                          }        called gogo there)
//   MOVQ gobuf_sp(BX), SP                                 } on_gp: SP is gp's; BP is g0's until
//   ... MOVQ gobuf_bp(BX), BP ...                         }        the BP load, gp's after it;
//   MOVQ gobuf_pc(BX), BX ; JMP BX                        }        gp resumes at gp.sched.pc
#pragma once

#include <cstdint>
#include <string>

#include "symbolizer/binary.h"

namespace sb::unwinder {

struct GogoWindow {
  bool found = false;
  uint64_t g0_lo = 0, g0_hi = 0;  // [lo, hi): TLS g is gp, SP still on g0 (link-time pcs)
  uint64_t gp_lo = 0, gp_hi = 0;  // [lo, hi): SP = gp.sched.sp, the goroutine not yet resumed
  uint64_t bp_loaded = 0;         // from this pc on BP is gp's (before it, gobuf.bp in memory)
  std::string why;                // when not found: which instruction was not where expected
};

// amd64 only (arm64 writes g to R28 and SP in a different order: not decoded, found = false).
GogoWindow FindGogoWindow(const sym::Binary& bin);

}  // namespace sb::unwinder
