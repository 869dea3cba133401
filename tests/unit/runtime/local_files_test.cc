// The worker's file confinement (runtime/local_files.h): the default folder, the start-up
// refusals (plugin.path overlap, allowed folders in data.dir's store) and the validation of keys
// declared with ConfigKey::localPath.
#include "runtime/local_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "../temp_files.h"

namespace ferry::runtime {
namespace {

namespace fs = std::filesystem;
using ferry::testing::TempDir;

WorkerConfig workerIn(const TempDir& dir, std::vector<std::string> allowed = {},
                      std::vector<std::string> plugins = {}) {
  WorkerConfig w;
  w.dataDir = dir.file("data");
  w.fileAllowedDirs = std::move(allowed);
  w.pluginPath = std::move(plugins);
  fs::create_directories(w.dataDir + "/store");
  return w;
}

TEST(LocalFiles, WorkerKeyParsesAsAList) {
  auto c = parseWorkerConfig({{"file.allowed.dirs", "/a, /b"}});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->fileAllowedDirs, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_TRUE(parseWorkerConfig({})->fileAllowedDirs.empty());
}

TEST(LocalFiles, DefaultFolderIsCreated0700InsideDataDir) {
  TempDir dir("local-files");
  WorkerConfig w = workerIn(dir);
  ASSERT_TRUE(prepareLocalFiles(w).isOk());
  struct stat st {};
  ASSERT_EQ(::stat((w.dataDir + "/files").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(allowedFileDirs(w), std::vector<std::string>{w.dataDir + "/files"});
  // Its files are allowed; data.dir's own files are not; neither is the folder beside it.
  auto c = localFileConfinement(w);
  EXPECT_TRUE(c.check(w.dataDir + "/files/in.txt").isOk());
  EXPECT_FALSE(c.check(w.dataDir + "/store/configs.json").isOk());
  EXPECT_FALSE(c.check(dir.file("in.txt")).isOk());
}

TEST(LocalFiles, StartRefusesAllowedFoldersOverlappingPluginPath) {
  TempDir dir("local-files");
  fs::create_directories(dir.file("plugins/inner"));
  for (const auto& [allowed, plugin] : std::vector<std::pair<std::string, std::string>>{
           {dir.path(), dir.file("plugins")},             // contains the plugin folder
           {dir.file("plugins/inner"), dir.file("plugins")},  // inside it
           {dir.file("plugins"), dir.file("plugins")}}) {     // the same
    WorkerConfig w = workerIn(dir, {allowed}, {plugin});
    Status s = prepareLocalFiles(w);
    ASSERT_FALSE(s.isOk()) << allowed << " / " << plugin;
    EXPECT_NE(s.message().find("file.allowed.dirs"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("plugin.path"), std::string::npos) << s.message();
  }
  fs::create_directories(dir.file("files"));
  EXPECT_TRUE(prepareLocalFiles(workerIn(dir, {dir.file("files")}, {dir.file("plugins")})).isOk());
  // A prefix-sharing sibling is no overlap.
  fs::create_directories(dir.file("plugins2"));
  EXPECT_TRUE(prepareLocalFiles(workerIn(dir, {dir.file("plugins2")}, {dir.file("plugins")})).isOk());
}

TEST(LocalFiles, StartRefusesAllowedFoldersInDataDirsStore) {
  TempDir dir("local-files");
  for (const std::string& allowed : {dir.file("data"), dir.file("data/store")}) {
    Status s = prepareLocalFiles(workerIn(dir, {allowed}));
    ASSERT_FALSE(s.isOk()) << allowed;
    EXPECT_NE(s.message().find("data.dir"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("file.allowed.dirs"), std::string::npos) << s.message();
  }
  fs::create_directories(dir.file("data/files"));
  EXPECT_TRUE(prepareLocalFiles(workerIn(dir, {dir.file("data/files")})).isOk());
  // A folder that holds data.dir is accepted; data.dir stays off limits inside it.
  WorkerConfig holder = workerIn(dir, {dir.path()});
  EXPECT_TRUE(prepareLocalFiles(holder).isOk());
  EXPECT_FALSE(localFileConfinement(holder).check(dir.file("data/store/configs.json")).isOk());
  EXPECT_TRUE(localFileConfinement(holder).check(dir.file("out.txt")).isOk());
  // A missing allowed folder is a typo, not an empty allowance.
  Status missing = prepareLocalFiles(workerIn(dir, {dir.file("nope")}));
  EXPECT_FALSE(missing.isOk());
  EXPECT_NE(missing.message().find("not an existing folder"), std::string::npos) << missing.message();
}

TEST(LocalFiles, ValidationPutsTheErrorOnTheKeyForEveryListItem) {
  TempDir dir("local-files");
  fs::create_directories(dir.file("files"));
  WorkerConfig w = workerIn(dir, {dir.file("files")});
  std::vector<ConfigKey> keys(3);
  keys[0].name = "file";
  keys[0].localPath = LocalPath::kRead;
  keys[1].name = "files";
  keys[1].type = ConfigType::kList;
  keys[1].localPath = LocalPath::kRead;
  keys[2].name = "other";  // not a path: never checked
  ConfigValidation v;
  checkLocalPaths(keys,
                  {{"file", dir.file("files/a.txt")},
                   {"files", dir.file("files/b.txt") + ", /etc/passwd ," + dir.file("files/../x")},
                   {"other", "/etc/shadow"}},
                  w, v);
  EXPECT_FALSE(v.errors.count("file"));
  ASSERT_EQ(v.errors["files"].size(), 2u);
  EXPECT_NE(v.errors["files"][0].find("Invalid value /etc/passwd for configuration files"), std::string::npos)
      << v.errors["files"][0];
  EXPECT_FALSE(v.errors.count("other"));
  ConfigValidation nul;
  checkLocalPaths(keys, {{"file", dir.file("files/a") + std::string(1, '\0') + "b"}}, w, nul);
  ASSERT_EQ(nul.errors["file"].size(), 1u);
  EXPECT_NE(nul.errors["file"][0].find("\\0"), std::string::npos) << nul.errors["file"][0];
}

}  // namespace
}  // namespace ferry::runtime
