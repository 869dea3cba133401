// FileStreamSource (see file_source.h). Reads in 64 KiB chunks with read(2) and splits lines with
// memchr from a scan cursor: no per-byte system calls, and no byte is searched twice. Rotation
// and truncation are checked only at EOF (one stat(2) and one fstat(2) per idle poll), so a busy
// file costs nothing extra.
#include "connectors/file/file_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include "connectors/common.h"
#include "core/clock.h"
#include "core/logging.h"

namespace ferry::connectors {
namespace {

constexpr std::size_t kChunk = 64 * 1024;

Status notRegular(const std::string& path, const char* what) {
  return Status::invalidArgument(
      "FileStreamSource: " + path + " is " + what +
      ", not a regular file; FileStreamSource reads regular files only (it resumes at a byte "
      "position and follows rotation by inode, which pipes and devices do not have). Point "
      "'file'/'files' at a regular file");
}

std::optional<std::uint64_t> parseU64(const std::string& s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ",";
    out += items[i];
  }
  return out;
}

ConfigDef makeDefinition() {
  ConfigDef d;
  d.define("file", ConfigType::kString, "", Importance::kHigh,
           "The file to tail, inside the worker's file.allowed.dirs. Either 'file' or 'files' is "
           "required (both may be given).");
  d.define("files", ConfigType::kList, "", Importance::kHigh,
           "Several files to tail (comma-separated, inside file.allowed.dirs); they are split over "
           "up to tasks.max tasks.");
  d.localPath("file", LocalPath::kRead).localPath("files", LocalPath::kRead);
  d.define("topic", ConfigType::kString, std::nullopt, Importance::kHigh,
           "The backbone topic every line is written to.", validators::nonEmptyString());
  d.define("batch.size", ConfigType::kInt, "2000", Importance::kLow,
           "The most records one poll returns.", validators::atLeast(1));
  d.define("poll.interval.ms", ConfigType::kLong, "100", Importance::kLow,
           "How long to wait before looking again when the files have nothing new.",
           validators::atLeast(1));
  d.define("read.from", ConfigType::kString, "beginning", Importance::kMedium,
           "Where to start a file that has no committed position: 'beginning' or 'end'.",
           validators::oneOf({"beginning", "end"}));
  d.define("max.line.bytes", ConfigType::kLong, "1048576", Importance::kMedium,
           "The longest line, in bytes before its newline. A longer line fails the task, naming "
           "the file and the byte where the line starts; nothing from there on is taken, so a "
           "restart with a larger value resumes at that line. Bounds the memory a file can take.",
           validators::atLeast(1));
  d.define("max.poll.bytes", ConfigType::kLong, "1048576", Importance::kLow,
           "The most bytes one poll reads (over all files of the task), so a poll ends soon "
           "whatever the files hold.",
           validators::atLeast(1));
  return d;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Connector

const ConfigDef& FileStreamSourceConnector::definition() {
  static const ConfigDef def = makeDefinition();
  return def;
}

const ConfigDef& FileStreamSourceConnector::taskDefinition() {
  static const ConfigDef def = [] {
    ConfigDef d = makeDefinition();
    d.define("task.files", ConfigType::kList, "", Importance::kLow,
             "Internal: the files of one task, set by the connector in each task config.");
    return d;
  }();
  return def;
}

std::vector<std::string> FileStreamSourceConnector::filesOf(const ParsedConfig& config) {
  std::vector<std::string> out;
  auto add = [&](const std::string& f) {
    if (!f.empty() && std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  };
  add(config.getString("file"));
  for (const auto& f : config.getList("files")) add(f);
  return out;
}

std::string FileStreamSourceConnector::version() const { return kVersion; }

void FileStreamSourceConnector::validate(const StringMap& config,
                                         ConfigValidation& validation) const {
  auto has = [&](const char* key) {
    auto it = config.find(key);
    if (it == config.end()) return false;
    return it->second.find_first_not_of(" \t,") != std::string::npos;
  };
  if (!has("file") && !has("files"))
    validation.errors["file"].push_back(
        "Missing configuration: set \"file\" (one file) or \"files\" (a list of files)");
}

Status FileStreamSourceConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "FileStreamSource"));
  files_ = filesOf(parsed);
  if (files_.empty())
    return Status::invalidArgument(
        "FileStreamSource: set \"file\" (one file) or \"files\" (a list of files)");
  return Status::ok();
}

