// Analysis of real Go 1.19 binaries built by the `workloads` target.
#include "unwinder/go_binary_facts.h"

#include <gtest/gtest.h>

#include <set>

#include <algorithm>
#include <cstring>
#include <string>

#include "symbolizer/binary.h"
#include "unwinder/call_sites.h"

namespace sb::unwinder {
namespace {

std::shared_ptr<const GoBinaryFacts> Analyze(const std::string& name,
                                             std::shared_ptr<sym::Binary>* bin_out = nullptr) {
  std::string path = std::string(SB_TESTDATA_BIN) + "/" + name;
  auto bin = sym::Binary::Load(path);
  EXPECT_TRUE(bin.ok()) << bin.error();
  if (!bin.ok()) return nullptr;
  if (bin_out) *bin_out = *bin;
  auto f = AnalyzeGoBinary(**bin, path);
  EXPECT_TRUE(f.ok()) << f.error();
  return f.ok() ? *f : nullptr;
}

TEST(GoBinaryFacts, Go119Executable) {
  std::shared_ptr<sym::Binary> bin;
  auto f = Analyze("demo", &bin);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->go_version.rfind("go1.19", 0), 0u) << f->go_version;
  EXPECT_EQ(f->go_minor, 19);
  EXPECT_FALSE(f->pie);
  EXPECT_TRUE(f->has_offsets);
  EXPECT_EQ(f->offsets.m_curg, 192);
  EXPECT_TRUE(f->has_tls);
  EXPECT_EQ(f->tls_g_offset, -8);  // plain executable: g at fs_base - 8
  EXPECT_TRUE(f->systemstack_sched_recipe);
  EXPECT_TRUE(f->missing.empty()) << f->missing.front();
  for (const char* name : {"runtime.goexit", "runtime.mstart", "runtime.systemstack", "runtime.mcall",
                           "runtime.morestack"}) {
    bool found = false;
    for (const auto& r : f->ranges) found |= r.name == name && r.end > r.start;
    EXPECT_TRUE(found) << name;
  }
  // pcsp runs are sorted; main.leafAdd (frameless) has delta 0 everywhere, main.leafCaller
  // has a frame.
  ASSERT_GT(f->sp_deltas.size(), 1000u);
  for (size_t i = 1; i < f->sp_deltas.size(); i++)
    ASSERT_LT(f->sp_deltas[i - 1].pc_off, f->sp_deltas[i].pc_off);
  auto leaf = bin->go()->FindFuncByName("main.leafAdd");
  ASSERT_TRUE(leaf);
  int covered = 0;  // the alignment padding after the RET has no pcsp entry
  for (uint64_t pc = leaf->entry; pc < leaf->end; pc++) {
    if (auto d = bin->go()->SpDelta(pc)) {
      EXPECT_EQ(*d, 0) << std::hex << pc;
      covered++;
    }
  }
  EXPECT_GT(covered, 16);
  auto caller = bin->go()->FindFuncByName("main.leafCaller");
  ASSERT_TRUE(caller);
  EXPECT_GT(bin->go()->SpDelta(caller->entry + (caller->end - caller->entry) / 2).value_or(0), 0);
}

// Stripped (-s -w) and PIE builds give the same facts: nothing here needs symbols or DWARF.
// The saved-pc rule's save points: every return site found follows a 5-byte CALL rel32 to
// runtime.mcall (the Go 1.19 runtime has ~16 calls, plus inlined Gosched calls), and the
// morestack entries and systemstack_switch are known.
TEST(GoBinaryFacts, SavePointsOfTheSavedPcRule) {
  std::shared_ptr<sym::Binary> bin;
  auto f = Analyze("demo", &bin);
  ASSERT_TRUE(f);
  auto mcall = bin->go()->FindFuncByName("runtime.mcall");
  ASSERT_TRUE(mcall);
  EXPECT_GE(f->mcall_return_sites.size(), 10u);
  EXPECT_LE(f->mcall_return_sites.size(), static_cast<size_t>(SB_MAX_MCALL_SITES));
  for (uint64_t site : f->mcall_return_sites) {
    auto code = bin->elf().ReadVaddr(site - 5, 5);
    ASSERT_TRUE(code.ok());
    int32_t rel = 0;
    memcpy(&rel, code->data() + 1, 4);
    EXPECT_EQ(static_cast<uint8_t>((*code)[0]), 0xE8) << std::hex << site;
    EXPECT_EQ(site + static_cast<uint64_t>(static_cast<int64_t>(rel)), mcall->entry) << std::hex << site;
  }
  auto gopark = bin->go()->FindFuncByName("runtime.gopark");
  ASSERT_TRUE(gopark);
  bool in_gopark = false;
  for (uint64_t site : f->mcall_return_sites) in_gopark |= site > gopark->entry && site < gopark->end;
  EXPECT_TRUE(in_gopark) << "gopark's mcall(park_m) not found";
  EXPECT_EQ(f->morestack, bin->go()->FindFuncByName("runtime.morestack")->entry);
  EXPECT_EQ(f->morestack_noctxt, bin->go()->FindFuncByName("runtime.morestack_noctxt")->entry);
  EXPECT_LT(f->systemstack_switch_start, f->systemstack_switch_end);
  sb_proc_info pi = MakeProcInfo(*f, 0x1000, 0);
  ASSERT_EQ(pi.nmcall_sites, f->mcall_return_sites.size());
  for (uint32_t i = 1; i < pi.nmcall_sites; i++) EXPECT_LT(pi.mcall_sites[i - 1], pi.mcall_sites[i]);
  EXPECT_EQ(pi.text_start + pi.mcall_sites[0], f->mcall_return_sites[0] + 0x1000);
  EXPECT_EQ(pi.morestack, f->morestack + 0x1000);
}

// newstack's local morebuf: DWARF puts it at one CFA offset across the
// return addresses of newstack's calls to gopreempt_m and preemptPark (Go 1.19), inside
// newstack and inside its frame (negative offset); gobuf.g is at 16. Stripped: the code proves
// the same slot.
TEST(GoBinaryFacts, NewstackMorebufProvenByDwarf) {
  std::shared_ptr<sym::Binary> bin;
  auto f = Analyze("demo", &bin);
  ASSERT_TRUE(f);
  auto newstack = bin->go()->FindFuncByName("runtime.newstack");
  ASSERT_TRUE(newstack);
  EXPECT_GE(f->newstack_morebuf_lo, newstack->entry);
  EXPECT_LE(f->newstack_morebuf_hi, newstack->end);
  EXPECT_LT(f->newstack_morebuf_lo, f->newstack_morebuf_hi) << f->morebuf_source;
  EXPECT_LT(f->morebuf_cfa_off, 0);
  EXPECT_EQ(f->gobuf_g, 16);
  for (const char* callee : {"runtime.gopreempt_m", "runtime.preemptPark"}) {
    auto fn = bin->go()->FindFuncByName(callee);
    ASSERT_TRUE(fn) << callee;
    int in_range = 0;
    for (uint64_t site : ReturnSitesOfCallsTo(*bin, fn->entry))
      in_range += site > f->newstack_morebuf_lo && site < f->newstack_morebuf_hi;
    EXPECT_EQ(in_range, 1) << callee;
  }
  sb_proc_info pi = MakeProcInfo(*f, 0x1000, 0);
  EXPECT_EQ(pi.text_start + pi.newstack_lo, f->newstack_morebuf_lo + 0x1000);
  EXPECT_EQ(pi.morebuf_cfa_off, f->morebuf_cfa_off);

  // Stripped: the same slot, proven from newstack's code (newstack_morebuf.h).
  auto stripped = Analyze("demo-stripped");
  ASSERT_TRUE(stripped);
  EXPECT_NE(stripped->newstack_morebuf_hi, 0u) << stripped->morebuf_source;
  EXPECT_EQ(stripped->morebuf_cfa_off, f->morebuf_cfa_off);
  EXPECT_EQ(MakeProcInfo(*stripped, 0, 0).morebuf_cfa_off, f->morebuf_cfa_off);
  EXPECT_EQ(stripped->morebuf_source.rfind("code:", 0), 0u) << stripped->morebuf_source;
}

// amd64 runtime.clone's child, decoded from clone's code, stripped or not: the shared part
// starts right after the SYSCALL (0F 05) and ends where the child's MOVQ SI, SP (48 89 F4)
// starts its own code, which is a root range to clone's end.
TEST(GoBinaryFacts, CloneChildDecoded) {
  for (const char* name : {"demo", "demo-stripped"}) {
    SCOPED_TRACE(name);
    std::shared_ptr<sym::Binary> bin;
    auto f = Analyze(name, &bin);
    ASSERT_TRUE(f);
    ASSERT_TRUE(f->clone.found) << f->clone.why;
    auto clone = bin->go()->FindFuncByName("runtime.clone");
    ASSERT_TRUE(clone);
    auto syscall = bin->elf().ReadVaddr(f->clone.shared_lo - 2, 2);
    ASSERT_TRUE(syscall.ok());
    EXPECT_EQ(std::string(*syscall), std::string("\x0f\x05", 2));
    auto mov = bin->elf().ReadVaddr(f->clone.child_lo, 3);
    ASSERT_TRUE(mov.ok());
    EXPECT_EQ(std::string(*mov), std::string("\x48\x89\xf4", 3));
    EXPECT_EQ(f->clone.shared_hi, f->clone.child_lo);
    EXPECT_EQ(f->clone.child_hi, clone->end);
    bool root = false;
    for (const auto& r : f->ranges) root |= r.kind == SB_FN_ROOT && r.start == f->clone.child_lo;
    EXPECT_TRUE(root);
    sb_proc_info pi = MakeProcInfo(*f, 0x1000, 0);
    EXPECT_EQ(pi.clone_shared_lo, f->clone.shared_lo + 0x1000);
  }
}

// Go 1.19's gcWriteBarrier wrappers call with no frame (frameless_callers.h): ranges of their
// own, stripped or not; none overlaps another range, every range fits sb_proc_info.
TEST(GoBinaryFacts, FramelessCallersOfGo119) {
  for (const char* name : {"demo", "demo-stripped"}) {
    SCOPED_TRACE(name);
    auto f = Analyze(name);
    ASSERT_TRUE(f);
    std::set<std::string> frameless;
    for (const auto& r : f->ranges)
      if (r.kind == SB_FN_FRAMELESS_CALLER) frameless.insert(r.name);
    for (const char* w : {"runtime.gcWriteBarrierCX", "runtime.gcWriteBarrierDX", "runtime.gcWriteBarrierBX",
                          "runtime.gcWriteBarrierSI", "runtime.gcWriteBarrierR8", "runtime.gcWriteBarrierR9"})
      EXPECT_TRUE(frameless.count(w)) << w;
    EXPECT_FALSE(frameless.count("runtime.systemstack"));  // known by name: its own kind
    EXPECT_FALSE(frameless.count("runtime.clone"));        // holds clone's child range
    EXPECT_LE(f->ranges.size(), size_t{SB_MAX_RANGES});
    for (size_t i = 0; i < f->ranges.size(); i++)
      for (size_t j = i + 1; j < f->ranges.size(); j++)
        EXPECT_FALSE(f->ranges[i].start < f->ranges[j].end && f->ranges[j].start < f->ranges[i].end)
            << f->ranges[i].name << " " << f->ranges[j].name;
  }
}

// amd64 gogo's windows, decoded from its code, stripped or not: the TLS store
// is its first instruction, the SP load ends the g0 window, the JMP ends the goroutine one.
TEST(GoBinaryFacts, GogoWindowsDecoded) {
  std::shared_ptr<sym::Binary> bin;
  auto f = Analyze("demo", &bin);
  ASSERT_TRUE(f);
  auto gogo = bin->go()->FindFuncByName("gogo");
  ASSERT_TRUE(gogo);
  ASSERT_TRUE(f->gogo.found) << f->gogo.why;
  EXPECT_EQ(f->gogo.g0_lo, gogo->entry + 9);  // MOVQ DX, FS:-8: 9 bytes
  EXPECT_LT(f->gogo.g0_lo, f->gogo.g0_hi);
  EXPECT_EQ(f->gogo.g0_hi, f->gogo.gp_lo);
  EXPECT_LT(f->gogo.gp_lo, f->gogo.bp_loaded);
  EXPECT_LT(f->gogo.bp_loaded, f->gogo.gp_hi);
  EXPECT_LE(f->gogo.gp_hi, gogo->end);
  auto jmp = bin->elf().ReadVaddr(f->gogo.gp_hi - 2, 2);  // JMP BX: FF E3
  ASSERT_TRUE(jmp.ok());
  EXPECT_EQ(static_cast<uint8_t>((*jmp)[0]), 0xFF);
  auto stripped = Analyze("demo-stripped");
  ASSERT_TRUE(stripped);
  EXPECT_EQ(stripped->gogo.gp_hi, f->gogo.gp_hi);
  sb_proc_info pi = MakeProcInfo(*f, 0x1000, 0);
  EXPECT_EQ(pi.gogo_g0_lo, f->gogo.g0_lo + 0x1000);
}

TEST(GoBinaryFacts, StrippedAndPieAgree) {
  auto plain = Analyze("demo");
  auto stripped = Analyze("demo-stripped");
  auto pie = Analyze("demo-pie");
  ASSERT_TRUE(plain && stripped && pie);
  EXPECT_EQ(stripped->go_version, plain->go_version);
  EXPECT_EQ(stripped->tls_g_offset, plain->tls_g_offset);
  EXPECT_EQ(stripped->ranges.size(), plain->ranges.size());
  EXPECT_EQ(stripped->sp_deltas.size(), plain->sp_deltas.size());
  EXPECT_TRUE(pie->pie);
  EXPECT_TRUE(pie->has_tls);
  EXPECT_TRUE(pie->has_offsets);
}

// Where each offset came from: DWARF in the plain build (with the code and the table agreeing),
// the runtime's code in the stripped one, the table only for gobuf.lr (no amd64 code reads it).
TEST(GoBinaryFacts, OffsetSourcesPerField) {
  auto plain = Analyze("demo");
  auto stripped = Analyze("demo-stripped");
  ASSERT_TRUE(plain && stripped);
  ASSERT_EQ(plain->offset_fields.size(), stripped->offset_fields.size());
  for (size_t i = 0; i < plain->offset_fields.size(); i++) {
    const auto& p = plain->offset_fields[i];
    const auto& s = stripped->offset_fields[i];
    EXPECT_EQ(p.source, "dwarf") << p.name;
    EXPECT_TRUE(p.agree) << p.name;
    EXPECT_EQ(p.value, s.value) << p.name;
    EXPECT_FALSE(s.dwarf) << s.name;
    if (s.name == "g.labels") {
      // Optional: from the runtime's code where the binary sets labels (runtime/pprof's
      // runtime_setProfLabel), else the table; see GoBinaryFacts.LabelsOffsetFromCode.
      EXPECT_TRUE(s.optional);
      EXPECT_FALSE(s.needed);
      EXPECT_TRUE(s.agree) << s.source;
    } else if (s.name == "gobuf.lr") {
      EXPECT_FALSE(s.needed);
      EXPECT_EQ(s.source.rfind("table go1.19", 0), 0u) << s.source;
    } else {
      EXPECT_EQ(s.source.rfind("asm:", 0), 0u) << s.name << ": " << s.source;
      EXPECT_TRUE(s.agree) << s.name;
    }
  }
  EXPECT_TRUE(stripped->asm_conflicts.empty());
  EXPECT_EQ(std::memcmp(&plain->offsets, &stripped->offsets, sizeof(sb_go_offsets)), 0);
}

TEST(GoBinaryFacts, ProcInfoAppliesTheBias) {
  auto f = Analyze("demo-pie");
  ASSERT_TRUE(f);
  sb_proc_info pi = MakeProcInfo(*f, 0x555555554000, 7);
  EXPECT_EQ(pi.text_start, f->text_start + 0x555555554000);
  EXPECT_EQ(pi.delta_first, 7u);
  EXPECT_EQ(pi.delta_count, f->sp_deltas.size());
  EXPECT_TRUE(pi.flags & SB_PI_HAS_OFFSETS);
  ASSERT_EQ(pi.nranges, f->ranges.size());
  // The ranges are biased, sorted by start and disjoint (sb_classify's binary search needs it).
  uint64_t lowest = UINT64_MAX;
  for (const auto& r : f->ranges) lowest = std::min(lowest, r.start);
  EXPECT_EQ(pi.ranges[0].start, lowest + 0x555555554000);
  for (uint32_t i = 1; i < pi.nranges; i++) EXPECT_LE(pi.ranges[i - 1].end, pi.ranges[i].start) << i;
  // The pcsp table: the runs, then the bucket index over the text (at most two buckets per run),
  // whose entry k is the run covering bucket k's first byte.
  const auto& t = f->pcsp;
  ASSERT_GT(t.buckets, 0u);
  EXPECT_EQ(pi.delta_index_shift, t.shift);
  EXPECT_EQ(pi.delta_buckets, t.buckets);
  EXPECT_EQ(uint64_t{t.buckets}, ((f->text_end - f->text_start - 1) >> t.shift) + 1);
  EXPECT_LE(t.buckets, 2 * f->sp_deltas.size() + 1);
  ASSERT_EQ(t.cells.size(), f->sp_deltas.size() + (t.buckets + 2) / 2);
  for (size_t i = 0; i < f->sp_deltas.size(); i++) ASSERT_EQ(t.cells[i].pc_off, f->sp_deltas[i].pc_off) << i;
  const auto& runs = f->sp_deltas;
  for (uint32_t k = 0; k <= t.buckets; k++) {
    const sb_sp_delta& cell = t.cells[runs.size() + k / 2];
    uint32_t run = (k & 1) ? static_cast<uint32_t>(cell.delta) : cell.pc_off;
    uint64_t start = uint64_t{k} << t.shift;
    ASSERT_LT(run, runs.size()) << k;
    if (run > 0) {
      ASSERT_LE(runs[run].pc_off, start) << k;
    }
    if (run + 1 < runs.size()) {
      ASSERT_GT(runs[run + 1].pc_off, start) << k;
    }
  }
}

TEST(GoBinaryFacts, NonGoBinaryIsRejectedByName) {
  auto bin = sym::Binary::Load("/bin/true");
  ASSERT_TRUE(bin.ok());
  auto f = AnalyzeGoBinary(**bin, "/bin/true");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().find("not a Go binary"), std::string::npos);
}

