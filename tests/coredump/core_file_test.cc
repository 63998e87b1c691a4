// CoreFile on real cores made at test time (gcore on amd64, qemu-aarch64 on arm64), on
// truncated copies of them, on files that are not cores, and on synthetic cores.
#include "coredump/core_file.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <set>

#include "tests/coredump/core_test_util.h"

namespace sb::coredump {
namespace {

namespace fs = std::filesystem;
using test::BuildMiniCore;
using test::MiniCore;
using test::MiniLoad;
using test::MiniThread;

const CoreFileMapping* FindMapping(const CoreFile& core, uint64_t addr) {
  for (const CoreFileMapping& m : core.mappings()) {
    if (addr >= m.start && addr < m.end) return &m;
  }
  return nullptr;
}

const sym::ElfSegment* FindLoad(const sym::ElfFile& elf, uint64_t addr) {
  for (const sym::ElfSegment& s : elf.segments()) {
    if (s.type == PT_LOAD && addr >= s.vaddr && addr - s.vaddr < std::max(s.memsz, s.filesz)) return &s;
  }
  return nullptr;
}

// ---- amd64: gcore of a live Go program ----------------------------------------------------

TEST(CoreFileAmd64Test, ThreadsMatchTheLiveProcess) {
  const auto& live = test::GetAmd64Core();
  ASSERT_EQ(live.error, "");
  auto core = CoreFile::Open(live.core);
  ASSERT_TRUE(core.ok()) << core.error();
  const CoreFile& c = **core;
  EXPECT_EQ(c.arch(), sym::Arch::kAmd64);
  EXPECT_EQ(c.pid(), live.pid);
  EXPECT_EQ(c.ExecutableName(), "coretest");
  ASSERT_EQ(c.threads().size(), live.tids.size());
  std::vector<uint32_t> lwps;
  for (const CoreThread& t : c.threads()) lwps.push_back(t.lwp);
  std::sort(lwps.begin(), lwps.end());
  EXPECT_EQ(lwps, live.tids);
  EXPECT_GE(c.threads().size(), 3u);
  ::testing::Test::RecordProperty("threads", static_cast<int>(c.threads().size()));
  ::testing::Test::RecordProperty("gcore_seconds", std::to_string(live.gcore_seconds));
  ::testing::Test::RecordProperty("core_bytes", std::to_string(fs::file_size(live.core)));
}

TEST(CoreFileAmd64Test, RegistersArePlausibleAndMatchGdb) {
  const auto& live = test::GetAmd64Core();
  ASSERT_EQ(live.error, "");
  auto core = CoreFile::Open(live.core);
  ASSERT_TRUE(core.ok()) << core.error();
  const CoreFile& c = **core;
  std::string binary = fs::canonical(live.binary).string();
  ASSERT_EQ(live.gdb_regs.size(), c.threads().size()) << "gdb printed registers of other threads";
  int in_binary = 0;
  for (const CoreThread& t : c.threads()) {
    SCOPED_TRACE("lwp " + std::to_string(t.lwp));
    ASSERT_EQ(t.regs.size(), 27u);
    EXPECT_EQ(t.pc, t.regs[16]);
    EXPECT_NE(t.sp, 0u);
    EXPECT_TRUE(t.has_tls);
    EXPECT_NE(t.tls_base, 0u);
    // gdb read the registers with ptrace in its own attach to the stopped process.
    auto g = live.gdb_regs.find(t.lwp);
    ASSERT_NE(g, live.gdb_regs.end());
    EXPECT_EQ(t.tls_base, g->second.at("fs_base"));
    EXPECT_EQ(t.pc, g->second.at("rip"));
    EXPECT_EQ(t.sp, g->second.at("rsp"));
    // The pc is in the executable part of the binary, or in the vDSO (nanotime, ...).
    if (t.pc >= live.vdso_start && t.pc < live.vdso_end) continue;
    const CoreFileMapping* m = FindMapping(c, t.pc);
    ASSERT_NE(m, nullptr) << std::hex << "pc 0x" << t.pc << " in no NT_FILE mapping";
    EXPECT_EQ(m->path, binary);
    const sym::ElfSegment* seg = FindLoad(c.elf(), t.pc);
    ASSERT_NE(seg, nullptr);
    EXPECT_NE(seg->flags & PF_X, 0u) << std::hex << "pc 0x" << t.pc << " not in an executable mapping";
    in_binary++;
  }
  EXPECT_GT(in_binary, 0);
  // The thread gcore reports first is the main thread; gcore does not signal anyone.
  EXPECT_EQ(c.threads().front().lwp, live.pid);
}

TEST(CoreFileAmd64Test, FileMappingsAndAuxv) {
  const auto& live = test::GetAmd64Core();
  ASSERT_EQ(live.error, "");
  auto core = CoreFile::Open(live.core);
  ASSERT_TRUE(core.ok()) << core.error();
  const CoreFile& c = **core;
  std::string binary = fs::canonical(live.binary).string();
  auto exe = sym::ElfFile::Open(binary);
  ASSERT_TRUE(exe.ok()) << exe.error();
  bool found = false;
  for (const CoreFileMapping& m : c.mappings()) {
    EXPECT_LT(m.start, m.end);
    EXPECT_EQ(m.offset % 4096, 0u);
    if (m.path == binary) {
      found = true;
      EXPECT_LE(m.offset, fs::file_size(binary));
    }
  }
  EXPECT_TRUE(found) << "NT_FILE does not list " << binary;
  ASSERT_TRUE(c.Auxv(AT_SYSINFO_EHDR).has_value());
  EXPECT_EQ(*c.Auxv(AT_SYSINFO_EHDR), live.vdso_start);
  EXPECT_EQ(c.Auxv(AT_ENTRY), (*exe)->entry());
  EXPECT_EQ(c.Auxv(AT_PAGESZ), 4096u);
  EXPECT_FALSE(c.Auxv(0xdeadbeef).has_value());
}

TEST(CoreFileAmd64Test, ReadMemoryHasTextAndStacks) {
  const auto& live = test::GetAmd64Core();
  ASSERT_EQ(live.error, "");
  auto core = CoreFile::Open(live.core);
  ASSERT_TRUE(core.ok()) << core.error();
  const CoreFile& c = **core;
  auto exe = sym::ElfFile::Open(live.binary);
  ASSERT_TRUE(exe.ok()) << exe.error();
  // gcore dumps the text too: it equals the file's bytes.
  const sym::ElfSection* text = (*exe)->FindSection(".text");
  ASSERT_NE(text, nullptr);
  std::string buf(text->size, '\0');
  ASSERT_TRUE(c.ReadMemory(text->addr, buf.data(), buf.size()));
  EXPECT_TRUE(buf == (*exe)->SectionData(*text));
  // Every thread's stack top is readable.
  for (const CoreThread& t : c.threads()) {
    uint64_t word;
    EXPECT_TRUE(c.ReadMemory(t.sp, &word, sizeof(word))) << "lwp " << t.lwp;
  }
  uint64_t word;
  EXPECT_FALSE(c.ReadMemory(0, &word, sizeof(word)));
  EXPECT_FALSE(c.ReadMemory(~0ull - 3, &word, sizeof(word)));
}

// ---- arm64: qemu-user core ---------------------------------------------------------------

TEST(CoreFileArm64Test, QemuCore) {
  const auto& q = test::GetArm64Core();
  ASSERT_EQ(q.error, "");
  auto core = CoreFile::Open(q.core);
  ASSERT_TRUE(core.ok()) << core.error();
  const CoreFile& c = **core;
  auto exe = sym::ElfFile::Open(q.binary);
  ASSERT_TRUE(exe.ok()) << exe.error();
  EXPECT_EQ(c.arch(), sym::Arch::kArm64);
  EXPECT_GT(c.threads().size(), 1u);
  // qemu has threads of its own (RCU) besides the guest's.
  EXPECT_LE(c.threads().size(), q.host_tasks);
  EXPECT_TRUE(c.mappings().empty()) << "qemu cores have no NT_FILE";
  EXPECT_EQ(c.ExecutableName(), "coretest");
  EXPECT_EQ(c.Auxv(AT_ENTRY), (*exe)->entry());
  std::set<uint32_t> lwps;
  int aborted = 0, with_tls = 0;
  for (const CoreThread& t : c.threads()) {
    SCOPED_TRACE("lwp " + std::to_string(t.lwp));
    ASSERT_EQ(t.regs.size(), 34u);
    EXPECT_NE(t.lwp, 0u);
    lwps.insert(t.lwp);
    EXPECT_EQ(t.pc, t.regs[32]);
    EXPECT_EQ(t.sp, t.regs[31]);
    EXPECT_EQ(t.fp, t.regs[29]);
    EXPECT_EQ(t.lr, t.regs[30]);
    EXPECT_NE(t.sp, 0u);
    const sym::ElfSegment* seg = FindLoad(**exe, t.pc);
    ASSERT_NE(seg, nullptr) << std::hex << "pc 0x" << t.pc << " outside the binary";
    EXPECT_NE(seg->flags & PF_X, 0u);
    if (t.signal == SIGABRT) aborted++;
    if (t.has_tls) with_tls++;
  }
  EXPECT_EQ(lwps.size(), c.threads().size());
  EXPECT_GE(aborted, 1);
  // Recorded for the report: qemu 7.2 writes no NT_ARM_TLS.
  ::testing::Test::RecordProperty("arm_tls_threads", with_tls);
  std::cout << "qemu core: " << c.threads().size() << " threads, " << with_tls
            << " with NT_ARM_TLS, host tasks " << q.host_tasks << ", dump " << q.dump_seconds
            << " s, " << fs::file_size(q.core) << " bytes; other core files:";
  for (const std::string& o : q.other_files) std::cout << " " << o;
  std::cout << "\n";
  // The text is not in a qemu core (filesz 0): ReadMemory says so.
  uint32_t insn;
  EXPECT_FALSE(c.ReadMemory((*exe)->entry(), &insn, sizeof(insn)));
}

// ---- broken input --------------------------------------------------------------------------

void ExpectTruncatedCopiesFail(const std::string& path) {
  std::string bytes = test::ReadWholeFile(path);
  ASSERT_GT(bytes.size(), 4096u);
  auto whole = CoreFile::FromBytes(bytes, "whole");
  ASSERT_TRUE(whole.ok()) << whole.error();
  std::vector<size_t> cuts = {0, 1, 4, 16, 63, 64, 65, 100, 1000, 4096, bytes.size() / 3,
                              bytes.size() / 2, bytes.size() - 4096, bytes.size() - 1};
  // Cut inside the notes and inside every tenth load.
  for (const sym::ElfSegment& s : (*whole)->elf().segments()) {
    if (s.type == PT_NOTE) cuts.push_back(s.offset + s.filesz / 2);
  }
  const auto& segs = (*whole)->elf().segments();
  for (size_t i = 0; i < segs.size(); i += 10) {
    if (segs[i].filesz > 1) cuts.push_back(segs[i].offset + segs[i].filesz - 1);
  }
  for (size_t cut : cuts) {
    if (cut >= bytes.size()) continue;
    SCOPED_TRACE("cut at " + std::to_string(cut));
    auto r = CoreFile::FromBytes(bytes.substr(0, cut), "cut");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error(), "");
    if (cut >= 64) {
      EXPECT_NE(r.error().find("truncated"), std::string::npos) << r.error();
    }
  }
  // And through Open, on a file: a cut in the middle of the program headers.
  std::string dir = test::MakeTempDir("truncated");
  test::WriteWholeFile(dir + "/cut", bytes.substr(0, 64 + 56 + 10));
  auto r = CoreFile::Open(dir + "/cut");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("truncated"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find(dir + "/cut"), std::string::npos) << r.error();
}

TEST(CoreFileBrokenTest, TruncatedQemuCore) {
  const auto& q = test::GetArm64Core();
  ASSERT_EQ(q.error, "");
  ExpectTruncatedCopiesFail(q.core);
}

TEST(CoreFileBrokenTest, TruncatedGcoreCore) {
  const auto& live = test::GetAmd64Core();
  ASSERT_EQ(live.error, "");
  // Only the cheap cuts of a ~700 MB file: header, program headers, notes at the end.
  std::string head(1 << 20, '\0');
  {
    std::ifstream in(live.core, std::ios::binary);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    ASSERT_EQ(in.gcount(), static_cast<std::streamsize>(head.size()));
  }
  for (size_t cut : {0, 10, 64, 100, 1000, 1 << 20}) {
    auto r = CoreFile::FromBytes(head.substr(0, cut), "cut");
    ASSERT_FALSE(r.ok()) << cut;
    if (cut >= 64) {
      EXPECT_NE(r.error().find("truncated"), std::string::npos) << r.error();
    }
  }
}

TEST(CoreFileBrokenTest, NotACore) {
  const auto& live = test::GetAmd64Core();
  ASSERT_EQ(live.error, "");
  auto r = CoreFile::Open(live.binary);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("not a core file"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find(live.binary), std::string::npos) << r.error();

  r = CoreFile::FromBytes("hello, world, this is text and not an ELF core file at all......", "text");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("not a core file"), std::string::npos) << r.error();
  r = CoreFile::FromBytes("", "empty");
  ASSERT_FALSE(r.ok());
  r = CoreFile::Open("/nonexistent/core");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("/nonexistent/core"), std::string::npos);

  MiniCore m;
  m.machine = EM_386;
  m.threads.push_back(MiniThread{1, 0, {}, {}, 0});
  r = CoreFile::FromBytes(BuildMiniCore(m), "i386");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("unsupported"), std::string::npos) << r.error();

  std::string elf32 = BuildMiniCore(MiniCore{});
  elf32[EI_CLASS] = ELFCLASS32;
  r = CoreFile::FromBytes(elf32, "elf32");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("unsupported"), std::string::npos) << r.error();

  m = MiniCore{};
  m.e_type = ET_EXEC;
  m.threads.push_back(MiniThread{1, 0, {}, {}, 0});
  r = CoreFile::FromBytes(BuildMiniCore(m), "exec");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("not a core file"), std::string::npos) << r.error();
}

