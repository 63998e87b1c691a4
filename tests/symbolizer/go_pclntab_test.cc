// GoPclntab against Go 1.19's own tools and runtime: `go tool objdump` (every function's name
// and entry), `go tool addr2line` (file:line), and runtime.CallersFrames (inline expansion).
// Stripped and PIE builds must answer exactly like the plain build.
#include "symbolizer/go_pclntab.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "tests/symbolizer/test_util.h"

namespace sb::sym {
namespace {

using test::BuildGoPrograms;
using test::Quote;
using test::RunCommand;

std::shared_ptr<GoPclntab> ParseOrDie(const std::string& path) {
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << elf.error();
  if (!elf.ok()) return nullptr;
  auto tab = GoPclntab::Parse(*elf);
  EXPECT_TRUE(tab.ok()) << tab.error();
  return tab.ok() ? *tab : nullptr;
}

std::string FileLineOf(const SourceFrame& f) { return f.file + ":" + std::to_string(f.line); }

class GoPclntabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& progs = BuildGoPrograms();
    ASSERT_TRUE(progs.error.empty()) << progs.error;
  }
  const test::GoPrograms& progs() { return BuildGoPrograms(); }
};

TEST_F(GoPclntabTest, HeaderFacts) {
  auto tab = ParseOrDie(progs().plain);
  ASSERT_NE(tab, nullptr);
  EXPECT_EQ(tab->format(), PclntabFormat::kGo118);  // Go 1.19 writes 0xfffffff0
  EXPECT_EQ(tab->pc_quantum(), 1);
  EXPECT_EQ(tab->ptr_size(), 8);
  auto elf = ElfFile::Open(progs().plain);
  EXPECT_EQ(tab->table_address(), (*elf)->FindSection(".gopclntab")->addr);
  EXPECT_EQ(tab->text_start(), (*elf)->FindSection(".text")->addr);
  EXPECT_GT(tab->num_funcs(), 1000u);
  EXPECT_LT(tab->num_funcs(), 5000u);
}

// The name the pclntab holds for a symbol-table name: without the ABI suffix of assembly
// functions ("internal/cpu.cpuid.abi0") and with type arguments abbreviated ("[5]T" and
// "F[go.shape.int]" are stored as "[...]").
std::string PclntabName(std::string name) {
  for (std::string sfx : {".abi0", ".abiinternal"}) {
    if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0) {
      name.resize(name.size() - sfx.size());
    }
  }
  std::string out;
  int depth = 0;
  for (char c : name) {
    if (c == '[' && depth++ == 0) out += "[...";
    if (c == ']' && --depth == 0) out += "]";
    if (depth == 0 && c != ']') out += c;
  }
  return out;
}

// Every function objdump lists (from the symbol table) is found by pc and by name with the
// same entry; every pclntab function has an objdump TEXT symbol with the same entry.
void CheckAgainstObjdump(const std::string& binary, const GoPclntab& tab) {
  auto funcs = test::Objdump(binary);
  ASSERT_GT(funcs.size(), 1000u);
  std::map<uint64_t, std::string> objdump_by_entry;
  std::map<std::string, int> name_count;
  int checked = 0;
  for (auto& f : funcs) {
    f.name = PclntabName(f.name);
    name_count[f.name]++;
  }
  for (const auto& f : funcs) {
    if (f.insns.empty()) continue;
    objdump_by_entry[f.entry] = f.name;
    auto got = tab.FindFunc(f.entry);
    ASSERT_TRUE(got.has_value()) << f.name;
    EXPECT_EQ(got->name, f.name);
    EXPECT_EQ(got->entry, f.entry) << f.name;
    auto last = tab.FindFunc(f.insns.back().first);
    ASSERT_TRUE(last.has_value()) << f.name;
    EXPECT_EQ(last->entry, f.entry) << f.name;
    auto by_name = tab.FindFuncByName(f.name);
    ASSERT_TRUE(by_name.has_value()) << f.name;
    EXPECT_EQ(by_name->name, f.name);
    // Shortened generic names can repeat; a unique name must give this very function.
    if (name_count[f.name] == 1) {
      EXPECT_EQ(by_name->entry, f.entry) << f.name;
    }
    checked++;
  }
  EXPECT_GT(checked, 1000);
  for (size_t i = 0; i < tab.num_funcs(); i++) {
    auto f = tab.FuncAt(i);
    ASSERT_TRUE(f.ok()) << f.error();
    auto it = objdump_by_entry.find(f->entry);
    ASSERT_NE(it, objdump_by_entry.end()) << f->name;
    EXPECT_EQ(it->second, f->name);
    EXPECT_EQ(f->index, i);
    EXPECT_LT(f->entry, f->end);
  }
  EXPECT_FALSE(tab.FuncAt(tab.num_funcs()).ok());
  EXPECT_FALSE(tab.FindFunc(0).has_value());
  EXPECT_FALSE(tab.FindFunc(~0ull).has_value());
  EXPECT_FALSE(tab.FindFuncByName("no.such.function").has_value());
}

