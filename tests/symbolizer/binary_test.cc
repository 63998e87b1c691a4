// Binary and BinaryCache: Go and native symbolization, build ids, cache identity, vDSO.
#include "symbolizer/binary.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "tests/symbolizer/test_util.h"

namespace sb::sym {
namespace {

using test::BuildGoPrograms;
using test::Quote;
using test::RunCommand;

TEST(BinaryTest, GoBinary) {
  const auto& progs = BuildGoPrograms();
  ASSERT_TRUE(progs.error.empty()) << progs.error;
  auto b = Binary::Load(progs.stripped);
  ASSERT_TRUE(b.ok()) << b.error();
  ASSERT_NE((*b)->go(), nullptr);
  ASSERT_NE((*b)->build_info(), nullptr);
  EXPECT_EQ((*b)->build_info()->minor, 19);
  // Go's `go build` writes a Go build id note and no GNU one.
  EXPECT_EQ((*b)->build_id(), (*b)->elf().GoBuildId());
  EXPECT_FALSE((*b)->build_id().empty());
  auto f = (*b)->go()->FindFuncByName("main.work");
  ASSERT_TRUE(f.has_value());
  auto frames = (*b)->Symbolize(f->entry);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "main.work");
  EXPECT_NE(frames[0].file.find("testdata/symtest/main.go"), std::string::npos);
  // The line of "func work(" in the source.
  auto grep = RunCommand("grep -n '^func work(' " + Quote(SB_TEST_SOURCE_DIR "/testdata/symtest/main.go"));
  ASSERT_EQ(grep.status, 0);
  EXPECT_EQ(frames[0].line, std::stoi(grep.out));
  EXPECT_TRUE((*b)->Symbolize(1).empty());
  EXPECT_EQ((*b)->FindSymbol(f->entry), nullptr);  // stripped: no ELF symbols
}

// A C program with a size-0 assembly symbol; `nm` is the oracle for every function.
TEST(BinaryTest, NativeSymbols) {
  std::string dir = test::MakeTempDir("native");
  std::ofstream(dir + "/prog.c") << "int helper(int x) { return x * 7; }\n"
                                    "int main(int argc, char** argv) { return helper(argc); }\n";
  // nosize has no .size directive: it must extend to the next symbol (after_nosize). marker is
  // a size-0 local label at the same address as a sized function, as Go's runtime.etext is at
  // the first C function of a cgo binary (goCallback, which must not be named runtime.etext).
  std::ofstream(dir + "/asm.S") << ".text\n.globl nosize\n.type nosize,@function\nnosize:\n"
                                   "nop\nnop\nnop\nnop\nret\n"
                                   ".globl after_nosize\n.type after_nosize,@function\n"
                                   "after_nosize:\nret\n.size after_nosize, 1\n"
                                   ".type marker,@function\nmarker:\n"
                                   ".globl sized\n.type sized,@function\nsized:\nnop\nnop\nret\n.size sized, 3\n";
  auto cc = RunCommand("cd " + Quote(dir) + " && cc -O1 -g0 -o prog prog.c asm.S");
  ASSERT_EQ(cc.status, 0) << cc.out;
  std::string prog = dir + "/prog";
  auto b = Binary::Load(prog);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ((*b)->go(), nullptr);
  EXPECT_EQ((*b)->build_info(), nullptr);
  EXPECT_EQ((*b)->build_id(), (*b)->elf().BuildId());

  auto nm = RunCommand("nm " + Quote(prog) + " | awk '$2==\"T\"||$2==\"t\"{print $1, $3}'");
  ASSERT_EQ(nm.status, 0);
  std::istringstream in(nm.out);
  std::string addr, name;
  int checked = 0;
  while (in >> addr >> name) {
    uint64_t v = std::stoull(addr, nullptr, 16);
    const ElfSymbol* s = (*b)->FindSymbol(v);
    if (s == nullptr) continue;  // zero-size symbols at the end of .text, e.g. _fini markers
    // Aliases share an address; any of them is acceptable, the address must match.
    EXPECT_EQ(s->value, v) << name;
    checked++;
  }
  EXPECT_GE(checked, 4);
  for (const char* fn : {"helper", "main", "nosize", "after_nosize", "sized"}) {
    auto r = RunCommand("nm " + Quote(prog) + " | awk '$3==\"" + std::string(fn) + "\"{print $1}'");
    uint64_t v = std::stoull(r.out, nullptr, 16);
    auto frames = (*b)->Symbolize(v + (std::string(fn) == "after_nosize" ? 0 : 1));
    ASSERT_EQ(frames.size(), 1u) << fn;
    EXPECT_EQ(frames[0].function, fn);
    EXPECT_EQ(frames[0].file, "");
    EXPECT_EQ(frames[0].line, 0);
    EXPECT_FALSE(frames[0].inlined);
  }
  auto r = RunCommand("nm " + Quote(prog) + " | awk '$3==\"nosize\"{print $1}'");
  uint64_t nosize = std::stoull(r.out, nullptr, 16);
  const ElfSymbol* s = (*b)->FindSymbol(nosize + 4);  // the ret, inside the size-0 symbol
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "nosize");
  EXPECT_EQ(s->size, 5u);
}

