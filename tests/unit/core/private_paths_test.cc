// Unit tests of private folders (src/core/private_paths.h): texts leaving the worker name files
// relative to data.dir, never by their absolute path.
#include "core/private_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace ferry::core {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PrivatePaths, FilesUnderAPrivateFolderAreShownRelativeToIt) {
  registerPrivateFolder("/srv/ferry-private-test/data/");
  EXPECT_EQ(withoutPrivatePaths("could not save /srv/ferry-private-test/data/store/configs.json: "
                                "create /srv/ferry-private-test/data/store/configs.json.tmp: EISDIR"),
            "could not save store/configs.json: create store/configs.json.tmp: EISDIR");
  EXPECT_EQ(withoutPrivatePaths("lock /srv/ferry-private-test/data is held"),
            "lock data.dir is held");
  // A longer name that only starts like the folder is not it.
  EXPECT_EQ(withoutPrivatePaths("/srv/ferry-private-test/data2/x"),
            "/srv/ferry-private-test/data2/x");
  EXPECT_EQ(withoutPrivatePaths("no paths here"), "no paths here");
}

TEST(PrivatePaths, ARelativeDataDirIsHiddenInItsAbsoluteFormToo) {
  registerPrivateFolder("ferry-private-rel");
  const std::string abs = (std::filesystem::current_path() / "ferry-private-rel").string();
  const std::string shown = withoutPrivatePaths("open " + abs + "/backbone/t-0/0.log failed");
  EXPECT_THAT(shown, Not(HasSubstr(abs)));
  EXPECT_EQ(shown, "open backbone/t-0/0.log failed");
}

TEST(PrivatePaths, RootIsNeverPrivate) {
  registerPrivateFolder("/");
  EXPECT_EQ(withoutPrivatePaths("/etc/passwd"), "/etc/passwd");
}

TEST(PrivatePaths, RelativeToStripsOneFolder) {
  EXPECT_EQ(relativeTo("write /a/b/c.json: EIO (/a/b/c.json.tmp)", "/a/b/"),
            "write c.json: EIO (c.json.tmp)");
  EXPECT_EQ(relativeTo("x", "/"), "x");
}

}  // namespace
}  // namespace ferry::core
