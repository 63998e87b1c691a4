// The windows of amd64 runtime.systemstack in which the TLS g names one goroutine and SP is on
// the other's stack: decoded from the function's own code, so stripped binaries have them too.
//   CALL gosave_systemstack_switch
//   MOVQ DX, FS:g          TLS g = g0                      } g0 window: SP still the
//   MOVQ DX, R14                                           }   goroutine's (F called
//   [MOVQ g_sched+gobuf_sp(DX), BX] MOVQ ..., SP           }   systemstack there)
//   ... CALL DI (fn on g0) ...
//   MOVQ AX, FS:g          TLS g = m.curg                  } gp window: SP still on g0,
//   MOVQ g_sched+gobuf_sp(AX), SP                          }   where fn has returned
// arm64 has the same two windows around the g register (R28), each opened by a BL save_g, which
// stores g to its TLS slot when cgo is in (frameless: inside it LR is the BL's return site):
//   BL gosave_systemstack_switch<>
//   MOVD R5, R28          g = g0                           } g0 window: SP still the
//   BL runtime.save_g                                      }   goroutine's
//   MOVD gobuf_sp(R28), R3 ; MOVD R3, RSP                  }
//   ... BL (R3) (fn on g0) ...
//   MOVD g_m(R28), R3 ; MOVD m_curg(R3), R28   g = m.curg  } gp window: SP still on g0
//   BL runtime.save_g                                      }
//   MOVD gobuf_sp(R28), R0 ; MOVD R0, RSP                  }
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
  // arm64 only: runtime.save_g, called at g0_lo and at gp_lo (its return sites g0_lo + 4 and
  // gp_lo + 4); with LR one of them, a pc inside it is in that window too.
  uint64_t save_g_lo = 0, save_g_hi = 0;
};

// amd64 and arm64.
SystemstackWindow FindSystemstackWindow(const sym::Binary& bin);

// runtime.asmcgocall has the same two windows (it switches with gosave_systemstack_switch too):
//   CALL gosave_systemstack_switch
//   MOVQ SI, FS:g          TLS g = g0                      } g0 window: SP still the goroutine's
//   MOVQ g_sched+gobuf_sp(SI), SP                          }
//   SUBQ/ANDQ SP; save g and the depth; CALL AX (landing pad from Go 1.23: C code on g0)
//   MOVQ DI, FS:g          TLS g = the goroutine again     } gp window: SP still on g0, where
//   MOVQ SI, SP                                            }   C has returned
// and on arm64, as systemstack's (save_g_lo/hi: the same save_g):
//   BL gosave_systemstack_switch<>
//   MOVD R3, R28          g = g0                           } g0 window: SP still the
//   BL runtime.save_g                                      }   goroutine's
//   MOVD gobuf_sp(R28), R0 ; MOVD R0, RSP                  }
//   ... align SP, save g and the depth, BL (R1) (C on g0) ...
//   MOVD R0, R9 ; MOVD 0(RSP), R28   g = the goroutine     } gp window: SP still on g0
//   BL runtime.save_g                                      }
//   MOVD stack_hi(R28), R5 ; MOVD 8(RSP), R6 ; SUB R6, R5, R5 ; MOVD R9, R0 ; MOVD R5, RSP
SystemstackWindow FindAsmcgocallWindow(const sym::Binary& bin);

}  // namespace sb::unwinder