TEST(BinaryCacheTest, IdentityAndReload) {
  const auto& progs = BuildGoPrograms();
  ASSERT_TRUE(progs.error.empty()) << progs.error;
  std::string dir = test::MakeTempDir("cache");
  std::string path = dir + "/bin";
  ASSERT_EQ(RunCommand("cp " + Quote(progs.plain) + " " + Quote(path)).status, 0);
  BinaryCache cache;
  auto a = cache.Get(path);
  ASSERT_TRUE(a.ok()) << a.error();
  auto again = cache.Get(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(a->get(), again->get());

  // Many threads asking at once get one shared object.
  std::vector<std::thread> threads;
  std::vector<Binary*> seen(8);
  for (int i = 0; i < 8; i++) {
    threads.emplace_back([&, i] {
      auto r = cache.Get(path);
      seen[i] = r.ok() ? r->get() : nullptr;
    });
  }
  for (auto& t : threads) t.join();
  for (Binary* p : seen) EXPECT_EQ(p, a->get());

  // The same file by another name (a symlink like /proc/PID/exe, a hard link): the same
  // object, parsed once.
  ASSERT_EQ(RunCommand("ln -s " + Quote(path) + " " + Quote(path + ".sym") + " && ln " + Quote(path) + " " +
                       Quote(path + ".hard"))
                .status,
            0);
  for (const char* suffix : {".sym", ".hard"}) {
    auto other = cache.Get(path + suffix);
    ASSERT_TRUE(other.ok()) << other.error();
    EXPECT_EQ(other->get(), a->get()) << suffix;
  }
  // Forgotten: the next Get loads it anew; the old object stays valid for its holders.
  cache.Forget(a->get());
  auto fresh = cache.Get(path);
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(fresh->get(), a->get());
  EXPECT_FALSE((*a)->elf().Symbols().empty());
  cache.Forget(fresh->get());
  auto again2 = cache.Get(path);
  ASSERT_TRUE(again2.ok());
  a = again2;  // what the rest of the test compares against

  // Replace the file with a different binary: new inode -> reloaded, different content.
  ASSERT_EQ(RunCommand("cp " + Quote(progs.stripped) + " " + Quote(path + ".new") + " && mv " +
                Quote(path + ".new") + " " + Quote(path))
                .status,
            0);
  auto c = cache.Get(path);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->get(), a->get());
  EXPECT_TRUE((*c)->elf().Symbols().empty());
  EXPECT_FALSE((*a)->elf().Symbols().empty());  // the old one stays valid for its users

  EXPECT_FALSE(cache.Get(dir + "/missing").ok());
}

