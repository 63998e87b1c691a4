// Where a Go binary keeps g in thread-local storage, read from the runtime's own code.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "symbolizer/binary.h"

namespace sb::unwinder {

struct TlsSlot {
  int64_t offset = 0;  // amd64: g lives at fs_base + offset
  std::string source;  // how it was found, for `inspect`
};

// amd64: decodes runtime.systemstack (Zydis) for its `MOVQ FS:disp32, reg` (local-exec TLS,
// the case for every Go-linked executable, cgo or not). Errors say what was not found.
Result<TlsSlot> FindTlsSlot(const sym::Binary& bin);

}  // namespace sb::unwinder
