#include "unwinder/dwarf_offsets.h"
#include "unwinder/dwarf_units.h"

#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

#include <map>
#include <set>

namespace sb::unwinder {
namespace {

using Members = std::map<std::string, uint64_t>;  // member name -> byte offset

const std::set<std::string> kStructs = {"runtime.g", "runtime.m", "runtime.gobuf", "runtime.stack"};

bool MemberOffset(Dwarf_Die die, uint64_t* off) {
  Dwarf_Attribute attr = nullptr;
  Dwarf_Error err = nullptr;
  if (dwarf_attr(die, DW_AT_data_member_location, &attr, &err) != DW_DLV_OK) return false;
  Dwarf_Unsigned v = 0;
  bool ok = dwarf_formudata(attr, &v, &err) == DW_DLV_OK;
  *off = v;
  return ok;
}

Members ReadMembers(Dwarf_Debug dbg, Dwarf_Die st) {
  Members m;
  Dwarf_Die child = nullptr;
  Dwarf_Error err = nullptr;
  if (dwarf_child(st, &child, &err) != DW_DLV_OK) return m;
  for (int guard = 0; child != nullptr && guard < 4096; guard++) {
    Dwarf_Half tag = 0;
    uint64_t off = 0;
    if (dwarf_tag(child, &tag, &err) == DW_DLV_OK && tag == DW_TAG_member && MemberOffset(child, &off))
      m[DieName(dbg, child)] = off;
    Dwarf_Die next = nullptr;
    int r = dwarf_siblingof_b(dbg, child, /*is_info=*/1, &next, &err);
    dwarf_dealloc_die(child);
    child = r == DW_DLV_OK ? next : nullptr;
  }
  return m;
}

// Go puts every type DIE directly under its compilation unit.
void ScanUnit(Dwarf_Debug dbg, Dwarf_Die cu, std::map<std::string, Members>* found) {
  Dwarf_Die die = nullptr;
  Dwarf_Error err = nullptr;
  if (dwarf_child(cu, &die, &err) != DW_DLV_OK) return;
  for (int guard = 0; die != nullptr && guard < 10000000; guard++) {
    Dwarf_Half tag = 0;
    if (dwarf_tag(die, &tag, &err) == DW_DLV_OK && tag == DW_TAG_structure_type) {
      std::string name = DieName(dbg, die);
      if (kStructs.count(name) && !found->count(name)) (*found)[name] = ReadMembers(dbg, die);
    }
    Dwarf_Die next = nullptr;
    int r = dwarf_siblingof_b(dbg, die, 1, &next, &err);
    dwarf_dealloc_die(die);
    die = r == DW_DLV_OK ? next : nullptr;
    if (found->size() == kStructs.size()) break;
  }
  if (die != nullptr) dwarf_dealloc_die(die);
}

}  // namespace

Result<sb_go_offsets> GoOffsetsFromDwarf(const std::string& path) {
  std::map<std::string, Members> found;
  Status read = ForEachDwarfUnit(path, [&](Dwarf_Debug dbg, Dwarf_Die cu) {
    ScanUnit(dbg, cu, &found);
    return found.size() < kStructs.size();
  });
  if (!read.ok()) return MakeError(read.error());

  auto get = [&](const char* st, const char* member, uint64_t* out) -> bool {
    auto s = found.find(st);
    if (s == found.end()) return false;
    auto m = s->second.find(member);
    if (m == s->second.end() || m->second > 0xffff) return false;
    *out = m->second;
    return true;
  };
  struct Field {
    const char* st;
    const char* member;
    sb_u16* dst;
  };
  sb_go_offsets o{};
  uint64_t stack = 0, lo = 0, hi = 0;
  if (!get("runtime.g", "stack", &stack) || !get("runtime.stack", "lo", &lo) || !get("runtime.stack", "hi", &hi))
    return MakeError("DWARF lacks runtime.g.stack");
  o.g_stack_lo = static_cast<sb_u16>(stack + lo);
  o.g_stack_hi = static_cast<sb_u16>(stack + hi);
  const Field fields[] = {
      {"runtime.g", "m", &o.g_m},           {"runtime.g", "sched", &o.g_sched},
      {"runtime.g", "atomicstatus", &o.g_atomicstatus}, {"runtime.g", "goid", &o.g_goid},
      {"runtime.gobuf", "sp", &o.gobuf_sp}, {"runtime.gobuf", "pc", &o.gobuf_pc},
      {"runtime.gobuf", "bp", &o.gobuf_bp}, {"runtime.gobuf", "lr", &o.gobuf_lr},
      {"runtime.m", "g0", &o.m_g0},         {"runtime.m", "curg", &o.m_curg},
      {"runtime.m", "gsignal", &o.m_gsignal}, {"runtime.m", "vdsoSP", &o.m_vdsosp},
      {"runtime.m", "vdsoPC", &o.m_vdsopc},
  };
  for (const auto& f : fields) {
    uint64_t v = 0;
    if (!get(f.st, f.member, &v)) return MakeError(std::string("DWARF lacks ") + f.st + "." + f.member);
    *f.dst = static_cast<sb_u16>(v);
  }
  // Optional: goroutine pprof labels (0xffff when this runtime.g has no such member).
  uint64_t labels = 0;
  o.g_labels = get("runtime.g", "labels", &labels) ? static_cast<sb_u16>(labels) : 0xffff;
  return o;
}

}  // namespace sb::unwinder
