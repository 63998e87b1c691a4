// Replays tests/fuzz/corpus/<target>/* through each fuzz target's entry point. Inputs that
// crashed a fuzzer are saved there, so a regression shows up in the normal test run, with
// the sanitizers when SWITCHBACK_SANITIZE is on.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include "exitprobe/stack_record.h"
#include "symbolizer/elf_file.h"
#include "tests/fuzz/fuzz_targets.h"
#include "unwinder/dwarf_offsets.h"
#include "unwinder/tls_slot.h"

namespace sb::fuzz {
namespace {

namespace fs = std::filesystem;

int Replay(const std::string& target, int (*fn)(const uint8_t*, size_t)) {
  fs::path dir = fs::path(SB_FUZZ_CORPUS_DIR) / target;
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string bytes = ss.str();
    SCOPED_TRACE(e.path().string());
    EXPECT_EQ(fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
    n++;
  }
  return n;
}

TEST(FuzzRegressionTest, Elf) { EXPECT_GT(Replay("fuzz_elf", FuzzElf), 0); }
TEST(FuzzRegressionTest, Pclntab) { EXPECT_GT(Replay("fuzz_pclntab", FuzzPclntab), 0); }
TEST(FuzzRegressionTest, BuildInfo) { EXPECT_GT(Replay("fuzz_buildinfo", FuzzBuildInfo), 0); }
TEST(FuzzRegressionTest, PprofReader) {
  EXPECT_GT(Replay("fuzz_pprof_reader", FuzzPprofReader), 0);
}
TEST(FuzzRegressionTest, ProcCgroup) { EXPECT_GT(Replay("fuzz_proc_cgroup", FuzzProcCgroup), 0); }
TEST(FuzzRegressionTest, Kallsyms) { EXPECT_GT(Replay("fuzz_kallsyms", FuzzKallsyms), 0); }
TEST(FuzzRegressionTest, SampleRecord) { EXPECT_GT(Replay("fuzz_sample_record", FuzzSampleRecord), 0); }
TEST(FuzzRegressionTest, XpStackRecord) { EXPECT_GT(Replay("fuzz_xp_stack_record", FuzzXpStackRecord), 0); }
TEST(FuzzRegressionTest, IndexLine) { EXPECT_GT(Replay("fuzz_index_line", FuzzIndexLine), 0); }
TEST(FuzzRegressionTest, CoreFile) { EXPECT_GT(Replay("fuzz_core_file", FuzzCoreFile), 0); }
TEST(FuzzRegressionTest, CaseFile) { EXPECT_GT(Replay("fuzz_case_file", FuzzCaseFile), 0); }
TEST(FuzzRegressionTest, AsmOffsets) { EXPECT_GT(Replay("fuzz_asm_offsets", FuzzAsmOffsets), 0); }
TEST(FuzzRegressionTest, DwarfOffsets) {
  EXPECT_GT(Replay("fuzz_dwarf_offsets", FuzzDwarfOffsets), 0);
}
TEST(FuzzRegressionTest, TlsSlot) { EXPECT_GT(Replay("fuzz_tls_slot", FuzzTlsSlot), 0); }
TEST(FuzzRegressionTest, Decompress) { EXPECT_GT(Replay("fuzz_decompress", FuzzDecompress), 0); }
TEST(FuzzRegressionTest, BuildIdNote) { EXPECT_GT(Replay("fuzz_build_id_note", FuzzBuildIdNote), 0); }

// The seeds must reach the code they are for, or the fuzzer starts from nothing: the DWARF
// seeds describe Go 1.19's runtime.g layout, the code seeds load g from fs_base - 8.
TEST(FuzzRegressionTest, DwarfSeedsAreRead) {
  for (const char* name : {"go_structs_dwarf4", "go_structs_dwarf4_zlib", "go_structs_dwarf4_zdebug",
                           "go_structs_dwarf5"}) {
    SCOPED_TRACE(name);
    auto o = unwinder::GoOffsetsFromDwarf(std::string(SB_FUZZ_CORPUS_DIR) + "/fuzz_dwarf_offsets/" + name);
    ASSERT_TRUE(o.ok()) << o.error();
    EXPECT_EQ(o->g_goid, 152);
    EXPECT_EQ(o->g_atomicstatus, 144);
    EXPECT_EQ(o->g_sched, 56);
    EXPECT_EQ(o->gobuf_lr, 40);
    EXPECT_EQ(o->gobuf_bp, 48);
  }
}

TEST(FuzzRegressionTest, TlsSeedsAreDecoded) {
  for (const char* name : {"demo119_systemstack", "demo119pie_systemstack", "demo127_systemstack",
                           "demo127pie_systemstack"}) {
    SCOPED_TRACE(name);
    std::ifstream in(std::string(SB_FUZZ_CORPUS_DIR) + "/fuzz_tls_slot/" + name, std::ios::binary);
    std::string code((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(code.empty());
    std::string bare = "\x7f" "ELF\x02\x01\x01";
    bare.resize(64, '\0');
    auto e = sym::ElfFile::FromBytes(bare, "bare");
    ASSERT_TRUE(e.ok()) << e.error();
    auto d = unwinder::FsDisplacementOfG(**e, reinterpret_cast<const uint8_t*>(code.data()), code.size(),
                                         0x401000);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(*d, -8);
  }
}
// The call-path seeds reach both ends of the parse: two whole records (one with a label) are
// read, the truncated one is refused.
TEST(FuzzRegressionTest, XpStackRecordSeedsUnpack) {
  auto out = std::make_unique<sb_xp_stack>();
  for (const char* name : {"plain_20_frames", "labels", "truncated"}) {
    SCOPED_TRACE(name);
    std::ifstream in(std::string(SB_FUZZ_CORPUS_DIR) + "/fuzz_xp_stack_record/" + name, std::ios::binary);
    std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(b.empty());
    std::string why = exitprobe::UnpackXpStackRecord(b.data(), b.size(), out.get());
    if (std::string(name) == "truncated") {
      EXPECT_NE(why, "");
      continue;
    }
    ASSERT_EQ(why, "");
    EXPECT_EQ(out->s.nframes, std::string(name) == "labels" ? 5u : 20u);
    EXPECT_EQ(out->s.labels.count, std::string(name) == "labels" ? 1 : 0);
    EXPECT_EQ(out->bias, 0x555555554000u);
  }
}
TEST(FuzzRegressionTest, CodeSites) { EXPECT_GT(Replay("fuzz_code_sites", FuzzCodeSites), 0); }
TEST(FuzzRegressionTest, ServeQuery) { EXPECT_GT(Replay("fuzz_serve_query", FuzzServeQuery), 0); }
TEST(FuzzRegressionTest, GoroutineLabels) {
  EXPECT_GT(Replay("fuzz_goroutine_labels", FuzzGoroutineLabels), 0);
}

}  // namespace
}  // namespace sb::fuzz
