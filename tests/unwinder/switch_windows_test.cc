// The facts the unwinder decodes from the runtime's switch code, on real binaries of every Go
// release the project supports (1.19 installed; 1.21-1.27 from tools/fetch-go.sh) for amd64
// and arm64 (cross-built), with symbols and stripped (-s -w), amd64 also as PIE:
//   - the function every call site of runtime.mcall passes (unwinder/mcall_callees.h),
//   - runtime.systemstack's two windows, arm64's included (unwinder/systemstack_window.h),
//   - runtime.asmcgocall's two windows of the same kind, arm64's included (unwinder/systemstack_window.h),
//   - gogo's windows, arm64's included (unwinder/gogo_window.h),
//   - systemstack's and asmcgocall's switched and direct paths (unwinder/switch_paths.h).
// A release whose runtime code moved makes this fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <string>

#include "symbolizer/binary.h"
#include "tests/common/fetched_go.h"
#include "tests/common/shell_util.h"
#include "unwinder/go_binary_facts.h"

namespace sb::unwinder {
namespace {

constexpr char kProgram[] = R"(package main

import (
	"fmt"
	"runtime"
)

func main() {
	done := make(chan int)
	go func() { runtime.Gosched(); done <- 1 }()
	fmt.Println(<-done)
}
)";

std::string Build(const std::string& go, const std::string& arch, const std::string& dir, const std::string& flavor) {
  std::string src = dir + "/main.go";
  FILE* f = fopen(src.c_str(), "w");
  if (!f) return "";
  fputs(kProgram, f);
  fclose(f);
  std::string out = dir + "/prog-" + arch + "-" + flavor;
  std::string flags = flavor == "stripped" ? "-ldflags='-s -w' " : flavor == "pie" ? "-buildmode=pie " : "";
  auto r = test::RunCommand("cd " + test::Quote(dir) + " && env GOCACHE=" + test::Quote(SB_GOCACHE) +
                            " GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local CGO_ENABLED=0 GOARCH=" + arch + " " +
                            test::Quote(go) + " build " + flags + "-o " + test::Quote(out) + " main.go");
  EXPECT_EQ(r.status, 0) << r.out;
  return r.status == 0 ? out : "";
}

struct Analyzed {
  std::shared_ptr<sym::Binary> bin;
  std::shared_ptr<const GoBinaryFacts> facts;
};

Analyzed Analyze(const std::string& path) {
  Analyzed a;
  auto bin = sym::Binary::Load(path);
  EXPECT_TRUE(bin.ok()) << path;
  if (!bin.ok()) return a;
  auto f = AnalyzeGoBinary(**bin, path);
  EXPECT_TRUE(f.ok()) << f.error();
  if (!f.ok()) return a;
  a.bin = *bin;
  a.facts = *f;
  return a;
}

std::string NameAt(const sym::Binary& bin, uint64_t pc) {
  auto fn = bin.go()->FindFunc(pc);
  return fn ? std::string(fn->name) : "?";
}

// Every mcall site's callee decoded, and the ones the saved-pc rule meets most are the right
// functions. Returns the callee entries by site, to compare with the stripped twin.
std::vector<uint64_t> CheckMcallCallees(const Analyzed& a, int minor) {
  const auto& f = *a.facts;
  EXPECT_GE(f.mcall_callees.size(), 10u);
  EXPECT_EQ(f.mcall_callees.size(), f.mcall_return_sites.size());
  std::set<std::string> callees;
  std::vector<uint64_t> entries;
  for (const auto& c : f.mcall_callees) {
    EXPECT_NE(c.fn_end, 0u) << std::hex << c.site << " in " << NameAt(*a.bin, c.site - 1) << ": " << c.why;
    entries.push_back(c.fn_entry);
    if (c.fn_end == 0) continue;
    callees.insert(NameAt(*a.bin, c.fn_entry));
    std::string caller = NameAt(*a.bin, c.site - 1);
    if (caller == "runtime.gopark") {
      EXPECT_EQ(NameAt(*a.bin, c.fn_entry), "runtime.park_m");
    }
    if (caller == "runtime.goexit1") {
      EXPECT_EQ(NameAt(*a.bin, c.fn_entry), "runtime.goexit0");
    }
  }
  for (const char* want : {"runtime.park_m", "runtime.gosched_m", "runtime.goexit0", "runtime.goyield_m",
                           "runtime.recovery", minor >= 26 ? "runtime.exitsyscallNoP" : "runtime.exitsyscall0",
                           minor >= 26 ? "runtime.asyncPreempt2.func1" : "runtime.preemptPark"})
    EXPECT_TRUE(callees.count(want)) << want;
  for (const auto& m : f.missing) EXPECT_EQ(m.find("mcall passes"), std::string::npos) << m;
  // The proc info holds them beside their sites.
  sb_proc_info pi = MakeProcInfo(f, 0x1000, 0);
  for (uint32_t i = 0; i < pi.nmcall_sites; i++) {
    EXPECT_NE(pi.mcall_fns[i].hi, 0u) << i;
    EXPECT_EQ(pi.mcall_fns[i].lo + f.text_start, f.mcall_callees[i].fn_entry) << i;
  }
  return entries;
}

// Whether the instruction ending at pc is a store through FS (the 0x64 prefix 4-9 bytes back:
// MOVQ reg, FS:-8, or FS:(CX) in PIE).
bool FsStoreBefore(const Analyzed& a, uint64_t pc) {
  for (int len = 4; len <= 9; len++) {
    auto b = a.bin->elf().ReadVaddr(pc - len, 1);
    if (b.ok() && static_cast<uint8_t>((*b)[0]) == 0x64) return true;
  }
  return false;
}

void CheckSystemstack(const Analyzed& a, bool arm64) {
  const auto& w = a.facts->systemstack;
  ASSERT_TRUE(w.found) << w.why;
  auto fn = a.bin->go()->FindFuncByName("runtime.systemstack");
  ASSERT_TRUE(fn);
  EXPECT_GT(w.g0_lo, fn->entry);
  EXPECT_LT(w.g0_lo, w.g0_hi);
  EXPECT_LT(w.g0_hi, w.gp_lo);
  EXPECT_LT(w.gp_lo, w.gp_hi);
  EXPECT_LE(w.gp_hi, fn->end);
  sb_proc_info pi = MakeProcInfo(*a.facts, 0x1000, 0);
  EXPECT_EQ(pi.sstack_gp_hi, w.gp_hi + 0x1000);
  if (arm64) {
    // Each window opens after MOVD Rn, R28 with BL runtime.save_g, and closes with MOVD Rn, RSP.
    auto save_g = a.bin->go()->FindFuncByName("runtime.save_g");
    ASSERT_TRUE(save_g);
    EXPECT_EQ(w.save_g_lo, save_g->entry);
    EXPECT_EQ(pi.save_g_lo, save_g->entry + 0x1000);
    auto word = [&](uint64_t pc) {
      uint32_t v = 0;
      auto b = a.bin->elf().ReadVaddr(pc, 4);
      if (b.ok()) std::memcpy(&v, b->data(), 4);
      return v;
    };
    // g0: MOVD R5, R28 (ORR X28, XZR, Xm); curg: MOVD m_curg(Rn), R28 (LDR X28, [Xn, #imm]).
    EXPECT_EQ(word(w.g0_lo - 4) & 0xFFE0FFFFu, 0xAA0003FCu) << std::hex << w.g0_lo << ": MOVD Rm, R28 before";
    EXPECT_EQ(word(w.gp_lo - 4) & 0xFFC0001Fu, 0xF940001Cu) << std::hex << w.gp_lo << ": MOVD off(Rn), R28 before";
    for (auto [lo, hi] : {std::pair{w.g0_lo, w.g0_hi}, std::pair{w.gp_lo, w.gp_hi}}) {
      EXPECT_EQ(word(lo) & 0xFC000000u, 0x94000000u) << std::hex << lo << ": BL save_g first";
      EXPECT_EQ(word(hi - 4) & 0xFFFFFC1Fu, 0x9100001Fu) << std::hex << hi << ": MOVD Rn, RSP last";
    }
    return;
  }
  // Each window opens right after a store through FS (the TLS slot of g).
  for (uint64_t lo : {w.g0_lo, w.gp_lo}) EXPECT_TRUE(FsStoreBefore(a, lo)) << std::hex << lo;
}

// asmcgocall, both windows inside the switched path. amd64: the g0 window is the one SP load
// after the TLS store of g0 (MOVQ gobuf_sp(SI), SP), the gp window the one register move into SP
// after the TLS store of the goroutine (MOVQ SI, SP). arm64: each opens with BL save_g (the
// same save_g as systemstack's) after g is set (MOVD R3, R28; MOVD 0(RSP), R28), the g0 window
// closes with MOVD R0, RSP after the load of g0.sched.sp, the gp window with MOVD R5, RSP after
// SUB R6, R5, R5 and MOVD R9, R0.
void CheckAsmcgocall(const Analyzed& a, bool arm64) {
  const auto& w = a.facts->asmcgocall;
  sb_proc_info pi = MakeProcInfo(*a.facts, 0x1000, 0);
  ASSERT_TRUE(w.found) << w.why;
  const auto& paths = a.facts->asmcgocall_paths;
  EXPECT_LT(paths.switched_lo, w.g0_lo);
  EXPECT_LT(w.g0_hi, w.gp_lo);
  EXPECT_LT(w.gp_hi, paths.direct_lo);
  auto bytes = [&](uint64_t lo, uint64_t hi) {
    auto b = a.bin->elf().ReadVaddr(lo, hi - lo);
    return b.ok() ? std::string(b->data(), b->size()) : std::string();
  };
  if (arm64) {
    auto word = [&](uint64_t pc) {
      uint32_t v = 0;
      std::string b = bytes(pc, pc + 4);
      if (b.size() == 4) std::memcpy(&v, b.data(), 4);
      return v;
    };
    EXPECT_EQ(word(w.g0_lo - 4), 0xAA0303FCu) << std::hex << w.g0_lo << ": MOVD R3, R28 before";
    EXPECT_EQ(word(w.gp_lo - 4), 0xF94003FCu) << std::hex << w.gp_lo << ": MOVD (RSP), R28 before";
    for (uint64_t lo : {w.g0_lo, w.gp_lo}) EXPECT_EQ(word(lo) & 0xFC000000u, 0x94000000u) << std::hex << lo << ": BL first";
    EXPECT_EQ(w.save_g_lo, a.facts->systemstack.save_g_lo);
    EXPECT_EQ(w.g0_hi - w.g0_lo, 12u) << "BL save_g; MOVD 56(R28), R0; MOVD R0, RSP";
    EXPECT_EQ(word(w.g0_hi - 4), 0x9100001Fu) << "MOVD R0, RSP";
    EXPECT_EQ(w.gp_hi - w.gp_lo, 24u) << "BL save_g; 2 loads; SUB; MOVD R9, R0; MOVD R5, RSP";
    EXPECT_EQ(word(w.gp_hi - 4), 0x910000BFu) << "MOVD R5, RSP";
  } else {
    EXPECT_EQ(bytes(w.g0_lo, w.g0_hi), std::string("\x48\x8b\x66\x38", 4)) << "MOVQ 0x38(SI), SP";
    EXPECT_EQ(bytes(w.gp_lo, w.gp_hi), std::string("\x48\x89\xf4", 3)) << "MOVQ SI, SP";
    for (uint64_t lo : {w.g0_lo, w.gp_lo}) EXPECT_TRUE(FsStoreBefore(a, lo)) << std::hex << lo;
  }
  EXPECT_EQ(pi.acgo_g0_lo, w.g0_lo + 0x1000);
  EXPECT_EQ(pi.acgo_gp_hi, w.gp_hi + 0x1000);
  EXPECT_LE(pi.windows_lo, pi.acgo_g0_lo);
  EXPECT_GE(pi.windows_hi, pi.acgo_gp_hi);
}

// systemstack's and asmcgocall's switched path ends with its RET right before the direct path
// (noswitch / nosave), and begins after the call to gosave_systemstack_switch.
void CheckSwitchPaths(const Analyzed& a, bool arm64, int minor) {
  for (const char* name : {"runtime.systemstack", "runtime.asmcgocall"}) {
    SCOPED_TRACE(name);
    const auto& p = std::string(name) == "runtime.systemstack" ? a.facts->systemstack_paths : a.facts->asmcgocall_paths;
    ASSERT_TRUE(p.found) << p.why;
    auto fn = a.bin->go()->FindFuncByName(name);
    auto save = a.bin->go()->FindFuncByName("gosave_systemstack_switch");
    ASSERT_TRUE(fn && save);
    EXPECT_GT(p.switched_lo, fn->entry);
    EXPECT_LT(p.switched_lo, p.direct_lo);
    EXPECT_LT(p.direct_lo, fn->end);
    if (arm64) {
      auto w = a.bin->elf().ReadVaddr(p.direct_lo - 4, 4);
      ASSERT_TRUE(w.ok());
      uint32_t word = 0;
      std::memcpy(&word, w->data(), 4);
      EXPECT_EQ(word, 0xd65f03c0u) << "RET before the direct path";
      auto call = a.bin->elf().ReadVaddr(p.switched_lo - 4, 4);
      ASSERT_TRUE(call.ok());
      std::memcpy(&word, call->data(), 4);
      EXPECT_EQ(word & 0xFC000000u, 0x94000000u) << "BL before the switched path";
    } else {
      auto b = a.bin->elf().ReadVaddr(p.direct_lo - 1, 1);
      ASSERT_TRUE(b.ok());
      EXPECT_EQ(static_cast<uint8_t>((*b)[0]), 0xC3) << "RET before the direct path";
      auto call = a.bin->elf().ReadVaddr(p.switched_lo - 5, 5);
      ASSERT_TRUE(call.ok());
      int32_t rel = 0;
      std::memcpy(&rel, call->data() + 1, 4);
      EXPECT_EQ(static_cast<uint8_t>((*call)[0]), 0xE8);
      EXPECT_EQ(p.switched_lo + static_cast<int64_t>(rel), save->entry) << "CALL gosave_systemstack_switch";
    }
  }
  // amd64 asmcgocall's direct path saves its SP in its aligned frame; in Go 1.19 that SP is
  // its entry SP (40(SP)). From Go 1.21 on asmcgocall has a frame record (PUSHQ BP first), the
  // saved SP is below it and not decoded (-1): the frame-pointer step keeps its caller there.
  // systemstack's direct path tail-calls and saves nothing.
  if (!arm64) {
    EXPECT_EQ(a.facts->asmcgocall_paths.entry_sp_slot, minor == 19 ? 40 : -1);
  }
  EXPECT_EQ(a.facts->systemstack_paths.entry_sp_slot, -1);
  sb_proc_info pi = MakeProcInfo(*a.facts, 0x1000, 0);
  EXPECT_EQ(pi.acgo_entry_sp_slot, arm64 ? 0u : static_cast<uint32_t>(a.facts->asmcgocall_paths.entry_sp_slot + 1));
  EXPECT_EQ(pi.text_start + pi.sstack_direct_lo, a.facts->systemstack_paths.direct_lo + 0x1000);
  EXPECT_EQ(pi.text_start + pi.acgo_switched_lo, a.facts->asmcgocall_paths.switched_lo + 0x1000);
}

void CheckGogo(const Analyzed& a, bool arm64) {
  const auto& w = a.facts->gogo;
  ASSERT_TRUE(w.found) << w.why;
  auto fn = a.bin->go()->FindFuncByName("gogo");
  ASSERT_TRUE(fn);
  EXPECT_GT(w.g0_lo, fn->entry);
  EXPECT_LT(w.g0_lo, w.g0_hi);
  EXPECT_EQ(w.g0_hi, w.gp_lo);
  EXPECT_LT(w.gp_lo, w.bp_loaded);
  EXPECT_LT(w.bp_loaded, w.gp_hi);
  EXPECT_LE(w.gp_hi, fn->end);
  if (!arm64) return;
  EXPECT_EQ(w.g0_lo, fn->entry + 4);  // MOVD R6, R28 first
  EXPECT_LT(w.gp_lo, w.lr_loaded);
  EXPECT_LT(w.lr_loaded, w.gp_hi);
  auto save_g = a.bin->go()->FindFuncByName("runtime.save_g");
  ASSERT_TRUE(save_g);
  EXPECT_EQ(w.save_g_lo, save_g->entry);
  auto execute = a.bin->go()->FindFuncByName("runtime.execute");
  ASSERT_TRUE(execute);
  bool has_execute = false;
  for (const auto& c : w.callers) {
    EXPECT_GT(c.site, c.entry);
    if (c.entry != execute->entry) continue;
    has_execute = true;
    EXPECT_LT(c.site, execute->end);
  }
  EXPECT_TRUE(has_execute) << "execute's call to runtime.gogo";
  EXPECT_LE(w.callers.size(), static_cast<size_t>(SB_MAX_GOGO_CALLERS));
  sb_proc_info pi = MakeProcInfo(*a.facts, 0x1000, 0);
  EXPECT_EQ(pi.ngogo_callers, w.callers.size());
  EXPECT_EQ(pi.gogo_lr_loaded, w.lr_loaded + 0x1000);
}

// mcall's link (unwind_core.h sb_mcall_link_ok), checked against mcall's own code: Go 1.19 no
// frame and BP stored as gobuf.bp (MOVQ BP, disp8(R14)); Go 1.21-1.24 a frame (PUSHQ BP;
// MOVQ SP, BP) and *BP stored (MOVQ 0(BP), BX); Go 1.25+ BP cleared before the call (MOVQ $0, BP):
// the version table of GoBinaryFacts::mcall_link must say what the code does.
void CheckMcallLink(const Analyzed& a, bool arm64, int minor) {
  const auto& f = *a.facts;
  if (arm64) {
    EXPECT_EQ(f.mcall_link, 0u);  // arm64's mcall loads R29 from g0.sched.bp: no link
    return;
  }
  auto fn = a.bin->go()->FindFuncByName("runtime.mcall");
  ASSERT_TRUE(fn);
  auto code = a.bin->elf().ReadVaddr(fn->entry, fn->end - fn->entry);
  ASSERT_TRUE(code.ok());
  auto has = [&](std::vector<uint8_t> pat) {
    return std::search(code->begin(), code->end(), pat.begin(), pat.end(), [](char c, uint8_t p) {
             return static_cast<uint8_t>(c) == p;
           }) != code->end();
  };
  bool framed = static_cast<uint8_t>((*code)[0]) == 0x55 && has({0x55, 0x48, 0x89, 0xe5});
  // MOVQ $0, BP (1.25, 1.26) or MOVL $0, BP (1.27's assembler)
  bool clears_bp = has({0x48, 0xc7, 0xc5, 0x00, 0x00, 0x00, 0x00}) || has({0xbd, 0x00, 0x00, 0x00, 0x00});
  bool stores_bp = has({0x49, 0x89, 0x6e, static_cast<uint8_t>(f.offsets.g_sched + f.offsets.gobuf_bp)});
  bool stores_deref = has({0x48, 0x8b, 0x5d, 0x00});
  if (minor == 19) {
    EXPECT_EQ(f.mcall_link, uint32_t{SB_PI_MCALL_LINK_BP});
    EXPECT_TRUE(!framed && stores_bp && !clears_bp) << framed << stores_bp << clears_bp;
  } else if (minor <= 24) {
    EXPECT_EQ(f.mcall_link, uint32_t{SB_PI_MCALL_LINK_FRAME});
    EXPECT_TRUE(framed && stores_deref && !clears_bp) << framed << stores_deref << clears_bp;
  } else {
    EXPECT_EQ(f.mcall_link, 0u);
    EXPECT_TRUE(clears_bp);
  }
  EXPECT_EQ(MakeProcInfo(f, 0x1000, 0).flags & (SB_PI_MCALL_LINK_BP | SB_PI_MCALL_LINK_FRAME), f.mcall_link);
}

void CheckToolchain(const std::string& go, int minor) {
  for (const char* arch : {"amd64", "arm64"}) {
    const bool arm64 = std::string(arch) == "arm64";
    std::string dir = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "windows-1." + std::to_string(minor));
    std::vector<uint64_t> plain_callees;
    for (const char* flavor : {"plain", "stripped", "pie"}) {
      if (arm64 && std::string(flavor) == "pie") continue;
      SCOPED_TRACE(std::string("go1.") + std::to_string(minor) + " " + arch + " " + flavor);
      std::string path = Build(go, arch, dir, flavor);
      ASSERT_FALSE(path.empty());
      Analyzed a = Analyze(path);
      ASSERT_TRUE(a.facts);
      auto callees = CheckMcallCallees(a, minor);
      if (std::string(flavor) == "plain") plain_callees = callees;
      if (std::string(flavor) == "stripped") {
        EXPECT_EQ(callees, plain_callees);
      }
      CheckGogo(a, arm64);
      CheckSwitchPaths(a, arm64, minor);
      CheckSystemstack(a, arm64);
      CheckAsmcgocall(a, arm64);
      CheckMcallLink(a, arm64, minor);
    }
  }
}

TEST(SwitchWindows, Go119) { CheckToolchain(SB_GO_EXECUTABLE, 19); }

TEST(SwitchWindows, Go121To127) {
  std::string listed;
  int seen = test::ForEachFetchedGo(SB_SOURCE_DIR, CheckToolchain, &listed);
  ASSERT_GE(seen, 0) << listed;
  EXPECT_EQ(seen, 7) << "expected Go 1.21 to 1.27: " << listed;
}

}  // namespace
}  // namespace sb::unwinder
