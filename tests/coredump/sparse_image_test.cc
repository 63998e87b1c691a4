// Sparse decompression: the bytes come back exactly, all-zero pages are holes (on disk and in
// a memfd), and a core piped on standard input is read like a file.
#include "coredump/sparse_image.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "base/file_util.h"
#include "coredump/zstd_file.h"
#include "tests/common/shell_util.h"

namespace sb::coredump {
namespace {

// 64 MiB, of which 3 pages and an unaligned tail are not zero: a core in miniature.
std::string MostlyZeros() {
  std::string s(64u << 20, '\0');
  s[5] = 'E';
  s[(10u << 20) + 4095] = 'x';
  s[(40u << 20) + 100] = 'y';
  s.append("tail");
  return s;
}

TEST(SparseImage, HoldsOnlyNonZeroPages) {
  std::string plain = MostlyZeros();
  auto z = ZstdCompress(plain, 3);
  ASSERT_TRUE(z.ok());
  auto d = MakeDecompressor(Compression::kZstd, *z, nullptr);
  ASSERT_TRUE(d.ok());
  auto img = SparseImage::Decompress(**d, "test");
  ASSERT_TRUE(img.ok()) << img.error();
  EXPECT_EQ((*img)->stats().size, plain.size());
  EXPECT_EQ((*img)->stats().stored, 3u * 4096 + 4);  // three pages and the 4-byte tail
  auto back = ReadFile((*img)->path());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_TRUE(*back == plain);
  struct stat st;
  ASSERT_EQ(stat((*img)->path().c_str(), &st), 0);
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, 1u << 20) << "zero pages were allocated";
}

TEST(SparseImage, ExtractedCacheFileHasHoles) {
  std::string dir = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "sparse");
  std::string plain = MostlyZeros();
  auto z = ZstdCompress(plain, 3);
  ASSERT_TRUE(z.ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/x.zst", *z).ok());
  auto out = ExtractZstdFile(dir + "/x.zst", dir + "/cache");
  ASSERT_TRUE(out.ok()) << out.error();
  struct stat st;
  ASSERT_EQ(stat(out->c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), plain.size());
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, 1u << 20);
  auto back = ReadFile(*out);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(*back == plain);
}

TEST(SparseImage, LimitIsAnError) {
  auto z = ZstdCompress(MostlyZeros(), 3);
  ASSERT_TRUE(z.ok());
  auto d = MakeDecompressor(Compression::kZstd, *z, nullptr);
  ASSERT_TRUE(d.ok());
  auto img = SparseImage::Decompress(**d, "big", 1u << 20);
  ASSERT_FALSE(img.ok());
  EXPECT_NE(img.error().find("more than the limit"), std::string::npos) << img.error();
}

TEST(SparseImage, ReadsStandardInput) {
  std::string dir = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "sparse-stdin");
  std::string plain = MostlyZeros().substr(0, 3u << 20);
  ASSERT_TRUE(WriteFileAtomic(dir + "/p", plain).ok());
  auto r = test::RunCommand("xz -c -1 " + test::Quote(dir + "/p") + " > " + test::Quote(dir + "/p.xz"));
  ASSERT_EQ(r.status, 0) << r.out;
  int saved = dup(0);
  int fd = open((dir + "/p.xz").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  dup2(fd, 0);
  close(fd);
  auto img = SparseImage::FromFile("-");
  dup2(saved, 0);
  close(saved);
  ASSERT_TRUE(img.ok()) << img.error();
  EXPECT_EQ((*img)->compression(), Compression::kXz);
  auto back = ReadFile((*img)->path());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(*back == plain);
}

}  // namespace
}  // namespace sb::coredump
