#include "unwinder/call_sites.h"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <cstring>

#include "unwinder/arm64_decoder.h"

namespace sb::unwinder {
namespace {

// The instruction boundaries of fn (amd64), by a linear decode from its entry: Go functions
// hold no data between instructions, so this is exact up to the first undecodable byte.
bool IsInstructionStart(const ZydisDecoder& dec, std::string_view code, uint64_t entry, uint64_t pc) {
  size_t off = 0;
  ZydisDecodedInstruction insn;
  while (off < code.size()) {
    if (entry + off == pc) return true;
    if (entry + off > pc) return false;
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, nullptr, code.data() + off, code.size() - off, &insn)))
      return false;
    off += insn.length;
  }
  return false;
}

std::vector<uint64_t> Amd64Sites(const sym::Binary& bin, const sym::GoPclntab& go, uint64_t target) {
  std::vector<uint64_t> out;
  ZydisDecoder dec;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) return out;
  for (size_t i = 0; i < go.num_funcs(); i++) {
    auto fn = go.FuncAt(i);
    if (!fn.ok() || fn->end <= fn->entry) continue;
    auto code = bin.elf().ReadVaddr(fn->entry, static_cast<size_t>(fn->end - fn->entry));
    if (!code.ok()) continue;
    for (size_t off = 0; off + 5 <= code->size(); off++) {
      if (static_cast<uint8_t>((*code)[off]) != 0xE8) continue;
      int32_t rel = 0;
      memcpy(&rel, code->data() + off + 1, 4);
      uint64_t ret = fn->entry + off + 5;
      if (ret + static_cast<uint64_t>(static_cast<int64_t>(rel)) != target) continue;
      if (IsInstructionStart(dec, *code, fn->entry, fn->entry + off)) out.push_back(ret);
    }
  }
  return out;
}

std::vector<uint64_t> Arm64Sites(const sym::Binary& bin, const sym::GoPclntab& go, uint64_t target) {
  std::vector<uint64_t> out;
  for (size_t i = 0; i < go.num_funcs(); i++) {
    auto fn = go.FuncAt(i);
    if (!fn.ok() || fn->end <= fn->entry) continue;
    auto code = bin.elf().ReadVaddr(fn->entry, static_cast<size_t>(fn->end - fn->entry));
    if (!code.ok()) continue;
    for (size_t off = 0; off + 4 <= code->size(); off += 4) {
      uint32_t w = 0;
      memcpy(&w, code->data() + off, 4);
      if ((w & 0xFC000000) != 0x94000000) continue;  // BL imm26
      A64Insn in = DecodeA64(w, fn->entry + off);
      if (in.op == A64Op::kBL && in.target == target) out.push_back(fn->entry + off + 4);
    }
  }
  return out;
}

}  // namespace

std::vector<uint64_t> ReturnSitesOfCallsTo(const sym::Binary& bin, uint64_t target) {
  const sym::GoPclntab* go = bin.go();
  if (go == nullptr) return {};
  std::vector<uint64_t> out;
  if (bin.elf().arch() == sym::Arch::kAmd64) out = Amd64Sites(bin, *go, target);
  else if (bin.elf().arch() == sym::Arch::kArm64) out = Arm64Sites(bin, *go, target);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace sb::unwinder
