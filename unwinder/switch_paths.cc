#include "unwinder/switch_paths.h"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "unwinder/arm64_decoder.h"

namespace sb::unwinder {
namespace {

// The decoded facts both architectures give: conditional branch targets seen before the call
// to gosave_systemstack_switch, and that call's return site.
struct Scan {
  std::vector<uint64_t> cond_targets;
  uint64_t save_call = 0, save_ret = 0;
};

bool ScanAmd64(std::string_view code, uint64_t entry, uint64_t save_entry, Scan* s) {
  ZydisDecoder dec;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) return false;
  size_t off = 0;
  while (off < code.size()) {
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code.data() + off, code.size() - off, &in, ops))) return false;
    uint64_t pc = entry + off;
    off += in.length;
    ZyanU64 target = 0;
    bool rel = in.operand_count_visible >= 1 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
               ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &ops[0], pc, &target));
    if (in.meta.category == ZYDIS_CATEGORY_COND_BR && rel) s->cond_targets.push_back(target);
    if (in.mnemonic == ZYDIS_MNEMONIC_CALL && rel && target == save_entry) {
      s->save_call = pc;
      s->save_ret = pc + in.length;
      return true;
    }
  }
  return true;
}

bool ScanArm64(std::string_view code, uint64_t entry, uint64_t save_entry, Scan* s) {
  for (size_t off = 0; off + 4 <= code.size(); off += 4) {
    uint32_t word = static_cast<uint8_t>(code[off]) | static_cast<uint8_t>(code[off + 1]) << 8 |
                    static_cast<uint8_t>(code[off + 2]) << 16 | static_cast<uint32_t>(static_cast<uint8_t>(code[off + 3])) << 24;
    uint64_t pc = entry + off;
    A64Insn in = DecodeA64(word, pc);
    if (in.op == A64Op::kBCond) s->cond_targets.push_back(in.target);
    if (in.op == A64Op::kBL && in.target == save_entry) {
      s->save_call = pc;
      s->save_ret = pc + 4;
      return true;
    }
  }
  return true;
}

}  // namespace

SwitchPaths FindSwitchPaths(const sym::Binary& bin, const std::string& fn_name) {
  SwitchPaths p;
  const sym::GoPclntab* go = bin.go();
  sym::Arch arch = bin.elf().arch();
  if (go == nullptr || (arch != sym::Arch::kAmd64 && arch != sym::Arch::kArm64)) {
    p.why = "not an amd64 or arm64 Go binary";
    return p;
  }
  auto fn = go->FindFuncByName(fn_name);
  auto save = go->FindFuncByName("gosave_systemstack_switch");
  if (!fn || fn->end <= fn->entry || !save) {
    p.why = fn ? "no function gosave_systemstack_switch" : "no function " + fn_name;
    return p;
  }
  auto code = bin.elf().ReadVaddr(fn->entry, static_cast<size_t>(std::min<uint64_t>(fn->end - fn->entry, 1024)));
  if (!code.ok()) {
    p.why = fn_name + " unreadable";
    return p;
  }
  Scan s;
  bool ok = arch == sym::Arch::kAmd64 ? ScanAmd64(*code, fn->entry, save->entry, &s)
                                      : ScanArm64(*code, fn->entry, save->entry, &s);
  if (!ok || s.save_call == 0) {
    p.why = fn_name + ": no call to gosave_systemstack_switch";
    return p;
  }
  // The direct path: where the "already on g0 / gsignal" tests jump, past the switched path.
  // (systemstack's other forward branch, to its `bad` or `switch` label, lands on the gosave
  // call itself or after the direct path; the runtimesecret experiment's lands before it.)
  uint64_t direct = 0;
  for (uint64_t t : s.cond_targets)
    if (t > s.save_call && t < fn->end && (direct == 0 || t < direct)) direct = t;
  if (direct == 0) {
    p.why = fn_name + ": no branch past the switch (its direct path)";
    return p;
  }
  p.found = true;
  p.switched_lo = s.save_ret;
  p.direct_lo = direct;
  return p;
}

}  // namespace sb::unwinder
