// KafkaSink: writes ferry records to Kafka topics (Kafka as an outside system), on librdkafka.
//
// Each task owns one idempotent librdkafka producer (acks=all, enable.idempotence=true unless
// overridden through producer.override.*). put() hands every record to librdkafka: topic =
// kafka.topic or the record's topic, partition = the record's queue when kafka.partition.from is
// "record" (else the Java client's murmur2 partitioner on the key), key, value, headers and timestamp kept.
// A full local queue makes put() serve delivery reports and retry. flush() waits until every
// record put so far was acknowledged by the brokers; a delivery that failed (after librdkafka's
// own retries) fails the task, so no position is ever committed past an undelivered record and
// the restarted task sends it again (at-least-once).
//
// The task reports its connection (SinkTaskContext::reportConnection) from librdkafka's signals
// (kafka::ConnectionWatch): reconnecting when all brokers are down or refuse the client, connected
// again on a statistics event showing a broker UP or an acknowledged delivery; librdkafka keeps
// the records put meanwhile and sends them once a broker is back (message.timeout.ms, 5 min).
//
// Threading: the connector and the task are called from their owner thread; delivery reports run
// inside rd_kafka_poll/rd_kafka_flush on that same thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "ferry/connector.h"
#include "kafka/rdkafka_util.h"

namespace spdlog {
class logger;
}

struct rd_kafka_s;

namespace ferry::connectors {

class KafkaSinkConnector final : public SinkConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override;

 private:
  StringMap config_;
};

class KafkaSinkTask final : public SinkTask {
 public:
  KafkaSinkTask();
  ~KafkaSinkTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SinkTaskContext& context) override;
  Status put(std::vector<Record>& records) override;
  Status flush() override;
  void stop() override;

  // Delivery reports: how many records were acknowledged / failed, and the first failure.
  struct Deliveries {
    std::atomic<std::uint64_t> ok{0};
    std::atomic<std::uint64_t> failed{0};
    std::string firstError;  // written once, on the task thread (inside poll/flush)
    std::string authError;   // SASL/TLS authentication refused (error callback, task thread)
    kafka::ConnectionWatch connection;  // reported to the runtime (any thread)
  };

 private:
  std::shared_ptr<spdlog::logger> log_;
  rd_kafka_s* rk_ = nullptr;
  std::string topic_;
  bool partitionFromRecord_ = false;
  long flushTimeoutMs_ = 30000;
  Deliveries deliveries_;
};

}  // namespace ferry::connectors