// The cache is bounded in mapped file bytes: least recently used out first, but never a binary
// someone still holds (a followed process), and never the one just loaded.
TEST(BinaryCacheTest, BoundedLeastRecentlyUsed) {
  std::string dir = test::MakeTempDir("lru");
  // Four distinct files (identity is the inode) of one size.
  std::vector<std::string> paths;
  for (const char* n : {"a", "b", "c", "d"}) {
    paths.push_back(dir + "/" + n);
    ASSERT_EQ(RunCommand("cp /bin/true " + Quote(paths.back())).status, 0);
  }
  uint64_t size = 0;
  {
    BinaryCache probe;
    auto b = probe.Get(paths[0]);
    ASSERT_TRUE(b.ok()) << b.error();
    size = (*b)->elf().bytes().size();
    EXPECT_EQ(probe.Stats().bytes, size);
  }
  ASSERT_GT(size, 0u);
  BinaryCache cache(size * 5 / 2);  // room for two
  auto get = [&](int i) {
    auto b = cache.Get(paths[i]);
    EXPECT_TRUE(b.ok()) << b.error();
    return b.ok() ? b->get() : nullptr;
  };
  Binary* a = get(0);
  Binary* b = get(1);
  EXPECT_EQ(get(0), a);  // a is now the most recently used: b goes first
  get(2);
  BinaryCacheStats st = cache.Stats();
  EXPECT_EQ(st.entries, 2u);
  EXPECT_EQ(st.bytes, 2 * size);
  EXPECT_LE(st.bytes, st.max_bytes);
  EXPECT_EQ(st.evictions, 1u);
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.misses, 3u);
  EXPECT_EQ(get(0), a);              // still cached: a hit
  EXPECT_EQ(cache.Stats().misses, 3u);
  EXPECT_NE(get(1), nullptr);        // b was evicted: loaded again (c goes now)
  EXPECT_EQ(cache.Stats().misses, 4u);
  EXPECT_EQ(cache.Stats().evictions, 2u);
  (void)b;

  // A held binary survives any pressure; the bound is exceeded only by binaries in use.
  auto held = cache.Get(paths[3]);
  ASSERT_TRUE(held.ok());
  cache.set_max_bytes(size / 2);  // room for none
  st = cache.Stats();
  EXPECT_EQ(st.entries, 1u);  // only the held one
  EXPECT_EQ(st.bytes, size);
  auto again = cache.Get(paths[3]);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), held->get());  // the same object, not reloaded
  std::weak_ptr<Binary> weak = *held;
  held = MakeError("let go");
  again = MakeError("let go");
  EXPECT_FALSE(weak.expired());  // cached until the next trim
  cache.Trim();
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(cache.Stats().bytes, 0u);
  EXPECT_EQ(cache.Stats().entries, 0u);

  // Forget keeps the byte count right.
  cache.set_max_bytes(0);  // unbounded
  auto f = cache.Get(paths[0]);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(cache.Stats().bytes, size);
  cache.Forget(f->get());
  EXPECT_EQ(cache.Stats().bytes, 0u);
}

TEST(BinaryCacheTest, Vdso) {
  BinaryCache cache;
  auto v = cache.Vdso();
  ASSERT_TRUE(v.ok()) << v.error();
  EXPECT_EQ((*v)->elf().name(), "[vdso]");
  EXPECT_EQ((*v)->elf().type(), ET_DYN);
  EXPECT_EQ((*v)->go(), nullptr);
  // The kernel exports clock_gettime as __vdso_clock_gettime (x86-64) or
  // __kernel_clock_gettime (arm64).
  const ElfSymbol* cg = nullptr;
  std::vector<ElfSymbol> syms = (*v)->elf().Symbols();
  for (const ElfSymbol& s : syms) {
    if (s.name == "__vdso_clock_gettime" || s.name == "__kernel_clock_gettime") cg = &s;
  }
  ASSERT_NE(cg, nullptr);
  auto frames = (*v)->Symbolize(cg->value + 1);
  ASSERT_EQ(frames.size(), 1u);
  // Aliases (clock_gettime and __vdso_clock_gettime) share the address.
  EXPECT_NE(frames[0].function.find("clock_gettime"), std::string::npos) << frames[0].function;
  auto again = cache.Vdso();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), v->get());
}

}  // namespace
}  // namespace sb::sym
