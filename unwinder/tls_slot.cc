#include "unwinder/tls_slot.h"

#include <Zydis/Zydis.h>

namespace sb::unwinder {
namespace {

// Returns the disp of the first FS-relative absolute memory operand in code, if any.
bool FindFsDisplacement(const uint8_t* code, size_t size, uint64_t address, int64_t* disp) {
  ZydisDecoder decoder;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
    return false;
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  size_t off = 0;
  for (int n = 0; n < 64 && off < size; n++) {
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code + off, size - off, &insn, ops))) break;
    for (int i = 0; i < insn.operand_count_visible; i++) {
      const auto& op = ops[i];
      if (op.type == ZYDIS_OPERAND_TYPE_MEMORY && op.mem.segment == ZYDIS_REGISTER_FS &&
          op.mem.base == ZYDIS_REGISTER_NONE && op.mem.index == ZYDIS_REGISTER_NONE &&
          op.mem.disp.has_displacement) {
        *disp = op.mem.disp.value;
        return true;
      }
    }
    off += insn.length;
  }
  (void)address;
  return false;
}

}  // namespace

Result<TlsSlot> FindTlsSlot(const sym::Binary& bin) {
  const sym::GoPclntab* go = bin.go();
  if (go == nullptr) return MakeError("not a Go binary");
  if (bin.elf().arch() != sym::Arch::kAmd64)
    return MakeError("TLS slot discovery is implemented for amd64 only");
  for (const char* name : {"runtime.systemstack", "runtime.mcall", "runtime.morestack"}) {
    auto f = go->FindFuncByName(name);
    if (!f) continue;
    size_t len = static_cast<size_t>(std::min<uint64_t>(f->end - f->entry, 256));
    auto code = bin.elf().ReadVaddr(f->entry, len);
    if (!code.ok()) continue;
    int64_t disp = 0;
    if (FindFsDisplacement(reinterpret_cast<const uint8_t*>(code->data()), code->size(), f->entry,
                           &disp)) {
      return TlsSlot{disp, std::string("decoded MOVQ FS:disp in ") + name};
    }
  }
  return MakeError("no FS-relative load of g found in runtime.systemstack/mcall/morestack");
}

}  // namespace sb::unwinder