Result<std::vector<StringMap>> FileStreamSourceConnector::taskConfigs(int maxTasks) {
  const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(std::max(1, maxTasks)),
                                              files_.size());
  std::vector<std::vector<std::string>> groups(n);
  for (std::size_t i = 0; i < files_.size(); ++i) groups[i % n].push_back(files_[i]);
  std::vector<StringMap> out;
  for (auto& g : groups) out.push_back({{"task.files", join(g)}});
  return out;
}

std::unique_ptr<SourceTask> FileStreamSourceConnector::createTask() {
  return std::make_unique<FileStreamSourceTask>();
}

// ---------------------------------------------------------------------------------------------
// Task

FileStreamSourceTask::FileStreamSourceTask() : log_(core::logger("file-source")) {}

FileStreamSourceTask::~FileStreamSourceTask() { stop(); }

std::string FileStreamSourceTask::version() const { return kVersion; }

Status FileStreamSourceTask::start(const StringMap& config, SourceTaskContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(FileStreamSourceConnector::taskDefinition(),
                                                  config, "FileStreamSource task"));
  std::vector<std::string> paths = parsed.getList("task.files");
  if (paths.empty()) paths = FileStreamSourceConnector::filesOf(parsed);
  if (paths.empty())
    return Status::invalidArgument(
        "FileStreamSource task: set \"file\" (one file) or \"files\" (a list of files)");
  context_ = &context;
  topic_ = parsed.getString("topic");
  batchSize_ = static_cast<std::size_t>(parsed.getInt("batch.size"));
  pollInterval_ = std::chrono::milliseconds(parsed.getLong("poll.interval.ms"));
  readFromEnd_ = parsed.getString("read.from") == "end";
  maxLineBytes_ = static_cast<std::size_t>(parsed.getLong("max.line.bytes"));
  maxPollBytes_ = static_cast<std::size_t>(parsed.getLong("max.poll.bytes"));
  stop();
  files_.clear();
  files_.resize(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    files_[i].path = paths[i];
    files_[i].partition = {{"filename", paths[i]}};
  }
  for (auto& f : files_) FERRY_RETURN_IF_ERROR(openFile(f, /*atStart=*/true));
  return Status::ok();
}

void FileStreamSourceTask::closeFile(Tailed& f) {
  if (f.fd >= 0) ::close(f.fd);
  f.fd = -1;
  f.buf.clear();
  f.consumed = 0;
  f.scanned = 0;
  f.bufStart = 0;
  f.rotationPending = false;
}

