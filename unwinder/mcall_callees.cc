#include "unwinder/mcall_callees.h"

#include <Zydis/Zydis.h>

#include <cstring>
#include <set>

#include "unwinder/arm64_decoder.h"

namespace sb::unwinder {
namespace {

// The function whose entry is the first word of the funcval at `funcval` (link-time).
bool FuncvalTarget(const sym::Binary& bin, uint64_t funcval, McallCallee* out) {
  auto word = bin.elf().ReadVaddr(funcval, 8);
  if (!word.ok()) {
    out->why = "funcval unreadable";
    return false;
  }
  uint64_t code = 0;
  memcpy(&code, word->data(), 8);
  auto fn = bin.go()->FindFunc(code);
  if (!fn || fn->entry != code) {
    out->why = "funcval's first word is no function entry";
    return false;
  }
  out->fn_entry = fn->entry;
  out->fn_end = fn->end;
  return true;
}

struct Insn {
  uint64_t pc = 0;
  size_t len = 0;
  bool nop = false;
  bool lea_ax_rip = false;  // LEAQ disp(IP), AX
  uint64_t lea_target = 0;
};

// amd64: decode the function linearly (Go text holds no data between instructions), keep every
// instruction and every direct branch target.
void Amd64Site(const sym::Binary& bin, const sym::GoFunc& fn, uint64_t site, McallCallee* out) {
  auto code = bin.elf().ReadVaddr(fn.entry, static_cast<size_t>(fn.end - fn.entry));
  ZydisDecoder dec;
  if (!code.ok() || !ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
    out->why = "code unreadable";
    return;
  }
  std::vector<Insn> insns;
  std::set<uint64_t> targets;
  size_t off = 0;
  while (off < code->size()) {
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code->data() + off, code->size() - off, &in, ops))) break;
    Insn x;
    x.pc = fn.entry + off;
    x.len = in.length;
    x.nop = in.mnemonic == ZYDIS_MNEMONIC_NOP;
    if (in.mnemonic == ZYDIS_MNEMONIC_LEA && in.operand_count_visible == 2 && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
        ops[0].reg.value == ZYDIS_REGISTER_RAX && ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
        ops[1].mem.base == ZYDIS_REGISTER_RIP && ops[1].mem.index == ZYDIS_REGISTER_NONE) {
      x.lea_ax_rip = true;
      x.lea_target = x.pc + in.length + static_cast<uint64_t>(ops[1].mem.disp.value);
    }
    if (in.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE && in.operand_count_visible >= 1 &&
        ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative) {
      targets.insert(x.pc + in.length + static_cast<uint64_t>(ops[0].imm.value.s));
    }
    insns.push_back(x);
    off += in.length;
  }
  size_t call = insns.size();
  for (size_t i = 0; i < insns.size(); i++)
    if (insns[i].pc + insns[i].len == site) call = i;
  if (call == insns.size()) {
    out->why = "the call is no instruction of its function";
    return;
  }
  size_t j = call;
  while (j > 0 && insns[j - 1].nop) j--;
  if (j == 0 || !insns[j - 1].lea_ax_rip) {
    out->why = "no LEAQ fn(SB), AX right before the call";
    return;
  }
  const Insn& lea = insns[j - 1];
  for (uint64_t t : targets) {
    if (t > lea.pc && t <= insns[call].pc) {
      out->why = "a branch lands between the LEAQ and the call";
      return;
    }
  }
  FuncvalTarget(bin, lea.lea_target, out);
}

// arm64: `ADRP R0, page` then `ADD $lo12, R0, R0` right before the BL (NOPs skipped), and no
// direct branch of the function lands after the ADRP up to the BL.
void Arm64Site(const sym::Binary& bin, const sym::GoFunc& fn, uint64_t site, McallCallee* out) {
  auto code = bin.elf().ReadVaddr(fn.entry, static_cast<size_t>(fn.end - fn.entry));
  if (!code.ok() || site < fn.entry + 4 || site > fn.end) {
    out->why = "code unreadable";
    return;
  }
  auto word = [&](uint64_t pc) {
    uint32_t w = 0;
    memcpy(&w, code->data() + (pc - fn.entry), 4);
    return w;
  };
  uint64_t bl = site - 4, pc = bl;
  while (pc >= fn.entry + 4 && word(pc - 4) == 0xD503201F) pc -= 4;  // NOP
  if (pc < fn.entry + 8) {
    out->why = "no ADRP/ADD into R0 right before the call";
    return;
  }
  A64Insn add = DecodeA64(word(pc - 4), pc - 4), adrp = DecodeA64(word(pc - 8), pc - 8);
  if (!(adrp.op == A64Op::kAdr && adrp.rd == 0 && add.op == A64Op::kAddImm && add.rd == 0 && add.rn == 0 &&
        add.imm >= 0)) {
    out->why = "no ADRP/ADD into R0 right before the call";
    return;
  }
  for (uint64_t p = fn.entry; p + 4 <= fn.end; p += 4) {
    A64Insn in = DecodeA64(word(p), p);
    if ((in.op == A64Op::kB || in.op == A64Op::kBCond) && in.target > pc - 8 && in.target <= bl) {
      out->why = "a branch lands between the ADRP and the call";
      return;
    }
  }
  FuncvalTarget(bin, static_cast<uint64_t>(adrp.imm + add.imm), out);
}

}  // namespace

std::vector<McallCallee> DecodeMcallCallees(const sym::Binary& bin, const std::vector<uint64_t>& sites) {
  std::vector<McallCallee> out;
  const sym::GoPclntab* go = bin.go();
  for (uint64_t site : sites) {
    McallCallee c;
    c.site = site;
    auto fn = go ? go->FindFunc(site - 1) : std::nullopt;
    if (!fn || fn->end <= fn->entry) {
      c.why = "no function holds the call";
    } else if (bin.elf().arch() == sym::Arch::kAmd64) {
      Amd64Site(bin, *fn, site, &c);
    } else if (bin.elf().arch() == sym::Arch::kArm64) {
      Arm64Site(bin, *fn, site, &c);
    } else {
      c.why = "unknown architecture";
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace sb::unwinder
