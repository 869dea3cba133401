// Confined local file access (see confined_path.h). Why a component-by-component walk and not
// open(resolved, O_NOFOLLOW): O_NOFOLLOW only covers the last component, so a folder on the way
// swapped for a symbolic link between the check and the open would still be followed. openat()
// from the allowed folder with O_NOFOLLOW at every step follows nothing, and the resolved path
// has no links left in it, so any link met on the way is a change made after the check.
#include "core/confined_path.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/fs.h"

namespace ferry::core {
namespace {

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string c = path.substr(i, j - i);
    if (!c.empty() && c != ".") out.push_back(std::move(c));
    i = j + 1;
  }
  return out;
}

std::string join(const std::string& base, const std::vector<std::string>& comps, std::size_t from,
                 std::size_t to) {
  std::string out = base == "/" ? "" : base;
  for (std::size_t i = from; i < to; ++i) out += "/" + comps[i];
  return out.empty() ? "/" : out;
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

bool isLink(int dirFd, const std::string& name) {
  struct stat st {};
  return ::fstatat(dirFd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

}  // namespace

PathConfinement::PathConfinement(std::vector<std::string> allowed, std::vector<std::string> denied,
                                 std::vector<std::string> exempt)
    : allowed_(std::move(allowed)), denied_(std::move(denied)), exempt_(std::move(exempt)) {}

std::string PathConfinement::printable(const std::string& path) {
  std::string out;
  for (char c : path) out += c == '\0' ? std::string("\\0") : std::string(1, c);
  if (out.size() > 300) out = out.substr(0, 300) + "...";
  return out;
}

bool PathConfinement::isInside(const std::string& path, const std::string& root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  if (path.size() < root.size() || path.compare(0, root.size(), root) != 0) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

Result<std::string> PathConfinement::resolve(const std::string& path) {
  if (path.empty()) return Status::invalidArgument("the path is empty");
  if (path.find('\0') != std::string::npos)
    return Status::invalidArgument("the path " + printable(path) + " contains a NUL byte");
  if (path.size() >= PATH_MAX)
    return Status::invalidArgument("the path is " + std::to_string(path.size()) +
                                   " bytes long, longer than the system's limit (" +
                                   std::to_string(PATH_MAX - 1) + ")");
  std::string absolute = path;
  if (absolute[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) return errnoStatus("getcwd for", path, errno);
    absolute = std::string(cwd) + "/" + path;
  }
  const std::vector<std::string> comps = split(absolute);
  for (const auto& c : comps)
    if (c.size() > NAME_MAX)
      return Status::invalidArgument("the path " + printable(path) + " has a component longer than " +
                                     std::to_string(NAME_MAX) + " bytes");
  // The longest prefix that exists, resolved by the kernel's rules (`..` after a link goes to the
  // link target's parent, as open() would).
  std::size_t n = comps.size();
  std::string base;
  for (;; --n) {
    const std::string prefix = join("/", comps, 0, n);
    char buf[PATH_MAX];
    if (::realpath(prefix.c_str(), buf) != nullptr) {
      base = buf;
      break;
    }
    const int err = errno;
    if (err == ELOOP)
      return Status::invalidArgument("the path " + printable(path) + " runs into a loop of symbolic links");
    if (err != ENOENT && err != ENOTDIR) return errnoStatus("cannot resolve", prefix, err);
    if (n == 0) return errnoStatus("cannot resolve", "/", err);
  }
  if (n == comps.size()) return base;
  for (std::size_t i = n; i < comps.size(); ++i)
    if (comps[i] == "..")
      return Status::invalidArgument("the path " + printable(path) + " goes up ('..') out of " +
                                     join(base, comps, n, i) + ", which does not exist");
  const std::string first = join(base, comps, n, n + 1);
  struct stat st {};
  if (::lstat(first.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
    return Status::invalidArgument(first + " is a symbolic link whose target does not exist");
  return join(base, comps, n, comps.size());
}

std::vector<std::string> PathConfinement::resolvedList(const std::vector<std::string>& dirs,
                                                       bool keepMissing) const {
  std::vector<std::string> out;
  for (const auto& d : dirs) {
    if (d.empty()) continue;
    auto r = resolve(d);
    if (r.isOk()) {
      out.push_back(*r);
    } else if (keepMissing && d[0] == '/') {
      out.push_back(d);
    }
  }
  return out;
}

std::string PathConfinement::allowedText() const {
  std::string out;
  for (const auto& d : allowed_) out += (out.empty() ? "" : ",") + d;
  return out.empty() ? "(none)" : out;
}

Result<std::string> PathConfinement::check(const std::string& path) const {
  auto resolved = resolve(path);
  if (!resolved.isOk())
    return Status::invalidArgument(resolved.status().message() +
                                   "; file connectors use files under file.allowed.dirs=" + allowedText());
  const std::string& real = *resolved;
  bool inside = false;
  for (const auto& root : resolvedList(allowed_, false)) inside = inside || isInside(real, root);
  if (!inside) {
    const std::string via = real == path ? "" : " (it resolves to " + printable(real) + ")";
    return Status::invalidArgument(printable(path) + via +
                                   " is outside the folders file connectors may use: file.allowed.dirs=" +
                                   allowedText());
  }
  const auto exempt = resolvedList(exempt_, true);
  for (const auto& denied : resolvedList(denied_, true)) {
    if (!isInside(real, denied)) continue;
    bool isExempt = false;
    for (const auto& e : exempt) isExempt = isExempt || isInside(real, e);
    if (!isExempt)
      return Status::invalidArgument(printable(path) + " lies inside " + denied +
                                     ", which the worker keeps for itself (plugin.path and data.dir are off "
                                     "limits to file connectors even inside file.allowed.dirs)");
  }
  return real;
}

Result<LocalFile> PathConfinement::open(const std::string& path, LocalPath access) const {
  if (access == LocalPath::kNone) return Status::invalidArgument("openLocalFile: say kRead or kWrite");
  FERRY_ASSIGN_OR_RETURN(const std::string real, check(path));
  std::string root;
  for (const auto& r : resolvedList(allowed_, false))
    if (isInside(real, r) && r.size() > root.size()) root = r;
  auto opened = openBeneath(root, real, access);
  if (!opened.isOk() && opened.status().code() == StatusCode::kInvalidArgument && real != path)
    return Status::invalidArgument(printable(path) + ": " + opened.status().message());
  return opened;
}

Result<LocalFile> PathConfinement::openBeneath(const std::string& root, const std::string& real, LocalPath access) {
  const std::string& path = real;
  if (root.empty() || !isInside(real, root)) return Status::invalidArgument(real + " is not inside " + root);
  const std::vector<std::string> rel = split(real.substr(root == "/" ? 0 : root.size()));
  if (rel.empty()) return Status::invalidArgument(printable(path) + " is an allowed folder, not a file");
  const std::string changed = " changed after it was checked (a symbolic link appeared where " + real +
                              " had none); file connectors never follow links at open";
  Fd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.get() < 0) {
    const int err = errno;
    if (err == ELOOP || err == ENOTDIR) return Status::invalidArgument("the allowed folder " + root + changed);
    return errnoStatus("cannot open", root, err);
  }
  for (std::size_t i = 0; i + 1 < rel.size(); ++i) {
    const int next = ::openat(dir.get(), rel[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      const int err = errno;
      const std::string at = join(root, rel, 0, i + 1);
      if ((err == ELOOP || err == ENOTDIR) && isLink(dir.get(), rel[i]))
        return Status::invalidArgument(at + changed);
      if (err == ENOENT) return Status::notFound("cannot open " + real + ": the folder " + at + " does not exist");
      return errnoStatus("cannot open " + real + ": folder", at, err);
    }
    dir.reset(next);
  }
  const std::string& name = rel.back();
  const int flags = O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK |
                    (access == LocalPath::kRead ? O_RDONLY : (O_RDWR | O_APPEND));
  LocalFile out;
  out.path = real;
  for (int attempt = 0; attempt < 2 && out.fd < 0; ++attempt) {
    int fd = ::openat(dir.get(), name.c_str(), flags);
    int err = errno;
    if (fd < 0 && err == ENOENT && access == LocalPath::kWrite) {
      fd = ::openat(dir.get(), name.c_str(), flags | O_CREAT | O_EXCL, 0644);
      err = errno;
      if (fd >= 0) out.created = true;
      if (fd < 0 && err == EEXIST) continue;  // created meanwhile: open it as it is
    }
    if (fd < 0) {
      if (err == ELOOP || (err == ENOTDIR && isLink(dir.get(), name)))
        return Status::invalidArgument(real + changed);
      if (err == ENXIO) return Status::invalidArgument(real + " is a socket, not a regular file");
      return errnoStatus("cannot open", real, err);
    }
    out.fd = fd;
  }
  if (out.fd < 0) return Status::unavailable("cannot open " + real + ": it appeared and vanished meanwhile");
  return out;
}

}  // namespace ferry::core