// ---- synthetic cores -------------------------------------------------------------------------

std::vector<uint64_t> Seq(size_t n, uint64_t base) {
  std::vector<uint64_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = base + i;
  return v;
}

TEST(CoreFileMiniTest, Amd64Layout) {
  MiniCore m;
  m.pid = 4242;
  m.fname = "a-very-long-program-name";
  m.threads.push_back(MiniThread{4242, SIGSEGV, Seq(27, 0x100), {}, 0});
  m.threads.push_back(MiniThread{4243, 0, Seq(27, 0x200), {}, 0});
  m.loads.push_back(MiniLoad{0x400000, 0x2000, PF_R | PF_X, std::string(0x1000, 'x')});
  m.loads.push_back(MiniLoad{0x402000, 0, PF_R | PF_W, std::string(0x1000, 'y')});
  m.files.push_back({0x400000, 0x402000, 0, "/bin/prog"});
  m.files.push_back({0x7f0000000000, 0x7f0000003000, 3, "/lib/with space.so"});
  m.auxv = {{AT_PAGESZ, 4096}, {AT_ENTRY, 0x401000}, {AT_SYSINFO_EHDR, 0x7fff0000}};
  auto r = CoreFile::FromBytes(BuildMiniCore(m), "mini");
  ASSERT_TRUE(r.ok()) << r.error();
  const CoreFile& c = **r;
  EXPECT_EQ(c.arch(), sym::Arch::kAmd64);
  EXPECT_EQ(c.pid(), 4242u);
  EXPECT_EQ(c.ExecutableName(), "a-very-long-pro");  // pr_fname is 16 bytes with the NUL
  ASSERT_EQ(c.threads().size(), 2u);
  const CoreThread& t = c.threads()[0];
  EXPECT_EQ(t.lwp, 4242u);
  EXPECT_EQ(t.signal, SIGSEGV);
  EXPECT_EQ(t.pc, 0x100u + 16);
  EXPECT_EQ(t.sp, 0x100u + 19);
  EXPECT_EQ(t.fp, 0x100u + 4);
  EXPECT_EQ(t.tls_base, 0x100u + 21);
  EXPECT_TRUE(t.has_tls);
  EXPECT_EQ(t.lr, 0u);
  EXPECT_EQ(c.threads()[1].lwp, 4243u);
  EXPECT_EQ(c.threads()[1].pc, 0x200u + 16);
  ASSERT_EQ(c.mappings().size(), 2u);
  EXPECT_EQ(c.mappings()[1].path, "/lib/with space.so");
  EXPECT_EQ(c.mappings()[1].offset, 3u * 4096);
  EXPECT_EQ(c.mappings()[1].end, 0x7f0000003000u);
  EXPECT_EQ(c.Auxv(AT_ENTRY), 0x401000u);
  EXPECT_EQ(c.Auxv(AT_SYSINFO_EHDR), 0x7fff0000u);

  char buf[16];
  EXPECT_TRUE(c.ReadMemory(0x400ff8, buf, 16) == false);  // [filesz, memsz) is not in the core
  EXPECT_TRUE(c.ReadMemory(0x400ff0, buf, 16));
  EXPECT_EQ(std::string(buf, 16), std::string(16, 'x'));
  EXPECT_FALSE(c.ReadMemory(0x401000, buf, 1));
  EXPECT_TRUE(c.ReadMemory(0x402ff8, buf, 8));
  EXPECT_FALSE(c.ReadMemory(0x402ff8, buf, 9));
  EXPECT_TRUE(c.ReadMemory(0x123, buf, 0));
}

