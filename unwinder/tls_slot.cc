#include "unwinder/tls_slot.h"

#include <Zydis/Zydis.h>

#include <cstring>
#include <map>

namespace sb::unwinder {
namespace {

// Finds the first FS-relative load of g in code and returns its offset from fs_base. Handles
// the forms the Go linker emits: `MOVQ FS:disp32, r` (executables), `MOVQ $imm, r;
// MOVQ FS:(r), r2` (internally linked PIE) and `MOVQ off(RIP), r; MOVQ FS:(r), r2` (initial-
// exec TLS through a GOT slot the linker resolved; read from the file).
bool FindFsDisplacement(const sym::ElfFile& elf, const uint8_t* code, size_t size, uint64_t address,
                        int64_t* disp) {
  if (code == nullptr) return false;
  ZydisDecoder decoder;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
    return false;
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  std::map<ZydisRegister, int64_t> known;  // registers holding a constant
  size_t off = 0;
  for (int n = 0; n < 64 && off < size; n++) {
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code + off, size - off, &insn, ops))) break;
    uint64_t pc = address + off;
    off += insn.length;
    if (insn.operand_count_visible < 2) continue;
    const auto& dst = ops[0];
    const auto& src = ops[1];
    if (src.type == ZYDIS_OPERAND_TYPE_MEMORY && src.mem.segment == ZYDIS_REGISTER_FS &&
        src.mem.index == ZYDIS_REGISTER_NONE) {
      int64_t base = 0;
      if (src.mem.base != ZYDIS_REGISTER_NONE) {
        auto it = known.find(ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, src.mem.base));
        if (it == known.end()) return false;
        base = it->second;
      }
      // Wrapping sum (the CPU's): base and displacement come from arbitrary code bytes.
      uint64_t d = src.mem.disp.has_displacement ? static_cast<uint64_t>(src.mem.disp.value) : 0;
      *disp = static_cast<int64_t>(static_cast<uint64_t>(base) + d);
      return true;
    }
    if (insn.mnemonic != ZYDIS_MNEMONIC_MOV || dst.type != ZYDIS_OPERAND_TYPE_REGISTER) continue;
    ZydisRegister reg = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, dst.reg.value);
    if (src.type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
      known[reg] = src.imm.is_signed ? src.imm.value.s : static_cast<int64_t>(src.imm.value.u);
    } else if (src.type == ZYDIS_OPERAND_TYPE_MEMORY && src.mem.base == ZYDIS_REGISTER_RIP &&
               src.mem.segment != ZYDIS_REGISTER_FS) {
      uint64_t slot = pc + insn.length + static_cast<uint64_t>(src.mem.disp.value);
      auto bytes = elf.ReadVaddr(slot, 8);
      int64_t v = 0;
      if (bytes.ok() && bytes->size() == 8) std::memcpy(&v, bytes->data(), 8);
      if (v != 0) known[reg] = v;  // 0: left to the dynamic loader, unknown here
      else known.erase(reg);
    } else {
      known.erase(reg);
    }
  }
  return false;
}

}  // namespace

std::optional<int64_t> FsDisplacementOfG(const sym::ElfFile& elf, const uint8_t* code, size_t size,
                                         uint64_t address) {
  int64_t disp = 0;
  if (!FindFsDisplacement(elf, code, size, address, &disp)) return std::nullopt;
  return disp;
}

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
    if (FindFsDisplacement(bin.elf(), reinterpret_cast<const uint8_t*>(code->data()), code->size(), f->entry,
                           &disp)) {
      return TlsSlot{disp, std::string("decoded the FS-relative load of g in ") + name};
    }
  }
  return MakeError("no FS-relative load of g found in runtime.systemstack/mcall/morestack");
}

}  // namespace sb::unwinder
