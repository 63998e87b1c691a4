// newstack's local morebuf derived from its machine code (unwinder/newstack_morebuf.h, issue
// 13 item 2) on real binaries of every Go release the project supports (1.19 installed; 1.21-
// 1.27 from tools/fetch-go.sh), amd64 and arm64: where the binary has DWARF the code-derived
// slot and gobuf.g equal the location-list proof, and the stripped twin (-s -w) gets the same
// slot and the same preempting-call range from the code alone.
#include "unwinder/newstack_morebuf.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "symbolizer/binary.h"
#include "tests/common/fetched_go.h"
#include "tests/common/shell_util.h"
#include "unwinder/call_sites.h"
#include "unwinder/go_binary_facts.h"

namespace sb::unwinder {
namespace {

constexpr char kProgram[] = R"(package main

func grow(n int) int {
	var pad [128]byte
	pad[n%128] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return grow(n-1) + int(pad[n%128])
}

func main() { println(grow(2000)) }
)";

std::string Build(const std::string& go, const std::string& arch, const std::string& dir, bool stripped) {
  std::string src = dir + "/main.go";
  FILE* f = fopen(src.c_str(), "w");
  if (!f) return "";
  fputs(kProgram, f);
  fclose(f);
  std::string out = dir + "/prog-" + arch + (stripped ? "-stripped" : "");
  auto r = test::RunCommand("cd " + test::Quote(dir) + " && env GOCACHE=" +
                            test::Quote(SB_GOCACHE) +
                            " GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local CGO_ENABLED=0 GOARCH=" + arch + " " +
                            test::Quote(go) + " build " + (stripped ? "-ldflags='-s -w' " : "") + "-o " +
                            test::Quote(out) + " main.go");
  EXPECT_EQ(r.status, 0) << r.out;
  return r.status == 0 ? out : "";
}

std::shared_ptr<const GoBinaryFacts> Facts(const std::string& path, std::shared_ptr<sym::Binary>* bin) {
  auto b = sym::Binary::Load(path);
  EXPECT_TRUE(b.ok()) << path;
  if (!b.ok()) return nullptr;
  *bin = *b;
  auto f = AnalyzeGoBinary(**b, path);
  EXPECT_TRUE(f.ok()) << f.error();
  return f.ok() ? *f : nullptr;
}

void CheckToolchain(const std::string& go, int minor) {
  for (const char* arch : {"amd64", "arm64"}) {
    SCOPED_TRACE(std::string("go1.") + std::to_string(minor) + " " + arch);
    std::string dir = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "morebuf-1." + std::to_string(minor));
    std::string full = Build(go, arch, dir, false), stripped = Build(go, arch, dir, true);
    ASSERT_FALSE(full.empty());
    ASSERT_FALSE(stripped.empty());
    std::shared_ptr<sym::Binary> fb, sb;
    auto f = Facts(full, &fb);
    auto s = Facts(stripped, &sb);
    ASSERT_TRUE(f && s);
    // With DWARF: the location list is used, and the code proves the same slot.
    EXPECT_EQ(f->morebuf_source.rfind("DWARF:", 0), 0u) << f->morebuf_source;
    ASSERT_TRUE(f->morebuf_code_found) << f->morebuf_code_source;
    EXPECT_EQ(f->morebuf_code_cfa_off, f->morebuf_cfa_off) << f->morebuf_code_source << " / " << f->morebuf_source;
    EXPECT_EQ(f->morebuf_code_gobuf_g, f->gobuf_g);
    EXPECT_EQ(f->gobuf_g, 16);
    EXPECT_NE(f->morebuf_source.find("the code proves the same slot"), std::string::npos) << f->morebuf_source;
    for (const auto& m : f->missing) EXPECT_EQ(m.find("morebuf"), std::string::npos) << m;
    // Stripped: from the code, at DWARF's offset, over the preempting calls' return sites only.
    EXPECT_EQ(s->morebuf_source.rfind("code:", 0), 0u) << s->morebuf_source;
    EXPECT_EQ(s->morebuf_cfa_off, f->morebuf_cfa_off);
    EXPECT_EQ(s->gobuf_g, f->gobuf_g);
    ASSERT_GT(s->newstack_morebuf_hi, s->newstack_morebuf_lo);
    EXPECT_GE(s->newstack_morebuf_lo, f->newstack_morebuf_lo);  // inside the DWARF range
    EXPECT_LE(s->newstack_morebuf_hi, f->newstack_morebuf_hi);
    int covered = 0;
    for (const char* callee : {"runtime.gopreempt_m", "runtime.goschedImpl", "runtime.preemptPark"}) {
      auto fn = sb->go()->FindFuncByName(callee);
      if (!fn) continue;
      for (uint64_t site : ReturnSitesOfCallsTo(*sb, fn->entry))
        covered += site - 1 >= s->newstack_morebuf_lo && site - 1 < s->newstack_morebuf_hi;
    }
    EXPECT_GE(covered, 2);  // preemptPark and gopreempt_m / goschedImpl
    sb_proc_info pi = MakeProcInfo(*s, 0, 0);
    EXPECT_NE(pi.newstack_hi, 0u);
    EXPECT_EQ(pi.morebuf_cfa_off, f->morebuf_cfa_off);
    EXPECT_EQ(pi.gobuf_g, 16);
  }
}