TEST(CoreFileMiniTest, Arm64TlsBelongsToThePrecedingThread) {
  MiniCore m;
  m.machine = EM_AARCH64;
  m.threads.push_back(MiniThread{10, SIGABRT, Seq(34, 0x1000), 0xabc0, 0});
  m.threads.push_back(MiniThread{11, 0, Seq(34, 0x2000), {}, 0});
  m.threads.push_back(MiniThread{12, 0, Seq(34, 0x3000), 0xdef0, 0});
  m.loads.push_back(MiniLoad{0x10000, 0, PF_R, "abcd"});
  auto r = CoreFile::FromBytes(BuildMiniCore(m), "mini");
  ASSERT_TRUE(r.ok()) << r.error();
  const CoreFile& c = **r;
  EXPECT_EQ(c.arch(), sym::Arch::kArm64);
  EXPECT_EQ(c.pid(), 10u);  // no NT_PRPSINFO: the first thread
  EXPECT_EQ(c.ExecutableName(), "");
  ASSERT_EQ(c.threads().size(), 3u);
  EXPECT_EQ(c.threads()[0].pc, 0x1000u + 32);
  EXPECT_EQ(c.threads()[0].sp, 0x1000u + 31);
  EXPECT_EQ(c.threads()[0].fp, 0x1000u + 29);
  EXPECT_EQ(c.threads()[0].lr, 0x1000u + 30);
  EXPECT_TRUE(c.threads()[0].has_tls);
  EXPECT_EQ(c.threads()[0].tls_base, 0xabc0u);
  EXPECT_FALSE(c.threads()[1].has_tls);
  EXPECT_EQ(c.threads()[1].tls_base, 0u);
  EXPECT_TRUE(c.threads()[2].has_tls);
  EXPECT_EQ(c.threads()[2].tls_base, 0xdef0u);
  EXPECT_TRUE(c.mappings().empty());
  EXPECT_FALSE(c.Auxv(AT_ENTRY).has_value());
}

