// FileStreamSource (see file_source.h). Reads in 64 KiB chunks with read(2) and splits lines with
// memchr: no per-byte system calls. Rotation and truncation are checked only at EOF (one stat(2)
// and one fstat(2) per idle poll), so a busy file costs nothing extra.
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
           "The file to tail. Either 'file' or 'files' is required (both may be given).");
  d.define("files", ConfigType::kList, "", Importance::kHigh,
           "Several files to tail (comma-separated); they are split over up to tasks.max tasks.");
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
  f.bufStart = 0;
  f.rotationPending = false;
}

Status FileStreamSourceTask::openFile(Tailed& f, bool atStart) {
  const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      if (!f.missingLogged) log_->info("{}: file {} does not exist yet; waiting for it",
                                       context_->connectorName(), f.path);
      f.missingLogged = true;
      return Status::ok();
    }
    return Status::unavailable("FileStreamSource: cannot open " + f.path + ": " +
                               std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::unavailable("FileStreamSource: cannot stat " + f.path + ": " +
                               std::strerror(err));
  }
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
    f.bufStart = 0;
    return true;
  }
  return false;
}

Status FileStreamSourceTask::readFile(Tailed& f, std::vector<Record>& out, std::size_t limit,
                                      std::int64_t nowMs) {
  if (f.fd < 0) {
    FERRY_RETURN_IF_ERROR(openFile(f, /*atStart=*/false));
    if (f.fd < 0) return Status::ok();
  }
  while (out.size() < limit) {
    // Complete lines already buffered.
    while (out.size() < limit) {
      const char* base = f.buf.data() + f.consumed;
      const std::size_t avail = f.buf.size() - f.consumed;
      const void* nl = avail ? std::memchr(base, '\n', avail) : nullptr;
      if (nl == nullptr) break;
      const std::size_t len = static_cast<std::size_t>(static_cast<const char*>(nl) - base);
      f.consumed += len + 1;
      emit(f, std::string_view(base, len), f.bufStart + f.consumed, out, nowMs);
    }
    if (out.size() >= limit) break;
    // Only a partial line (or nothing) is left: move it to the front and read more.
    if (f.consumed > 0) {
      f.buf.erase(0, f.consumed);
      f.bufStart += f.consumed;
      f.consumed = 0;
    }
    const std::size_t old = f.buf.size();
    f.buf.resize(old + kChunk);
    ssize_t n;
    do {
      n = ::read(f.fd, f.buf.data() + old, kChunk);
    } while (n < 0 && errno == EINTR);
    const int err = errno;
    f.buf.resize(old + static_cast<std::size_t>(n > 0 ? n : 0));
    if (n < 0)
      return Status::unavailable("FileStreamSource: cannot read " + f.path + ": " +
                                 std::strerror(err));
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
  while (true) {
    const std::int64_t now = core::nowMs();
    for (std::size_t i = 0; i < files_.size() && out.size() < limit; ++i) {
      Tailed& f = files_[(next_ + i) % files_.size()];
      Status s = readFile(f, out, limit, now);
      if (!s.isOk()) {
        if (out.empty()) return s;
        pendingError_ = s;  // hand over what was read; report the error next time
        break;
      }
    }
    next_ = (next_ + 1) % files_.size();
    if (!out.empty()) return out.size();
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
