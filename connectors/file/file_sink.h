// FileStreamSink: appends each record's value and a '\n' to one file (Kafka Connect's
// FileStreamSink, with crash-safe lines).
//
// - put() copies values into a user-space buffer, written with write(2) once it passes 1 MiB;
//   flush() writes the rest and, with fsync=true, fdatasync()s, so a committed offset always
//   means the lines before it are on disk. A null value (tombstone) writes nothing.
// - It never changes a byte it did not write. The task keeps, in its state (SinkTaskContext::
//   saveState), which file it writes (device, inode, birth time, a CRC32C of the 4 KiB before
//   the length) and how long that file was after its last flush. At start, bytes past that
//   length in the same file are the task's own writes after its last flush, whose records no
//   committed offset covers: from the first stretch of zeros a lost page left, or else from a
//   torn last line, they are cut off (and written again when the records are redelivered); whole
//   lines before that stay (duplicates, never a loss, even when the saved length is older than
//   the last flush). A file the task does not recognise (new to it, replaced, or shorter than
//   recorded) is left as it is; when it does not end with '\n', a '\n' is appended first so the
//   first record starts a line of its own.
// - The file is opened through SinkTaskContext::openLocalFile (LocalPath::kWrite): only under the
//   worker's file.allowed.dirs, following no symbolic link; a missing file is created there, a
//   missing folder is not.
// - One task per connector: several writers to one file would interleave.
//
// Threading: the connector and its task are called from their owner thread only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/connector.h"

namespace spdlog {
class logger;
}

namespace ferry::connectors {

class FileStreamSinkConnector final : public SinkConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override;
};

class FileStreamSinkTask final : public SinkTask {
 public:
  FileStreamSinkTask();
  ~FileStreamSinkTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SinkTaskContext& context) override;
  Status put(std::vector<Record>& records) override;
  Status flush() override;
  void stop() override;

  // Past byte `length` of the open file `fd`: cuts from the first stretch of zeros a lost page
  // leaves (from `length` or a page boundary to the next boundary), or else from just after the
  // last '\n', back to the start of the line it tears; never below `length`. Returns the number
  // of bytes dropped.
  static Result<std::uint64_t> repairPast(int fd, const std::string& path, std::uint64_t length);

 private:
  Status writeBuffer();
  Status saveLength(bool sync);
  Result<std::uint32_t> tailChecksum(std::uint64_t end);
  static std::optional<std::uint64_t> birthTime(int fd);

  std::shared_ptr<spdlog::logger> log_;
  SinkTaskContext* context_ = nullptr;
  std::string path_;
  bool fsync_ = true;
  int fd_ = -1;
  std::uint64_t device_ = 0;
  std::uint64_t inode_ = 0;
  std::optional<std::uint64_t> birth_;  // birth time (ns), where the file system keeps one
  std::uint64_t written_ = 0;  // file length after our last write
  std::optional<std::uint64_t> saved_;  // length last saved in the task's state
  bool stateless_ = false;     // the runtime keeps no state: nothing is ever cut
  std::string buf_;
};

}  // namespace ferry::connectors
