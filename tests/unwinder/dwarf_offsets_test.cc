// Runtime struct offsets from DWARF equal the version table, and offsets read from the
// runtime's own machine code equal DWARF field by field, on real binaries of every Go release
// the project supports (1.19 installed; 1.21-1.27 fetched by tools/fetch-go.sh from Debian into
// .cache/go), for amd64 and arm64, with and without cgo; the stripped twin (-s -w: no DWARF, no
// symbols) must give the same asm-derived values. Each binary is built once and checked by both
// sources. A release whose layout or runtime code moved makes this fail.
#include "unwinder/dwarf_offsets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>
#include <string>

#include "symbolizer/binary.h"
#include "tests/common/fetched_go.h"
#include "tests/common/shell_util.h"
#include "unwinder/asm_offsets.h"
#include "unwinder/go_binary_facts.h"
#include "unwinder/go_offsets_table.h"
#include "unwinder/go_version.h"
#include "unwinder/offset_fields.h"
#include "unwinder/tls_slot.h"

namespace sb::unwinder {
namespace {

constexpr char kProgram[] = R"(package main

import "fmt"

func main() {
	done := make(chan int)
	go func() { done <- 1 }()
	fmt.Println(<-done)
}
)";

std::string Describe(const sb_go_offsets& o) {
  std::ostringstream s;
  s << "g.stack " << o.g_stack_lo << "/" << o.g_stack_hi << " g.m " << o.g_m << " g.sched " << o.g_sched
    << " g.atomicstatus " << o.g_atomicstatus << " g.goid " << o.g_goid << " gobuf sp/pc/bp/lr " << o.gobuf_sp
    << "/" << o.gobuf_pc << "/" << o.gobuf_bp << "/" << o.gobuf_lr << " m.g0 " << o.m_g0 << " m.curg "
    << o.m_curg << " m.gsignal " << o.m_gsignal << " m.vdsoSP/PC " << o.m_vdsosp << "/" << o.m_vdsopc;
  return s.str();
}

// Builds the program with GO for GOARCH into dir; returns the binary path or "".
std::string Build(const std::string& go, const std::string& arch, const std::string& dir, bool cgo, bool stripped) {
  std::string src = dir + "/main.go";
  FILE* f = fopen(src.c_str(), "w");
  if (!f) return "";
  fputs(kProgram, f);
  fclose(f);
  std::string out = dir + "/prog-" + arch + (cgo ? "-cgo" : "") + (stripped ? "-stripped" : "");
  std::string cc = arch == "arm64" ? " CC=aarch64-linux-gnu-gcc" : "";
  auto r = test::RunCommand("cd " + test::Quote(dir) + " && env GOCACHE=" + test::Quote(SB_GOCACHE) +
                            " GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local CGO_ENABLED=" + (cgo ? "1" : "0") + cc +
                            " GOARCH=" + arch + " " + test::Quote(go) + " build " +
                            (stripped ? "-ldflags='-s -w' " : "") + "-o " + test::Quote(out) + " main.go");
  EXPECT_EQ(r.status, 0) << r.out;
  return r.status == 0 ? out : "";
}

// Every field the unwinder uses on this arch: asm-derived == expected (DWARF).
void ExpectAsmEquals(const std::string& what, const AsmOffsets& a, const sb_go_offsets& want, bool arm64) {
  for (const auto& f : kOffsetFields) {
    if (!arm64 && !f.used_on_amd64) continue;
    auto it = a.fields.find(f.name);
    if (it == a.fields.end()) {
      ADD_FAILURE() << what << ": " << f.name << " not derived from the runtime's code";
      continue;
    }
    EXPECT_EQ(it->second.value, want.*(f.member)) << what << ": " << f.name << " from " << it->second.source;
  }
  EXPECT_TRUE(a.conflicts.empty()) << what << ": " << (a.conflicts.empty() ? "" : a.conflicts[0]);
  EXPECT_TRUE(a.missing_functions.empty()) << what << ": " << (a.missing_functions.empty() ? "" : a.missing_functions[0]);
}

AsmOffsets AsmOf(const std::string& path) {
  auto bin = sym::Binary::Load(path);
  EXPECT_TRUE(bin.ok()) << path;
  return bin.ok() ? DeriveOffsetsFromAsm(**bin) : AsmOffsets{};
}

void CheckToolchain(const std::string& go, int minor) {
  auto table = GoOffsetsForVersion(1, minor);
  ASSERT_TRUE(table);
  for (const char* arch : {"amd64", "arm64"}) {
    const bool arm64 = std::string(arch) == "arm64";
    for (bool cgo : {false, true}) {
      SCOPED_TRACE(std::string("go1.") + std::to_string(minor) + " " + arch + (cgo ? " cgo" : ""));
      std::string dir = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "offsets-1." + std::to_string(minor));
      std::string bin = Build(go, arch, dir, cgo, false);
      ASSERT_FALSE(bin.empty());
      auto dwarf = GoOffsetsFromDwarf(bin);
      ASSERT_TRUE(dwarf.ok()) << dwarf.error();
      EXPECT_EQ(std::memcmp(&*dwarf, &*table, sizeof(sb_go_offsets)), 0)
          << "DWARF: " << Describe(*dwarf) << "\ntable: " << Describe(*table);
      AsmOffsets asm_full = AsmOf(bin);
      ExpectAsmEquals("asm (unstripped)", asm_full, *dwarf, arm64);
      // -s -w drops DWARF and the symbol table: the error says so, and the code still tells.
      std::string stripped = Build(go, arch, dir, cgo, true);
      ASSERT_FALSE(stripped.empty());
      auto none = GoOffsetsFromDwarf(stripped);
      ASSERT_FALSE(none.ok());
      EXPECT_NE(none.error().find("DWARF"), std::string::npos) << none.error();
      AsmOffsets asm_stripped = AsmOf(stripped);
      ExpectAsmEquals("asm (stripped)", asm_stripped, *dwarf, arm64);
      // runtime.clone's child side (a new thread's base, unwinder/clone_child.h) is decoded in
      // every release, stripped too: it starts right after the parent's RET and ends with clone.
      {
        auto sbin = sym::Binary::Load(stripped);
        ASSERT_TRUE(sbin.ok());
        auto sf = AnalyzeGoBinary(**sbin, stripped);
        ASSERT_TRUE(sf.ok()) << sf.error();
        auto clone = (*sbin)->go()->FindFuncByName("runtime.clone");
        ASSERT_TRUE(clone);
        const FuncRange* child = nullptr;
        for (const auto& r : (*sf)->ranges)
          if (r.name == "runtime.clone (child)") child = &r;
        ASSERT_NE(child, nullptr) << "runtime.clone's child side not decoded";
        EXPECT_EQ(child->kind, SB_FN_ROOT);
        EXPECT_GT(child->start, clone->entry);
        EXPECT_EQ(child->end, clone->end);
        auto ret = (*sbin)->elf().ReadVaddr(child->start - (arm64 ? 4 : 1), arm64 ? 4 : 1);
        ASSERT_TRUE(ret.ok());
        EXPECT_EQ(*ret, arm64 ? std::string("\xc0\x03\x5f\xd6", 4) : std::string("\xc3", 1)) << "not after a RET";
      }
      // Without .go.buildinfo the version still comes from runtime.buildVersion: by symbol in
      // the unstripped binary, through runtime.schedinit in the stripped one.
      for (const std::string& b : {bin, stripped}) {
        std::string nobi = b + "-nobuildinfo";
        auto r = test::RunCommand(std::string(arm64 ? "aarch64-linux-gnu-objcopy" : "objcopy") +
                                  " --remove-section .go.buildinfo " + test::Quote(b) + " " + test::Quote(nobi));
        ASSERT_EQ(r.status, 0) << r.out;
        auto loaded = sym::Binary::Load(nobi);
        ASSERT_TRUE(loaded.ok());
        EXPECT_EQ((*loaded)->build_info(), nullptr) << nobi;
        auto v = GoVersionFromRuntime(**loaded);
        ASSERT_TRUE(v.ok()) << nobi << ": " << v.error();
        EXPECT_EQ(v->minor, minor) << v->version;
        EXPECT_NE(v->source.find(b == bin ? "symbol" : "schedinit"), std::string::npos) << v->source;
      }
      if (arm64) {
        // g's TLS slot and iscgo: the symbol-based answer and the decoded one agree.
        auto b = sym::Binary::Load(bin);
        ASSERT_TRUE(b.ok());
        auto slot = FindArm64TlsSlot(**b, asm_full);
        ASSERT_TRUE(slot.ok()) << slot.error();
        ASSERT_TRUE(asm_full.arm64_tls_g_offset && asm_full.iscgo_address);
        EXPECT_EQ(slot->tls.offset, asm_full.arm64_tls_g_offset->value);
        EXPECT_EQ(slot->iscgo_addr, static_cast<uint64_t>(asm_full.iscgo_address->value));
        ASSERT_TRUE(asm_stripped.arm64_tls_g_offset && asm_stripped.iscgo_address);
        EXPECT_EQ(asm_stripped.arm64_tls_g_offset->value, asm_full.arm64_tls_g_offset->value);
        // mcall callees' g0 slot: the prologue decode agrees with the location list of `gp`
        // in every binary with DWARF, and the stripped twin decodes the same slots.
        auto facts = AnalyzeGoBinary(**b, bin);
        ASSERT_TRUE(facts.ok()) << facts.error();
        auto sb = sym::Binary::Load(stripped);
        ASSERT_TRUE(sb.ok());
        auto sfacts = AnalyzeGoBinary(**sb, stripped);
        ASSERT_TRUE(sfacts.ok()) << sfacts.error();
        for (const auto& m : (*facts)->missing) EXPECT_EQ(m.find("DWARF does not"), std::string::npos) << m;
        std::map<std::string, int32_t> proven, decoded;
        for (const auto& r : (*facts)->ranges) {
          if (r.kind != SB_FN_MCALL_SPILLER) continue;
          EXPECT_NE(r.slot_source.find("proven by DWARF"), std::string::npos) << r.name << ": " << r.slot_source;
          proven[r.name] = r.slot_offset;
        }
        for (const auto& r : (*sfacts)->ranges) {
          if (r.kind != SB_FN_MCALL_SPILLER) continue;
          EXPECT_EQ(r.slot_source.find("DWARF"), std::string::npos) << r.name << ": " << r.slot_source;
          decoded[r.name] = r.slot_offset;
        }
        EXPECT_GE(proven.size(), 3u);  // park_m, preemptPark, goyield_m in every release
        EXPECT_EQ(proven, decoded);
        // gosched_m (and gopreempt_m while mcall calls it, up to 1.25) keep no g: the slot is
        // goschedImpl's spill, the range the return site of their one BL goschedImpl.
        auto impl = (*b)->go()->FindFuncByName("runtime.goschedImpl");
        ASSERT_TRUE(impl);
        std::vector<std::string> via_impl;
        for (const auto& r : (*facts)->ranges) {
          if (r.kind != SB_FN_MCALL_SPILLER || r.slot_source.find("goschedImpl") == std::string::npos) continue;
          via_impl.push_back(r.name);
          EXPECT_EQ(r.end - r.start, 3u) << r.name;
          uint32_t bl = 0;
          auto word = (*b)->elf().ReadVaddr(r.end - 4, 4);
          ASSERT_TRUE(word.ok());
          std::memcpy(&bl, word->data(), 4);
          ASSERT_EQ(bl & 0xFC000000u, 0x94000000u) << r.name << ": BL before the range's end";
          int64_t imm = static_cast<int64_t>(static_cast<int32_t>(bl << 6) >> 6) * 4;
          EXPECT_EQ(r.end - 4 + static_cast<uint64_t>(imm), impl->entry) << r.name << ": the BL calls goschedImpl";
          EXPECT_LT(r.slot_offset, -16) << r.name << ": below the callee's frame on g0";
        }
        std::vector<std::string> want = {"runtime.gosched_m"};
        if (minor <= 25) want.insert(want.begin(), "runtime.gopreempt_m");
        std::sort(via_impl.begin(), via_impl.end());
        std::sort(want.begin(), want.end());
        EXPECT_EQ(via_impl, want);
      }
    }
  }
}

TEST(RuntimeOffsets, Go119DwarfTableAndAsmAgree) { CheckToolchain(SB_GO_EXECUTABLE, 19); }

// Go 1.21 to 1.27 from Debian (bookworm-backports, trixie, forky, sid, experimental).
TEST(RuntimeOffsets, Go121To127DwarfTableAndAsmAgree) {
  std::string listed;
  int seen = test::ForEachFetchedGo(SB_SOURCE_DIR, CheckToolchain, &listed);
  ASSERT_GE(seen, 0) << listed;
  EXPECT_EQ(seen, 7) << "expected Go 1.21 to 1.27: " << listed;
}

TEST(DwarfOffsets, MissingFileIsAnError) {
  auto r = GoOffsetsFromDwarf("/nonexistent/binary");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("/nonexistent/binary"), std::string::npos);
}

}  // namespace
}  // namespace sb::unwinder
