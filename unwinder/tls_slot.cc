#include "unwinder/tls_slot.h"

#include <Zydis/Zydis.h>

#include <cstring>
#include <elf.h>

#include <map>

#include "base/hex.h"

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

Result<Arm64TlsSlot> FindArm64TlsSlot(const sym::Binary& bin, const AsmOffsets& asm_facts) {
  std::optional<int64_t> sym_slot;
  std::optional<uint64_t> sym_iscgo;
  for (const auto& s : bin.elf().Symbols()) {
    if (s.name == "runtime.tls_g" && s.type == STT_TLS) {
      uint64_t align = 16;
      for (const auto& seg : bin.elf().segments())
        if (seg.type == PT_TLS && seg.align > align) align = seg.align;
      // TPIDR_EL0 points at the 16-byte thread control block; the TLS block follows it,
      // aligned to PT_TLS's alignment (local-exec TLS, AArch64 variant 1).
      sym_slot = static_cast<int64_t>(align + s.value);
    } else if (s.name == "runtime.iscgo" && s.type == STT_OBJECT) {
      sym_iscgo = s.value;
    }
  }
  Arm64TlsSlot out;
  const auto& a_slot = asm_facts.arm64_tls_g_offset;
  const auto& a_iscgo = asm_facts.iscgo_address;
  if (sym_slot && a_slot && *sym_slot != a_slot->value)
    return MakeError("runtime.tls_g gives TPIDR_EL0+" + std::to_string(*sym_slot) + " but " + a_slot->source +
                     " uses +" + std::to_string(a_slot->value));
  if (sym_iscgo && a_iscgo && *sym_iscgo != static_cast<uint64_t>(a_iscgo->value))
    return MakeError("runtime.iscgo symbol at " + Hex(*sym_iscgo) + " but " + a_iscgo->source + " reads " +
                     Hex(static_cast<uint64_t>(a_iscgo->value)));
  if (sym_slot) {
    out.tls = TlsSlot{*sym_slot, std::string("TPIDR_EL0+roundup(16, PT_TLS align)+st_value(runtime.tls_g)") +
                                     (a_slot ? ", equal to " + a_slot->source : "")};
  } else if (a_slot) {
    out.tls = TlsSlot{a_slot->value, a_slot->source + " (TPIDR_EL0-relative store/load of g)"};
  } else {
    return MakeError("no runtime.tls_g symbol and no TPIDR_EL0 access decoded in runtime.save_g/load_g");
  }
  if (sym_iscgo) {
    out.iscgo_addr = *sym_iscgo;
    out.iscgo_source = std::string("symbol runtime.iscgo") + (a_iscgo ? ", equal to " + a_iscgo->source : "");
  } else if (a_iscgo) {
    out.iscgo_addr = static_cast<uint64_t>(a_iscgo->value);
    out.iscgo_source = a_iscgo->source + " (the byte tested before the TLS access)";
  } else {
    return MakeError("address of runtime.iscgo unknown (no symbol, not decoded from save_g/load_g)");
  }
  return out;
}

}  // namespace sb::unwinder
