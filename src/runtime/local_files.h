// The worker's confinement of local file access (worker key file.allowed.dirs).
//
// Connectors that open local files (FileStreamSource, FileStreamSink, later JDBC/SQLite) go
// through one check: the herder validates every config value whose key is declared with
// ConfigKey::localPath against localFileConfinement(worker), and a task opens such a file only
// through its context's openLocalFile(), which resolves and checks the path again and opens it
// without following links (core/confined_path.h).
//
// Allowed: the folders of file.allowed.dirs, or <data.dir>/files when the key is empty. Denied
// even inside an allowed folder: every plugin.path folder and data.dir (the worker's stores and
// embedded log), except data.dir/files.
//
// Thread-safety: free functions over a WorkerConfig value.
#pragma once

#include <string>

#include "core/confined_path.h"
#include "ferry/status.h"
#include "runtime/worker_config.h"

namespace ferry::runtime {

// <data.dir>/files.
std::string defaultFilesDir(const WorkerConfig& worker);
// The allowed folders in effect (file.allowed.dirs, or the default).
std::vector<std::string> allowedFileDirs(const WorkerConfig& worker);
core::PathConfinement localFileConfinement(const WorkerConfig& worker);

// Run once at worker start, before any task: creates the default folder (0700) when
// file.allowed.dirs is empty, and refuses (InvalidArgument naming both keys) an allowed folder
// that does not exist, that is or lies inside a plugin.path folder or contains one, or that is
// data.dir or lies inside it anywhere but data.dir/files. An allowed folder that contains data.dir
// is accepted (data.dir stays off limits at validation and open) and logged.
Status prepareLocalFiles(const WorkerConfig& worker);

// Checks every value of `config` whose key in `keys` is declared with a LocalPath (kList keys:
// every item) and adds an error on that key for each path refused.
void checkLocalPaths(const std::vector<ConfigKey>& keys, const StringMap& config, const WorkerConfig& worker,
                     ConfigValidation& validation);

}  // namespace ferry::runtime
