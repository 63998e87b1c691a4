// ElfFile: checked against readelf/objcopy/go tool on real binaries, and fed malformed images.
#include "symbolizer/elf_file.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "tests/symbolizer/test_util.h"

namespace sb::sym {
namespace {

using test::BuildGoPrograms;
using test::MakeMiniElf;
using test::MiniSegment;
using test::Quote;
using test::RunCommand;

std::shared_ptr<ElfFile> OpenOrDie(const std::string& path) {
  auto f = ElfFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.error();
  return f.ok() ? *f : nullptr;
}

TEST(ElfFileTest, GoExecutableSectionsSegmentsSymbols) {
  const auto& progs = BuildGoPrograms();
  ASSERT_TRUE(progs.error.empty()) << progs.error;
  auto elf = OpenOrDie(progs.plain);
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->arch(), Arch::kAmd64);
  EXPECT_STREQ(ArchName(elf->arch()), "amd64");
  EXPECT_EQ(elf->type(), ET_EXEC);

  // Section names and addresses equal readelf's.
  auto r = RunCommand("readelf -S -W " + Quote(progs.plain));
  ASSERT_EQ(r.status, 0);
  for (const char* name : {".text", ".rodata", ".gopclntab", ".go.buildinfo", ".noptrdata"}) {
    const ElfSection* s = elf->FindSection(name);
    ASSERT_NE(s, nullptr) << name;
    char addr[32];
    snprintf(addr, sizeof(addr), "%016llx", static_cast<unsigned long long>(s->addr));
    std::string needle = std::string(name) + " ";
    size_t pos = r.out.find(needle);
    ASSERT_NE(pos, std::string::npos) << name;
    EXPECT_NE(r.out.substr(pos, 80).find(addr), std::string::npos) << name << " " << addr;
  }

  // .text through the segments equals the section bytes; offsets round-trip.
  const ElfSection* text = elf->FindSection(".text");
  auto via_vaddr = elf->ReadVaddr(text->addr, 64);
  ASSERT_TRUE(via_vaddr.ok()) << via_vaddr.error();
  EXPECT_EQ(*via_vaddr, elf->SectionData(*text).substr(0, 64));
  auto off = elf->VaddrToFileOffset(text->addr + 100);
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(*off, text->offset + 100);
  EXPECT_EQ(elf->FileOffsetToVaddr(*off), text->addr + 100);
  EXPECT_FALSE(elf->ReadVaddr(0x10, 4).ok());  // below every PT_LOAD
  EXPECT_FALSE(elf->VaddrToFileOffset(~0ull).has_value());

  // Symbols: main.work as nm reports it.
  auto nm = RunCommand("nm " + Quote(progs.plain) + " | grep ' main.work$'");
  ASSERT_EQ(nm.status, 0) << nm.out;
  uint64_t nm_value = std::stoull(nm.out.substr(0, 16), nullptr, 16);
  bool found = false;
  for (const ElfSymbol& s : elf->Symbols()) {
    if (s.name == "main.work") {
      found = true;
      EXPECT_EQ(s.value, nm_value);
      EXPECT_EQ(s.type, STT_FUNC);
      EXPECT_GT(s.size, 0u);
    }
  }
  EXPECT_TRUE(found);

  // Go build id note equals `go tool buildid`.
  auto bid = RunCommand(test::GoEnv() + Quote(SB_GO_EXECUTABLE) + " tool buildid " +
                 Quote(progs.plain));
  ASSERT_EQ(bid.status, 0);
  while (!bid.out.empty() && bid.out.back() == '\n') bid.out.pop_back();
  EXPECT_EQ(elf->GoBuildId(), bid.out);
}

TEST(ElfFileTest, StrippedHasNoSymbolsButSameTables) {
  const auto& progs = BuildGoPrograms();
  ASSERT_TRUE(progs.error.empty()) << progs.error;
  auto elf = OpenOrDie(progs.stripped);
  ASSERT_NE(elf, nullptr);
  EXPECT_TRUE(elf->Symbols().empty());
  EXPECT_NE(elf->FindSection(".gopclntab"), nullptr);
  EXPECT_FALSE(elf->GoBuildId().empty());
}

TEST(ElfFileTest, PieIsDynWithRelroPclntab) {
  const auto& progs = BuildGoPrograms();
  ASSERT_TRUE(progs.error.empty()) << progs.error;
  auto elf = OpenOrDie(progs.pie);
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->type(), ET_DYN);
  // Go puts the PIE pclntab in a writable relro section: the pclntab finder must look there.
  EXPECT_NE(elf->FindSection(".data.rel.ro.gopclntab"), nullptr);
}

TEST(ElfFileTest, CompressedDebugSectionsMatchObjcopy) {
  const auto& progs = BuildGoPrograms();
  ASSERT_TRUE(progs.error.empty()) << progs.error;
  auto elf = OpenOrDie(progs.plain);
  ASSERT_NE(elf, nullptr);
  std::string dir = test::MakeTempDir("objcopy");
  std::string plain = dir + "/decompressed";
  auto r = RunCommand("objcopy --decompress-debug-sections " + Quote(progs.plain) + " " + Quote(plain));
  ASSERT_EQ(r.status, 0) << r.out;
  auto ref = OpenOrDie(plain);
  ASSERT_NE(ref, nullptr);
  int compared = 0, compressed = 0;
  for (const ElfSection& s : elf->sections()) {
    if (s.name.rfind(".debug_", 0) != 0) continue;
    // Go 1.19 compresses each DWARF section unless compression would not shrink it.
    if (s.flags & SHF_COMPRESSED) compressed++;
    auto got = elf->SectionContents(s);
    ASSERT_TRUE(got.ok()) << got.error();
    const ElfSection* rs = ref->FindSection(s.name);
    ASSERT_NE(rs, nullptr);
    EXPECT_EQ(rs->flags & SHF_COMPRESSED, 0u);
    EXPECT_EQ(*got, ref->SectionData(*rs)) << s.name;
    compared++;
  }
  EXPECT_GE(compared, 5);
  EXPECT_GE(compressed, 4);
}

