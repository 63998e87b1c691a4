// The real consumer decides whether our pprof files are right: run `go tool pprof` on one and
// check it reports the functions, counts and labels we wrote.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "base/file_util.h"
#include "profile/writers.h"
#include "test_profile.h"

namespace sb::profile {
namespace {

namespace fs = std::filesystem;

struct Output {
  int status = -1;
  std::string text;  // stdout and stderr together
};

Output RunShell(const std::string& cmd) {
  Output out;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.text.append(buf, n);
  int st = pclose(f);
  out.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

class GoPprofTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RunShell("command -v go").status != 0) GTEST_SKIP() << "go is not on PATH";
    dir_ = fs::temp_directory_path() / ("sb_go_pprof_" + std::to_string(getpid()));
    fs::create_directories(dir_ / "home");
    path_ = (dir_ / "cpu.pb.gz").string();
    auto gz = WritePprofGz(testing::MakeTestProfile());
    ASSERT_TRUE(gz.ok()) << gz.error();
    ASSERT_TRUE(WriteFileAtomic(path_, *gz).ok());
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // A private HOME keeps pprof from reading or writing the user's ~/pprof settings.
  Output Pprof(const std::string& args) {
    std::string home = (dir_ / "home").string();
    Output out = RunShell("env HOME='" + home + "' PPROF_TMPDIR='" + home + "' go tool pprof " + args +
                     " '" + path_ + "'");
    EXPECT_EQ(out.status, 0) << out.text;
    return out;
  }

  fs::path dir_;
  std::string path_;
};

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST_F(GoPprofTest, TopShowsFunctionsWithCpuTime) {
  Output out = Pprof("-top");
  // Default sample type is cpu, shown as time: 10 samples x 10ms.
  EXPECT_TRUE(Has(out.text, "of 100ms total")) << out.text;
  EXPECT_TRUE(Has(out.text, "50ms 50.00% 50.00%       50ms 50.00%  main.inlinedLeaf (inline)"))
      << out.text;
  EXPECT_TRUE(Has(out.text, "30ms 30.00% 80.00%       30ms 30.00%  main.other")) << out.text;
  EXPECT_TRUE(Has(out.text, "20ms 20.00%   100%       70ms 70.00%  main.work")) << out.text;
  EXPECT_TRUE(Has(out.text, "80ms 80.00%  main.main")) << out.text;
  EXPECT_TRUE(Has(out.text, "50ms 50.00%  main.leaf")) << out.text;
  EXPECT_TRUE(Has(out.text, "20ms 20.00%  [stopped: bad_fp]")) << out.text;
  // Symbols were complete, so pprof must not try (and fail) to re-symbolize.
  EXPECT_FALSE(Has(out.text, "symbolize")) << out.text;
  EXPECT_FALSE(Has(out.text, "rror")) << out.text;
}

TEST_F(GoPprofTest, TopWithSampleCounts) {
  Output out = Pprof("-top -sample_index=samples");
  EXPECT_TRUE(Has(out.text, "of 10 total")) << out.text;
  EXPECT_TRUE(Has(out.text, "5 50.00% 50.00%          5 50.00%  main.inlinedLeaf")) << out.text;
}

TEST_F(GoPprofTest, TracesShowInlinedStacksAndLabels) {
  Output out = Pprof("-traces");
  // One trace per sample, leaf first, the inlined callee above its host and marked inline.
  EXPECT_TRUE(Has(out.text, "      50ms   main.inlinedLeaf (inline)\n"
                            "             main.leaf\n"
                            "             main.work\n"
                            "             main.main\n"))
      << out.text;
  EXPECT_TRUE(Has(out.text, "      20ms   main.work\n"
                            "             [stopped: bad_fp]\n"))
      << out.text;
  // String and numeric labels, attached to the right samples.
  EXPECT_TRUE(Has(out.text, "    thread:  worker\n"
                            "       pid:  42\n"
                            "       tid:  43\n"
                            "      50ms"))
      << out.text;
  EXPECT_TRUE(Has(out.text, "      stop:  bad_fp\n"
                            "       pid:  42\n"
                            "       tid:  44\n"
                            "      20ms"))
      << out.text;
  EXPECT_TRUE(Has(out.text, "Build ID: abc123")) << out.text;
}

TEST_F(GoPprofTest, RawShowsMappingsLocationsAndValues) {
  Output out = Pprof("-raw");
  EXPECT_TRUE(Has(out.text, "Comment: switchback test profile")) << out.text;
  EXPECT_TRUE(Has(out.text, "PeriodType: cpu nanoseconds")) << out.text;
  EXPECT_TRUE(Has(out.text, "Period: 10000000")) << out.text;
  EXPECT_TRUE(Has(out.text, "Duration: 2s")) << out.text;
  EXPECT_TRUE(Has(out.text, "samples/count cpu/nanoseconds[dflt]")) << out.text;
  // pprof renumbers locations by first use, so check values and labels, not every id.
  EXPECT_TRUE(Has(out.text, "          5   50000000: 1 2 3 \n"
                            "                thread:[worker]\n"
                            "                pid:[42] tid:[43]\n"))
      << out.text;
  EXPECT_TRUE(Has(out.text, "          2   20000000: 2 ")) << out.text;
  EXPECT_TRUE(Has(out.text, "                stop:[bad_fp]\n")) << out.text;
  // Inline lines in pprof order, and the stop marker without mapping or address.
  EXPECT_TRUE(Has(out.text, "     1: 0x401000 M=1 main.inlinedLeaf /src/app/leaf.go:12 s=0\n"
                            "             main.leaf /src/app/leaf.go:30 s=0\n"))
      << out.text;
  EXPECT_TRUE(Has(out.text, ": 0x0 [stopped: bad_fp] :0 s=0\n")) << out.text;
  // Complete symbols are advertised, so pprof never tries to re-symbolize.
  EXPECT_TRUE(Has(out.text, "1: 0x400000/0x500000/0x0 /usr/bin/app abc123 [FN][FL][LN][IN]"))
      << out.text;
}

}  // namespace
}  // namespace sb::profile
