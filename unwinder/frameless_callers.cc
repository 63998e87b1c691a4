#include "unwinder/frameless_callers.h"

#include <Zydis/Zydis.h>

namespace sb::unwinder {
namespace {

// Whether fn's code, decoded linearly from its entry, holds a CALL (direct or indirect). An
// undecodable byte ends the decode: no CALL found past it counts.
bool HoldsACall(const ZydisDecoder& dec, std::string_view code) {
  size_t off = 0;
  ZydisDecodedInstruction insn;
  while (off < code.size()) {
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, nullptr, code.data() + off, code.size() - off, &insn)))
      return false;
    if (insn.mnemonic == ZYDIS_MNEMONIC_CALL) return true;
    off += insn.length;
  }
  return false;
}

}  // namespace

std::vector<FramelessCaller> FindFramelessCallers(const sym::Binary& bin) {
  std::vector<FramelessCaller> out;
  const sym::GoPclntab* go = bin.go();
  if (go == nullptr || bin.elf().arch() != sym::Arch::kAmd64) return out;
  ZydisDecoder dec;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) return out;
  for (size_t i = 0; i < go->num_funcs(); i++) {
    auto fn = go->FuncAt(i);
    if (!fn.ok() || fn->end <= fn->entry || fn->end - fn->entry > 4096) continue;
    auto runs = go->SpDeltaRuns(*fn);
    if (!runs.ok() || runs->empty()) continue;
    bool frameless = true;
    for (const auto& r : *runs) frameless = frameless && r.delta == 0;
    if (!frameless) continue;
    auto code = bin.elf().ReadVaddr(fn->entry, static_cast<size_t>(fn->end - fn->entry));
    if (!code.ok() || !HoldsACall(dec, *code)) continue;
    out.push_back(FramelessCaller{std::string(fn->name), fn->entry, fn->end});
  }
  return out;
}

}  // namespace sb::unwinder
