// Build ids from an executable's first page (what a core holds of it): this test binary's own
// first page gives the same GNU build id that ElfFile reads from the whole file.
#include "coredump/build_id_note.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "symbolizer/elf_file.h"

namespace sb::coredump {
namespace {

TEST(BuildIdNote, FirstPageOfThisBinary) {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::string page(4096, '\0');
  in.read(page.data(), page.size());
  auto ids = BuildIdsFromHeaderPage(page);
  ASSERT_TRUE(ids.ok()) << ids.error();
  auto elf = sym::ElfFile::Open("/proc/self/exe");
  ASSERT_TRUE(elf.ok());
  ASSERT_FALSE((*elf)->BuildId().empty()) << "test binary built without a build id";
  EXPECT_EQ(ids->gnu, (*elf)->BuildId());
  EXPECT_EQ(CompareBuildIds(*ids, BuildIds{(*elf)->BuildId(), (*elf)->GoBuildId()}), "");
}

TEST(BuildIdNote, MismatchIsNamed) {
  std::string diff = CompareBuildIds(BuildIds{"", "abc/def"}, BuildIds{"", "xyz/uvw"});
  EXPECT_EQ(diff, "the core's executable has Go build id abc/def, the binary xyz/uvw");
  EXPECT_EQ(CompareBuildIds(BuildIds{"aa", ""}, BuildIds{"aa", "x"}), "");
  EXPECT_EQ(CompareBuildIds(BuildIds{}, BuildIds{"aa", "x"}), "");
  EXPECT_EQ(CompareBuildIds(BuildIds{"aa", ""}, BuildIds{"", ""}), "");  // nothing to compare
  EXPECT_EQ(CompareBuildIds(BuildIds{"aa", ""}, BuildIds{"", "x"}),
            "the core's executable has GNU build id aa, the binary only a Go build id x");
}

TEST(BuildIdNote, NotAnElfPage) {
  EXPECT_FALSE(BuildIdsFromHeaderPage("").ok());
  EXPECT_FALSE(BuildIdsFromHeaderPage(std::string(4096, 'x')).ok());
  // An ELF header whose program headers point past the page: no ids, no error, no overread.
  std::string p(64, '\0');
  p.replace(0, 6, "\x7f" "ELF\x02\x01");
  p[32] = static_cast<char>(0xf0);  // e_phoff = 0xf0
  p[54] = 56;                       // e_phentsize
  p[56] = 9;                        // e_phnum
  auto ids = BuildIdsFromHeaderPage(p);
  ASSERT_TRUE(ids.ok());
  EXPECT_TRUE(ids->empty());
}

}  // namespace
}  // namespace sb::coredump