Status FileStreamSourceTask::openFile(Tailed& f, bool atStart) {
  // Through the worker's confinement (file.allowed.dirs; no symbolic link followed at open).
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, for ever if none
  // comes. The type is checked before anything is read; only regular files are kept.
  auto opened = context_->openLocalFile(f.path, LocalPath::kRead);
  if (!opened.isOk()) {
    if (opened.status().code() == StatusCode::kNotFound) {
      if (!f.missingLogged) log_->info("{}: file {} does not exist yet; waiting for it",
                                       context_->connectorName(), f.path);
      f.missingLogged = true;
      return Status::ok();
    }
    return Status(opened.status().code(), "FileStreamSource: " + opened.status().message());
  }
  const int fd = opened->fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::unavailable("FileStreamSource: cannot stat " + f.path + ": " +
                               std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return notRegular(f.path, S_ISFIFO(st.st_mode)   ? "a FIFO (named pipe)"
                              : S_ISCHR(st.st_mode)  ? "a character device"
                              : S_ISBLK(st.st_mode)  ? "a block device"
                              : S_ISDIR(st.st_mode)  ? "a directory"
                              : S_ISSOCK(st.st_mode) ? "a socket"
                                                     : "not a regular file");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  f.missingLogged = false;
  f.fd = fd;
  f.device = static_cast<std::uint64_t>(st.st_dev);
  f.inode = static_cast<std::uint64_t>(st.st_ino);
  f.inodeText = std::to_string(f.inode);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::uint64_t startAt = 0;
  if (!f.resumeChecked) {
    f.resumeChecked = true;
    std::optional<StringMap> committed = context_->committedOffset(f.partition);
    if (committed) {
      auto pos = committed->count("position") ? parseU64(committed->at("position")) : std::nullopt;
      auto ino = committed->count("inode") ? parseU64(committed->at("inode")) : std::nullopt;
      if (pos && ino && *ino == f.inode && *pos <= size) {
        startAt = *pos;
        log_->info("{}: resuming {} at byte {}", context_->connectorName(), f.path, startAt);
      } else if (pos && ino && *ino != f.inode) {
        log_->warn("{}: {} is another file than the committed position's (inode {} now, {} then);"
                   " reading it from the start", context_->connectorName(), f.path, f.inode, *ino);
      } else if (pos && ino) {
        log_->warn("{}: {} is shorter ({} bytes) than the committed position {}; it was truncated,"
                   " reading it from the start", context_->connectorName(), f.path, size, *pos);
      } else {
        log_->warn("{}: committed position of {} is unreadable; reading it from the start",
                   context_->connectorName(), f.path);
      }
    } else if (atStart && readFromEnd_) {
      startAt = size;
    }
  }
  if (startAt > 0 && ::lseek(fd, static_cast<off_t>(startAt), SEEK_SET) < 0) {
    const int err = errno;
    closeFile(f);
    return Status::unavailable("FileStreamSource: cannot seek in " + f.path + ": " +
                               std::strerror(err));
  }
  f.buf.clear();
  f.consumed = 0;
  f.scanned = 0;
  f.bufStart = startAt;
  f.rotationPending = false;
  return Status::ok();
}

void FileStreamSourceTask::emit(Tailed& f, std::string_view line, std::uint64_t endOffset,
                                std::vector<Record>& out, std::int64_t nowMs) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  Record& r = out.emplace_back();
  r.topic = topic_;
  r.value = Bytes(std::string(line));
  r.timestampMs = nowMs;
  r.position.partition = f.partition;
  r.position.offset = {{"inode", f.inodeText}, {"position", std::to_string(endOffset)}};
}

bool FileStreamSourceTask::checkAtEof(Tailed& f, std::vector<Record>& out, std::int64_t nowMs) {
  if (f.rotationPending) {
    // The old file is drained: its unterminated tail, if any, will never be completed.
    const std::string_view rest = std::string_view(f.buf).substr(f.consumed);
    if (!rest.empty()) emit(f, rest, f.bufStart + f.buf.size(), out, nowMs);
    log_->info("{}: {} was rotated; reading the new file from the start",
               context_->connectorName(), f.path);
    closeFile(f);
    Status s = openFile(f, /*atStart=*/false);
    if (!s.isOk()) pendingError_ = s;
    return f.fd >= 0;
  }
  struct stat pathSt {};
  if (::stat(f.path.c_str(), &pathSt) == 0 &&
      (static_cast<std::uint64_t>(pathSt.st_ino) != f.inode ||
       static_cast<std::uint64_t>(pathSt.st_dev) != f.device)) {
    // Read the old descriptor once more to its end before switching (a writer may have appended
    // between our last read and the rename).
    f.rotationPending = true;
    return true;
  }
  // Missing path (renamed, not yet recreated): keep reading the old descriptor.
  struct stat st {};
  if (::fstat(f.fd, &st) == 0 &&
      static_cast<std::uint64_t>(st.st_size) < f.bufStart + f.buf.size()) {
    log_->warn("{}: {} was truncated to {} bytes (read up to {}); reading it from the start",
               context_->connectorName(), f.path, static_cast<std::uint64_t>(st.st_size),
               f.bufStart + f.buf.size());
    if (::lseek(f.fd, 0, SEEK_SET) < 0) return false;
    f.buf.clear();
    f.consumed = 0;
    f.scanned = 0;
    f.bufStart = 0;
    return true;
  }
  return false;
}

Status FileStreamSourceTask::lineTooLong(const Tailed& f, std::size_t length) const {
  const std::uint64_t at = f.bufStart + f.consumed;
  return Status::failedPrecondition(
      "FileStreamSource: the line starting at byte " + std::to_string(at) + " of " + f.path +
      " is longer than max.line.bytes=" + std::to_string(maxLineBytes_) + " (" +
      std::to_string(length) + " bytes without a newline so far); raise max.line.bytes or fix "
      "the file. Nothing from byte " + std::to_string(at) +
      " on was taken: the task resumes at that line when restarted");
}

