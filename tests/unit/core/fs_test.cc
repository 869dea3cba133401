// Unit tests of the file helpers (src/core/fs.h): modes of replaced files, mkdir -p, readFile's
// errors.
#include "core/fs.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace ferry::core {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ferry-fs-XXXXXX").string();
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

unsigned modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
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