TEST(CoreFileMiniTest, MalformedNotes) {
  MiniCore m;
  m.threads.push_back(MiniThread{1, 0, {}, {}, 200});  // NT_PRSTATUS too short for the registers
  auto r = CoreFile::FromBytes(BuildMiniCore(m), "short");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("NT_PRSTATUS"), std::string::npos) << r.error();

  m = MiniCore{};  // no thread at all
  r = CoreFile::FromBytes(BuildMiniCore(m), "nothreads");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("no threads"), std::string::npos) << r.error();

  m = MiniCore{};
  m.threads.push_back(MiniThread{1, 0, {}, {}, 0});
  m.files.push_back({0x1000, 0x2000, 0, "/x"});
  std::string bytes = BuildMiniCore(m);
  // Make NT_FILE's count huge.
  size_t pos = bytes.find("/x");
  ASSERT_NE(pos, std::string::npos);
  size_t count_off = pos - 24 - 16;
  uint64_t huge = 1ull << 40;
  std::memcpy(bytes.data() + count_off, &huge, 8);
  r = CoreFile::FromBytes(bytes, "badfile");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("NT_FILE"), std::string::npos) << r.error();

  // A PT_LOAD whose contents lie past the end of the file.
  m = MiniCore{};
  m.threads.push_back(MiniThread{1, 0, {}, {}, 0});
  m.loads.push_back(MiniLoad{0x1000, 0, PF_R, std::string(100, 'z')});
  bytes = BuildMiniCore(m);
  r = CoreFile::FromBytes(bytes.substr(0, bytes.size() - 1), "cutload");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("truncated"), std::string::npos) << r.error();
}

