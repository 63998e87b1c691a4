// Probe sites: RETs and the entry site, on hand-written bytes and on the built workload
// (amd64, stripped amd64, cross-built arm64).
#include <gtest/gtest.h>

#include <string>

#include "exitprobe/code_sites.h"
#include "exitprobe/trace_plan.h"
#include "symbolizer/binary.h"

namespace sb::exitprobe {
namespace {

const std::string kWorkloads = SB_WORKLOAD_DIR;

std::string Bytes(std::initializer_list<uint8_t> b) { return std::string(b.begin(), b.end()); }

TEST(CodeSitesAmd64, GoStackCheckBranchIsTheEntry) {
  // cmp rsp,[r14+0x10]; jbe +0x10; sub rsp,0x10; ... add rsp,0x10; ret; int3
  std::string code = Bytes({0x49, 0x3b, 0x66, 0x10, 0x76, 0x10, 0x48, 0x83, 0xec, 0x10, 0x48, 0x83, 0xc4, 0x10,
                            0xc3, 0xcc});
  CodeSites s = FindCodeSitesAmd64(code, 0x1000, EntryPlacement::kAuto);
  EXPECT_EQ(s.first.vaddr, 0x1000u);
  EXPECT_FALSE(s.first.emulated);
  EXPECT_EQ(s.entry.vaddr, 0x1004u);
  EXPECT_TRUE(s.entry.emulated);
  EXPECT_EQ(s.entry_how, "stack-check branch");
  EXPECT_TRUE(s.g_stack_check);
  ASSERT_EQ(s.rets.size(), 1u);
  EXPECT_EQ(s.rets[0].vaddr, 0x100eu);
  EXPECT_FALSE(s.rets[0].emulated);

  CodeSites first = FindCodeSitesAmd64(code, 0x1000, EntryPlacement::kFirstInstruction);
  EXPECT_EQ(first.entry.vaddr, 0x1000u);
}

TEST(CodeSitesAmd64, SpChangeBeforeAnyEmulatedInstructionKeepsTheFirst) {
  // sub rsp,8; nop; add rsp,8; ret
  std::string code = Bytes({0x48, 0x83, 0xec, 0x08, 0x90, 0x48, 0x83, 0xc4, 0x08, 0xc3});
  CodeSites s = FindCodeSitesAmd64(code, 0x2000, EntryPlacement::kAuto);
  EXPECT_EQ(s.entry.vaddr, 0x2000u);
  EXPECT_EQ(s.entry_how, "first instruction");
}

TEST(CodeSitesAmd64, Endbr64IsSkippedAndPushIsEmulated) {
  // endbr64; push rbp; mov rbp,rsp; pop rbp; ret
  std::string code = Bytes({0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3});
  CodeSites s = FindCodeSitesAmd64(code, 0x3000, EntryPlacement::kAuto);
  EXPECT_EQ(s.entry.vaddr, 0x3004u);  // the push: SP changes only after the probe
  EXPECT_FALSE(s.g_stack_check);
  EXPECT_TRUE(s.entry.emulated);
  ASSERT_EQ(s.rets.size(), 1u);
  EXPECT_EQ(s.rets[0].vaddr, 0x3009u);
}

TEST(CodeSitesArm64, GoPrologueBranchAndRets) {
  // MOVD 16(R28), R16; CMP R16, RSP; BLS; MOVD.W R30,-32(RSP); RET; RETAA; RETAB; UDF
  uint32_t words[] = {0xf9400b90, 0xeb3063ff, 0x54000129, 0xf81e0ffe, 0xd65f03c0, 0xd65f0bff, 0xd65f0fff, 0};
  std::string code(reinterpret_cast<const char*>(words), sizeof(words));
  CodeSites s = FindCodeSitesArm64(code, 0x4000, EntryPlacement::kAuto);
  EXPECT_EQ(s.entry.vaddr, 0x4008u);
  EXPECT_EQ(s.entry_how, "stack-check branch");
  EXPECT_TRUE(s.g_stack_check);
  ASSERT_EQ(s.rets.size(), 3u);
  EXPECT_EQ(s.rets[0].vaddr, 0x4010u);
  EXPECT_EQ(s.rets[1].text, "retaa");
  EXPECT_EQ(s.rets[2].text, "retab");
}

// Plans main.* of a built workload.
TracePlan PlanFor(const std::string& name, const std::vector<std::string>& patterns) {
  auto bin = sym::Binary::Load(kWorkloads + "/" + name);
  EXPECT_TRUE(bin.ok()) << bin.error();
  if (!bin.ok()) return {};
  PlanOptions opts;
  opts.patterns = patterns;
  auto plan = BuildTracePlan(**bin, kWorkloads + "/" + name, opts);
  EXPECT_TRUE(plan.ok()) << plan.error();
  return plan.ok() ? *plan : TracePlan{};
}

const FuncPlan* Find(const TracePlan& p, const std::string& name) {
  for (const auto& f : p.funcs)
    if (f.name == name) return &f;
  return nullptr;
}

class WorkloadSites : public ::testing::TestWithParam<std::string> {};

TEST_P(WorkloadSites, DeferMakesSeveralRetsAndEveryEntryIsTheStackCheckBranch) {
  TracePlan p = PlanFor(GetParam(), {"^main\\."});
  ASSERT_FALSE(p.funcs.empty());
  // withDefer: `defer` gives each `return` its own RET plus the deferreturn path's RET.
  const FuncPlan* wd = Find(p, "main.withDefer");
  ASSERT_NE(wd, nullptr);
  EXPECT_GE(wd->rets.size(), 2u);
  for (const char* name : {"main.tiny", "main.deep", "main.withDefer", "main.recoverer", "main.leafPanic"}) {
    const FuncPlan* f = Find(p, name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->entry_how, "stack-check branch") << name;
    EXPECT_TRUE(f->entry.code.emulated) << name;
    EXPECT_TRUE(f->g_in_reg) << name;
    EXPECT_GT(f->entry.code.vaddr, f->start) << name;
    EXPECT_GE(f->rets.size(), 1u) << name;
    for (const auto& r : f->rets) {
      EXPECT_GE(r.code.vaddr, f->start);
      EXPECT_LT(r.code.vaddr, f->end);
      EXPECT_NE(r.file_offset, 0u);
    }
  }
  // main.deep has a 1 KiB frame: the large-frame check (LEAQ -N(SP), R12; CMPQ R12, 16(R14);
  // JBE on amd64) also ends in a branch before SP moves.
  const FuncPlan* deep = Find(p, "main.deep");
  EXPECT_GT(deep->entry.code.vaddr - deep->start, Find(p, "main.tiny")->entry.code.vaddr - Find(p, "main.tiny")->start);
  // alwaysPanics has no RET: listed with the reason, not dropped.
  bool listed = false;
  for (const auto& s : p.skipped)
    if (s.name == "main.alwaysPanics") {
      listed = true;
      EXPECT_NE(s.reason.find("no RET"), std::string::npos) << s.reason;
    }
  EXPECT_TRUE(listed);
  // The runtime hooks that make panics visible at once.
  ASSERT_EQ(p.hooks.size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Builds, WorkloadSites, ::testing::Values("traced", "traced-stripped", "traced-arm64"));

TEST(WorkloadSitesCompare, StrippedBinaryHasTheSameSites) {
  TracePlan a = PlanFor("traced", {"^main\\."});
  TracePlan b = PlanFor("traced-stripped", {"^main\\."});
  ASSERT_EQ(a.funcs.size(), b.funcs.size());
  for (size_t i = 0; i < a.funcs.size(); i++) {
    EXPECT_EQ(a.funcs[i].name, b.funcs[i].name);
    EXPECT_EQ(a.funcs[i].entry.code.vaddr, b.funcs[i].entry.code.vaddr);
    EXPECT_EQ(a.funcs[i].rets.size(), b.funcs[i].rets.size());
  }
}

TEST(WorkloadSitesArm64, RetsAreEmulatedAndEntriesFollowTheCompare) {
  TracePlan p = PlanFor("traced-arm64", {"^main\\.tiny$"});
  ASSERT_EQ(p.funcs.size(), 1u);
  const FuncPlan& f = p.funcs[0];
  EXPECT_EQ(f.entry.code.vaddr, f.start + 8);  // MOVD 16(g), R16; CMP R16, RSP; BLS
  ASSERT_GE(f.rets.size(), 1u);
  EXPECT_TRUE(f.rets[0].code.emulated);
  EXPECT_EQ(p.arch, sym::Arch::kArm64);
}

TEST(TracePlanErrors, BadPatternAndNoMatchAreClearErrors) {
  auto bin = sym::Binary::Load(kWorkloads + "/traced");
  ASSERT_TRUE(bin.ok());
  PlanOptions bad;
  bad.patterns = {"("};
  auto p1 = BuildTracePlan(**bin, "traced", bad);
  ASSERT_FALSE(p1.ok());
  EXPECT_NE(p1.error().find("bad --func pattern"), std::string::npos);
  PlanOptions none;
  none.patterns = {"^no\\.such\\.function$"};
  auto p2 = BuildTracePlan(**bin, "traced", none);
  ASSERT_FALSE(p2.ok());
  EXPECT_NE(p2.error().find("matches"), std::string::npos);
}

}  // namespace
}  // namespace sb::exitprobe
