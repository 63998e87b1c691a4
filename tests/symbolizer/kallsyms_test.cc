// KernelSymbols: /proc/kallsyms text parsed, sorted, looked up; modules; hidden addresses.
#include "symbolizer/kallsyms.h"

#include <gtest/gtest.h>

#include "tests/symbolizer/test_util.h"

namespace sb::sym {
namespace {

// Out of order as /proc/kallsyms is for modules, with data symbols, aliases and a module.
constexpr const char* kText =
    "ffffffff81000000 T _text\n"
    "ffffffff81000000 t startup_64_alias\n"
    "ffffffff81200000 T vfs_write\n"
    "ffffffff81200400 T ksys_write\n"
    "ffffffff82000000 D some_data\n"
    "ffffffff81200300 t __fdget_pos\n"
    "ffffffffc0a01000 t ext4_file_write_iter\t[ext4]\n"
    "ffffffffc0a00000 T ext4_sync_file\t[ext4]\n"
    "ffffffffc0b00000 t nft_do_chain\t[nf_tables]\n"
    "not a line\n"
    "ffffffff81300000 W weak_fn\n";

TEST(KallsymsTest, ParsesAndLooksUpSorted) {
  auto k = KernelSymbols::Parse(kText);
  ASSERT_TRUE(k.ok()) << k.error();
  EXPECT_EQ(k->size(), 8u);  // aliases merged, data symbol and junk line dropped
  auto s = k->Find(0xffffffff81200010);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "vfs_write");
  EXPECT_EQ(s->module, "");
  EXPECT_EQ(s->address, 0xffffffff81200000u);
  EXPECT_EQ(k->Find(0xffffffff81200300)->name, "__fdget_pos");  // exact start
  EXPECT_EQ(k->Find(0xffffffff812003ff)->name, "__fdget_pos");
  EXPECT_EQ(k->Find(0xffffffff81200400)->name, "ksys_write");
  EXPECT_EQ(k->Find(0xffffffff81000004)->name, "_text");  // the global alias wins
  EXPECT_EQ(k->Find(0xffffffff81300010)->name, "weak_fn");
  EXPECT_FALSE(k->Find(0xffffffff80ffffff).has_value());  // below the first symbol
  EXPECT_FALSE(k->Find(0).has_value());
}

TEST(KallsymsTest, ModuleNames) {
  auto k = KernelSymbols::Parse(kText);
  ASSERT_TRUE(k.ok()) << k.error();
  auto s = k->Find(0xffffffffc0a01010);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "ext4_file_write_iter");
  EXPECT_EQ(s->module, "ext4");
  EXPECT_EQ(k->Find(0xffffffffc0a00020)->module, "ext4");
  EXPECT_EQ(k->Find(0xffffffffc0b00001)->module, "nf_tables");
}

TEST(KallsymsTest, GapsAndTheEndResolveToNothing) {
  auto k = KernelSymbols::Parse(kText);
  ASSERT_TRUE(k.ok()) << k.error();
  // Between the kernel image and the modules: far past weak_fn, not inside it.
  EXPECT_FALSE(k->Find(0xffffffffa0000000).has_value());
  // The last symbol gets a page.
  EXPECT_TRUE(k->Find(0xffffffffc0b00fff).has_value());
  EXPECT_FALSE(k->Find(0xffffffffc0b01000).has_value());
  EXPECT_EQ(k->limit(), 0xffffffffc0b01000u);
  EXPECT_EQ(k->start(), 0xffffffff81000000u);
}

TEST(KallsymsTest, HiddenAddressesSaySo) {
  // kernel.kptr_restrict=1 (or no CAP_SYSLOG): every address reads as zero.
  auto k = KernelSymbols::Parse("0000000000000000 T _text\n0000000000000000 T vfs_write\n"
                                "0000000000000000 t ext4_sync_file\t[ext4]\n");
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().find("kptr_restrict"), std::string::npos) << k.error();
  EXPECT_EQ(k.error().find('\n'), std::string::npos);
  auto empty = KernelSymbols::Parse("");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().find("no kernel code symbols"), std::string::npos) << empty.error();
  auto missing = KernelSymbols::Load("/nonexistent/kallsyms");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/kallsyms"), std::string::npos) << missing.error();
}

TEST(KallsymsTest, ThisHostsKallsyms) {
  auto k = KernelSymbols::Load();
  if (!k.ok()) GTEST_SKIP() << "this host's /proc/kallsyms is not readable with addresses: " << k.error();
  EXPECT_GT(k->size(), 10000u);
  // vfs_write's own address resolves to it.
  auto grep = test::RunCommand("grep -m1 ' [Tt] vfs_write$' /proc/kallsyms");
  ASSERT_EQ(grep.status, 0) << "no vfs_write in /proc/kallsyms";
  uint64_t a = std::stoull(grep.out.substr(0, grep.out.find(' ')), nullptr, 16);
  auto s = k->Find(a + 1);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "vfs_write");
}

}  // namespace
}  // namespace sb::sym
