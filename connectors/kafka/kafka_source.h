// KafkaSource: reads Kafka topics (Kafka as an outside system) into ferry, on librdkafka.
//
// Every task is a member of one consumer group (`kafka.group.id`, default ferry-<connector>), so
// the topics' partitions are split between tasks (and workers). Auto-commit and auto offset store
// are off: an offset is committed to Kafka only once the runtime reported every record before it
// safe (commitRecord), by commit() (its answer waited for up to 2 s; skipped while the brokers
// are known to be down). A restarted task resumes from the group's
// committed offsets; what was polled but not yet safe is read again (at-least-once). Tasks are
// static members by default (kafka.static.membership): after a kill -9 the restarted task takes
// its partitions back at once instead of waiting for the dead member's session to expire.
// The task reports its connection (SourceTaskContext::reportConnection) from librdkafka's signals
// (kafka::ConnectionWatch): reconnecting when all brokers are down or refuse the client, connected
// when a statistics event shows a broker UP again (within statistics.interval.ms, 1 s by default).
// Records: topic = `topic` or the Kafka topic, key, value, headers, timestamp; position
// partition {kafka.topic, kafka.partition}, offset {kafka.offset: next offset}.
//
// Threading: the connector and the task are called from their owner thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "connectors/kafka/kafka_positions.h"
#include "ferry/connector.h"
#include "kafka/rdkafka_util.h"

namespace spdlog {
class logger;
}

struct rd_kafka_s;

namespace ferry::connectors {

class KafkaSourceConnector final : public SourceConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override;

 private:
  StringMap config_;
};

class KafkaSourceTask final : public SourceTask {
 public:
  KafkaSourceTask();
  ~KafkaSourceTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SourceTaskContext& context) override;
  // kNotify: librdkafka's consumer queue wakes the runtime (kafka::QueueWaker), so the task
  // runs on the worker's shared threads and an idle one costs no thread.
  PollMode pollMode() const override { return PollMode::kNotify; }
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                           std::chrono::milliseconds maxWait) override;
  void commitRecord(const Record& record) override;
  Status commit() override;
  void stop() override;

 private:
  std::shared_ptr<spdlog::logger> log_;
  rd_kafka_s* rk_ = nullptr;
  kafka::QueueWaker waker_;  // on rk_'s consumer queue, while rk_ lives
  // The brokers' reachability, reported to the runtime; outlives rk_ (librdkafka's opaque).
  std::unique_ptr<kafka::ConnectionWatch> watch_;
  std::string targetTopic_;
  SafeOffsets safe_;
};

}  // namespace ferry::connectors