TEST_F(GoPclntabTest, AllFunctionsMatchObjdump) {
  auto tab = ParseOrDie(progs().plain);
  ASSERT_NE(tab, nullptr);
  CheckAgainstObjdump(progs().plain, *tab);
}

TEST_F(GoPclntabTest, AllFunctionsMatchObjdumpPie) {
  auto tab = ParseOrDie(progs().pie);
  ASSERT_NE(tab, nullptr);
  CheckAgainstObjdump(progs().pie, *tab);
}

// Stripping removes .symtab and DWARF only: every answer must be the same as unstripped.
void CheckSameAnswers(const GoPclntab& a, const GoPclntab& b) {
  ASSERT_EQ(a.num_funcs(), b.num_funcs());
  EXPECT_EQ(a.text_start(), b.text_start());
  size_t compared = 0;
  for (size_t i = 0; i < a.num_funcs(); i++) {
    auto fa = a.FuncAt(i), fb = b.FuncAt(i);
    ASSERT_TRUE(fa.ok() && fb.ok());
    ASSERT_EQ(fa->name, fb->name);
    ASSERT_EQ(fa->entry, fb->entry) << fa->name;
    ASSERT_EQ(fa->end, fb->end) << fa->name;
    for (uint64_t pc = fa->entry; pc < fa->end; pc += 3) {
      auto sa = a.Symbolize(pc), sb = b.Symbolize(pc);
      ASSERT_EQ(sa.size(), sb.size()) << fa->name << " pc " << std::hex << pc;
      for (size_t k = 0; k < sa.size(); k++) {
        EXPECT_EQ(sa[k].function, sb[k].function);
        EXPECT_EQ(FileLineOf(sa[k]), FileLineOf(sb[k]));
        EXPECT_EQ(sa[k].inlined, sb[k].inlined);
      }
      EXPECT_EQ(a.SpDelta(pc), b.SpDelta(pc));
      compared++;
    }
  }
  EXPECT_GT(compared, 10000u);
}

TEST_F(GoPclntabTest, StrippedAnswersEqualUnstripped) {
  auto plain = ParseOrDie(progs().plain);
  auto stripped = ParseOrDie(progs().stripped);
  ASSERT_TRUE(plain && stripped);
  CheckSameAnswers(*plain, *stripped);
  auto pie = ParseOrDie(progs().pie);
  auto pie_stripped = ParseOrDie(progs().pie_stripped);
  ASSERT_TRUE(pie && pie_stripped);
  CheckSameAnswers(*pie, *pie_stripped);
}

