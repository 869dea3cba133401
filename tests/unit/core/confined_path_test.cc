// The one check file connectors go through (core/confined_path.h): traversal, absolute paths
// outside, symbolic links in the middle and at the end, a link swapped in after the check, a
// prefix-sharing sibling, a file not created yet, denied folders, and malformed paths.
#include "core/confined_path.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../temp_files.h"

namespace ferry::core {
namespace {

using ferry::testing::TempDir;
using ferry::testing::readText;
using ferry::testing::writeText;
namespace fs = std::filesystem;

class ConfinedPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(allowed());
    fs::create_directories(outside());
    fs::create_directories(plugins());
    writeText(allowed() + "/in.txt", "inside\n");
    writeText(outside() + "/secret.txt", "secret\n");
  }
  std::string allowed() const { return dir_.path() + "/files"; }
  std::string outside() const { return dir_.path() + "/outside"; }
  std::string plugins() const { return dir_.path() + "/files/plugins"; }
  std::string data() const { return dir_.path() + "/files/data"; }
  PathConfinement confinement() const { return PathConfinement({allowed()}, {plugins(), data()}, {data() + "/files"}); }
  // The check refuses `path` with a message containing `words`.
  void expectRefused(const std::string& path, const std::string& words, LocalPath access = LocalPath::kRead) {
    auto c = confinement().check(path);
    ASSERT_FALSE(c.isOk()) << path << " was allowed as " << *c;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(words), std::string::npos) << c.status().message();
    auto o = confinement().open(path, access);
    ASSERT_FALSE(o.isOk()) << path << " was opened";
    if (o.isOk()) ::close(o->fd);
  }

  TempDir dir_{"confined-path"};
};

TEST_F(ConfinedPathTest, AllowsAFileInsideAndOpensIt) {
  auto c = confinement().check(allowed() + "/in.txt");
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  auto o = confinement().open(allowed() + "/./in.txt", LocalPath::kRead);
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  char buf[16] = {};
  EXPECT_EQ(::read(o->fd, buf, sizeof(buf)), 7);
  EXPECT_EQ(std::string(buf), "inside\n");
  EXPECT_FALSE(o->created);
  ::close(o->fd);
}

TEST_F(ConfinedPathTest, RefusesDotDotTraversal) {
  expectRefused(allowed() + "/../outside/secret.txt", "outside the folders");
  expectRefused(allowed() + "/../../../../../../etc/passwd", "outside the folders");
}

TEST_F(ConfinedPathTest, RefusesAbsolutePathsOutside) {
  expectRefused("/etc/passwd", "outside the folders");
  expectRefused("/etc/shadow", "outside the folders");
  expectRefused(outside() + "/secret.txt", "file.allowed.dirs=" + allowed());
}

TEST_F(ConfinedPathTest, RefusesASymlinkInTheMiddlePointingOutside) {
  fs::create_directory_symlink(outside(), allowed() + "/link");
  expectRefused(allowed() + "/link/secret.txt", "resolves to " + fs::canonical(outside()).string());
}

TEST_F(ConfinedPathTest, RefusesASymlinkAtTheEndPointingOutside) {
  fs::create_symlink(outside() + "/secret.txt", allowed() + "/leak.txt");
  expectRefused(allowed() + "/leak.txt", "outside the folders");
  // A sink writing through it must not create or change anything outside.
  fs::create_symlink(outside() + "/new.txt", allowed() + "/dangling.txt");
  expectRefused(allowed() + "/dangling.txt", "symbolic link whose target does not exist", LocalPath::kWrite);
  EXPECT_FALSE(fs::exists(outside() + "/new.txt"));
  EXPECT_EQ(readText(outside() + "/secret.txt"), "secret\n");
}

TEST_F(ConfinedPathTest, AllowsASymlinkToInside) {
  fs::create_directories(allowed() + "/real");
  writeText(allowed() + "/real/a.txt", "a\n");
  fs::create_directory_symlink(allowed() + "/real", allowed() + "/alias");
  fs::create_symlink(allowed() + "/real/a.txt", allowed() + "/a-link.txt");
  auto c = confinement().check(allowed() + "/alias/a.txt");
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(*c, fs::canonical(allowed() + "/real/a.txt").string());
  auto o = confinement().open(allowed() + "/a-link.txt", LocalPath::kRead);
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->path, fs::canonical(allowed() + "/real/a.txt").string());
  ::close(o->fd);
}

TEST_F(ConfinedPathTest, RefusesAPrefixSharingSibling) {
  fs::create_directories(dir_.path() + "/files2");
  writeText(dir_.path() + "/files2/x.txt", "x\n");
  expectRefused(dir_.path() + "/files2/x.txt", "outside the folders");
  EXPECT_FALSE(PathConfinement::isInside("/data/files2", "/data/files"));
  EXPECT_TRUE(PathConfinement::isInside("/data/files/x", "/data/files"));
  EXPECT_TRUE(PathConfinement::isInside("/data/files", "/data/files"));
  EXPECT_TRUE(PathConfinement::isInside("/x", "/"));
}

