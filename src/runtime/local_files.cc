// The worker's local file confinement (see local_files.h).
#include "runtime/local_files.h"

#include <sys/stat.h>

#include "core/fs.h"
#include "core/logging.h"
#include "runtime/config_util.h"

namespace ferry::runtime {
namespace {

std::string describe(const std::string& given, const std::string& real) {
  return real == given ? given : given + " (" + real + ")";
}

}  // namespace

std::string defaultFilesDir(const WorkerConfig& worker) {
  std::string d = worker.dataDir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d + "/files";
}

std::vector<std::string> allowedFileDirs(const WorkerConfig& worker) {
  if (!worker.fileAllowedDirs.empty()) return worker.fileAllowedDirs;
  return {defaultFilesDir(worker)};
}

core::PathConfinement localFileConfinement(const WorkerConfig& worker) {
  std::vector<std::string> denied = worker.pluginPath;
  denied.push_back(worker.dataDir);
  return core::PathConfinement(allowedFileDirs(worker), std::move(denied), {defaultFilesDir(worker)});
}

Status prepareLocalFiles(const WorkerConfig& worker) {
  using core::PathConfinement;
  const std::string files = defaultFilesDir(worker);
  if (worker.fileAllowedDirs.empty()) {
    FERRY_RETURN_IF_ERROR(core::ensureDir(files).withContext("file.allowed.dirs (default)"));
    if (::chmod(files.c_str(), 0700) != 0)
      return core::errnoStatus("file.allowed.dirs (default): cannot chmod 0700", files, errno);
  }
  FERRY_ASSIGN_OR_RETURN(const std::string data, PathConfinement::resolve(worker.dataDir));
  FERRY_ASSIGN_OR_RETURN(const std::string filesReal, PathConfinement::resolve(files));
  for (const auto& dir : allowedFileDirs(worker)) {
    auto real = PathConfinement::resolve(dir);
    if (!real.isOk()) return Status::invalidArgument("file.allowed.dirs: " + dir + ": " + real.status().message());
    struct stat st {};
    if (::stat(real->c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Status::invalidArgument("file.allowed.dirs: " + describe(dir, *real) +
                                     " is not an existing folder (create it, or fix the key)");
    for (const auto& plugin : worker.pluginPath) {
      auto p = PathConfinement::resolve(plugin);
      if (!p.isOk()) continue;
      if (PathConfinement::isInside(*real, *p) || PathConfinement::isInside(*p, *real))
        return Status::invalidArgument("file.allowed.dirs folder " + describe(dir, *real) +
                                       (PathConfinement::isInside(*real, *p) ? " lies inside" : " contains") +
                                       " the plugin.path folder " + describe(plugin, *p) +
                                       ": a file sink could then write a plugin that the worker loads at its next "
                                       "start. Keep the two apart");
    }
    if (PathConfinement::isInside(*real, data) && !PathConfinement::isInside(*real, filesReal))
      return Status::invalidArgument("file.allowed.dirs folder " + describe(dir, *real) +
                                     " is or lies inside data.dir " + describe(worker.dataDir, data) +
                                     ", where the worker keeps its stores and log: use data.dir's files/ "
                                     "folder or a folder outside data.dir");
    if (PathConfinement::isInside(data, *real))
      core::logger("worker")->info("file.allowed.dirs folder {} contains data.dir {}: connectors may not use "
                                   "data.dir (except its files/ folder)",
                                   *real, data);
  }
  return Status::ok();
}

void checkLocalPaths(const std::vector<ConfigKey>& keys, const StringMap& config, const WorkerConfig& worker,
                     ConfigValidation& validation) {
  const core::PathConfinement confinement = localFileConfinement(worker);
  for (const auto& key : keys) {
    if (key.localPath == LocalPath::kNone) continue;
    auto it = config.find(key.name);
    if (it == config.end()) continue;
    const std::vector<std::string> paths =
        key.type == ConfigType::kList ? configList(config, key.name) : std::vector<std::string>{it->second};
    for (const auto& path : paths) {
      if (path.empty()) continue;  // a required key's own check reports a missing value
      auto checked = confinement.check(path);
      if (!checked.isOk())
        validation.errors[key.name].push_back("Invalid value " + core::PathConfinement::printable(path) +
                                              " for configuration " + key.name + ": " +
                                              checked.status().message());
    }
  }
}

}  // namespace ferry::runtime
