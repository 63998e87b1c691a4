// The runtime struct offsets the unwinder uses (struct sb_go_offsets), by the names DESIGN.md
// and `switchback inspect` give them. One list for every source (DWARF, assembly, table).
#pragma once

#include "ebpf/unwind/unwind_types.h"

namespace sb::unwinder {

struct OffsetField {
  const char* name;
  sb_u16 sb_go_offsets::*member;
  bool used_on_amd64;  // gobuf.lr exists on amd64 but no amd64 code path reads it
};

inline constexpr OffsetField kOffsetFields[] = {
    {"g.stack.lo", &sb_go_offsets::g_stack_lo, true},
    {"g.stack.hi", &sb_go_offsets::g_stack_hi, true},
    {"g.m", &sb_go_offsets::g_m, true},
    {"g.sched", &sb_go_offsets::g_sched, true},
    {"g.atomicstatus", &sb_go_offsets::g_atomicstatus, true},
    {"g.goid", &sb_go_offsets::g_goid, true},
    {"gobuf.sp", &sb_go_offsets::gobuf_sp, true},
    {"gobuf.pc", &sb_go_offsets::gobuf_pc, true},
    {"gobuf.bp", &sb_go_offsets::gobuf_bp, true},
    {"gobuf.lr", &sb_go_offsets::gobuf_lr, false},
    {"m.g0", &sb_go_offsets::m_g0, true},
    {"m.curg", &sb_go_offsets::m_curg, true},
    {"m.gsignal", &sb_go_offsets::m_gsignal, true},
    {"m.vdsoSP", &sb_go_offsets::m_vdsosp, true},
    {"m.vdsoPC", &sb_go_offsets::m_vdsopc, true},
};

// Fields a sample can do without: a binary that lacks one keeps its offsets (samples are
// unwound as before) and only loses what the field serves (g.labels: goroutine pprof labels).
inline constexpr OffsetField kOptionalOffsetFields[] = {
    {"g.labels", &sb_go_offsets::g_labels, true},
};

// sb_go_offsets marks a field it does not know with this value.
constexpr sb_u16 kUnknownOffset = 0xffff;

}  // namespace sb::unwinder
