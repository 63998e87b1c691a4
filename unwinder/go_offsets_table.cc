#include "unwinder/go_offsets_table.h"

namespace sb::unwinder {

std::optional<sb_go_offsets> GoOffsetsForVersion(int major, int minor) {
  if (major != 1 || minor < 19 || minor > 27) return std::nullopt;
  sb_go_offsets o{};
  o.g_stack_lo = 0;
  o.g_stack_hi = 8;
  o.g_m = 48;
  o.g_sched = 56;
  o.gobuf_sp = 0;
  o.gobuf_pc = 8;
  o.m_g0 = 0;
  // Go 1.20 is not in the verified table: it shares 1.19/1.21's layout for these fields.
  if (minor <= 24) {
    o.gobuf_lr = 40;
    o.gobuf_bp = 48;
    o.m_gsignal = 80;
    o.m_curg = 192;
  } else {  // 1.25+: gobuf.ret removed, m.procid moved up
    o.gobuf_lr = 32;
    o.gobuf_bp = 40;
    o.m_gsignal = 72;
    o.m_curg = 184;
  }
  // m.vdsoSP / vdsoPC moved in almost every release.
  switch (minor) {
    case 19: case 20: o.m_vdsosp = 800; break;
    case 21: o.m_vdsosp = 808; break;
    case 22: o.m_vdsosp = 1120; break;
    case 23: o.m_vdsosp = 856; break;
    case 24: o.m_vdsosp = 880; break;
    default: o.m_vdsosp = 896; break;  // 1.25-1.27
  }
  o.m_vdsopc = static_cast<uint16_t>(o.m_vdsosp + 8);
  if (minor >= 23 && minor <= 24) {
    o.g_atomicstatus = 152;
    o.g_goid = 160;
  } else {
    o.g_atomicstatus = 144;
    o.g_goid = 152;
  }
  // g.labels (optional: goroutine pprof labels), read off runtime/pprof.runtime_setProfLabel
  // of each release; 1.20 was not checked, so it has none.
  switch (minor) {
    case 19: o.g_labels = 360; break;
    case 21: case 22: case 25: o.g_labels = 344; break;
    case 23: case 24: case 26: case 27: o.g_labels = 352; break;
    default: o.g_labels = 0xffff; break;
  }
  return o;
}

}  // namespace sb::unwinder