// addr2line reports the physical function and the innermost file:line (which is what the pc
// tables hold). Check thousands of pcs, inlined ones included. Go 1.19's addr2line answers
// "?" for every pc of a PIE binary, so there the oracle is objdump's per-instruction
// position (base name only) and TEXT symbol.
void CheckAgainstAddr2Line(const std::string& binary, const GoPclntab& tab, bool pie) {
  auto funcs = test::Objdump(binary);
  std::vector<uint64_t> pcs;
  std::vector<std::string> objdump_fileline;
  std::vector<std::pair<std::string, std::string>> want;
  size_t n = 0;
  for (const auto& f : funcs) {
    for (const auto& [pc, fl] : f.insns) {
      if (n++ % 7 != 0) continue;
      pcs.push_back(pc);
      objdump_fileline.push_back(fl);
      if (pie) want.emplace_back(f.name, "");
    }
  }
  ASSERT_GT(pcs.size(), 5000u);
  if (!pie) want = test::Addr2Line(binary, pcs);
  ASSERT_EQ(want.size(), pcs.size());
  int inlined_seen = 0;
  for (size_t i = 0; i < pcs.size(); i++) {
    auto fl = tab.FileLine(pcs[i]);
    ASSERT_TRUE(fl.has_value()) << std::hex << pcs[i];
    if (pie) {
      // objdump's TEXT names carry the ABI suffix of assembly functions.
      EXPECT_EQ(PclntabName(want[i].first), fl->function) << std::hex << pcs[i];
      want[i] = {fl->function, FileLineOf(*fl)};
    }
    EXPECT_EQ(fl->function, want[i].first) << std::hex << pcs[i];
    EXPECT_EQ(FileLineOf(*fl), want[i].second) << std::hex << pcs[i];
    // objdump prints base names; compare the tail (Go 1.19's objdump prints ":0" for PIE).
    const std::string& od = objdump_fileline[i];
    std::string ours = FileLineOf(*fl);
    if (!pie) {
      EXPECT_EQ(ours.substr(ours.size() - std::min(ours.size(), od.size())), od);
    }
    auto frames = tab.Symbolize(pcs[i]);
    ASSERT_FALSE(frames.empty());
    // The innermost frame's position is the pc tables' position.
    EXPECT_EQ(FileLineOf(frames.front()), want[i].second);
    EXPECT_EQ(frames.back().function, want[i].first);
    EXPECT_FALSE(frames.back().inlined);
    if (frames.size() > 1) inlined_seen++;
  }
  EXPECT_GT(inlined_seen, 100);
}

TEST_F(GoPclntabTest, FileLineMatchesAddr2Line) {
  auto tab = ParseOrDie(progs().plain);
  ASSERT_NE(tab, nullptr);
  CheckAgainstAddr2Line(progs().plain, *tab, false);
}

TEST_F(GoPclntabTest, FileLineMatchesObjdumpPie) {
  auto tab = ParseOrDie(progs().pie);
  ASSERT_NE(tab, nullptr);
  CheckAgainstAddr2Line(progs().pie, *tab, true);
}

// Runs symtest (under `runner`, e.g. qemu): it prints runtime.Callers' pcs and CallersFrames'
// frames. Expanding each return address (minus one) with Symbolize must reproduce CallersFrames
// exactly. `tab`: the table to check (default: parsed from the binary).
void CheckCallersFrames(const std::string& binary, const std::string& runner = "",
                        std::shared_ptr<GoPclntab> tab = nullptr) {
  if (!tab) tab = ParseOrDie(binary);
  ASSERT_NE(tab, nullptr);
  auto r = RunCommand(runner + Quote(binary), false);
  ASSERT_EQ(r.status, 0) << r.out;
  std::vector<uint64_t> pcs;
  std::vector<std::string> want;
  std::istringstream in(r.out);
  std::string line;
  uint64_t bias = 0;  // load address minus link-time address (PIE)
  while (std::getline(in, line)) {
    if (line.rfind("work ", 0) == 0) {
      auto work = tab->FindFuncByName("main.work");
      ASSERT_TRUE(work.has_value());
      bias = std::stoull(line.substr(5), nullptr, 16) - work->entry;
    }
    if (line.rfind("pc ", 0) == 0) pcs.push_back(std::stoull(line.substr(3), nullptr, 16));
    if (line.rfind("frame ", 0) == 0) want.push_back(line.substr(6));
  }
  ASSERT_GE(want.size(), 6u) << r.out;
  // The runtime emits one pc per logical frame (inlined levels get parentPc+1); each physical
  // return address expands to several frames, and covers that many pcs.
  std::vector<std::string> got;
  for (size_t i = 0; i < pcs.size();) {
    auto frames = tab->Symbolize(pcs[i] - bias - 1);
    ASSERT_FALSE(frames.empty()) << std::hex << pcs[i];
    for (const auto& f : frames) {
      got.push_back(f.function + "|" + f.file + "|" + std::to_string(f.line));
    }
    i += frames.size();
  }
  // runtime.Callers(1, ...) skipped the (inlined) runtime.Callers frame itself.
  while (!got.empty() && got.front().rfind("runtime.Callers|", 0) == 0) got.erase(got.begin());
  EXPECT_EQ(got, want);
  // Content: two levels of inlining into main.work, under the real capture frame.
  ASSERT_GE(got.size(), 4u);
  EXPECT_EQ(got[0].substr(0, got[0].find('|')), "main.capture");
  EXPECT_EQ(got[1].substr(0, got[1].find('|')), "main.middle");
  EXPECT_EQ(got[2].substr(0, got[2].find('|')), "main.outer");
  EXPECT_EQ(got[3].substr(0, got[3].find('|')), "main.work");
  auto frames = tab->Symbolize(pcs[1] - bias - 1);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_TRUE(frames[0].inlined);
  EXPECT_TRUE(frames[1].inlined);
  EXPECT_FALSE(frames[2].inlined);
}

