// DatagenSource: generates sequence-numbered records, for demos, tests and benchmarks.
//
// Task t produces sequence n = 0, 1, 2, ... with values by `format`:
//   string  "<t>-<n>"                     (e.g. "0-41")
//   json    {"task":t,"seq":n,"ts":<ms>}
//   bytes   value.size bytes starting with the decimal n, padded with 'x'
// key.mode=seq sets the key to the decimal n. Position: partition {"datagen.task": "<t>"},
// offset {"seq": "<n+1>"} (the next one to produce); a task resumes at its committed seq.
// `rate` (records/s per task, 0 = unbounded) is enforced by a token bucket on steady time;
// after `max.records` a task produces nothing more.
//
// Threading: the connector and each task are called from their owner thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ferry/connector.h"

namespace ferry::connectors {

class DatagenSourceConnector final : public SourceConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override;
};

class DatagenSourceTask final : public SourceTask {
 public:
  std::string version() const override;
  Status start(const StringMap& config, SourceTaskContext& context) override;
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                           std::chrono::milliseconds maxWait) override;
  void stop() override {}
  // Time-driven: never waits in poll(); an idle task is asked again when its next token is due.
  PollMode pollMode() const override { return PollMode::kNotify; }
  std::chrono::milliseconds idlePollDelay() const override;

  std::int64_t nextSeq() const noexcept { return seq_; }

 private:
  enum class Format { kString, kJson, kBytes, kTrace };
  void refill(std::chrono::steady_clock::time_point now);
  std::string value(std::int64_t seq, std::int64_t nowMs) const;

  std::string topic_;
  Format format_ = Format::kJson;
  std::string run_;  // trace format: "<pid>.<random>", new at every task start
  double rate_ = 0;  // records/s; 0 = unbounded
  std::int64_t maxRecords_ = -1;
  std::size_t valueSize_ = 100;
  bool keySeq_ = false;
  std::string taskText_;
  StringMap partition_;
  std::int64_t seq_ = 0;  // next sequence number to produce
  // Token bucket (rate_ > 0): tokens_ records may be produced now; capacity burst_.
  double tokens_ = 0;
  double burst_ = 1;
  std::chrono::steady_clock::time_point lastRefill_;
};

}  // namespace ferry::connectors
