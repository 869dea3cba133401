// Confined local file access: the one check every connector that opens local files goes through
// (via SourceTaskContext/SinkTaskContext::openLocalFile and the herder's validation).
//
// A PathConfinement holds three lists of folders:
//   allowed  a path must lie inside one of them;
//   denied   a path inside one of them is refused (plugin.path, the worker's data.dir) ...
//   exempt   ... unless it also lies inside one of these (data.dir/files, the default allowed
//            folder, which sits inside data.dir).
// "Inside" compares whole path components: /data/files2 is not inside /data/files.
//
// resolve() turns a path into the real path it names: relative paths are taken from the working
// directory, `.` and `..` and every symbolic link of the longest existing prefix are resolved
// (realpath), and the components that do not exist yet are appended as they are (a `..` among
// them is refused, as is a dangling symbolic link at the first missing component). open()
// resolves and checks, then opens the file without following any symbolic link: it walks from
// the allowed folder that contains the path, one component at a time, with O_NOFOLLOW, so a
// component swapped for a link after the check makes the open fail instead of escaping.
//
// Thread-safety: a PathConfinement is a value, read-only after construction; every call may run
// on any thread. Allowed, denied and exempt folders are resolved at each call (a few syscalls),
// so a folder created later is taken into account.
// Failure: InvalidArgument (refused, with the reason and the allowed folders named), NotFound (a
// file or folder on the way does not exist: open() only), Unavailable (another errno).
#pragma once

#include <string>
#include <vector>

#include "ferry/config.h"
#include "ferry/connector.h"
#include "ferry/result.h"

namespace ferry::core {

class PathConfinement {
 public:
  PathConfinement() = default;
  PathConfinement(std::vector<std::string> allowed, std::vector<std::string> denied,
                  std::vector<std::string> exempt);

  // The real path `path` names (see above). InvalidArgument for an empty path, a NUL byte, a
  // path longer than PATH_MAX or a component longer than NAME_MAX, a `..` after a missing
  // component, a dangling symbolic link; Unavailable when a component cannot be examined.
  static Result<std::string> resolve(const std::string& path);
  // `path` as text for a message: a NUL byte shown as \0, cut after 300 bytes.
  static std::string printable(const std::string& path);
  // True when `path` is `root` or lies below it (both absolute and normalised).
  static bool isInside(const std::string& path, const std::string& root);

  // The resolved path when `path` may be opened, else InvalidArgument naming why.
  Result<std::string> check(const std::string& path) const;
  // Resolves, checks and opens (see above and SourceTaskContext::openLocalFile).
  Result<LocalFile> open(const std::string& path, LocalPath access) const;

  // The walk open() ends with: opens `real` (resolved, inside the resolved folder `root`) from
  // `root` one component at a time, following no symbolic link. Public for tests that swap a
  // component between the check and the walk.
  static Result<LocalFile> openBeneath(const std::string& root, const std::string& real, LocalPath access);

  // The allowed folders as configured (for messages).
  const std::vector<std::string>& allowed() const noexcept { return allowed_; }

 private:
  // Each folder resolved (skipped when it cannot be: a missing allowed folder allows nothing, a
  // missing denied folder is kept as written, so nothing created there later is allowed).
  std::vector<std::string> resolvedList(const std::vector<std::string>& dirs, bool keepMissing) const;
  std::string allowedText() const;

  std::vector<std::string> allowed_;
  std::vector<std::string> denied_;
  std::vector<std::string> exempt_;
};

}  // namespace ferry::core
