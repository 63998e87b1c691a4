// Offsets read from the runtime's machine code: on the real lefthook binaries (Go 1.27, no
// DWARF, no symbols) they equal the 1.27 table; the arm64 decoder on known encodings; the
// source chain (DWARF, asm, table; never a guess). The per-release comparison with DWARF on
// built binaries is in dwarf_offsets_test.cc, sharing its builds.
#include "unwinder/asm_offsets.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/common/shell_util.h"
#include "unwinder/arm64_decoder.h"
#include "unwinder/go_offsets_table.h"
#include "unwinder/go_version.h"
#include "unwinder/offset_fields.h"
#include "unwinder/runtime_offsets.h"
#include "unwinder/tls_slot.h"

namespace sb::unwinder {
namespace {

std::string LefthookDir() {
  auto r = test::RunCommand(test::Quote(SB_SOURCE_DIR "/tools/fetch-lefthook.sh"));
  EXPECT_EQ(r.status, 0) << "tools/fetch-lefthook.sh failed (needs npm and the registry): " << r.out;
  return r.status == 0 ? SB_SOURCE_DIR "/.cache/lefthook" : "";
}

TEST(AsmOffsets, LefthookGo127EqualsTheTable) {
  std::string dir = LefthookDir();
  ASSERT_FALSE(dir.empty());
  auto table = GoOffsetsForVersion(1, 27);
  ASSERT_TRUE(table);
  for (const char* arch : {"x64", "arm64"}) {
    SCOPED_TRACE(arch);
    auto bin = sym::Binary::Load(dir + "/lefthook-linux-" + arch);
    ASSERT_TRUE(bin.ok()) << bin.error();
    ASSERT_TRUE((*bin)->elf().Symbols().empty());  // stripped: only the pclntab finds the functions
    bool arm64 = std::string(arch) == "arm64";
    AsmOffsets a = DeriveOffsetsFromAsm(**bin);
    for (const auto& f : kOffsetFields) {
      if (!arm64 && !f.used_on_amd64) continue;
      auto it = a.fields.find(f.name);
      ASSERT_NE(it, a.fields.end()) << f.name;
      EXPECT_EQ(it->second.value, (*table).*(f.member)) << f.name << " from " << it->second.source;
      EXPECT_EQ(it->second.source.rfind("asm:", 0), 0u);
    }
    EXPECT_TRUE(a.conflicts.empty());
    if (arm64) {
      ASSERT_TRUE(a.arm64_tls_g_offset && a.iscgo_address);
      EXPECT_EQ(a.arm64_tls_g_offset->value, 16);
      auto slot = FindArm64TlsSlot(**bin, a);  // no symbols: from the code alone
      ASSERT_TRUE(slot.ok()) << slot.error();
      EXPECT_EQ(slot->iscgo_addr, static_cast<uint64_t>(a.iscgo_address->value));
      // The byte lies in a writable segment (data or bss) of the image.
      bool writable = false;
      for (const auto& seg : (*bin)->elf().segments())
        writable |= seg.type == 1 /* PT_LOAD */ && (seg.flags & 2 /* PF_W */) && slot->iscgo_addr >= seg.vaddr &&
                    slot->iscgo_addr < seg.vaddr + seg.memsz;
      EXPECT_TRUE(writable);
    }
  }
}

// Real stripped binaries with .go.buildinfo removed: the version comes from runtime.schedinit's
// reference to runtime.buildVersion.
TEST(GoVersion, LefthookWithoutBuildInfo) {
  std::string dir = LefthookDir();
  ASSERT_FALSE(dir.empty());
  for (const char* arch : {"x64", "arm64"}) {
    SCOPED_TRACE(arch);
    std::string out = std::string(SB_BUILD_DIR "/lefthook-nobuildinfo-") + arch;
    std::string objcopy = std::string(arch) == "arm64" ? "aarch64-linux-gnu-objcopy" : "objcopy";
    auto r = test::RunCommand(objcopy + " --remove-section .go.buildinfo " +
                              test::Quote(dir + "/lefthook-linux-" + arch) + " " + test::Quote(out));
    ASSERT_EQ(r.status, 0) << r.out;
    auto bin = sym::Binary::Load(out);
    ASSERT_TRUE(bin.ok()) << bin.error();
    EXPECT_EQ((*bin)->build_info(), nullptr);
    auto v = GoVersionFromRuntime(**bin);
    ASSERT_TRUE(v.ok()) << v.error();
    EXPECT_EQ(v->version, "go1.27.0");
    EXPECT_NE(v->source.find("runtime.schedinit"), std::string::npos) << v->source;
  }
}

std::string Words(std::initializer_list<uint32_t> ws) {
  std::string s;
  for (uint32_t w : ws) s.append(reinterpret_cast<const char*>(&w), 4);
  return s;
}

// runtime.save_g of Go 1.27 arm64 (objdump of a built binary).
TEST(AsmOffsets, Arm64SaveGGivesTlsSlotAndIscgo) {
  std::string save_g = Words({0xd000093b /* ADRP 0x126000(PC), R27 */, 0x399c8360 /* MOVB 1824(R27), R0 */,
                              0xb4000080 /* CBZ R0, +4 */, 0xd53bd040 /* MRS TPIDR_EL0, R0 */,
                              0xd280021b /* MOVD $16, R27 */, 0xf83b681c /* MOVD R28, (R0)(R27) */,
                              0xd65f03c0 /* RET */});
  const uint64_t at = 0x89000;
  AsmOffsets a = DeriveOffsetsFromCode(sym::Arch::kArm64, {FuncCode{"runtime.save_g", at, save_g}}, nullptr);
  ASSERT_TRUE(a.arm64_tls_g_offset);
  EXPECT_EQ(a.arm64_tls_g_offset->value, 16);
  EXPECT_EQ(a.arm64_tls_g_offset->source, "asm:runtime.save_g");
  ASSERT_TRUE(a.iscgo_address);
  EXPECT_EQ(static_cast<uint64_t>(a.iscgo_address->value), ((at & ~0xfffull) + 0x126000) + 1824);
}

TEST(Arm64Decoder, KnownEncodings) {
  auto d = DecodeA64(0xf81f0ffe, 0x1000);  // MOVD.W R30, -16(RSP)
  EXPECT_EQ(d.op, A64Op::kStore);
  EXPECT_EQ(d.index, A64Index::kPre);
  EXPECT_EQ(d.imm, -16);
  EXPECT_EQ(d.rt, 30);
  EXPECT_EQ(d.rn, 31);
  d = DecodeA64(0xf9405c86, 0x1000);  // MOVD 184(R4), R6
  EXPECT_EQ(d.op, A64Op::kLoad);
  EXPECT_EQ(d.imm, 184);
  EXPECT_EQ(d.size, 8);
  d = DecodeA64(0xd14040e0, 0x1000);  // SUB $(16<<12), R7, R0
  EXPECT_EQ(d.op, A64Op::kAddImm);
  EXPECT_EQ(d.imm, -65536);
  d = DecodeA64(0xeb1c00bf, 0x1000);  // CMP R28, R5
  EXPECT_EQ(d.op, A64Op::kCmpReg);
  EXPECT_EQ(d.rn, 5);
  EXPECT_EQ(d.rm, 28);
  d = DecodeA64(0x97fffe45, 0x2000);  // BL backwards
  EXPECT_EQ(d.op, A64Op::kBL);
  EXPECT_EQ(d.target, 0x2000u - 0x1bbu * 4);
  d = DecodeA64(0xa9401484, 0x1000);  // LDP (R4), (R4, R5)
  EXPECT_EQ(d.op, A64Op::kLoadPair);
  EXPECT_EQ(d.rt2, 5);
  d = DecodeA64(0x88dffc42, 0x1000);  // LDARW (R2), R2
  EXPECT_EQ(d.op, A64Op::kLoad);
  EXPECT_EQ(d.size, 4);
  d = DecodeA64(0xb2400be1, 0x1000);  // ORR $7, ZR, R1 (MOV of a bitmask immediate)
  EXPECT_EQ(d.op, A64Op::kMovWide);
  EXPECT_EQ(d.rd, 1);
  EXPECT_EQ(d.imm, 7);
  d = DecodeA64(0xb27203e0, 0x1000);  // ORR $16384, ZR, R0
  EXPECT_EQ(d.imm, 16384);
  d = DecodeA64(0x927cec21, 0x1000);  // AND $-16, R1, R1: not a constant
  EXPECT_EQ(d.op, A64Op::kOther);
  EXPECT_TRUE(d.writes_rd);
  EXPECT_EQ(DecodeA64(0xd65f03c0, 0).op, A64Op::kRet);
  EXPECT_EQ(DecodeA64(0x00000000, 0).op, A64Op::kUdf);
}

TEST(AsmOffsets, GarbageGivesNothing) {
  std::string junk(512, '\xab');
  std::vector<FuncCode> funcs;
  for (const auto& name : AsmOffsetFunctions()) funcs.push_back(FuncCode{name, 0x401000, junk});
  for (auto arch : {sym::Arch::kAmd64, sym::Arch::kArm64}) {
    AsmOffsets a = DeriveOffsetsFromCode(arch, funcs, nullptr);
    EXPECT_TRUE(a.fields.empty());
  }
}

sb_go_offsets Table127() { return *GoOffsetsForVersion(1, 27); }

// DWARF first; asm next; the table only for a version it knows; a needed field nobody gives
// leaves the binary without offsets.
TEST(RuntimeOffsets, ChainOrderAndNoGuessing) {
  AsmOffsets asm_facts;
  for (const auto& f : kOffsetFields) asm_facts.fields[f.name] = AsmFact{Table127().*(f.member), "asm:test"};
  asm_facts.fields.erase("g.goid");
  asm_facts.fields.erase("gobuf.lr");

  Result<sb_go_offsets> no_dwarf = MakeError("no DWARF");
  // Known version: goid from the table, everything else from asm.
  auto known = ChooseOffsets(sym::Arch::kAmd64, no_dwarf, asm_facts, Table127(), "go1.27.0");
  EXPECT_TRUE(known.complete);
  for (const auto& fc : known.fields) {
    if (fc.name == "g.goid") EXPECT_EQ(fc.source, "table go1.27.0");
    else if (fc.name == "gobuf.lr") EXPECT_EQ(fc.source, "table go1.27.0");
    else if (fc.name == "g.labels") EXPECT_EQ(fc.source, "table go1.27.0");  // optional, not in kOffsetFields
    else EXPECT_EQ(fc.source, "asm:test") << fc.name;
    EXPECT_TRUE(fc.agree) << fc.name;
  }
  // Unknown version: goid has no source -> no offsets at all.
  auto unknown = ChooseOffsets(sym::Arch::kAmd64, no_dwarf, asm_facts, std::nullopt, "go1.31.0");
  EXPECT_FALSE(unknown.complete);
  EXPECT_EQ(unknown.missing, std::vector<std::string>{"g.goid"});
  EXPECT_NE(unknown.summary.find("g.goid"), std::string::npos);
  // amd64 never reads gobuf.lr: its absence does not matter there, but it does on arm64.
  asm_facts.fields["g.goid"] = AsmFact{152, "asm:test"};
  EXPECT_TRUE(ChooseOffsets(sym::Arch::kAmd64, no_dwarf, asm_facts, std::nullopt, "").complete);
  EXPECT_FALSE(ChooseOffsets(sym::Arch::kArm64, no_dwarf, asm_facts, std::nullopt, "").complete);
  // DWARF wins, and a disagreeing source is reported.
  sb_go_offsets dw = Table127();
  dw.m_curg = 200;
  auto with_dwarf = ChooseOffsets(sym::Arch::kArm64, dw, asm_facts, Table127(), "go1.27.0");
  for (const auto& fc : with_dwarf.fields) {
    EXPECT_EQ(fc.source, "dwarf");
    if (fc.name == "m.curg") {
      EXPECT_FALSE(fc.agree);
    }
  }
  EXPECT_NE(with_dwarf.summary.find("disagree"), std::string::npos);
}

}  // namespace
}  // namespace sb::unwinder
