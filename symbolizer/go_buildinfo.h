// Go build information: the toolchain version ("go1.19.8") and module path from the
// .go.buildinfo section (magic "\xff Go buildinf:"), found by section name or by scanning the
// data segments when the section header is missing.
#pragma once

#include <string>

#include "base/result.h"
#include "symbolizer/elf_file.h"

namespace sb::sym {

struct GoBuildInfo {
  std::string go_version;   // "go1.19.8", "go1.27.0"
  std::string module_path;  // main module path, "" when absent
  int major = 0;            // 1
  int minor = 0;            // 19
};

Result<GoBuildInfo> ReadGoBuildInfo(const ElfFile& elf);

// Parses "go1.21.3", "go1.22rc1", "devel go1.23-abc" into major/minor; false if not a Go version.
bool ParseGoVersion(const std::string& text, int* major, int* minor);

}  // namespace sb::sym