TEST_F(GoPclntabTest, InlineExpansionMatchesCallersFrames) { CheckCallersFrames(progs().plain); }

TEST_F(GoPclntabTest, InlineExpansionMatchesCallersFramesStripped) {
  CheckCallersFrames(progs().stripped);
}

TEST_F(GoPclntabTest, InlineExpansionMatchesCallersFramesPie) {
  CheckCallersFrames(progs().pie_stripped);
}

// arm64 and cgo: Go links externally and GNU ld (no -z separate-code on arm64) puts .rodata,
// so go:func.* (the base of the inline trees' funcdata), and .gopclntab in the text's executable
// segment. The go:func base was taken only from non-executable segments, so such binaries had
// no inline frames at all (every arm64 cgo coredump case: a pc in an inlined goparkunlock
// named its caller); and without section headers the table was not found.
TEST_F(GoPclntabTest, Arm64ExternalLinkKeepsInlineFramesWithRodataInText) {
  std::string why;
  std::string bin = test::BuildArm64ExternalSymtest(&why);
  ASSERT_FALSE(bin.empty()) << why;
  auto elf = ElfFile::Open(bin);
  ASSERT_TRUE(elf.ok()) << elf.error();
  const ElfSection* rodata = (*elf)->FindSection(".rodata");
  ASSERT_NE(rodata, nullptr);
  bool rodata_in_text = false;
  for (const auto& seg : (*elf)->segments())
    if (seg.type == PT_LOAD && (seg.flags & PF_X) && rodata->addr >= seg.vaddr && rodata->addr < seg.vaddr + seg.filesz)
      rodata_in_text = true;
  ASSERT_TRUE(rodata_in_text) << "ld kept .rodata out of the text segment: this test means nothing";
  CheckCallersFrames(bin, test::RunArm64Prefix());

  // The same loaded bytes without section headers: the table is found in the executable segment.
  std::vector<test::MiniSegment> segs;
  for (const auto& seg : (*elf)->segments())
    if (seg.type == PT_LOAD)
      segs.push_back({PT_LOAD, seg.flags, seg.vaddr, std::string((*elf)->bytes().substr(seg.offset, seg.filesz))});
  auto bare = ElfFile::FromBytes(test::MakeMiniElf(ET_EXEC, segs), "no-sections");
  ASSERT_TRUE(bare.ok()) << bare.error();
  ASSERT_EQ((*bare)->FindSection(".gopclntab"), nullptr);
  auto tab = GoPclntab::Parse(*bare);
  ASSERT_TRUE(tab.ok()) << tab.error();
  CheckCallersFrames(bin, test::RunArm64Prefix(), *tab);
}

TEST_F(GoPclntabTest, SpDeltaFollowsPrologue) {
  auto tab = ParseOrDie(progs().plain);
  ASSERT_NE(tab, nullptr);
  auto funcs = test::Objdump(progs().plain);
  int checked = 0;
  for (const auto& f : funcs) {
    if (f.name != "main.capture" && f.name != "main.work" && f.name != "main.(*walker).recurse") {
      continue;
    }
    auto g = tab->FindFuncByName(f.name);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(tab->SpDelta(g->entry), 0) << f.name;
    // Go 1.19 amd64 prologue: "SUBQ $N, SP" after the stack check; pcsp must say N just
    // after it.
    for (size_t i = 0; i + 1 < f.insns.size(); i++) {
      const std::string& a = f.asm_text[i];
      if (a.rfind("SUBQ $0x", 0) != 0 || a.find(", SP") == std::string::npos) continue;
      int32_t n = static_cast<int32_t>(std::stoul(a.substr(6), nullptr, 16));
      EXPECT_EQ(tab->SpDelta(f.insns[i + 1].first), n) << f.name;
      auto runs = tab->SpDeltaRuns(*g);
      ASSERT_TRUE(runs.ok()) << runs.error();
      ASSERT_FALSE(runs->empty());
      EXPECT_EQ(runs->front().pc, g->entry);
      EXPECT_EQ(runs->front().delta, 0);
      bool has_n = false;
      for (const auto& run : *runs) {
        has_n |= run.delta == n;
        EXPECT_GE(run.pc, g->entry);
        EXPECT_LT(run.pc, g->end);
      }
      EXPECT_TRUE(has_n);
      checked++;
      break;
    }
  }
  EXPECT_EQ(checked, 3);
}

