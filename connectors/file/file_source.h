// FileStreamSource: tails text files line by line (Kafka Connect's FileStreamSource, made to
// follow rotation and to resume exactly).
//
// - Lines end with '\n' (a trailing '\r' is stripped); an incomplete last line is held back until
//   its newline arrives. Each line becomes one record: key null, value the line's bytes.
// - Position: partition {"filename": path}, offset {"position": byte offset after the line,
//   "inode": inode of the file read}. A task resumes from the committed position when the file's
//   inode still matches and the file is not shorter; otherwise it starts at byte 0 and logs why.
// - Rotation: when the path names another inode (renamed away and recreated) the old descriptor
//   is read to its end first (a final unterminated line is emitted then), then the new file is
//   read from 0. A file shorter than the read offset (truncated in place) is read again from 0.
// - Files are opened through SourceTaskContext::openLocalFile: only under the worker's
//   file.allowed.dirs, following no symbolic link (also at every reopen after a rotation); a
//   refused path fails the task. `file` and `files` are declared LocalPath::kRead, so validation
//   refuses a path outside first.
// - A missing file is waited for (logged once), not an error.
// - Only regular files are read: a FIFO, a device (/dev/zero), a socket or a directory is refused
//   when it is opened (the task fails at start with the path and its type named), and opening
//   never blocks (O_NONBLOCK until the type is known). Why: connectors/file/README.md.
// - A line is at most `max.line.bytes` bytes before its newline; a longer one fails the task with
//   the file, the byte position where the line starts and the key named, and nothing after that
//   position is taken (a restart with a larger limit resumes there).
// - One poll reads at most `max.poll.bytes` bytes and waits at most maxWait, and bytes already
//   searched for a newline are never searched again (a scan cursor), so a line without end costs
//   O(n) and the runtime sees a stop between polls.
//
// Threading: the connector and each task are called from their owner thread only (SDK contract).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/connector.h"

namespace spdlog {
class logger;
}

namespace ferry::connectors {

class FileStreamSourceConnector final : public SourceConnector {
 public:
  static const ConfigDef& definition();  // the connector's keys
  static const ConfigDef& taskDefinition();  // the above plus task.files (set by taskConfigs)
  // `file` and `files` merged, in order, without duplicates.
  static std::vector<std::string> filesOf(const ParsedConfig& config);

  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override;
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override;

 private:
  std::vector<std::string> files_;
};

class FileStreamSourceTask final : public SourceTask {
 public:
  FileStreamSourceTask();
  ~FileStreamSourceTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SourceTaskContext& context) override;
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                           std::chrono::milliseconds maxWait) override;
  void stop() override;
  // Files are polled: an idle task is asked again after poll.interval.ms, without a thread
  // waiting for it.
  PollMode pollMode() const override { return PollMode::kNotify; }
  std::chrono::milliseconds idlePollDelay() const override { return pollInterval_; }

  // Bytes read from files and bytes searched for a newline since start (each byte is searched
  // once: bytesScanned() <= bytesRead()). For tests and diagnostics.
  std::uint64_t bytesRead() const noexcept { return bytesRead_; }
  std::uint64_t bytesScanned() const noexcept { return bytesScanned_; }

 private:
  struct Tailed {
    std::string path;
    StringMap partition;
    int fd = -1;
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::string inodeText;
    std::string buf;             // bytes read and not yet emitted start at buf[consumed]
    std::size_t consumed = 0;
    std::size_t scanned = 0;     // buf[consumed, scanned) holds no newline (searched already)
    std::uint64_t bufStart = 0;  // file offset of buf[0]
    bool resumeChecked = false;  // the committed position was consulted
    bool missingLogged = false;
    bool rotationPending = false;  // the path names a new file; drain the old fd first
  };

  Status openFile(Tailed& f, bool atStart);
  void closeFile(Tailed& f);
  // Reads `f` until `out` holds `limit` records, nothing more is available or `budget` (bytes
  // left to read in this poll) is spent.
  Status readFile(Tailed& f, std::vector<Record>& out, std::size_t limit, std::int64_t nowMs,
                  std::size_t& budget);
  // At EOF of f.fd: handles rotation and truncation. Returns true when there is more to read.
  bool checkAtEof(Tailed& f, std::vector<Record>& out, std::int64_t nowMs);
  // The error for a line longer than max.line.bytes starting at f's read point.
  Status lineTooLong(const Tailed& f, std::size_t length) const;
  void emit(Tailed& f, std::string_view line, std::uint64_t endOffset, std::vector<Record>& out,
            std::int64_t nowMs);

  std::shared_ptr<spdlog::logger> log_;
  SourceTaskContext* context_ = nullptr;
  std::string topic_;
  std::size_t batchSize_ = 2000;
  std::chrono::milliseconds pollInterval_{100};
  bool readFromEnd_ = false;
  std::size_t maxLineBytes_ = 1024 * 1024;
  std::size_t maxPollBytes_ = 1024 * 1024;
  std::uint64_t bytesRead_ = 0;
  std::uint64_t bytesScanned_ = 0;
  std::vector<Tailed> files_;
  std::size_t next_ = 0;      // round-robin start among files_
  Status pendingError_;       // an error met after records were already taken into `out`
};

}  // namespace ferry::connectors
