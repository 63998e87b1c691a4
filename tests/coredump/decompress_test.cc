// Compressed-core detection and decoding: the real zstd, lz4 and xz tools compress, our
// decoders must give the bytes back, in one frame or several, and truncation or garbage is a
// one-line error naming the format.
#include "coredump/decompress.h"

#include <gtest/gtest.h>

#include <string>

#include "base/file_util.h"
#include "tests/common/shell_util.h"

namespace sb::coredump {
namespace {

std::string Sample() {
  std::string s;
  for (int i = 0; i < 20000; i++) s += "frame " + std::to_string(i) + (i % 7 ? std::string(300, '\0') : "x");
  return s;
}

std::string Compress(const std::string& tool, const std::string& data) {
  std::string dir = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "decompress");
  EXPECT_TRUE(WriteFileAtomic(dir + "/in", data).ok());
  auto r = test::RunCommand(tool + " -q -c " + test::Quote(dir + "/in") + " > " + test::Quote(dir + "/out"));
  EXPECT_EQ(r.status, 0) << r.out;
  auto out = ReadFile(dir + "/out");
  EXPECT_TRUE(out.ok());
  return out.ok() ? *out : "";
}

TEST(Decompress, DetectsByMagic) {
  std::string s = Sample();
  EXPECT_EQ(DetectCompression(Compress("zstd", s)), Compression::kZstd);
  EXPECT_EQ(DetectCompression(Compress("lz4", s)), Compression::kLz4);
  EXPECT_EQ(DetectCompression(Compress("xz", s)), Compression::kXz);
  EXPECT_EQ(DetectCompression("\x7f" "ELF\x02\x01\x01"), Compression::kNone);
  EXPECT_EQ(DetectCompression(""), Compression::kNone);
}

TEST(Decompress, RoundTripsEveryFormat) {
  std::string s = Sample();
  for (const char* tool : {"zstd", "lz4", "xz"}) {
    SCOPED_TRACE(tool);
    std::string z = Compress(tool, s);
    auto out = DecompressAny(z, s.size());
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_TRUE(*out == s);
    // Two streams back to back, as `cat a.zst b.zst` makes: both come out.
    auto two = DecompressAny(z + z, 2 * s.size());
    ASSERT_TRUE(two.ok()) << two.error();
    EXPECT_TRUE(*two == s + s);
  }
}

TEST(Decompress, TruncatedAndGarbageAreErrors) {
  std::string s = Sample();
  for (const char* tool : {"zstd", "lz4", "xz"}) {
    SCOPED_TRACE(tool);
    std::string z = Compress(tool, s);
    auto cut = DecompressAny(z.substr(0, z.size() / 2), s.size());
    ASSERT_FALSE(cut.ok());
    EXPECT_NE(cut.error().find(tool), std::string::npos) << cut.error();
    std::string bad = z;
    for (size_t i = 12; i < bad.size(); i += 3) bad[i] ^= 0x5a;
    EXPECT_FALSE(DecompressAny(bad, s.size()).ok());
    auto small = DecompressAny(z, 1000);
    ASSERT_FALSE(small.ok());
    EXPECT_NE(small.error().find("more than 1000"), std::string::npos) << small.error();
  }
}

TEST(Decompress, RawPassesThrough) {
  auto out = DecompressAny("\x7f" "ELF plain core", 100);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "\x7f" "ELF plain core");
}

TEST(Decompress, OpensFilesAndNamesThem) {
  auto missing = OpenDecompressed("/nonexistent/core.zst");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/core.zst"), std::string::npos);
}

}  // namespace
}  // namespace sb::coredump
