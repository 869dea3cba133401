// LogSink and BlackholeSink: sinks for looking at data and for benchmarks.
//
// LogSink writes one line per record, `topic[queue]@offset key=<key> value=<value>`, to stdout
// (log.to=stdout) or to the "log-sink" logger at info level (log.to=log). Keys and values are
// shown as text, control and non-ASCII bytes escaped as \xNN, cut after log.max.bytes.
// BlackholeSink drops every record and counts records and bytes (logged at stop).
//
// Threading: the connector and each task are called from their owner thread only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ferry/connector.h"

namespace spdlog {
class logger;
}

namespace ferry::connectors {

class LogSinkConnector final : public SinkConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override;
};

class LogSinkTask final : public SinkTask {
 public:
  LogSinkTask();
  // Tests write to a FILE* of their own instead of stdout.
  explicit LogSinkTask(std::FILE* out);
  std::string version() const override;
  Status start(const StringMap& config, SinkTaskContext& context) override;
  Status put(std::vector<Record>& records) override;
  Status flush() override;
  void stop() override;

  // The line written for `record` (without the newline).
  static std::string format(const Record& record, std::size_t maxBytes);

 private:
  std::shared_ptr<spdlog::logger> log_;
  std::FILE* out_;
  bool toLog_ = false;
  std::size_t maxBytes_ = 1024;
};

class BlackholeSinkConnector final : public SinkConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override;
};

class BlackholeSinkTask final : public SinkTask {
 public:
  std::string version() const override;
  Status start(const StringMap& config, SinkTaskContext& context) override;
  Status put(std::vector<Record>& records) override;
  Status flush() override { return Status::ok(); }
  void stop() override;

  std::uint64_t records() const noexcept { return records_; }
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  std::string name_;
  std::uint64_t records_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace ferry::connectors
