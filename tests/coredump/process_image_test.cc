// ProcessImage: the core's memory first, then backing files, assembled piecewise.
#include "coredump/core_file.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "tests/coredump/core_test_util.h"

namespace sb::coredump {
namespace {

namespace fs = std::filesystem;
using test::BuildMiniCore;
using test::MiniCore;
using test::MiniLoad;
using test::MiniThread;

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    s[i] = static_cast<char>(x >> 16);
  }
  return s;
}

// Compares [addr, addr+len) read through the image with the file bytes at file_off, in one
// read and in chunks of several sizes (so reads start and end inside pieces).
void ExpectImageEqualsFile(const ProcessImage& img, uint64_t addr, std::string_view file_bytes) {
  std::string buf(file_bytes.size(), '\0');
  ASSERT_TRUE(img.Read(addr, buf.data(), buf.size())) << std::hex << "0x" << addr;
  ASSERT_TRUE(buf == file_bytes);
  for (size_t chunk : {1, 7, 4096, 5000}) {
    for (size_t off = 0; off < file_bytes.size(); off += chunk * 13 + 1) {
      size_t n = std::min(chunk, file_bytes.size() - off);
      std::string part(n, '\0');
      ASSERT_TRUE(img.Read(addr + off, part.data(), n));
      ASSERT_TRUE(part == file_bytes.substr(off, n)) << std::hex << "0x" << addr + off;
    }
  }
}

// ---- synthetic -------------------------------------------------------------------------------

TEST(ProcessImageMiniTest, CoreFirstThenFilePiecewise) {
  std::string dir = test::MakeTempDir("image");
  // Backing files are opened with ElfFile (only their bytes are used), so the "library" is
  // an ELF header followed by a pattern: 3 pages and 100 bytes.
  std::string file = Pattern(3 * 4096 + 100, 1);
  std::string elf_header = BuildMiniCore(MiniCore{});
  std::memcpy(file.data(), elf_header.data(), elf_header.size());
  test::WriteWholeFile(dir + "/lib.so", file);
  // It is mapped at 0x10000 from file offset 4096, 3 pages of address space (the last page
  // only partly backed: the file ends 100 bytes into it). The core has the first 256 bytes
  // of the mapping (as the kernel dumps the ELF header page), holding different bytes, and
  // an unrelated load right after the mapping.
  MiniCore m;
  m.threads.push_back(MiniThread{1, 0, {}, {}, 0});
  std::string core_head(256, 'C');
  m.loads.push_back(MiniLoad{0x10000, 0x3000, PF_R | PF_X, core_head});
  m.loads.push_back(MiniLoad{0x13000, 0, PF_R | PF_W, std::string(4096, 'D')});
  auto core = CoreFile::FromBytes(BuildMiniCore(m), "mini");
  ASSERT_TRUE(core.ok()) << core.error();

  ProcessImage img(*core, {BackingFile{dir + "/lib.so", 0x10000, 0x13000, 4096}});
  // Core bytes win where the core has them.
  char c;
  ASSERT_TRUE(img.Read(0x10000, &c, 1));
  EXPECT_EQ(c, 'C');
  // A read spanning core -> file -> (file ends) fails; one ending before the file ends works.
  std::string buf(0x2000, '\0');
  ASSERT_TRUE(img.Read(0x10000, buf.data(), 0x2000));
  EXPECT_EQ(buf.substr(0, 256), core_head);
  EXPECT_TRUE(buf.substr(256) == std::string_view(file).substr(4096 + 256, 0x2000 - 256));
  // The file is 3*4096+100 bytes: offset 4096 + 0x2000 + 100 is its end.
  std::string tail(100, '\0');
  ASSERT_TRUE(img.Read(0x12000, tail.data(), 100));
  EXPECT_TRUE(tail == std::string_view(file).substr(4096 + 0x2000, 100));
  EXPECT_FALSE(img.Read(0x12000, tail.data(), 101));
  EXPECT_FALSE(img.Read(0x12064, &c, 1));  // past the file: bytes the process could not read
  // file -> core: the mapping's last backed bytes then the next core load.
  std::string across(8, '\0');
  EXPECT_FALSE(img.Read(0x12ffc, across.data(), 8));  // 0x12064.. is missing
  ASSERT_TRUE(img.Read(0x13000, across.data(), 8));
  EXPECT_EQ(across, std::string(8, 'D'));
  // Not mapped at all.
  EXPECT_FALSE(img.Read(0x9000, &c, 1));
  EXPECT_FALSE(img.Read(~0ull - 2, across.data(), 8));
  EXPECT_TRUE(img.Read(0x9000, &c, 0));

  // A backing file that does not exist only loses its own bytes.
  ProcessImage img2(*core, {BackingFile{dir + "/missing", 0x10000, 0x13000, 4096}});
  EXPECT_TRUE(img2.Read(0x10000, buf.data(), 256));
  EXPECT_FALSE(img2.Read(0x10000, buf.data(), 257));
}

