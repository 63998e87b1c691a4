// Go build info: real Go 1.19 binaries (inline format) against `go version -m`, plus synthetic
// images for the pointer format (Go < 1.18) and the no-section scan.
#include "symbolizer/go_buildinfo.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>

#include "tests/symbolizer/test_util.h"

namespace sb::sym {
namespace {

using test::BuildGoPrograms;
using test::MakeMiniElf;
using test::Quote;
using test::RunCommand;

std::string GoVersion() {
  auto r = RunCommand(test::GoEnv() + Quote(SB_GO_EXECUTABLE) + " env GOVERSION");
  while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
  return r.out;
}

TEST(GoBuildInfoTest, RealBinariesMatchGoVersion) {
  const auto& progs = BuildGoPrograms();
  ASSERT_TRUE(progs.error.empty()) << progs.error;
  std::string want = GoVersion();
  ASSERT_EQ(want.rfind("go1.", 0), 0u) << want;
  for (const std::string& path : {progs.plain, progs.stripped, progs.pie, progs.pie_stripped}) {
    auto elf = ElfFile::Open(path);
    ASSERT_TRUE(elf.ok());
    auto bi = ReadGoBuildInfo(**elf);
    ASSERT_TRUE(bi.ok()) << bi.error();
    EXPECT_EQ(bi->go_version, want) << path;
    EXPECT_EQ(bi->major, 1);
    EXPECT_EQ(bi->minor, 19);
    // GO111MODULE=off builds of a file: the main package is "command-line-arguments".
    auto m = RunCommand(test::GoEnv() + Quote(SB_GO_EXECUTABLE) + " version -m " + Quote(path) +
                 " | sed -n 's/^\\tpath\\t//p'");
    while (!m.out.empty() && m.out.back() == '\n') m.out.pop_back();
    EXPECT_EQ(bi->module_path, m.out) << path;
    EXPECT_EQ(bi->module_path, "command-line-arguments");
  }
}

// Pointer format: header then two pointers to string headers, all in one PT_LOAD, no sections
// (so the reader must scan for the magic).
TEST(GoBuildInfoTest, PointerFormatWithoutSections) {
  const uint64_t base = 0x500000;
  std::string seg(256, '\0');
  std::string magic("\xff Go buildinf:", 14);
  seg.replace(32, magic.size(), magic);  // 16-aligned offset inside the segment
  seg[32 + 14] = 8;                      // ptrsize
  seg[32 + 15] = 0;                      // flags: little-endian, pointer format
  auto put64 = [&](size_t at, uint64_t v) { std::memcpy(&seg[at], &v, 8); };
  std::string vers = "go1.16.15";
  std::string mod = std::string(16, 'x') + "path\texample.com/demo\nmod\texample.com/demo\t(devel)\t\n" +
                    std::string(16, 'y');
  put64(32 + 16, base + 96);   // -> version string header
  put64(32 + 24, base + 112);  // -> modinfo string header
  put64(96, base + 128);
  put64(104, vers.size());
  put64(112, base + 144);
  put64(120, mod.size());
  seg.replace(128, vers.size(), vers);
  seg.resize(std::max(seg.size(), 144 + mod.size()));
  seg.replace(144, mod.size(), mod);
  // Segment file offset is 16-aligned by MakeMiniElf, so the magic's file offset is too.
  auto elf = ElfFile::FromBytes(MakeMiniElf(ET_EXEC, {{PT_LOAD, PF_R | PF_W, base, seg}}), "ptr");
  ASSERT_TRUE(elf.ok()) << elf.error();
  auto bi = ReadGoBuildInfo(**elf);
  ASSERT_TRUE(bi.ok()) << bi.error();
  EXPECT_EQ(bi->go_version, "go1.16.15");
  EXPECT_EQ(bi->major, 1);
  EXPECT_EQ(bi->minor, 16);
  EXPECT_EQ(bi->module_path, "example.com/demo");
}

TEST(GoBuildInfoTest, TruncatedAndMissing) {
  auto none = ElfFile::FromBytes(MakeMiniElf(ET_EXEC, {{PT_LOAD, PF_R, 0x1000, "nothing"}}), "n");
  ASSERT_TRUE(none.ok());
  auto r = ReadGoBuildInfo(**none);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("no Go build info"), std::string::npos);

  // Inline format whose varint length runs past the end.
  std::string seg(48, '\0');
  seg.replace(0, 14, std::string("\xff Go buildinf:", 14));
  seg[14] = 8;
  seg[15] = 2;
  seg[32] = static_cast<char>(0x7f);  // 127 bytes of version, only 15 present
  auto t = ElfFile::FromBytes(MakeMiniElf(ET_EXEC, {{PT_LOAD, PF_R, 0x1000, seg}}), "t");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(ReadGoBuildInfo(**t).ok());

  // Pointer format whose pointers go nowhere.
  seg[15] = 0;
  std::memset(&seg[16], 0xee, 16);
  auto p = ElfFile::FromBytes(MakeMiniElf(ET_EXEC, {{PT_LOAD, PF_R, 0x1000, seg}}), "p");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(ReadGoBuildInfo(**p).ok());
}

TEST(GoBuildInfoTest, ParseGoVersion) {
  int major = 0, minor = 0;
  EXPECT_TRUE(ParseGoVersion("go1.21.3", &major, &minor));
  EXPECT_EQ(major, 1);
  EXPECT_EQ(minor, 21);
  EXPECT_TRUE(ParseGoVersion("go1.22rc1", &major, &minor));
  EXPECT_EQ(minor, 22);
  EXPECT_TRUE(ParseGoVersion("devel go1.23-abcdef Tue Jan 1", &major, &minor));
  EXPECT_EQ(minor, 23);
  EXPECT_TRUE(ParseGoVersion("go1.27.0", &major, &minor));
  EXPECT_EQ(minor, 27);
  EXPECT_TRUE(ParseGoVersion("go1.21.3 X:boringcrypto", &major, &minor));
  EXPECT_EQ(minor, 21);
  EXPECT_FALSE(ParseGoVersion("", &major, &minor));
  EXPECT_FALSE(ParseGoVersion("go", &major, &minor));
  EXPECT_FALSE(ParseGoVersion("gox.y", &major, &minor));
  EXPECT_FALSE(ParseGoVersion("go1.", &major, &minor));
  EXPECT_FALSE(ParseGoVersion("go99999999999999999999.1", &major, &minor));
}

}  // namespace
}  // namespace sb::sym
