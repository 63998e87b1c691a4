// The windows of amd64 `gogo` (the runtime's resume of a goroutine from its gobuf) in which
// the TLS g is already the goroutine while the registers are not yet all its: decoded from the
// function's own code, so stripped binaries have them too (docs/unwinder.md, gogo windows).
//   MOVQ DX, FS:g        TLS g = gp                      } on_g0: SP is still on g0 (execute
//   MOVQ DX, R14                                          }        called gogo there)
//   MOVQ gobuf_sp(BX), SP                                 } on_gp: SP is gp's; BP is g0's until
//   ... MOVQ gobuf_bp(BX), BP ...                         }        the BP load, gp's after it;
//   MOVQ gobuf_pc(BX), BX ; JMP BX                        }        gp resumes at gp.sched.pc
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbolizer/binary.h"

namespace sb::unwinder {

//
// arm64 gogo<> (R5 = gobuf, R6 = gp):
//   MOVD R6, g (R28)     g = gp                          } on_g0: SP still on g0; from the
//   BL runtime.save_g                                     }        BL on, LR is save_g's return
//   MOVD gobuf_sp(R5), R0 ; MOVD R0, RSP                  }        site (the caller is lost)
//   MOVD gobuf_bp(R5), R29 ; MOVD gobuf_lr(R5), R30 ...   } on_gp: SP is gp's; R29 and LR
//   MOVD gobuf_pc(R5), R6 ; B (R6)                        }        gp's from their loads
// Inside save_g with LR = gogo's return site the thread is in the g0 window too. Where LR no
// longer names the caller of runtime.gogo (reached by a BL from execute, recovery, ...; it
// branches to gogo<>), the caller is the function whose frame SP is (both are frameless):
// `callers` lists each function that calls runtime.gogo exactly once with that call's return
// site (a function with two calls, newstack, is ambiguous and left out).
struct GogoCaller {
  uint64_t entry = 0;
  uint64_t site = 0;
};

struct GogoWindow {
  bool found = false;
  uint64_t g0_lo = 0, g0_hi = 0;  // [lo, hi): TLS g is gp, SP still on g0 (link-time pcs)
  uint64_t gp_lo = 0, gp_hi = 0;  // [lo, hi): SP = gp.sched.sp, the goroutine not yet resumed
  uint64_t bp_loaded = 0;         // from this pc on BP is gp's (before it, gobuf.bp in memory)
  std::string why;                // when not found: which instruction was not where expected
  // arm64 only:
  uint64_t lr_loaded = 0;               // from this pc on LR is gp's (before it, gobuf.lr)
  uint64_t save_g_lo = 0, save_g_hi = 0;  // runtime.save_g
  std::vector<GogoCaller> callers;      // functions calling runtime.gogo once, by entry
};

// amd64 and arm64.
GogoWindow FindGogoWindow(const sym::Binary& bin);

}  // namespace sb::unwinder
