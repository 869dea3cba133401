// FileStreamSink (see file_sink.h). put() never loses a batch it accepted: when the buffer cannot
// be written, put() refuses the batch *before* taking it (a retriable error, so the runtime
// retries the same batch without duplicating it), and flush() reports write failures.
#include "connectors/file/file_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>
#include <cstring>

#include "connectors/common.h"
#include "core/crc32c.h"
#include "core/fs.h"
#include "core/logging.h"

namespace ferry::connectors {
namespace {

constexpr std::size_t kWriteThreshold = 1u << 20;  // 1 MiB
constexpr std::uint64_t kTailWindow = 4096;
constexpr std::uint64_t kPage = 4096;        // the unit a lost write-back leaves as zeros
constexpr std::size_t kMinZeroRun = 64;       // zeros before a page boundary that mean a lost write  // bytes checksummed to recognise the sink's own file

Status ioError(const char* what, const std::string& path, int err) {
  return Status::unavailable(std::string("FileStreamSink: cannot ") + what + " " + path + ": " +
                             std::strerror(err));
}

}  // namespace

const ConfigDef& FileStreamSinkConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("file", ConfigType::kString, std::nullopt, Importance::kHigh,
             "The file every record's value is appended to, one line per record, inside the "
             "worker's file.allowed.dirs (its folder must exist).",
             validators::nonEmptyString());
    d.localPath("file", LocalPath::kWrite);
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

Result<std::uint64_t> FileStreamSinkTask::repairPast(int fd, const std::string& path, std::uint64_t length) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ioError("stat", path, errno);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size <= length) return std::uint64_t{0};
  FERRY_ASSIGN_OR_RETURN(const std::string tail, core::readAt(fd, length, static_cast<std::size_t>(size - length), path));
  // The first stretch a lost page leaves: zeros up to a page boundary (or the end of the file),
  // from `length`, from a page boundary, or from where the file ended when that page was last
  // written back (then at least kMinZeroRun of them: a NUL or two before a boundary is data).
  std::size_t cut = tail.size();
  for (std::uint64_t at = length; at < size;) {
    const std::uint64_t next = std::min<std::uint64_t>((at / kPage + 1) * kPage, size);
    const std::string_view block(tail.data() + (at - length), static_cast<std::size_t>(next - at));
    const std::size_t lastData = block.find_last_not_of('\0');
    const std::size_t zeros = lastData == std::string_view::npos ? block.size() : block.size() - lastData - 1;
    if (zeros == block.size() || zeros >= kMinZeroRun) {
      cut = static_cast<std::size_t>(at - length) + (block.size() - zeros);
      break;
    }
    at = next;
  }
  // Keep the whole lines before it; the line it (or the end of the file) tears goes with it.
  const std::size_t nl = cut == 0 ? std::string::npos : tail.rfind('\n', cut - 1);
  const std::uint64_t keep = length + (nl == std::string::npos ? 0 : nl + 1);
  if (keep < size && (::ftruncate(fd, static_cast<off_t>(keep)) != 0 || ::fdatasync(fd) != 0))
    return ioError("truncate", path, errno);
  return size - keep;
}

namespace {

std::optional<std::uint64_t> parseU64(const StringMap& m, const char* key) {
  auto it = m.find(key);
  if (it == m.end() || it->second.empty()) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size()) return std::nullopt;
  return v;
}

}  // namespace

