// Replays tests/fuzz/corpus/<target>/* through each fuzz target's entry point. Inputs that
// crashed a fuzzer are saved there, so a regression shows up in the normal test run, with
// the sanitizers when SWITCHBACK_SANITIZE is on.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/fuzz/fuzz_targets.h"

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
TEST(FuzzRegressionTest, CoreFile) { EXPECT_GT(Replay("fuzz_core_file", FuzzCoreFile), 0); }
TEST(FuzzRegressionTest, CaseFile) { EXPECT_GT(Replay("fuzz_case_file", FuzzCaseFile), 0); }
TEST(FuzzRegressionTest, CodeSites) { EXPECT_GT(Replay("fuzz_code_sites", FuzzCodeSites), 0); }

}  // namespace
}  // namespace sb::fuzz