TEST_F(GoPclntabTest, RuntimeFlags) {
  auto tab = ParseOrDie(progs().stripped);
  ASSERT_NE(tab, nullptr);
  for (const char* top : {"runtime.goexit", "runtime.mstart", "runtime.rt0_go"}) {
    auto f = tab->FindFuncByName(top);
    ASSERT_TRUE(f.has_value()) << top;
    EXPECT_NE(f->flag & kFuncFlagTopFrame, 0) << top;
  }
  for (const char* sp : {"runtime.systemstack", "runtime.mcall", "runtime.morestack"}) {
    auto f = tab->FindFuncByName(sp);
    ASSERT_TRUE(f.has_value()) << sp;
    EXPECT_NE(f->flag & kFuncFlagSpWrite, 0) << sp;
  }
  auto m = tab->FindFuncByName("main.main");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->flag, 0);
}

// FuncIDWrapper marks compiler-generated code that Go's tracebacks, and so runtime/pprof, leave
// out: go-statement and method-value wrappers, and runtime.deferreturn, which the toolchain
// marks so in every release (cmd/internal/objabi/funcid.go). Its number shifts between
// releases; Symbolize marks such frames. Ordinary and special functions are never marked.
TEST_F(GoPclntabTest, WrappersAreMarked) {
  for (const std::string& bin : {progs().plain, progs().stripped}) {
    SCOPED_TRACE(bin);
    auto tab = ParseOrDie(bin);
    ASSERT_NE(tab, nullptr);
    for (const char* name : {"runtime.deferreturn", "runtime.gcenable.func1"}) {
      auto f = tab->FindFuncByName(name);
      ASSERT_TRUE(f.has_value()) << name;
      EXPECT_TRUE(tab->IsWrapperId(f->func_id)) << name;
      EXPECT_TRUE(tab->Symbolize(f->entry).back().wrapper) << name;
    }
    for (const char* name : {"main.main", "runtime.mcall", "runtime.goexit", "runtime.systemstack",
                             "runtime.systemstack_switch"}) {
      auto f = tab->FindFuncByName(name);
      ASSERT_TRUE(f.has_value()) << name;
      EXPECT_FALSE(tab->IsWrapperId(f->func_id)) << name;
      EXPECT_FALSE(tab->Symbolize(f->entry).back().wrapper) << name;
    }
  }
}

TEST_F(GoPclntabTest, NonGoAndCorruptTables) {
  auto elf = ElfFile::Open("/bin/true");
  ASSERT_TRUE(elf.ok());
  auto r = GoPclntab::Parse(*elf);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("pclntab"), std::string::npos);
  EXPECT_FALSE(GoPclntab::Parse(nullptr).ok());

  // Damage the function table of a real binary: parsing or querying must not crash.
  auto good = ElfFile::Open(progs().stripped);
  ASSERT_TRUE(good.ok());
  const ElfSection* s = (*good)->FindSection(".gopclntab");
  ASSERT_NE(s, nullptr);
  std::string bytes((*good)->bytes());
  uint32_t seed = 12345;
  for (int round = 0; round < 20; round++) {
    std::string damaged = bytes;
    for (int k = 0; k < 200; k++) {
      seed = seed * 1103515245 + 12345;
      size_t at = s->offset + (seed >> 8) % std::min<uint64_t>(s->size, 1 << 16);
      damaged[at] = static_cast<char>(seed >> 3);
    }
    auto e = ElfFile::FromBytes(damaged, "damaged");
    ASSERT_TRUE(e.ok());
    auto t = GoPclntab::Parse(*e);
    if (!t.ok()) continue;
    for (size_t i = 0; i < (*t)->num_funcs(); i += 17) {
      auto f = (*t)->FuncAt(i);
      if (!f.ok()) continue;
      (void)(*t)->Symbolize(f->entry + 1);
      (void)(*t)->SpDeltaRuns(*f);
    }
    (void)(*t)->FindFuncByName("main.main");
  }
}

}  // namespace
}  // namespace sb::sym
