#include "core/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace ferry::core {

Status errnoStatus(std::string_view what, const std::string& path, int err) {
  std::string msg = std::string(what) + " " + path + ": " + std::strerror(err);
  if (err == ENOENT) return Status::notFound(msg);
  if (err == EINVAL) return Status::invalidArgument(msg);
  return Status::unavailable(msg);
}

std::string parentDir(const std::string& path) {
  std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

Result<std::string> readAt(int fd, std::uint64_t offset, std::size_t size, const std::string& path) {
  std::string out(size, '\0');
  std::size_t have = 0;
  while (have < size) {
    const ssize_t n = ::pread(fd, out.data() + have, size - have, static_cast<off_t>(offset + have));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return errnoStatus("read", path, n < 0 ? errno : EIO);
    have += static_cast<std::size_t>(n);
  }
  return out;
}

Status syncDir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errnoStatus("open folder", path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return errnoStatus("fsync folder", path, err);
  return Status::ok();
}

Status ensureDir(const std::string& path, unsigned mode) {
  namespace fs = std::filesystem;
  fs::path target = fs::path(path).lexically_normal();
  // "a/b/" normalises to "a/b/" (an empty last name); the folder is "a/b".
  while (target.has_parent_path() && !target.has_filename() && target != target.root_path()) {
    target = target.parent_path();
  }
  if (target.empty()) return Status::ok();
  // Walk up to the first folder that exists, then create the missing ones top down.
  std::vector<fs::path> missing;
  for (fs::path cur = target; !cur.empty();) {
    struct stat st {};
    if (::stat(cur.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        return Status::unavailable("create folder " + path + ": " + cur.string() +
                                   " exists and is not a folder");
      }
      break;
    }
    if (errno != ENOENT) return errnoStatus("create folder", cur.string(), errno);
    missing.push_back(cur);
    fs::path up = cur.parent_path();
    if (up == cur) break;
    cur = up;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), static_cast<mode_t>(mode)) != 0) {
      int err = errno;
      struct stat st {};
      // Someone else created it meanwhile: fine when it is a folder.
      if (!(err == EEXIST && ::stat(it->c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
        return errnoStatus("create folder", it->string(), err);
      }
    }
    Status synced = syncDir(parentDir(it->string()));
    if (!synced.isOk()) return synced;
  }
  return Status::ok();
}

Status writeSyncedFile(const std::string& path, std::string_view contents, unsigned mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  static_cast<mode_t>(mode));
  if (fd < 0) return errnoStatus("create", path, errno);
  // O_CREAT's mode is filtered by the umask and ignored for an existing file (a temp file left
  // by a crash): set it exactly.
  if (::fchmod(fd, static_cast<mode_t>(mode)) != 0) {
    int err = errno;
    ::close(fd);
    return errnoStatus("chmod", path, err);
  }
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return errnoStatus("write", path, err);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return errnoStatus("fsync", path, err);
  }
  if (::close(fd) != 0) return errnoStatus("close", path, errno);
  return Status::ok();
}

Status atomicWriteFile(const std::string& path, std::string_view contents, unsigned mode) {
  std::string tmp = path + ".tmp";
  Status written = writeSyncedFile(tmp, contents, mode);
  if (!written.isOk()) return written;
  if (::rename(tmp.c_str(), path.c_str()) != 0) return errnoStatus("rename onto", path, errno);
  return syncDir(parentDir(path));
}

Result<std::string> readFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return Status::notFound("no such file: " + path);
    return errnoStatus("cannot read", path, err);
  }
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      // EISDIR and the like are not "the file is missing".
      if (err == ENOENT) err = EIO;
      return errnoStatus("cannot read", path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

Result<std::optional<unsigned>> restrictMode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errnoStatus("stat", path, errno);
  const unsigned mode = st.st_mode & 07777;
  if ((mode & 077) == 0) return std::optional<unsigned>();
  if (::chmod(path.c_str(), static_cast<mode_t>(mode & 07700)) != 0) return errnoStatus("chmod", path, errno);
  return std::optional<unsigned>(mode);
}

}  // namespace ferry::core