TEST(ProcessImageMiniTest, SegmentsOfAlignsToPages) {
  const auto& live = test::GetAmd64Core();
  ASSERT_EQ(live.error, "");
  auto exe = sym::ElfFile::Open(live.binary);
  ASSERT_TRUE(exe.ok()) << exe.error();
  auto segs = ProcessImage::SegmentsOf(**exe, live.binary, 0x1000000);
  size_t loads = 0;
  for (const sym::ElfSegment& s : (*exe)->segments()) loads += s.type == PT_LOAD && s.filesz > 0;
  ASSERT_EQ(segs.size(), loads);
  size_t i = 0;
  for (const sym::ElfSegment& s : (*exe)->segments()) {
    if (s.type != PT_LOAD || s.filesz == 0) continue;
    const BackingFile& b = segs[i++];
    EXPECT_EQ(b.path, live.binary);
    EXPECT_EQ(b.start % 4096, 0u);
    EXPECT_EQ(b.offset % 4096, 0u);
    EXPECT_EQ(b.start, (s.vaddr + 0x1000000) & ~4095ull);
    EXPECT_EQ(b.end, s.vaddr + 0x1000000 + s.filesz);
    EXPECT_EQ(b.offset, s.offset & ~4095ull);
  }
}

// ---- real cores --------------------------------------------------------------------------------

TEST(ProcessImageAmd64Test, TextFromCoreAndFromNtFileMappings) {
  const auto& live = test::GetAmd64Core();
  ASSERT_EQ(live.error, "");
  auto core = CoreFile::Open(live.core);
  ASSERT_TRUE(core.ok()) << core.error();
  auto exe = sym::ElfFile::Open(live.binary);
  ASSERT_TRUE(exe.ok()) << exe.error();
  std::vector<BackingFile> files;
  for (const CoreFileMapping& m : (*core)->mappings()) {
    files.push_back(BackingFile{m.path, m.start, m.end, m.offset});
  }
  ProcessImage img(*core, files);
  for (const char* name : {".text", ".rodata", ".typelink", ".gopclntab"}) {
    SCOPED_TRACE(name);
    const sym::ElfSection* s = (*exe)->FindSection(name);
    ASSERT_NE(s, nullptr);
    ExpectImageEqualsFile(img, s->addr, (*exe)->SectionData(*s));
  }
  // With no core pieces at all the NT_FILE mappings alone give the same text: build a
  // core that holds only the threads, and check the image then reads from the file.
  MiniCore m;
  m.threads.push_back(MiniThread{1, 0, {}, {}, 0});
  auto empty = CoreFile::FromBytes(BuildMiniCore(m), "threads-only");
  ASSERT_TRUE(empty.ok()) << empty.error();
  ProcessImage files_only(*empty, files);
  const sym::ElfSection* text = (*exe)->FindSection(".text");
  ASSERT_NE(text, nullptr);
  ExpectImageEqualsFile(files_only, text->addr, (*exe)->SectionData(*text));
  // Stacks are only in the core.
  for (const CoreThread& t : (*core)->threads()) {
    uint64_t w;
    EXPECT_TRUE(img.Read(t.sp, &w, 8));
    EXPECT_FALSE(files_only.Read(t.sp, &w, 8));
  }
}

TEST(ProcessImageArm64Test, QemuCoreTextFromTheBinary) {
  const auto& q = test::GetArm64Core();
  ASSERT_EQ(q.error, "");
  auto core = CoreFile::Open(q.core);
  ASSERT_TRUE(core.ok()) << core.error();
  auto exe = sym::ElfFile::Open(q.binary);
  ASSERT_TRUE(exe.ok()) << exe.error();
  ASSERT_TRUE((*core)->mappings().empty());
  // Without backing files the text is missing (qemu writes text PT_LOADs with filesz 0).
  ProcessImage bare(*core, {});
  uint32_t insn;
  uint64_t entry = (*exe)->entry();
  EXPECT_FALSE(bare.Read(entry, &insn, 4));
  // With the binary's segments (a static non-PIE Go binary: bias 0) it is there.
  ProcessImage img(*core, ProcessImage::SegmentsOf(**exe, q.binary, 0));
  ASSERT_EQ((*core)->Auxv(AT_ENTRY), entry);
  auto want = (*exe)->ReadVaddr(entry, 64);
  ASSERT_TRUE(want.ok()) << want.error();
  ExpectImageEqualsFile(img, entry, *want);
  for (const char* name : {".text", ".rodata", ".gopclntab"}) {
    SCOPED_TRACE(name);
    const sym::ElfSection* s = (*exe)->FindSection(name);
    ASSERT_NE(s, nullptr);
    ExpectImageEqualsFile(img, s->addr, (*exe)->SectionData(*s));
  }
  // Every thread's pc reads as an instruction of the binary, and its stack is in the core.
  for (const CoreThread& t : (*core)->threads()) {
    auto w = (*exe)->ReadVaddr(t.pc, 4);
    ASSERT_TRUE(w.ok()) << w.error();
    ASSERT_TRUE(img.Read(t.pc, &insn, 4));
    EXPECT_EQ(std::string_view(reinterpret_cast<char*>(&insn), 4), *w);
    uint64_t word;
    EXPECT_TRUE(img.Read(t.sp, &word, 8)) << std::hex << "sp 0x" << t.sp;
  }
}

}  // namespace
}  // namespace sb::coredump