TEST(ElfFileTest, NativeBinaryGnuBuildIdMatchesReadelf) {
  auto elf = OpenOrDie("/bin/true");
  ASSERT_NE(elf, nullptr);
  auto r = RunCommand("readelf -n /bin/true | sed -n 's/.*Build ID: *//p'");
  ASSERT_EQ(r.status, 0);
  while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(elf->BuildId(), r.out);
  // Dynamic symbols of a stripped distro binary still resolve names.
  bool any_named = false;
  for (const ElfSymbol& s : elf->Symbols()) any_named |= !s.name.empty();
  EXPECT_TRUE(any_named);
}

TEST(ElfFileTest, CoreWithoutSectionsOpensAndReadsNotes) {
  // A note "CORE"/NT_PRSTATUS with 8 bytes of payload and one PT_LOAD.
  std::string note;
  auto put32 = [&](uint32_t v) { note.append(reinterpret_cast<char*>(&v), 4); };
  put32(5);  // namesz incl. NUL
  put32(8);  // descsz
  put32(NT_PRSTATUS);
  note += std::string("CORE\0\0\0\0", 8);  // name padded to 4
  note += "ABCDEFGH";
  std::string image = MakeMiniElf(ET_CORE, {{PT_NOTE, PF_R, 0, note},
                                            {PT_LOAD, PF_R | PF_W, 0x7000, "hello world!"}});
  auto elf = ElfFile::FromBytes(image, "core");
  ASSERT_TRUE(elf.ok()) << elf.error();
  EXPECT_EQ((*elf)->type(), ET_CORE);
  EXPECT_TRUE((*elf)->sections().empty());
  auto notes = (*elf)->Notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].name, "CORE");
  EXPECT_EQ(notes[0].type, static_cast<uint32_t>(NT_PRSTATUS));
  EXPECT_EQ(notes[0].desc, "ABCDEFGH");
  auto bytes = (*elf)->ReadVaddr(0x7006, 5);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, "world");
  EXPECT_FALSE((*elf)->ReadVaddr(0x7006, 7).ok());  // runs past the segment
  EXPECT_TRUE((*elf)->BuildId().empty());
}

TEST(ElfFileTest, MalformedInputsGiveErrors) {
  EXPECT_FALSE(ElfFile::FromBytes("", "empty").ok());
  EXPECT_FALSE(ElfFile::FromBytes("\x7f" "ELF", "short").ok());
  std::string good = MakeMiniElf(ET_EXEC, {{PT_LOAD, PF_R, 0x1000, "abc"}});
  ASSERT_TRUE(ElfFile::FromBytes(good, "good").ok());

  std::string elf32 = good;
  elf32[EI_CLASS] = ELFCLASS32;
  auto r32 = ElfFile::FromBytes(elf32, "elf32");
  ASSERT_FALSE(r32.ok());
  EXPECT_NE(r32.error().find("ELF64"), std::string::npos) << r32.error();

  std::string be = good;
  be[EI_DATA] = ELFDATA2MSB;
  auto rbe = ElfFile::FromBytes(be, "be");
  ASSERT_FALSE(rbe.ok());
  EXPECT_NE(rbe.error().find("little-endian"), std::string::npos) << rbe.error();

  // Program header table pointing past the end.
  std::string badph = good;
  Elf64_Ehdr eh;
  std::memcpy(&eh, badph.data(), sizeof(eh));
  eh.e_phoff = ~0ull - 8;
  std::memcpy(badph.data(), &eh, sizeof(eh));
  EXPECT_FALSE(ElfFile::FromBytes(badph, "badph").ok());

  // Section header table past the end, and a huge count.
  std::string badsh = good;
  std::memcpy(&eh, badsh.data(), sizeof(eh));
  eh.e_shoff = badsh.size() - 10;
  eh.e_shnum = 3;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  std::memcpy(badsh.data(), &eh, sizeof(eh));
  EXPECT_FALSE(ElfFile::FromBytes(badsh, "badsh").ok());

  // Truncating a real binary anywhere never crashes; past the headers it still opens.
  const auto& progs = BuildGoPrograms();
  ASSERT_TRUE(progs.error.empty()) << progs.error;
  auto whole = ElfFile::Open(progs.plain);
  ASSERT_TRUE(whole.ok());
  std::string bytes((*whole)->bytes());
  for (size_t cut : {size_t{10}, size_t{63}, size_t{64}, size_t{200}, bytes.size() / 2,
                     bytes.size() - 1}) {
    auto t = ElfFile::FromBytes(bytes.substr(0, cut), "cut");
    if (!t.ok()) continue;
    for (const ElfSection& s : (*t)->sections()) {
      (void)(*t)->SectionData(s);
      (void)(*t)->SectionContents(s);
    }
    (void)(*t)->Symbols();
    (void)(*t)->Notes();
  }
}

TEST(ElfFileTest, OpenMissingFileNamesPath) {
  auto r = ElfFile::Open("/nonexistent/sb-binary");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("/nonexistent/sb-binary"), std::string::npos);
}

}  // namespace
}  // namespace sb::sym