TEST_F(ConfinedPathTest, CreatesAFileWhoseParentResolvesInside) {
  auto o = confinement().open(allowed() + "/new.txt", LocalPath::kWrite);
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_TRUE(o->created);
  ASSERT_EQ(::write(o->fd, "x\n", 2), 2);
  ::close(o->fd);
  EXPECT_EQ(readText(allowed() + "/new.txt"), "x\n");
  // Opened again: not created, appended to.
  auto again = confinement().open(allowed() + "/new.txt", LocalPath::kWrite);
  ASSERT_TRUE(again.isOk());
  EXPECT_FALSE(again->created);
  ASSERT_EQ(::write(again->fd, "y\n", 2), 2);
  ::close(again->fd);
  EXPECT_EQ(readText(allowed() + "/new.txt"), "x\ny\n");
  // A missing folder on the way: NotFound (nothing is created), and `..` out of it is refused.
  auto missing = confinement().open(allowed() + "/no-such-dir/out.txt", LocalPath::kWrite);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().toString();
  EXPECT_FALSE(fs::exists(allowed() + "/no-such-dir"));
  expectRefused(allowed() + "/no-such-dir/../../outside/x.txt", "goes up", LocalPath::kWrite);
  // A new file whose parent is a link outside.
  fs::create_directory_symlink(outside(), allowed() + "/out");
  expectRefused(allowed() + "/out/created.txt", "outside the folders", LocalPath::kWrite);
  EXPECT_FALSE(fs::exists(outside() + "/created.txt"));
}

TEST_F(ConfinedPathTest, RefusesDeniedFoldersInsideAnAllowedOne) {
  writeText(plugins() + "/libx.so", "elf");
  expectRefused(plugins() + "/libx.so", "keeps for itself", LocalPath::kWrite);
  expectRefused(plugins() + "/evil.so", "keeps for itself", LocalPath::kWrite);
  EXPECT_FALSE(fs::exists(plugins() + "/evil.so"));
  EXPECT_EQ(readText(plugins() + "/libx.so"), "elf");
  // Denied before it exists too, and through a link inside the allowed folder.
  expectRefused(data() + "/store/configs.json", "keeps for itself", LocalPath::kWrite);
  fs::create_directories(data() + "/store");
  fs::create_directory_symlink(data() + "/store", allowed() + "/st");
  expectRefused(allowed() + "/st/configs.json", "keeps for itself", LocalPath::kWrite);
  EXPECT_FALSE(fs::exists(data() + "/store/configs.json"));
  // data.dir/files is exempt.
  fs::create_directories(data() + "/files");
  auto ok = confinement().open(data() + "/files/f.txt", LocalPath::kWrite);
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  ::close(ok->fd);
}

TEST_F(ConfinedPathTest, RefusesMalformedPaths) {
  expectRefused("", "empty");
  expectRefused(allowed() + std::string("/in.txt\0/../../etc/passwd", 26), "NUL byte");
  expectRefused(allowed() + "/" + std::string(5000, 'a'), "longer than the system's limit");
  expectRefused(allowed() + "/" + std::string(300, 'b') + "/x", "longer than 255");
}

TEST_F(ConfinedPathTest, ALinkSwappedInAfterTheCheckIsNotFollowed) {
  // The check resolves a path with no link in it; then a folder on the way, or the file itself,
  // is swapped for a link outside before the walk opens it.
  fs::create_directories(allowed() + "/sub");
  writeText(allowed() + "/sub/a.txt", "a\n");
  const std::string root = fs::canonical(allowed()).string();
  auto checked = confinement().check(allowed() + "/sub/a.txt");
  ASSERT_TRUE(checked.isOk()) << checked.status().toString();
  fs::rename(allowed() + "/sub", allowed() + "/sub-old");
  fs::create_directory_symlink(outside(), allowed() + "/sub");
  writeText(outside() + "/a.txt", "outside\n");
  auto o = PathConfinement::openBeneath(root, *checked, LocalPath::kRead);
  ASSERT_FALSE(o.isOk()) << "followed the swapped folder link to " << o->path;
  EXPECT_NE(o.status().message().find("changed after it was checked"), std::string::npos) << o.status().message();
  // The last component swapped for a link: neither read nor written through.
  fs::remove(allowed() + "/sub");
  fs::rename(allowed() + "/sub-old", allowed() + "/sub");
  fs::remove(allowed() + "/sub/a.txt");
  fs::create_symlink(outside() + "/a.txt", allowed() + "/sub/a.txt");
  for (LocalPath access : {LocalPath::kRead, LocalPath::kWrite}) {
    auto w = PathConfinement::openBeneath(root, *checked, access);
    ASSERT_FALSE(w.isOk());
    EXPECT_NE(w.status().message().find("changed after it was checked"), std::string::npos) << w.status().message();
  }
  EXPECT_EQ(readText(outside() + "/a.txt"), "outside\n");
  // open() itself re-checks, and names the link's target as outside.
  auto again = confinement().open(allowed() + "/sub/a.txt", LocalPath::kWrite);
  ASSERT_FALSE(again.isOk());
  EXPECT_EQ(readText(outside() + "/a.txt"), "outside\n");
}

}  // namespace
}  // namespace ferry::core