Status FileStreamSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto parsed,
                         parseConfig(FileStreamSinkConnector::definition(), config, "FileStreamSink"));
  stop();
  context_ = &context;
  path_ = parsed.getString("file");
  fsync_ = parsed.getBool("fsync");
  FERRY_ASSIGN_OR_RETURN(std::optional<StringMap> state, context.loadState());
  // Through the worker's confinement (file.allowed.dirs; no symbolic link followed at open).
  auto opened = context.openLocalFile(path_, LocalPath::kWrite);
  if (!opened.isOk())
    return Status(opened.status().code(), "FileStreamSink: " + opened.status().message());
  fd_ = opened->fd;
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return ioError("stat", path_, errno);
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    return Status::invalidArgument("FileStreamSink: " + path_ + " is not a regular file");
  }
  // The new name must survive a power loss as well as the lines written under it.
  if (opened->created) FERRY_RETURN_IF_ERROR(core::syncDir(core::parentDir(opened->path)));
  device_ = static_cast<std::uint64_t>(st.st_dev);
  inode_ = static_cast<std::uint64_t>(st.st_ino);
  birth_ = birthTime(fd_);
  auto size = static_cast<std::uint64_t>(st.st_size);
  // The file is the one this task wrote when its identity matches: device and inode (reused once
  // a file is deleted, so also its birth time where the file system keeps one) and a checksum of
  // the bytes just before the recorded length.
  std::optional<std::uint64_t> ours;  // the file's length after this task's last flush
  if (state && state->count("file") && state->at("file") == path_ && parseU64(*state, "device") == device_ &&
      parseU64(*state, "inode") == inode_ &&
      (!birth_ || !parseU64(*state, "birth_ns") || parseU64(*state, "birth_ns") == birth_)) {
    ours = parseU64(*state, "length");
    if (ours && *ours > size) {
      log_->warn("{}: {} is shorter ({} bytes) than this sink left it ({} bytes): someone truncated it, or writes "
                 "were lost; it is left as it is",
                 context.connectorName(), path_, size, *ours);
      ours.reset();
    } else if (ours) {
      auto crc = tailChecksum(*ours);
      if (!crc.isOk()) return crc.status();
      if (parseU64(*state, "tail_crc32c") != *crc) {
        log_->warn("{}: {} no longer holds what this sink wrote before byte {} (replaced by another file?); it is "
                   "left as it is",
                   context.connectorName(), path_, *ours);
        ours.reset();
      }
    }
  }
  if (ours) {
    // Bytes past the flushed length were written after the last flush. A crash may have kept any
    // subset of their pages: pages it lost read as zeros, and the last line may be torn. From the
    // first such stretch on, and a torn last line, go (their records were never committed: they
    // are delivered again); whole lines before it stay. The saved length itself may be older than
    // the last flush (a position store that fell back to its previous copy): a lost page or a torn
    // line can only lie past the real last flush, so what stays is never less than was committed.
    FERRY_ASSIGN_OR_RETURN(std::uint64_t dropped, repairPast(fd_, path_, *ours));
    if (dropped > 0)
      log_->warn(
          "{}: dropped {} bytes of {} that a crash left incomplete after this sink's last flush "
          "(their records are written again)",
          context.connectorName(), dropped, path_);
    size -= dropped;
  } else if (size > 0) {
    char last = '\n';
    if (::pread(fd_, &last, 1, static_cast<off_t>(size - 1)) != 1) return ioError("read", path_, errno);
    if (last != '\n') {
      log_->info("{}: {} does not end with a newline; it is kept as it is and the first record starts a new line",
                 context.connectorName(), path_);
      if (::write(fd_, "\n", 1) != 1) return ioError("write", path_, errno);
      ++size;
    }
  }
  written_ = size;
  saved_.reset();
  stateless_ = false;
  Status s = saveLength(/*sync=*/true);
  if (s.code() == StatusCode::kFailedPrecondition) {
    stateless_ = true;
    log_->warn("{}: the runtime keeps no sink task state; what a crash leaves after the last flush "
               "(a torn line) will not be cut off at restart",
               context.connectorName());
  } else if (!s.isOk()) {
    return s;
  }
  buf_.reserve(kWriteThreshold + 64 * 1024);
  return Status::ok();
}

// Records that the file is whole up to written_: every byte up to it was there before or was
// written by this task, and (with fsync) is on disk.
Status FileStreamSinkTask::saveLength(bool sync) {
  if (stateless_ || saved_ == written_) return Status::ok();
  if (sync && fsync_ && ::fdatasync(fd_) != 0) return ioError("fdatasync", path_, errno);
  FERRY_ASSIGN_OR_RETURN(std::uint32_t crc, tailChecksum(written_));
  StringMap state{{"file", path_},
                  {"device", std::to_string(device_)},
                  {"inode", std::to_string(inode_)},
                  {"length", std::to_string(written_)},
                  {"tail_crc32c", std::to_string(crc)}};
  if (birth_) state["birth_ns"] = std::to_string(*birth_);
  FERRY_RETURN_IF_ERROR(context_->saveState(state));
  saved_ = written_;
  return Status::ok();
}

// CRC32C of the (up to) 4 KiB before byte `end`.
Result<std::uint32_t> FileStreamSinkTask::tailChecksum(std::uint64_t end) {
  const std::uint64_t begin = end > kTailWindow ? end - kTailWindow : 0;
  FERRY_ASSIGN_OR_RETURN(const std::string window, core::readAt(fd_, begin, static_cast<std::size_t>(end - begin), path_));
  return core::crc32c(window);
}

std::optional<std::uint64_t> FileStreamSinkTask::birthTime(int fd) {
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &stx) != 0 || (stx.stx_mask & STATX_BTIME) == 0) return std::nullopt;
  return static_cast<std::uint64_t>(stx.stx_btime.tv_sec) * 1000000000u + stx.stx_btime.tv_nsec;
}

Status FileStreamSinkTask::writeBuffer() {
  std::size_t done = 0;
  while (done < buf_.size()) {
    const ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      buf_.erase(0, done);  // keep only what is not written yet
      written_ += done;
      return ioError("write", path_, err);
    }
    done += static_cast<std::size_t>(n);
  }
  written_ += done;
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
  return saveLength(/*sync=*/false);
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
