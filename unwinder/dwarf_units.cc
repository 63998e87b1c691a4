#include "unwinder/dwarf_units.h"

#include <fcntl.h>
#include <unistd.h>

namespace sb::unwinder {

Status ForEachDwarfUnit(const std::string& path, const std::function<bool(Dwarf_Debug, Dwarf_Die)>& visit) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return MakeError("cannot open " + path);
  Dwarf_Debug dbg = nullptr;
  Dwarf_Error err = nullptr;
  int r = dwarf_init_b(fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, nullptr, nullptr, &dbg, &err);
  if (r != DW_DLV_OK) {
    // An error from a failed init belongs to no Dwarf_Debug, so dwarf_finish cannot free it.
    if (r == DW_DLV_ERROR) dwarf_dealloc_error(nullptr, err);
    close(fd);
    return MakeError(r == DW_DLV_NO_ENTRY ? "no DWARF" : "unreadable DWARF");
  }
  for (int units = 0; units < 100000; units++) {
    Dwarf_Unsigned hdr_len = 0, typeoff = 0, next = 0;
    Dwarf_Half version = 0, addr_size = 0, len_size = 0, ext_size = 0, cu_type = 0;
    Dwarf_Off abbrev = 0;
    Dwarf_Sig8 sig;
    if (dwarf_next_cu_header_d(dbg, 1, &hdr_len, &version, &abbrev, &addr_size, &len_size, &ext_size, &sig,
                               &typeoff, &next, &cu_type, &err) != DW_DLV_OK)
      break;
    Dwarf_Die cu = nullptr;
    if (dwarf_siblingof_b(dbg, nullptr, 1, &cu, &err) != DW_DLV_OK) continue;
    bool more = visit(dbg, cu);
    dwarf_dealloc_die(cu);
    if (!more) break;
  }
  dwarf_finish(dbg, &err);
  close(fd);
  return Status::Ok();
}

std::string DieName(Dwarf_Debug dbg, Dwarf_Die die) {
  char* name = nullptr;
  Dwarf_Error err = nullptr;
  int rc = dwarf_diename(die, &name, &err);
  if (rc == DW_DLV_ERROR) dwarf_dealloc_error(dbg, err);  // damaged DWARF: no name, no leak
  if (rc != DW_DLV_OK || name == nullptr) return "";
  std::string s(name);
  dwarf_dealloc(dbg, name, DW_DLA_STRING);
  return s;
}

}  // namespace sb::unwinder
