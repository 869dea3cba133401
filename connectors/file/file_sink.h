// FileStreamSink: appends each record's value and a '\n' to one file (Kafka Connect's
// FileStreamSink, with crash-safe lines).
//
// - put() copies values into a user-space buffer, written with write(2) once it passes 1 MiB;
//   flush() writes the rest and, with fsync=true, fdatasync()s, so a committed offset always
//   means the lines before it are on disk. A null value (tombstone) writes nothing.
// - At start, a file that does not end with '\n' is cut back to just after its last '\n': a line
//   torn by a crash mid-write is dropped (it is written again, whole, when its records are
//   redelivered). The number of bytes dropped is logged.
// - One task per connector: several writers to one file would interleave.
//
// Threading: the connector and its task are called from their owner thread only.
#pragma once

#include <memory>
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

  // Cuts `path` back to just after its last '\n' when it does not end with one. Returns the
  // number of bytes dropped (0 when the file is missing, empty or whole).
  static Result<std::uint64_t> repairTornTail(const std::string& path);

 private:
  Status writeBuffer();

  std::shared_ptr<spdlog::logger> log_;
  std::string path_;
  bool fsync_ = true;
  int fd_ = -1;
  std::string buf_;
};

}  // namespace ferry::connectors
