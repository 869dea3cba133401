// FileStreamSink (see file_sink.h). put() never loses a batch it accepted: when the buffer cannot
// be written, put() refuses the batch *before* taking it (a retriable error, so the runtime
// retries the same batch without duplicating it), and flush() reports write failures.
#include "connectors/file/file_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "connectors/common.h"
#include "core/logging.h"

namespace ferry::connectors {
namespace {

constexpr std::size_t kWriteThreshold = 1u << 20;  // 1 MiB
constexpr std::size_t kScanChunk = 64 * 1024;

Status ioError(const char* what, const std::string& path, int err) {
  return Status::unavailable(std::string("FileStreamSink: cannot ") + what + " " + path + ": " +
                             std::strerror(err));
}

}  // namespace

const ConfigDef& FileStreamSinkConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("file", ConfigType::kString, std::nullopt, Importance::kHigh,
             "The file every record's value is appended to, one line per record.",
             validators::nonEmptyString());
    d.define("fsync", ConfigType::kBool, "true", Importance::kMedium,
             "fdatasync() the file on every flush, so committed offsets never run ahead of the "
             "disk.");
    return d;
  }();
  return def;
}

std::string FileStreamSinkConnector::version() const { return kVersion; }

Status FileStreamSinkConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "FileStreamSink"));
  (void)parsed;
  return Status::ok();
}

Result<std::vector<StringMap>> FileStreamSinkConnector::taskConfigs(int maxTasks) {
  std::vector<StringMap> out;
  if (maxTasks >= 1) out.emplace_back();  // one writer per file
  return out;
}

std::unique_ptr<SinkTask> FileStreamSinkConnector::createTask() {
  return std::make_unique<FileStreamSinkTask>();
}

FileStreamSinkTask::FileStreamSinkTask() : log_(core::logger("file-sink")) {}

FileStreamSinkTask::~FileStreamSinkTask() { stop(); }

std::string FileStreamSinkTask::version() const { return kVersion; }

Result<std::uint64_t> FileStreamSinkTask::repairTornTail(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::uint64_t{0};
    return ioError("open", path, errno);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ioError("stat", path, err);
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::uint64_t keep = 0;  // bytes up to and including the last '\n'
  std::string chunk(kScanChunk, '\0');
  std::uint64_t end = size;
  bool found = false;
  while (end > 0 && !found) {
    const std::uint64_t begin = end > kScanChunk ? end - kScanChunk : 0;
    const auto len = static_cast<std::size_t>(end - begin);
    ssize_t n;
    do {
      n = ::pread(fd, chunk.data(), len, static_cast<off_t>(begin));
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(len)) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      return ioError("read", path, err);
    }
    for (std::size_t i = len; i > 0; --i) {
      if (chunk[i - 1] == '\n') {
        keep = begin + i;
        found = true;
        break;
      }
    }
    end = begin;
  }
  std::uint64_t dropped = size - keep;
  if (dropped > 0) {
    if (::ftruncate(fd, static_cast<off_t>(keep)) != 0 || ::fdatasync(fd) != 0) {
      const int err = errno;
      ::close(fd);
      return ioError("truncate", path, err);
    }
  }
  ::close(fd);
  return dropped;
}

Status FileStreamSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto parsed,
                         parseConfig(FileStreamSinkConnector::definition(), config, "FileStreamSink"));
  stop();
  path_ = parsed.getString("file");
  fsync_ = parsed.getBool("fsync");
  FERRY_ASSIGN_OR_RETURN(std::uint64_t dropped, repairTornTail(path_));
  if (dropped > 0)
    log_->warn("{}: {} ended with an incomplete line (left by a crash); dropped its {} bytes",
               context.connectorName(), path_, dropped);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) return ioError("open", path_, errno);
  buf_.reserve(kWriteThreshold + 64 * 1024);
  return Status::ok();
}

Status FileStreamSinkTask::writeBuffer() {
  std::size_t done = 0;
  while (done < buf_.size()) {
    const ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      buf_.erase(0, done);  // keep only what is not written yet
      return ioError("write", path_, err);
    }
    done += static_cast<std::size_t>(n);
  }
  buf_.clear();
  return Status::ok();
}

Status FileStreamSinkTask::put(std::vector<Record>& records) {
  if (fd_ < 0) return Status::failedPrecondition("FileStreamSink: put() before start()");
  // Make room before taking the batch, so a failure here leaves nothing half-taken.
  if (buf_.size() >= kWriteThreshold) FERRY_RETURN_IF_ERROR(writeBuffer());
  for (const Record& r : records) {
    if (r.value.isNull()) continue;
    buf_.append(r.value.view());
    buf_.push_back('\n');
  }
  // The batch is ours now; a write failure is reported by the next put() or flush().
  if (buf_.size() >= kWriteThreshold) (void)writeBuffer();
  return Status::ok();
}

Status FileStreamSinkTask::flush() {
  if (fd_ < 0) return Status::failedPrecondition("FileStreamSink: flush() before start()");
  FERRY_RETURN_IF_ERROR(writeBuffer());
  if (fsync_ && ::fdatasync(fd_) != 0) return ioError("fdatasync", path_, errno);
  return Status::ok();
}

void FileStreamSinkTask::stop() {
  if (fd_ < 0) return;
  if (!buf_.empty()) {
    Status s = writeBuffer();
    if (!s.isOk()) log_->warn("{}", s.toString());
  }
  ::close(fd_);
  fd_ = -1;
}

}  // namespace ferry::connectors