Status FileStreamSourceTask::readFile(Tailed& f, std::vector<Record>& out, std::size_t limit,
                                      std::int64_t nowMs, std::size_t& budget) {
  if (f.fd < 0) {
    FERRY_RETURN_IF_ERROR(openFile(f, /*atStart=*/false));
    if (f.fd < 0) return Status::ok();
  }
  while (out.size() < limit) {
    // Complete lines already buffered. buf[consumed, scanned) was searched before and holds no
    // newline: the search goes on from the cursor, so a long line is searched once, not once per
    // read.
    while (out.size() < limit) {
      const std::size_t from = std::max(f.consumed, f.scanned);
      const std::size_t avail = f.buf.size() - from;
      const void* nl = avail ? std::memchr(f.buf.data() + from, '\n', avail) : nullptr;
      if (nl == nullptr) {
        bytesScanned_ += avail;
        f.scanned = f.buf.size();
        break;
      }
      const auto end = static_cast<std::size_t>(static_cast<const char*>(nl) - f.buf.data());
      bytesScanned_ += end + 1 - from;
      const std::size_t len = end - f.consumed;
      if (len > maxLineBytes_) return lineTooLong(f, len);
      emit(f, std::string_view(f.buf.data() + f.consumed, len), f.bufStart + end + 1, out, nowMs);
      f.consumed = end + 1;
      f.scanned = f.consumed;
    }
    if (out.size() >= limit) break;
    // Only a partial line (or nothing) is left.
    if (f.buf.size() - f.consumed > maxLineBytes_) return lineTooLong(f, f.buf.size() - f.consumed);
    if (budget == 0) break;  // this poll read enough; the next one goes on
    // Move the partial line to the front and read more.
    if (f.consumed > 0) {
      f.buf.erase(0, f.consumed);
      f.bufStart += f.consumed;
      f.scanned -= f.consumed;
      f.consumed = 0;
    }
    const std::size_t want = std::min(kChunk, budget);
    const std::size_t old = f.buf.size();
    f.buf.resize(old + want);
    ssize_t n;
    do {
      n = ::read(f.fd, f.buf.data() + old, want);
    } while (n < 0 && errno == EINTR);
    const int err = errno;
    f.buf.resize(old + static_cast<std::size_t>(n > 0 ? n : 0));
    if (n < 0)
      return Status::unavailable("FileStreamSource: cannot read " + f.path + ": " +
                                 std::strerror(err));
    budget -= static_cast<std::size_t>(n);
    bytesRead_ += static_cast<std::uint64_t>(n);
    if (n == 0 && !checkAtEof(f, out, nowMs)) break;
  }
  return Status::ok();
}

Result<std::size_t> FileStreamSourceTask::poll(std::vector<Record>& out, std::size_t maxRecords,
                                               std::chrono::milliseconds maxWait) {
  if (!pendingError_.isOk()) {
    Status s = pendingError_;
    pendingError_ = Status::ok();
    return s;
  }
  const std::size_t limit = std::min(maxRecords, batchSize_);
  if (limit == 0 || files_.empty()) return std::size_t{0};
  const auto deadline = std::chrono::steady_clock::now() + maxWait;
  std::size_t budget = maxPollBytes_;
  while (true) {
    const std::int64_t now = core::nowMs();
    for (std::size_t i = 0; i < files_.size() && out.size() < limit; ++i) {
      Tailed& f = files_[(next_ + i) % files_.size()];
      Status s = readFile(f, out, limit, now, budget);
      if (!s.isOk()) {
        if (out.empty()) return s;
        pendingError_ = s;  // hand over what was read; report the error next time
        break;
      }
    }
    next_ = (next_ + 1) % files_.size();
    if (!out.empty()) return out.size();
    if (budget == 0) return std::size_t{0};  // read max.poll.bytes, no line complete yet
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return std::size_t{0};
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(left, pollInterval_));
  }
}

void FileStreamSourceTask::stop() {
  for (auto& f : files_) closeFile(f);
}

}  // namespace ferry::connectors