// The fuzz seeds in tests/fuzz/corpus/fuzz_core_file/ are made by BuildMiniCore (no .core
// suffix: .gitignore drops *.core). With
// SB_UPDATE_FUZZ_SEEDS=1 this test rewrites them; otherwise it checks they still parse as
// intended.
TEST(CoreFileMiniTest, FuzzSeeds) {
  MiniCore m;
  m.pid = 7;
  m.fname = "seed";
  m.threads.push_back(MiniThread{7, SIGSEGV, Seq(27, 0x400000), {}, 0});
  m.loads.push_back(MiniLoad{0x400000, 0x2000, PF_R | PF_X, std::string(64, '\x90')});
  m.files.push_back({0x400000, 0x402000, 0, "/seed"});
  m.auxv = {{AT_ENTRY, 0x400000}};
  std::string amd = BuildMiniCore(m);
  MiniCore a;
  a.machine = EM_AARCH64;
  a.threads.push_back(MiniThread{8, SIGABRT, Seq(34, 0x10000), 0x5000, 0});
  a.threads.push_back(MiniThread{9, 0, Seq(34, 0x10000), {}, 0});
  a.loads.push_back(MiniLoad{0x10000, 0x1000, PF_R | PF_X, std::string(32, '\x1f')});
  std::string arm = BuildMiniCore(a);
  std::map<std::string, std::string> seeds = {
      {"minimal_amd64", amd},
      {"minimal_arm64", arm},
      {"truncated_header", amd.substr(0, 40)},
      {"truncated_notes", amd.substr(0, 64 + 2 * 56 + 30)},
  };
  std::string dir = SB_FUZZ_CORPUS_DIR "/fuzz_core_file";
  const char* update = std::getenv("SB_UPDATE_FUZZ_SEEDS");
  for (const auto& [name, bytes] : seeds) {
    if (update != nullptr && std::string(update) == "1") {
      fs::create_directories(dir);
      test::WriteWholeFile(dir + "/" + name, bytes);
    }
    SCOPED_TRACE(name);
    EXPECT_EQ(test::ReadWholeFile(dir + "/" + name), bytes) << "run with SB_UPDATE_FUZZ_SEEDS=1";
    auto r = CoreFile::FromBytes(bytes, name);
    EXPECT_EQ(r.ok(), name.rfind("minimal", 0) == 0) << (r.ok() ? "" : r.error());
  }
}

}  // namespace
}  // namespace sb::coredump
