#include "unwinder/process_maps.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "symbolizer/elf_file.h"

namespace sb::unwinder {
namespace {

constexpr char kMaps[] =
    "00400000-00401000 r--p 00000000 fe:01 1234 /usr/bin/demo\n"
    "00401000-004cc000 r-xp 00001000 fe:01 1234 /usr/bin/demo\n"
    "c000000000-c000400000 rw-p 00000000 00:00 0 \n"
    "7f0000000000-7f0000001000 r-xp 00002000 fe:01 99 /tmp/old lib.so (deleted)\n"
    "7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0                          [vdso]\n"
    "garbage line\n";

TEST(ProcessMaps, ParsesPathsPermsAndDeletedFiles) {
  auto maps = ParseProcessMaps(kMaps);
  ASSERT_EQ(maps.size(), 5u);
  EXPECT_EQ(maps[1].start, 0x401000u);
  EXPECT_EQ(maps[1].offset, 0x1000u);
  EXPECT_EQ(maps[1].inode, 1234u);
  EXPECT_TRUE(maps[1].executable());
  EXPECT_EQ(maps[1].path, "/usr/bin/demo");
  EXPECT_EQ(maps[2].path, "");
  EXPECT_FALSE(maps[2].file_backed());
  EXPECT_EQ(maps[3].path, "/tmp/old lib.so");  // spaces kept, " (deleted)" dropped
  EXPECT_EQ(maps[4].path, "[vdso]");
  EXPECT_EQ(FindMapping(maps, 0x401234), &maps[1]);
  EXPECT_EQ(FindMapping(maps, 0x10), nullptr);
}

TEST(ProcessMaps, OwnProcessHasAnExecutableMappingOfItsBinary) {
  auto maps = ReadProcessMaps(getpid());
  ASSERT_TRUE(maps.ok()) << maps.error();
  bool found = false;
  for (const auto& m : *maps) found |= m.executable() && m.file_backed();
  EXPECT_TRUE(found);
  auto missing = ReadProcessMaps(999999999);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("999999999"), std::string::npos);
}

// A PIE mapped at 0x555555554000: the bias is the mapping address minus the link address.
TEST(ProcessMaps, LoadBiasOfPie) {
  auto elf = sym::ElfFile::Open(std::string(SB_TESTDATA_BIN) + "/demo-pie");
  ASSERT_TRUE(elf.ok()) << elf.error();
  const sym::ElfSegment* text = nullptr;
  for (const auto& s : (*elf)->segments())
    if (s.type == 1 && (s.flags & 1)) text = &s;
  ASSERT_NE(text, nullptr);
  MemoryMapping m;
  m.start = 0x555555554000 + (text->vaddr & ~0xfffull);
  m.end = m.start + 0x1000;
  m.offset = text->offset & ~0xfffull;
  auto bias = LoadBias(**elf, m);
  ASSERT_TRUE(bias);
  EXPECT_EQ(*bias, 0x555555554000u);
  EXPECT_EQ(*RuntimeToLinkAddress(**elf, m, m.start + 0x10), (text->vaddr & ~0xfffull) + 0x10);
}

}  // namespace
}  // namespace sb::unwinder
