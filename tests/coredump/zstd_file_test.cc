// zstd helpers: round trips, frames without a content size, garbage, truncation, the size
// limit, and the extraction cache. Also measures a real core's compression.
#include "coredump/zstd_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zstd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include "tests/coredump/core_test_util.h"

namespace sb::coredump {
namespace {

namespace fs = std::filesystem;

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Compresses with the streaming API and no pledged size, as `zstd` does on a pipe.
std::string CompressNoContentSize(std::string_view data) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  std::string out(ZSTD_compressBound(data.size()) + 1024, '\0');
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  ZSTD_outBuffer ob{out.data(), out.size(), 0};
  size_t r;
  do {
    r = ZSTD_compressStream2(cctx, &ob, &in, ZSTD_e_end);
  } while (r != 0 && !ZSTD_isError(r));
  ZSTD_freeCCtx(cctx);
  out.resize(ob.pos);
  return out;
}

TEST(ZstdTest, RoundTrip) {
  std::vector<std::string> inputs = {"", "a", "hello hello hello hello", RandomBytes(100000, 1),
                                     std::string(10 << 20, '\0') + RandomBytes(1000, 2)};
  for (const std::string& in : inputs) {
    for (int level : {1, 3, 19}) {
      SCOPED_TRACE("size " + std::to_string(in.size()) + " level " + std::to_string(level));
      auto c = ZstdCompress(in, level);
      ASSERT_TRUE(c.ok()) << c.error();
      EXPECT_EQ(ZSTD_getFrameContentSize(c->data(), c->size()), in.size());
      auto d = ZstdDecompress(*c);
      ASSERT_TRUE(d.ok()) << d.error();
      EXPECT_TRUE(*d == in);
    }
  }
  // Zeros compress extremely well (Go's arena reservations in a gcore are zeros).
  auto z = ZstdCompress(std::string(10 << 20, '\0'));
  ASSERT_TRUE(z.ok());
  EXPECT_LT(z->size(), 2000u);
}

TEST(ZstdTest, FrameWithoutContentSizeAndMultipleFrames) {
  std::string in = RandomBytes(300000, 3) + std::string(1 << 20, 'x');
  std::string c = CompressNoContentSize(in);
  ASSERT_EQ(ZSTD_getFrameContentSize(c.data(), c.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  auto d = ZstdDecompress(c);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_TRUE(*d == in);
  // Concatenated frames decompress to the concatenation (as `zstd -d` does).
  auto c2 = ZstdCompress("tail");
  ASSERT_TRUE(c2.ok());
  d = ZstdDecompress(c + *c2);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_TRUE(*d == in + "tail");
}

TEST(ZstdTest, GarbageAndTruncation) {
  for (std::string bad : {std::string(), std::string("x"), std::string("hello world, not zstd"),
                          RandomBytes(5000, 4), std::string("\x28\xb5\x2f\xfd", 4)}) {
    auto d = ZstdDecompress(bad);
    EXPECT_FALSE(d.ok()) << bad.size();
  }
  std::string in = RandomBytes(200000, 5) + std::string(100000, 'q');
  for (bool known_size : {true, false}) {
    std::string c = known_size ? *ZstdCompress(in) : CompressNoContentSize(in);
    for (size_t cut : {size_t{5}, size_t{12}, c.size() / 2, c.size() - 4, c.size() - 1}) {
      SCOPED_TRACE("cut " + std::to_string(cut) + (known_size ? " known" : " unknown"));
      auto d = ZstdDecompress(c.substr(0, cut));
      ASSERT_FALSE(d.ok());
      EXPECT_NE(d.error(), "");
    }
    // A flipped byte in the middle: ZstdCompress writes a checksum, which notices.
    if (known_size) {
      std::string flipped = c;
      flipped[c.size() / 2] ^= 0x55;
      EXPECT_FALSE(ZstdDecompress(flipped).ok());
    }
    // Trailing garbage after a complete frame.
    EXPECT_FALSE(ZstdDecompress(c + "garbage!").ok());
  }
}

TEST(ZstdTest, SizeLimit) {
  std::string in(1000, 'z');
  for (bool known_size : {true, false}) {
    SCOPED_TRACE(known_size ? "known size" : "unknown size");
    std::string c = known_size ? *ZstdCompress(in) : CompressNoContentSize(in);
    auto d = ZstdDecompress(c, 999);
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().find("limit"), std::string::npos) << d.error();
    d = ZstdDecompress(c, 1000);
    ASSERT_TRUE(d.ok()) << d.error();
    EXPECT_EQ(*d, in);
  }
  // A bomb: 64 MB of zeros without a content size, limit 1 MB, refused without 64 MB.
  std::string bomb = CompressNoContentSize(std::string(64 << 20, '\0'));
  auto d = ZstdDecompress(bomb, 1 << 20);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("limit"), std::string::npos) << d.error();
}

TEST(ZstdTest, ExtractZstdFileCachesByNameSizeAndMtime) {
  std::string dir = test::MakeTempDir("zstd");
  std::string src = dir + "/prog.zst";
  std::string plain = RandomBytes(50000, 6);
  test::WriteWholeFile(src, *ZstdCompress(plain));
  chmod(src.c_str(), 0755);
  std::string cache = dir + "/cache";
  auto p1 = ExtractZstdFile(src, cache);
  ASSERT_TRUE(p1.ok()) << p1.error();
  EXPECT_EQ(fs::path(*p1).filename(), "prog");
  EXPECT_EQ(fs::path(*p1).parent_path().parent_path(), fs::path(cache));
  EXPECT_EQ(test::ReadWholeFile(*p1), plain);
  struct stat st1{};
  ASSERT_EQ(stat(p1->c_str(), &st1), 0);
  EXPECT_NE(st1.st_mode & 0100, 0u) << "execute bit of the source kept";

  // Second call: the same file, not rewritten.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto p2 = ExtractZstdFile(src, cache);
  ASSERT_TRUE(p2.ok()) << p2.error();
  EXPECT_EQ(*p2, *p1);
  struct stat st2{};
  ASSERT_EQ(stat(p2->c_str(), &st2), 0);
  EXPECT_EQ(st2.st_ino, st1.st_ino);
  EXPECT_EQ(st2.st_mtim.tv_nsec, st1.st_mtim.tv_nsec);

  // New contents (new size and mtime): a new extraction.
  std::string plain2 = RandomBytes(60000, 7);
  test::WriteWholeFile(src, *ZstdCompress(plain2));
  auto p3 = ExtractZstdFile(src, cache);
  ASSERT_TRUE(p3.ok()) << p3.error();
  EXPECT_NE(*p3, *p1);
  EXPECT_EQ(test::ReadWholeFile(*p3), plain2);

  // Errors: a missing source, a corrupt one (and nothing left behind for it).
  EXPECT_FALSE(ExtractZstdFile(dir + "/missing.zst", cache).ok());
  test::WriteWholeFile(dir + "/bad.zst", "definitely not zstd");
  auto bad = ExtractZstdFile(dir + "/bad.zst", cache);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("bad.zst"), std::string::npos) << bad.error();
  for (const auto& e : fs::recursive_directory_iterator(cache)) {
    EXPECT_NE(e.path().filename(), "bad") << e.path();
  }
}

TEST(ZstdTest, RealQemuCoreRoundTrip) {
  const auto& q = test::GetArm64Core();
  ASSERT_EQ(q.error, "");
  std::string raw = test::ReadWholeFile(q.core);
  auto t0 = std::chrono::steady_clock::now();
  auto c = ZstdCompress(raw);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(c.ok()) << c.error();
  auto d = ZstdDecompress(*c);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_TRUE(*d == raw);
  std::cout << "qemu core: " << raw.size() << " bytes raw, " << c->size() << " zstd (" << secs
            << " s)\n";
  RecordProperty("raw_bytes", std::to_string(raw.size()));
  RecordProperty("zstd_bytes", std::to_string(c->size()));
}

}  // namespace
}  // namespace sb::coredump
