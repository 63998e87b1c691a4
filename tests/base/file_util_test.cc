#include "base/file_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace sb {
namespace {

TEST(FileUtil, AtomicWriteThenRead) {
  auto dir = std::filesystem::temp_directory_path() / ("sb_base_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "out.bin").string();
  ASSERT_TRUE(WriteFileAtomic(path, std::string("abc\0def", 7)).ok());
  auto got = ReadFile(path);
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(*got, std::string("abc\0def", 7));
  // No temporary file is left behind.
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) { (void)e; ++n; }
  EXPECT_EQ(n, 1);
  std::filesystem::remove_all(dir);
}

TEST(FileUtil, MissingFileNamesThePath) {
  auto got = ReadFile("/nonexistent/switchback/file");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().find("/nonexistent/switchback/file"), std::string::npos);
}

TEST(FileUtil, CheckWritableRejectsMissingDirectory) {
  auto st = CheckWritable("/nonexistent-dir/x.pb.gz");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("no directory"), std::string::npos);
  EXPECT_TRUE(CheckWritable("/tmp/sb-check-writable.pb.gz").ok());
}

// Root ignores permission bits, so the check creates the temporary file for real: /sys takes
// no new files even from root. The probe leaves nothing behind.
TEST(FileUtil, CheckWritableTriesTheFile) {
  auto st = CheckWritable("/sys/sb-check.json");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error(), "cannot write /sys/sb-check.json: Permission denied");
  std::string path = "/tmp/sb-check-writable-" + std::to_string(getpid()) + ".json";
  ASSERT_TRUE(CheckWritable(path).ok());
  EXPECT_NE(access((path + ".tmp." + std::to_string(getpid())).c_str(), F_OK), 0);
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace sb
