#include "coredump/replay/case_file.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sb::coredump
