// The Go toolchain version of a binary whose .go.buildinfo is gone (some packagers strip it):
// the runtime keeps it in the string variable runtime.buildVersion. With a symbol table the
// variable is found by name; without one, runtime.schedinit gives its address: it keeps the
// variable alive with `if buildVersion == "" { buildVersion = "unknown" }`, whose store of the
// length 7 to buildVersion+8 the asm tracer sees.
#pragma once

#include <string>

#include "base/result.h"
#include "symbolizer/binary.h"

namespace sb::unwinder {

struct RuntimeVersion {
  std::string version;  // "go1.27.0"
  int major = 0, minor = 0;
  std::string source;   // "symbol runtime.buildVersion" / "runtime.buildVersion found through runtime.schedinit"
};

Result<RuntimeVersion> GoVersionFromRuntime(const sym::Binary& bin);

}  // namespace sb::unwinder
