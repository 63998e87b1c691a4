// Where DWARF says an arm64 mcall callee keeps its `gp` argument: the location-list entries of
// the parameter that put it at a fixed frame-base offset (DW_OP_fbreg K, frame base = CFA =
// the callee's entry SP). The unwinder uses the g0 slot of a dropped goroutine only inside such
// ranges when DWARF is there (never a guess: docs/design/0004-saved-state-proofs.md);
// go_binary_facts.cc compares them with the slot decoded from the callee's prologue.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"

namespace sb::unwinder {

struct StackHome {
  uint64_t low = 0, high = 0;  // [low, high) link-time pcs
  int64_t fbreg = 0;           // gp is the word at CFA + fbreg
};

// For each function in `names` that has a `gp` parameter: its DW_OP_fbreg ranges (empty vector
// when DWARF describes gp but never on the stack). Errors: no DWARF / unreadable.
Result<std::map<std::string, std::vector<StackHome>>> GpStackHomes(const std::string& path,
                                                                  const std::vector<std::string>& names);

// Where DWARF says runtime.newstack keeps its local `morebuf` (the copy of m.morebuf that
// morestack filled: f's caller's pc and sp, and the goroutine that grew its stack): the
// location-list entries that put it at a fixed offset from newstack's CFA, and the offset of
// the member g in its type (runtime.gobuf). The unwinder finds the goroutine there after
// newstack preempted it.
struct MorebufHome {
  std::vector<StackHome> homes;  // fbreg: morebuf starts at CFA + fbreg
  uint64_t gobuf_g = 0;          // offset of gobuf.g
  bool has_gobuf_g = false;
};

// Errors: no DWARF / unreadable, or newstack has no `morebuf` with a location list.
Result<MorebufHome> NewstackMorebufHome(const std::string& path);

}  // namespace sb::unwinder
