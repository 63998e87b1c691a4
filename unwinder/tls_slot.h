// Where a Go binary keeps g in thread-local storage, read from the runtime's own code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "symbolizer/binary.h"
#include "unwinder/asm_offsets.h"

namespace sb::unwinder {

struct TlsSlot {
  int64_t offset = 0;  // amd64: g lives at fs_base + offset
  std::string source;  // how it was found, for `inspect`
};

// amd64: decodes runtime.systemstack (Zydis) for its `MOVQ FS:disp32, reg` (local-exec TLS,
// the case for every Go-linked executable, cgo or not). Errors say what was not found.
Result<TlsSlot> FindTlsSlot(const sym::Binary& bin);

struct Arm64TlsSlot {
  TlsSlot tls;             // g at TPIDR_EL0 + offset
  uint64_t iscgo_addr = 0;  // the byte runtime.iscgo (link-time address)
  std::string iscgo_source;
};

// arm64: the slot is roundup(16, PT_TLS align) + st_value(runtime.tls_g) when the symbol table
// is there, else what runtime.save_g/load_g store to and load from (asm_facts); iscgo from its
// symbol, else the byte save_g/load_g test. When both sources exist they must agree.
Result<Arm64TlsSlot> FindArm64TlsSlot(const sym::Binary& bin, const AsmOffsets& asm_facts);

// The decoder step of FindTlsSlot: the offset from fs_base that CODE (the first bytes of a
// runtime function linked at ADDRESS in ELF) loads g from, or nullopt. ELF is only read for
// RIP-relative GOT slots. Public for the fuzz target, which feeds it arbitrary bytes.
std::optional<int64_t> FsDisplacementOfG(const sym::ElfFile& elf, const uint8_t* code, size_t size,
                                         uint64_t address);

}  // namespace sb::unwinder
