#include "core/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ferry::core {

Status errnoStatus(std::string_view what, const std::string& path, int err) {
  std::string msg = std::string(what) + " " + path + ": " + std::strerror(err);
  if (err == ENOENT) return Status::notFound(msg);
  if (err == EINVAL) return Status::invalidArgument(msg);
  return Status::unavailable(msg);
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

Status ensureDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::unavailable("create folder " + path + ": " + ec.message());
  return Status::ok();
}

Status atomicWriteFile(const std::string& path, std::string_view contents) {
  std::filesystem::path target(path);
  std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errnoStatus("create", tmp, errno);
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return errnoStatus("write", tmp, err);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return errnoStatus("fsync", tmp, err);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return errnoStatus("rename onto", path, errno);
  return syncDir(dir);
}

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return Status::notFound("no such file: " + path);
    return Status::unavailable("cannot read " + path);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ferry::core
