// Unit tests of the file helpers (src/core/fs.h): modes of replaced files, mkdir -p, readFile's
// errors.
#include "tests/unit/temp_files.h"
#include "core/fs.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace ferry::core {
namespace {

namespace fs = std::filesystem;
using ferry::testing::modeOf;
using ferry::testing::readText;
using ferry::testing::writeText;

using ferry::testing::TempDir;

TEST(ReadAt, ReadsExactlyTheRangeAndRefusesToReadPastTheEnd) {
  TempDir dir;
  const std::string path = dir.file("f");
  writeText(path, "0123456789");
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  auto mid = readAt(fd, 3, 4, path);
  ASSERT_TRUE(mid.isOk()) << mid.status().toString();
  EXPECT_EQ(*mid, "3456");
  EXPECT_EQ(*readAt(fd, 10, 0, path), "");
  auto past = readAt(fd, 8, 5, path);
  EXPECT_FALSE(past.isOk());
  EXPECT_NE(past.status().message().find(path), std::string::npos) << past.status().toString();
  ::close(fd);
}

TEST(AtomicWriteFile, DefaultModeIs0600) {
  TempDir dir;
  ASSERT_TRUE(atomicWriteFile(dir.file("a"), "x").isOk());
  EXPECT_EQ(modeOf(dir.file("a")), 0600u);
  auto text = readFile(dir.file("a"));
  ASSERT_TRUE(text.isOk());
  EXPECT_EQ(*text, "x");
}

TEST(AtomicWriteFile, ExplicitModeIsExact) {
  TempDir dir;
  ASSERT_TRUE(atomicWriteFile(dir.file("a"), "x", 0644).isOk());
  EXPECT_EQ(modeOf(dir.file("a")), 0644u);
}

TEST(AtomicWriteFile, Replacing0644FileGives0600) {
  TempDir dir;
  { std::ofstream(dir.file("a")) << "old"; }
  ::chmod(dir.file("a").c_str(), 0644);
  // A temp file left behind by a crash, with a wide mode: it must not keep that mode.
  { std::ofstream(dir.file("a.tmp")) << "stale and longer than the new contents"; }
  ::chmod(dir.file("a.tmp").c_str(), 0666);
  ASSERT_TRUE(atomicWriteFile(dir.file("a"), "new").isOk());
  EXPECT_EQ(modeOf(dir.file("a")), 0600u);
  EXPECT_EQ(*readFile(dir.file("a")), "new");
  EXPECT_FALSE(fs::exists(dir.file("a.tmp")));
}

TEST(EnsureDir, CreatesNestedFoldersAndAcceptsExisting) {
  TempDir dir;
  std::string nested = dir.file("a/b/c/");
  ASSERT_TRUE(ensureDir(nested).isOk());
  EXPECT_TRUE(fs::is_directory(dir.file("a/b/c")));
  EXPECT_TRUE(ensureDir(nested).isOk());
  EXPECT_TRUE(ensureDir(dir.file("a")).isOk());
}

TEST(EnsureDir, FileInTheWayIsAnError) {
  TempDir dir;
  { std::ofstream(dir.file("f")) << "x"; }
  Status s = ensureDir(dir.file("f/sub"));
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(dir.file("f")), std::string::npos) << s.message();
}

TEST(ReadFile, MissingIsNotFoundAndFolderIsUnavailable) {
  TempDir dir;
  EXPECT_EQ(readFile(dir.file("none")).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(ensureDir(dir.file("d")).isOk());
  auto r = readFile(dir.file("d"));
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(dir.file("d")), std::string::npos);
}

}  // namespace
}  // namespace ferry::core