// g.labels (goroutine pprof labels, optional): from DWARF, and in the stripped build from the
// runtime's own runtime_setProfLabel (the labels workload sets labels, so it links it); the
// layout from the release (Debian's Go 1.19: map[string]string).
TEST(GoBinaryFacts, LabelsOffsetFromCode) {
  auto plain = Analyze("labels");
  auto stripped = Analyze("labels-stripped");
  ASSERT_TRUE(plain && stripped);
  for (const auto* f : {plain.get(), stripped.get()}) {
    const FieldChoice* fc = nullptr;
    for (const auto& c : f->offset_fields)
      if (c.name == "g.labels") fc = &c;
    ASSERT_NE(fc, nullptr);
    EXPECT_TRUE(fc->agree) << fc->source;
    EXPECT_TRUE(fc->asm_value) << "runtime_setProfLabel not decoded";
    EXPECT_EQ(fc->value, f->offsets.g_labels);
    EXPECT_EQ(fc->source, f == stripped.get() ? "asm:runtime/pprof.runtime_setProfLabel" : "dwarf");
    if (f->go_minor >= 19 && f->go_minor <= 23) {
      EXPECT_EQ(f->labels_layout, uint32_t{SB_PI_LABELS_HMAP});
    }
    if (f->go_minor >= 24) {
      EXPECT_EQ(f->labels_layout, uint32_t{SB_PI_LABELS_SLICE});
    }
    EXPECT_NE(MakeProcInfo(*f, 0, 0).flags & f->labels_layout, 0u);
  }
  // A binary without runtime/pprof's label code and no table: no labels, and still offsets.
  auto demo = Analyze("demo-stripped");
  ASSERT_TRUE(demo);
  EXPECT_TRUE(demo->has_offsets);
}

}  // namespace
}  // namespace sb::unwinder
