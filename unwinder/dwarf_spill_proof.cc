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

// The `gp` parameter of a subprogram DIE: true when found (homes may still be empty).
bool GpHomes(Dwarf_Debug dbg, Dwarf_Die sub, std::vector<StackHome>* homes) {
  Dwarf_Die child = nullptr;
  Dwarf_Error err = nullptr;
  bool found = false;
  if (dwarf_child(sub, &child, &err) != DW_DLV_OK) return false;
  for (int guard = 0; child != nullptr && guard < 10000; guard++) {
    Dwarf_Half tag = 0;
    if (!found && dwarf_tag(child, &tag, &err) == DW_DLV_OK && tag == DW_TAG_formal_parameter &&
        DieName(dbg, child) == "gp") {
      Dwarf_Attribute attr = nullptr;
      found = true;
      if (dwarf_attr(child, DW_AT_location, &attr, &err) == DW_DLV_OK) {
        *homes = FbregEntries(attr);
        dwarf_dealloc_attribute(attr);
      }
    }
    Dwarf_Die next = nullptr;
    int r = dwarf_siblingof_b(dbg, child, 1, &next, &err);
    dwarf_dealloc_die(child);
    child = r == DW_DLV_OK ? next : nullptr;
  }
  if (child != nullptr) dwarf_dealloc_die(child);
  return found;
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
  bool found = false;
  Dwarf_Die child = nullptr;
  if (dwarf_child(type, &child, &err) == DW_DLV_OK) {
    for (int guard = 0; child != nullptr && guard < 4096; guard++) {
      Dwarf_Half tag = 0;
      if (!found && dwarf_tag(child, &tag, &err) == DW_DLV_OK && tag == DW_TAG_member && DieName(dbg, child) == name) {
        Dwarf_Attribute loc = nullptr;
        Dwarf_Unsigned v = 0;
        if (dwarf_attr(child, DW_AT_data_member_location, &loc, &err) == DW_DLV_OK) {
          found = dwarf_formudata(loc, &v, &err) == DW_DLV_OK;
          *off = v;
          dwarf_dealloc_attribute(loc);
        }
      }
      Dwarf_Die next = nullptr;
      int rr = dwarf_siblingof_b(dbg, child, 1, &next, &err);
      dwarf_dealloc_die(child);
      child = rr == DW_DLV_OK ? next : nullptr;
    }
    if (child != nullptr) dwarf_dealloc_die(child);
  }
  dwarf_dealloc_die(type);
  return found;
}

// newstack's own `morebuf` (a direct child of the subprogram: the one copied before the
// preemption check; the one in the throwsplit block is a different variable).
bool MorebufOf(Dwarf_Debug dbg, Dwarf_Die sub, MorebufHome* out) {
  Dwarf_Die child = nullptr;
  Dwarf_Error err = nullptr;
  bool found = false;
  if (dwarf_child(sub, &child, &err) != DW_DLV_OK) return false;
  for (int guard = 0; child != nullptr && guard < 10000; guard++) {
    Dwarf_Half tag = 0;
    if (!found && dwarf_tag(child, &tag, &err) == DW_DLV_OK && tag == DW_TAG_variable &&
        DieName(dbg, child) == "morebuf") {
      Dwarf_Attribute attr = nullptr;
      found = true;
      if (dwarf_attr(child, DW_AT_location, &attr, &err) == DW_DLV_OK) {
        out->homes = FbregEntries(attr);
        dwarf_dealloc_attribute(attr);
      }
      out->has_gobuf_g = TypeMemberOffset(dbg, child, "g", &out->gobuf_g);
    }
    Dwarf_Die next = nullptr;
    int r = dwarf_siblingof_b(dbg, child, 1, &next, &err);
    dwarf_dealloc_die(child);
    child = r == DW_DLV_OK ? next : nullptr;
  }
  if (child != nullptr) dwarf_dealloc_die(child);
  return found;
}

}  // namespace

Result<MorebufHome> NewstackMorebufHome(const std::string& path) {
  MorebufHome out;
  bool found = false;
  Status read = ForEachDwarfUnit(path, [&](Dwarf_Debug dbg, Dwarf_Die cu) {
    Dwarf_Error err = nullptr;
    Dwarf_Die die = nullptr;
    if (dwarf_child(cu, &die, &err) == DW_DLV_OK) {
      for (int guard = 0; die != nullptr && guard < 10000000; guard++) {
        Dwarf_Half tag = 0;
        // Two DIEs are named runtime.newstack: the function and its ABI wrapper (no locals).
        if (!found && dwarf_tag(die, &tag, &err) == DW_DLV_OK && tag == DW_TAG_subprogram &&
            DieName(dbg, die) == "runtime.newstack")
          found = MorebufOf(dbg, die, &out);
        Dwarf_Die sib = nullptr;
        int rr = dwarf_siblingof_b(dbg, die, 1, &sib, &err);
        dwarf_dealloc_die(die);
        die = rr == DW_DLV_OK ? sib : nullptr;
      }
      if (die != nullptr) dwarf_dealloc_die(die);
    }
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
    Dwarf_Error err = nullptr;
    Dwarf_Die die = nullptr;
    if (dwarf_child(cu, &die, &err) == DW_DLV_OK) {
      // Go puts every function's DIE directly under its compilation unit.
      for (int guard = 0; die != nullptr && guard < 10000000; guard++) {
        Dwarf_Half tag = 0;
        if (dwarf_tag(die, &tag, &err) == DW_DLV_OK && tag == DW_TAG_subprogram) {
          std::string name = DieName(dbg, die);
          std::vector<StackHome> homes;
          if (wanted.count(name) && !out.count(name) && GpHomes(dbg, die, &homes)) out[name] = homes;
        }
        Dwarf_Die sib = nullptr;
        int rr = dwarf_siblingof_b(dbg, die, 1, &sib, &err);
        dwarf_dealloc_die(die);
        die = rr == DW_DLV_OK ? sib : nullptr;
      }
    }
    return out.size() < wanted.size();
  });
  if (!read.ok()) return MakeError(read.error());
  return out;
}

}  // namespace sb::unwinder
