#include "coredump/replay/case_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "coredump/replay/case_runner.h"

namespace sb::coredump {
namespace {

constexpr char kCase[] = R"({
  "name": "amd64-go1.19-systemstack",
  "arch": "amd64",
  "go_version": "go1.19.8",
  "state": "systemstack",
  "oracle": "dlv",
  "core": "blobs/x.core-00.zst",
  "must_cross": ["systemstack"],
  "files": [{"path": "/tmp/corecases", "file": "blobs/corecases-01.zst", "role": "executable"}],
  "faults": [{"address": "0xc000123456", "lwp": 7}],
  "threads": [{"lwp": 7, "stop": "root", "crossed": ["leaf", "systemstack"],
               "frames": ["runtime.mallocgc+0x1c in malloc.go:12", "runtime.goexit+0x1 in asm_amd64.s:1594"]}]
})";

TEST(CaseFile, ParsesEveryField) {
  auto c = ParseCase(kCase);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->name, "amd64-go1.19-systemstack");
  EXPECT_EQ(c->arch, "amd64");
  EXPECT_EQ(c->must_cross, std::vector<std::string>{"systemstack"});
  ASSERT_EQ(c->files.size(), 1u);
  EXPECT_EQ(c->files[0].role, "executable");
  ASSERT_EQ(c->faults.size(), 1u);
  EXPECT_EQ(c->faults[0].address, 0xc000123456u);
  EXPECT_EQ(c->faults[0].lwp, 7u);
  ASSERT_EQ(c->threads.size(), 1u);
  EXPECT_EQ(c->threads[0].frames[1], "runtime.goexit+0x1 in asm_amd64.s:1594");
}

TEST(CaseFile, SerializeRoundTrips) {
  auto c = ParseCase(kCase);
  ASSERT_TRUE(c.ok());
  auto again = ParseCase(SerializeCase(*c));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(SerializeCase(*again), SerializeCase(*c));
  EXPECT_EQ(again->threads[0].crossed, c->threads[0].crossed);
}

// Goroutine labels per thread: optional, so cases without them parse and serialize with no
// labels field, and a thread with labels keeps them through a round trip.
TEST(CaseFile, LabelsAreOptionalPerThread) {
  auto plain = ParseCase(kCase);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->threads[0].has_labels);
  EXPECT_EQ(SerializeCase(*plain).find("labels"), std::string::npos);

  std::string with = kCase;
  std::string frames_end = R"(asm_amd64.s:1594"]})";
  with.replace(with.find(frames_end), frames_end.size(),
               R"(asm_amd64.s:1594"], "labels": ["alloc=big", "k=v"], "labels_status": "ok"},
               {"lwp": 8, "stop": "root", "labels": [], "labels_status": "none"}, {"lwp": 9, "stop": "root"})");
  auto c = ParseCase(with);
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_EQ(c->threads.size(), 3u);
  EXPECT_TRUE(c->threads[0].has_labels);
  EXPECT_EQ(c->threads[0].labels, (std::vector<std::string>{"alloc=big", "k=v"}));
  EXPECT_EQ(c->threads[0].labels_status, "ok");
  EXPECT_TRUE(c->threads[1].has_labels);  // expects none
  EXPECT_TRUE(c->threads[1].labels.empty());
  EXPECT_FALSE(c->threads[2].has_labels);  // not compared
  auto again = ParseCase(SerializeCase(*c));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(SerializeCase(*again), SerializeCase(*c));
  EXPECT_EQ(again->threads[1].labels_status, "none");
  EXPECT_FALSE(again->threads[2].has_labels);

  auto bad = ParseCase(R"({"name":"x","arch":"amd64","core":"c","threads":[{"lwp":1,"stop":"root","labels":"a=b"}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("labels"), std::string::npos) << bad.error();
}

TEST(CaseFile, BadInputNamesTheProblem) {
  struct Bad {
    const char* json;
    const char* says;
  };
  for (const Bad& b : std::initializer_list<Bad>{
           {"not json", "not valid JSON"},
           {"[]", "top level"},
           {R"({"arch":"amd64","core":"c"})", "missing \"name\""},
           {R"({"name":"x","arch":"mips","core":"c"})", "arch"},
           {R"({"name":"x","arch":"amd64","core":"c","threads":[{"lwp":-1,"stop":"root"}]})", "threads[0]"},
           {R"({"name":"x","arch":"amd64","core":"c","threads":[{"lwp":1}]})", "missing \"stop\""},
           {R"({"name":"x","arch":"amd64","core":"c","faults":[{"address":"zz","lwp":1}]})", "bad address"},
           {R"({"name":"x","arch":"amd64","core":"c","files":[{"path":1,"file":"f"}]})", "files[0]"},
       }) {
    auto c = ParseCase(b.json);
    ASSERT_FALSE(c.ok()) << b.json;
    EXPECT_NE(c.error().find(b.says), std::string::npos) << b.json << " -> " << c.error();
  }
}

// A labelled case (a goroutine labelled alloc=big under systemstack) fails when its expected
// labels differ from the replay's, and passes with them, or without any (a case that holds none).
TEST(CaseFile, LabelsOfALabelledCaseAreCompared) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("case-labels-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::create_directory_symlink(fs::path(SB_CASES_DIR) / "blobs", dir / "blobs");
  std::ifstream in(std::string(SB_CASES_DIR) + "/amd64-go1.19.8-labels.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto c = ParseCase(ss.str());
  ASSERT_TRUE(c.ok()) << c.error();
  std::string cache = (dir / "cache").string();
  auto check = [&](const CoreCase& k) {
    std::ofstream(dir / "x.json") << SerializeCase(k);
    auto r = CheckCase((dir / "x.json").string(), cache);
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? *r : CaseReport{};
  };
  EXPECT_TRUE(check(*c).passed);
  CoreCase changed = *c;
  bool found = false;
  for (auto& t : changed.threads)
    if (t.labels == std::vector<std::string>{"alloc=big"}) t.labels = {"alloc=small"}, found = true;
  ASSERT_TRUE(found);
  CaseReport bad = check(changed);
  EXPECT_FALSE(bad.passed);
  ASSERT_EQ(bad.differences.size(), 1u);
  EXPECT_NE(bad.differences[0].find("labels ok [alloc=big], expected ok [alloc=small]"), std::string::npos)
      << bad.differences[0];
  CoreCase none = *c;
  for (auto& t : none.threads) t.has_labels = false;
  EXPECT_TRUE(check(none).passed);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sb::coredump