TEST(NewstackMorebufFromCode, Go119CodeEqualsDwarf) { CheckToolchain(SB_GO_EXECUTABLE, 19); }

TEST(NewstackMorebufFromCode, Go121To127CodeEqualsDwarf) {
  std::string listed;
  int seen = test::ForEachFetchedGo(SB_SOURCE_DIR, CheckToolchain, &listed);
  ASSERT_GE(seen, 0) << listed;
  EXPECT_EQ(seen, 7) << "expected Go 1.21 to 1.27: " << listed;
}

// One store moved into the slot between the copy and the preempting calls (Go 1.19 amd64:
// `MOVQ CX, 0xb0(SP)` right after the clears, rewritten to `MOVQ CX, 0x108(SP)`, morebuf.pc):
// the slot is no longer proven, and the reason names the store.
TEST(NewstackMorebufFromCode, AStoreIntoTheSlotIsNotProven) {
  std::string dir = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "morebuf-patch");
  std::string path = Build(SB_GO_EXECUTABLE, "amd64", dir, true);
  ASSERT_FALSE(path.empty());
  std::string bytes;
  {
    FILE* f = fopen(path.c_str(), "rb");
    ASSERT_TRUE(f);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
    fclose(f);
  }
  auto bin = sym::Binary::Load(path);
  ASSERT_TRUE(bin.ok());
  auto facts = AnalyzeGoBinary(**bin, path);
  ASSERT_TRUE(facts.ok());
  ASSERT_TRUE((*facts)->morebuf_code_found) << (*facts)->morebuf_code_source;
  ASSERT_EQ((*facts)->morebuf_cfa_off, -184);  // SP + 0x100 in a 0x1b0 frame
  auto ns = (*bin)->go()->FindFuncByName("runtime.newstack");
  ASSERT_TRUE(ns);
  const std::string store("\x48\x89\x8c\x24\xb0\x00\x00\x00", 8);  // MOVQ CX, 0xb0(SP)
  uint64_t file_off = ns->entry - 0x400000;  // non-PIE: text at 0x401000, file offset 0x1000
  size_t at = bytes.find(store, file_off);
  ASSERT_NE(at, std::string::npos);
  ASSERT_LT(at, ns->end - 0x400000);
  bytes[at + 4] = 0x08;  // disp32 0x108
  bytes[at + 5] = 0x01;
  std::string patched = path + "-patched";
  {
    FILE* f = fopen(patched.c_str(), "wb");
    ASSERT_TRUE(f);
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
  auto pb = sym::Binary::Load(patched);
  ASSERT_TRUE(pb.ok());
  auto r = NewstackMorebufFromCode(**pb, (*facts)->offsets);
  EXPECT_FALSE(r.found);
  EXPECT_NE(r.why.find("writes its morebuf slot"), std::string::npos) << r.why;
  auto pf = AnalyzeGoBinary(**pb, patched);
  ASSERT_TRUE(pf.ok());
  EXPECT_EQ((*pf)->newstack_morebuf_hi, 0u);
}

// Not Go at all / no offsets: not found, with a reason.
TEST(NewstackMorebufFromCode, UnknownOffsetsAreNotGuessed) {
  auto b = sym::Binary::Load(std::string(SB_TESTDATA_BIN) + "/demo-stripped");
  ASSERT_TRUE(b.ok());
  sb_go_offsets off{};
  off.g_m = 0xffff;
  auto r = NewstackMorebufFromCode(**b, off);
  EXPECT_FALSE(r.found);
  EXPECT_NE(r.why.find("unknown"), std::string::npos) << r.why;
}

}  // namespace
}  // namespace sb::unwinder
