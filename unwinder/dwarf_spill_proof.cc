#include "unwinder/dwarf_spill_proof.h"
#include "unwinder/dwarf_units.h"

#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

#include <set>

namespace sb::unwinder {
namespace {

// The DW_OP_fbreg entries of a location attribute.
std::vector<StackHome> FbregEntries(Dwarf_Attribute attr) {
  std::vector<StackHome> out;
  Dwarf_Loc_Head_c head = nullptr;
  Dwarf_Unsigned count = 0;
  Dwarf_Error err = nullptr;
  if (dwarf_get_loclist_c(attr, &head, &count, &err) != DW_DLV_OK) return out;
  for (Dwarf_Unsigned i = 0; i < count && i < 4096; i++) {
    Dwarf_Small lle = 0, source = 0;
    Dwarf_Unsigned rawlo = 0, rawhi = 0, nops = 0, expr_off = 0, desc_off = 0;
    Dwarf_Bool unavailable = 0;
    Dwarf_Addr lo = 0, hi = 0;
    Dwarf_Locdesc_c desc = nullptr;
    if (dwarf_get_locdesc_entry_d(head, i, &lle, &rawlo, &rawhi, &unavailable, &lo, &hi, &nops, &desc, &source,
                                  &expr_off, &desc_off, &err) != DW_DLV_OK)
      continue;
    if (nops != 1 || source == 0) continue;  // source 0: a single expression for the whole scope
    Dwarf_Small atom = 0;
    Dwarf_Unsigned op1 = 0, op2 = 0, op3 = 0, branch = 0;
    if (dwarf_get_location_op_value_c(desc, 0, &atom, &op1, &op2, &op3, &branch, &err) != DW_DLV_OK) continue;
    if (atom != DW_OP_fbreg || hi <= lo) continue;
    out.push_back(StackHome{lo, hi, static_cast<int64_t>(op1)});
  }
  dwarf_loc_head_c_dealloc(head);
  return out;
}

// Calls VISIT(child) on each child DIE of PARENT in order, at most LIMIT of them, until VISIT
// returns true (found: the walk stops there). Every child is freed after its visit; true if a
// visit returned true. The one loop over DIE siblings of this file.
template <typename Visit>
bool VisitChildDies(Dwarf_Debug dbg, Dwarf_Die parent, int limit, Visit visit) {
  Dwarf_Error err = nullptr;
  Dwarf_Die child = nullptr;
  if (dwarf_child(parent, &child, &err) != DW_DLV_OK) return false;
  bool found = false;
  for (int guard = 0; child != nullptr && guard < limit; guard++) {
    if ((found = visit(child))) break;
    Dwarf_Die next = nullptr;
    int r = dwarf_siblingof_b(dbg, child, 1, &next, &err);
    dwarf_dealloc_die(child);
    child = r == DW_DLV_OK ? next : nullptr;
  }
  if (child != nullptr) dwarf_dealloc_die(child);
  return found;
}

bool HasTag(Dwarf_Die die, Dwarf_Half want) {
  Dwarf_Error err = nullptr;
  Dwarf_Half tag = 0;
  return dwarf_tag(die, &tag, &err) == DW_DLV_OK && tag == want;
}

// The `gp` parameter of a subprogram DIE: true when found (homes may still be empty).
bool GpHomes(Dwarf_Debug dbg, Dwarf_Die sub, std::vector<StackHome>* homes) {
  return VisitChildDies(dbg, sub, 10000, [&](Dwarf_Die child) {
    if (!HasTag(child, DW_TAG_formal_parameter) || DieName(dbg, child) != "gp") return false;
    Dwarf_Error err = nullptr;
    Dwarf_Attribute attr = nullptr;
    if (dwarf_attr(child, DW_AT_location, &attr, &err) == DW_DLV_OK) {
      *homes = FbregEntries(attr);
      dwarf_dealloc_attribute(attr);
    }
    return true;
  });
}

// The DIE that DIE's DW_AT_type names (the caller frees it), or null.
Dwarf_Die TypeOf(Dwarf_Debug dbg, Dwarf_Die die) {
  Dwarf_Attribute attr = nullptr;
  Dwarf_Error err = nullptr;
  Dwarf_Off type_off = 0;
  if (dwarf_attr(die, DW_AT_type, &attr, &err) != DW_DLV_OK) return nullptr;
  int r = dwarf_global_formref(attr, &type_off, &err);
  dwarf_dealloc_attribute(attr);
  Dwarf_Die type = nullptr;
  if (r != DW_DLV_OK || dwarf_offdie_b(dbg, type_off, /*is_info=*/1, &type, &err) != DW_DLV_OK) return nullptr;
  return type;
}

// The byte offset of member NAME of the structure type that DIE's DW_AT_type names (Go names
// the struct through a typedef of the same name).
bool TypeMemberOffset(Dwarf_Debug dbg, Dwarf_Die die, const std::string& name, uint64_t* off) {
  Dwarf_Error err = nullptr;
  Dwarf_Die type = TypeOf(dbg, die);
  for (int i = 0; i < 4 && type != nullptr; i++) {
    Dwarf_Half tag = 0;
    if (dwarf_tag(type, &tag, &err) != DW_DLV_OK || tag != DW_TAG_typedef) break;
    Dwarf_Die next = TypeOf(dbg, type);
    dwarf_dealloc_die(type);
    type = next;
  }
  if (type == nullptr) return false;
  bool found = VisitChildDies(dbg, type, 4096, [&](Dwarf_Die child) {
    if (!HasTag(child, DW_TAG_member) || DieName(dbg, child) != name) return false;
    Dwarf_Attribute loc = nullptr;
    Dwarf_Unsigned v = 0;
    bool ok = false;
    if (dwarf_attr(child, DW_AT_data_member_location, &loc, &err) == DW_DLV_OK) {
      ok = dwarf_formudata(loc, &v, &err) == DW_DLV_OK;
      *off = v;
      dwarf_dealloc_attribute(loc);
    }
    return ok;
  });
  dwarf_dealloc_die(type);
  return found;
}

// newstack's own `morebuf` (a direct child of the subprogram: the one copied before the
// preemption check; the one in the throwsplit block is a different variable).
bool MorebufOf(Dwarf_Debug dbg, Dwarf_Die sub, MorebufHome* out) {
  return VisitChildDies(dbg, sub, 10000, [&](Dwarf_Die child) {
    if (!HasTag(child, DW_TAG_variable) || DieName(dbg, child) != "morebuf") return false;
    Dwarf_Error err = nullptr;
    Dwarf_Attribute attr = nullptr;
    if (dwarf_attr(child, DW_AT_location, &attr, &err) == DW_DLV_OK) {
      out->homes = FbregEntries(attr);
      dwarf_dealloc_attribute(attr);
    }
    out->has_gobuf_g = TypeMemberOffset(dbg, child, "g", &out->gobuf_g);
    return true;
  });
}

}  // namespace

Result<MorebufHome> NewstackMorebufHome(const std::string& path) {
  MorebufHome out;
  bool found = false;
  Status read = ForEachDwarfUnit(path, [&](Dwarf_Debug dbg, Dwarf_Die cu) {
    // Two DIEs are named runtime.newstack: the function and its ABI wrapper (no locals).
    found = VisitChildDies(dbg, cu, 10000000, [&](Dwarf_Die die) {
      return HasTag(die, DW_TAG_subprogram) && DieName(dbg, die) == "runtime.newstack" && MorebufOf(dbg, die, &out);
    });
    return !found;
  });
  if (!read.ok()) return MakeError(read.error());
  if (!found) return MakeError("DWARF has no local morebuf in runtime.newstack");
  if (out.homes.empty()) return MakeError("DWARF never puts runtime.newstack's morebuf on the stack");
  if (!out.has_gobuf_g) return MakeError("DWARF lacks runtime.gobuf.g (the type of newstack's morebuf)");
  return out;
}

Result<std::map<std::string, std::vector<StackHome>>> GpStackHomes(const std::string& path,
                                                                  const std::vector<std::string>& names) {
  std::set<std::string> wanted(names.begin(), names.end());
  std::map<std::string, std::vector<StackHome>> out;
  Status read = ForEachDwarfUnit(path, [&](Dwarf_Debug dbg, Dwarf_Die cu) {
    // Go puts every function's DIE directly under its compilation unit.
    VisitChildDies(dbg, cu, 10000000, [&](Dwarf_Die die) {
      if (!HasTag(die, DW_TAG_subprogram)) return false;
      std::string name = DieName(dbg, die);
      std::vector<StackHome> homes;
      if (wanted.count(name) && !out.count(name) && GpHomes(dbg, die, &homes)) out[name] = homes;
      return out.size() == wanted.size();
    });
    return out.size() < wanted.size();
  });
  if (!read.ok()) return MakeError(read.error());
  return out;
}

}  // namespace sb::unwinder
