#include "unwinder/switch_paths.h"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "unwinder/arm64_decoder.h"

namespace sb::unwinder {
namespace {

// The decoded facts both architectures give: conditional branch targets seen before the call
// to gosave_systemstack_switch, and that call's return site.
struct Branch {
  uint64_t target = 0;
  // amd64: the register holding the entry SP when the branch is taken (NONE: none), and
  // whether SP had moved by then
  ZydisRegister entry_sp_reg = ZYDIS_REGISTER_NONE;
  bool sp_moved = true;
};

struct Scan {
  std::vector<Branch> cond;
  uint64_t save_call = 0, save_ret = 0;
};

bool MovRegReg(const ZydisDecodedInstruction& in, const ZydisDecodedOperand* ops) {
  return in.mnemonic == ZYDIS_MNEMONIC_MOV && in.operand_count_visible == 2 && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
         ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER;
}

// Tracks which register holds the entry SP: `MOVQ SP, reg` while SP is still the entry SP
// (nothing has written SP yet: explicitly, or as PUSH/POP do through a hidden operand; a CALL
// gets it back); any other write of that register forgets it.
void TrackEntrySp(const ZydisDecodedInstruction& in, const ZydisDecodedOperand* ops, bool* sp_moved,
                  ZydisRegister* reg) {
  bool writes_reg0 = in.operand_count_visible >= 1 && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
                     (ops[0].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE);
  for (int i = 0; i < in.operand_count && in.mnemonic != ZYDIS_MNEMONIC_CALL; i++)
    if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[i].reg.value == ZYDIS_REGISTER_RSP &&
        (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
      *sp_moved = true;
  if (MovRegReg(in, ops) && ops[1].reg.value == ZYDIS_REGISTER_RSP && !*sp_moved) {
    *reg = ops[0].reg.value;
  } else if (writes_reg0 && ops[0].reg.value == *reg) {
    *reg = ZYDIS_REGISTER_NONE;
  }
}

bool ScanAmd64(std::string_view code, uint64_t entry, uint64_t save_entry, Scan* s) {
  ZydisDecoder dec;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) return false;
  size_t off = 0;
  bool sp_moved = false;
  ZydisRegister sp_reg = ZYDIS_REGISTER_NONE;
  while (off < code.size()) {
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code.data() + off, code.size() - off, &in, ops))) return false;
    uint64_t pc = entry + off;
    off += in.length;
    TrackEntrySp(in, ops, &sp_moved, &sp_reg);
    ZyanU64 target = 0;
    bool rel = in.operand_count_visible >= 1 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
               ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &ops[0], pc, &target));
    if (in.meta.category == ZYDIS_CATEGORY_COND_BR && rel) s->cond.push_back(Branch{target, sp_reg, sp_moved});
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
    uint64_t pc = entry + off;
    A64Insn in = DecodeA64At(code.data(), off, entry);
    if (in.op == A64Op::kBCond) s->cond.push_back(Branch{in.target});
    if (in.op == A64Op::kBL && in.target == save_entry) {
      s->save_call = pc;
      s->save_ret = pc + 4;
      return true;
    }
  }
  return true;
}

// amd64 asmcgocall's direct path: the register that holds the entry SP when the branch is
// taken (or that the path sets itself, before it moves SP), and its store into the aligned
// frame before the call: `MOVQ reg, slot(SP)`. -1 when the code is not of that shape.
int64_t DirectEntrySpSlot(std::string_view code, uint64_t entry, uint64_t direct, ZydisRegister reg, bool sp_moved) {
  ZydisDecoder dec;
  if (direct <= entry || direct - entry >= code.size() ||
      !ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
    return -1;
  size_t off = direct - entry;
  while (off < code.size()) {
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code.data() + off, code.size() - off, &in, ops))) return -1;
    off += in.length;
    if (in.mnemonic == ZYDIS_MNEMONIC_CALL || in.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE) return -1;
    if (in.mnemonic == ZYDIS_MNEMONIC_MOV && in.operand_count_visible == 2 && ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY &&
        ops[0].mem.base == ZYDIS_REGISTER_RSP && ops[0].mem.index == ZYDIS_REGISTER_NONE &&
        ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER && reg != ZYDIS_REGISTER_NONE && ops[1].reg.value == reg &&
        sp_moved && ops[0].mem.disp.value >= 0 && ops[0].mem.disp.value < 256)
      return ops[0].mem.disp.value;
    TrackEntrySp(in, ops, &sp_moved, &reg);
  }
  return -1;
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
  for (const Branch& b : s.cond)
    if (b.target > s.save_call && b.target < fn->end && (direct == 0 || b.target < direct)) direct = b.target;
  if (direct == 0) {
    p.why = fn_name + ": no branch past the switch (its direct path)";
    return p;
  }
  p.found = true;
  p.switched_lo = s.save_ret;
  p.direct_lo = direct;
  if (arch == sym::Arch::kAmd64 && fn_name == "runtime.asmcgocall") {
    // Every branch into the direct path must leave the entry SP in the same register (or
    // none: the path then has to copy SP itself before moving it).
    ZydisRegister reg = ZYDIS_REGISTER_NONE;
    bool first = true, agree = true, sp_moved = false;
    for (const Branch& b : s.cond) {
      if (b.target != direct) continue;
      agree &= first || (b.entry_sp_reg == reg && b.sp_moved == sp_moved);
      reg = b.entry_sp_reg;
      sp_moved = b.sp_moved;
      first = false;
    }
    if (agree) p.entry_sp_slot = DirectEntrySpSlot(*code, fn->entry, direct, reg, sp_moved);
  }
  return p;
}

}  // namespace sb::unwinder
