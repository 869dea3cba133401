// RocketMQSink: writes ferry records to RocketMQ topics (RocketMQ as an outside system).
//
// Each task owns one RocketmqClient and one Producer. put() maps every record (rocketmq_mapping.h:
// body = value, KEYS = key, TAGS = rocketmq.tag, user properties = headers; what the properties
// format cannot carry is skipped and counted) and sends it asynchronously: round-robin over the
// topic's queues, or with rocketmq.order=key a hash of the key (same key -> same queue, so one
// key keeps its order). At most `max.in.flight` sends are outstanding; put() waits for room.
// flush() waits until every send was answered. Sends that failed with a retriable error (broker
// busy, timeout, connection lost) are kept and sent again by the next flush(), which returns a
// retriable Status while any remain (so the runtime retries the flush and never commits past an
// unsent record); any other failure fails the task with the first error. flushAsync() (direct
// tasks) answers once every send put before it was answered, without blocking: retriable
// failures kept for resending make its answer retriable, and the runtime then calls flush().
//
// Threading: the connector and the task are called from their owner thread; send callbacks run on
// the client's io thread and only touch the mutex-guarded counters below.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rocketmq/producer.h"
#include "connectors/rocketmq/batch_sender.h"
#include "connectors/rocketmq/rocketmq_mapping.h"
#include "ferry/connector.h"

namespace spdlog {
class logger;
}

namespace ferry::connectors {

class RocketMQSinkConnector final : public SinkConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override;
};

class RocketMQSinkTask final : public SinkTask {
 public:
  RocketMQSinkTask();
  ~RocketMQSinkTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SinkTaskContext& context) override;
  Status put(std::vector<Record>& records) override;
  Status flush() override;
  bool flushAsync(std::function<void(Status)> done) override;  // BatchSender::flushAsync
  void stop() override;

  // Headers/keys left out because the properties format cannot carry them (all time).
  std::uint64_t skippedProperties() const noexcept { return skipped_; }

 private:
  std::shared_ptr<spdlog::logger> log_;
  rmq::SinkOptions options_;
  bool orderByKey_ = false;
  std::size_t maxInFlight_ = 10000;
  std::size_t batchSize_ = 128;
  std::uint64_t skipped_ = 0;
  std::shared_ptr<rocketmq::RocketmqClient> client_;  // shared by the worker's tasks
  std::unique_ptr<rocketmq::Producer> producer_;

  std::unique_ptr<rmq::BatchSender> sender_;
};

}  // namespace ferry::connectors
