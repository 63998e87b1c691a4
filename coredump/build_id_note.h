// The build ids an executable carried when it was mapped, read from the core: the kernel (and
// gdb's gcore) write the first page of every ELF mapping into the core (coredump_filter bit 4,
// on by default), and that page holds the ELF header, the program headers and the notes
// (Go's linker puts .note.go.buildid and, when linking externally, .note.gnu.build-id there).
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace sb::coredump {

struct BuildIds {
  std::string gnu;  // NT_GNU_BUILD_ID as hex, "" if absent
  std::string go;   // Go's build id note ("Go", type 4), "" if absent
  bool empty() const { return gnu.empty() && go.empty(); }
};

// Errors when the page is not an ELF header; an ELF page without build-id notes gives empty ids.
// Only notes lying wholly inside the page are read.
Result<BuildIds> BuildIdsFromHeaderPage(std::string_view page);

// "" when the ids agree or cannot be compared (one side has no id at all), else a one-line
// description of the difference ("the core's executable has Go build id X, the binary Y"); ids
// of different kinds only (GNU in the core, Go in the binary) are a difference.
std::string CompareBuildIds(const BuildIds& core, const BuildIds& binary);

}  // namespace sb::coredump
