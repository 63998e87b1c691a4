// What this switchback binary is: its version, the commit it was built from and the libbpf it
// runs with. For `switchback --version` and the build_info metric, so that a profile or a bug
// report can be tied to the code that made it.
#pragma once

#include <string>

namespace sb {

struct BuildInfo {
  std::string version;   // the project version (CMakeLists.txt), e.g. 0.1.0
  std::string revision;  // `git describe --always --dirty` at build time, or "unknown"
  std::string branch;    // the branch checked out at build time; empty when unknown or detached
  std::string compiler;  // e.g. "gcc 12.2.0"
  std::string libbpf;    // the libbpf loaded at run time, MAJOR.MINOR
};

BuildInfo GetBuildInfo();

}  // namespace sb
