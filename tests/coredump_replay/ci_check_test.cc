// `switchback coredump check` as a CI runner uses it: every case with the scratch directory on
// a 300 MB tmpfs (cold, then warm), a JUnit report read by a real consumer (junitparser, from
// Debian) in which a deliberately broken case is a failure carrying its diff, --filter, and the
// documented exit codes (0 pass, 1 a case failed, 2 the harness could not run).
#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <filesystem>
#include <regex>
#include <string>

#include "base/file_util.h"
#include "coredump/replay/case_file.h"
#include "coredump/replay/case_runner.h"
#include "tests/common/shell_util.h"

namespace sb::coredump {
namespace {

namespace fs = std::filesystem;

std::string Sb() { return test::Quote(SB_SWITCHBACK); }

// "coredump check: P passed, F failed, E errors of N cases in S s": P and N.
std::pair<int, int> Summary(const std::string& out) {
  std::smatch m;
  std::regex re("coredump check: (\\d+) passed, (\\d+) failed, (\\d+) errors of (\\d+) cases in [0-9.]+ s");
  if (!std::regex_search(out, m, re)) return {-1, -1};
  return {std::stoi(m[1]), std::stoi(m[4])};
}

struct Tmpfs {
  std::string dir;
  bool mounted = false;
  ~Tmpfs() {
    if (mounted) (void)test::RunCommand("umount " + test::Quote(dir));
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

TEST(CiCheck, AllCasesOnA300MbTmpfsColdAndWarm) {
  size_t cases = FindCases(SB_CASES_DIR).size();
  ASSERT_GE(cases, 91u);
  Tmpfs t;
  t.dir = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "scratch-300m");
  auto m = test::RunCommand("mount -t tmpfs -o size=300M switchback-scratch " + test::Quote(t.dir));
  if (m.status != 0) GTEST_SKIP() << "cannot mount a 300 MB tmpfs (needs root/CAP_SYS_ADMIN): " << m.out;
  t.mounted = true;
  // TMPDIR too, so that nothing the harness writes can go elsewhere unnoticed.
  std::string cmd = "TMPDIR=" + test::Quote(t.dir) + " " + Sb() + " coredump check " + test::Quote(SB_CASES_DIR) +
                    " --cache " + test::Quote(t.dir + "/cache");
  for (const char* run : {"cold", "warm"}) {
    SCOPED_TRACE(run);
    auto r = test::RunCommand(cmd);
    EXPECT_EQ(r.status, 0) << r.out.substr(r.out.size() > 4000 ? r.out.size() - 4000 : 0);
    auto [passed, total] = Summary(r.out);
    EXPECT_EQ(total, static_cast<int>(cases)) << r.out.substr(r.out.size() > 2000 ? r.out.size() - 2000 : 0);
    EXPECT_EQ(passed, static_cast<int>(cases));
    struct statvfs v;
    ASSERT_EQ(statvfs(t.dir.c_str(), &v), 0);
    uint64_t used = (v.f_blocks - v.f_bfree) * v.f_frsize;
    RecordProperty(std::string(run) + "_scratch_bytes", std::to_string(used));
    EXPECT_LT(used, uint64_t{300} << 20);
  }
}

class JunitReport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "junit");
    fs::create_directory_symlink(fs::path(SB_CASES_DIR) / "blobs", fs::path(dir_) / "blobs");
    auto all = FindCases(SB_CASES_DIR);
    ASSERT_GE(all.size(), 2u);
    good_ = fs::path(all[0]).stem().string();
    broken_ = fs::path(all[1]).stem().string();
    fs::copy_file(all[0], dir_ + "/" + good_ + ".json");
    auto text = ReadFile(all[1]);
    ASSERT_TRUE(text.ok());
    auto c = ParseCase(*text);
    ASSERT_TRUE(c.ok()) << c.error();
    ASSERT_FALSE(c->threads.empty());
    ASSERT_GE(c->threads[0].frames.size(), 2u);
    c->threads[0].frames[1] = "main.deliberatelyBroken+0x0 in broken.go:1";
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/" + broken_ + ".json", SerializeCase(*c)).ok());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string dir_, good_, broken_;
};

TEST_F(JunitReport, BrokenCaseIsAFailureWithItsDiffForJunitparser) {
  std::string xml = dir_ + "/report.xml";
  auto r = test::RunCommand(Sb() + " coredump check " + test::Quote(dir_) + " --junit " + test::Quote(xml));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("coredump check: 1 passed, 1 failed, 0 errors of 2 cases"), std::string::npos) << r.out;
  // Debian's python3 (with python3-junitparser), not whatever python3 comes first on PATH.
  std::string py = dir_ + "/read.py";
  ASSERT_TRUE(WriteFileAtomic(py, R"(import sys
from junitparser import JUnitXml, Failure
xml = JUnitXml.fromfile(sys.argv[1])
for suite in xml:
    print("suite", suite.name, suite.tests, suite.failures, suite.errors)
    for case in suite:
        res = [r for r in case.result if isinstance(r, Failure)]
        print("case", case.name, case.classname, "time" if case.time >= 0 else "notime",
              "FAILURE" if res else ("PASS" if case.is_passed else "OTHER"))
        for f in res:
            print("message", f.message)
            print("text", (f.text or "").strip())
)").ok());
  auto parsed = test::RunCommand("/usr/bin/python3 " + test::Quote(py) + " " + test::Quote(xml));
  if (parsed.out.find("No module named 'junitparser'") != std::string::npos)
    GTEST_SKIP() << "python3-junitparser is not installed (tools/install-deps.sh)";
  ASSERT_EQ(parsed.status, 0) << parsed.out;
  EXPECT_NE(parsed.out.find("suite switchback.coredump 2 1 0"), std::string::npos) << parsed.out;
  EXPECT_NE(parsed.out.find("case " + good_ + " coredump.amd64."), std::string::npos) << parsed.out;
  EXPECT_NE(parsed.out.find(good_ + " coredump.amd64.go1.19.8 time PASS"), std::string::npos) << parsed.out;
  EXPECT_NE(parsed.out.find(broken_ + " coredump.amd64.go1.19.8 time FAILURE"), std::string::npos) << parsed.out;
  // The message is the first differing frame: what we replayed, and what the case expects.
  std::regex msg("message lwp \\d+: frame 1: [^\\n]+ in [^\\n]+, expected main\\.deliberatelyBroken\\+0x0 in broken\\.go:1");
  EXPECT_TRUE(std::regex_search(parsed.out, msg)) << parsed.out;
  EXPECT_NE(parsed.out.find("text lwp "), std::string::npos) << parsed.out;
  // The body shows both stacks from the first differing frame on.
  EXPECT_NE(parsed.out.find("replayed from frame 1: "), std::string::npos) << parsed.out;
  EXPECT_NE(parsed.out.find("expected from frame 1: main.deliberatelyBroken+0x0 in broken.go:1 <- "), std::string::npos)
      << parsed.out;
}

TEST_F(JunitReport, FilterAndExitCodes) {
  auto one = test::RunCommand(Sb() + " coredump check " + test::Quote(dir_) + " --filter " + test::Quote("^" + good_ + "$"));
  EXPECT_EQ(one.status, 0) << one.out;
  EXPECT_NE(one.out.find("coredump check: 1 passed, 0 failed, 0 errors of 1 cases"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find(broken_), std::string::npos) << one.out;

  auto none = test::RunCommand(Sb() + " coredump check " + test::Quote(dir_) + " --filter nothing-is-called-this");
  EXPECT_EQ(none.status, 2) << none.out;
  EXPECT_NE(none.out.find("no case matches --filter nothing-is-called-this"), std::string::npos) << none.out;
  auto bad = test::RunCommand(Sb() + " coredump check " + test::Quote(dir_) + " --filter '('");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("bad --filter ("), std::string::npos) << bad.out;
  auto missing = test::RunCommand(Sb() + " coredump check " + test::Quote(dir_ + "/nope"));
  EXPECT_EQ(missing.status, 2) << missing.out;
  auto unwritable = test::RunCommand(Sb() + " coredump check " + test::Quote(dir_) + " --junit /proc/nope/report.xml");
  EXPECT_EQ(unwritable.status, 2) << unwritable.out;
}

}  // namespace
}  // namespace sb::coredump
