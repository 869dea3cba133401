// RocketMQSource: reads RocketMQ topics (RocketMQ as an outside system) into ferry records.
//
// Each task owns one RocketmqClient and one PullConsumer; all tasks of a connector share one
// consumer group (rocketmq.group, default "ferry-<connector>"), so the broker spreads the queues
// over them (averagely allocation, rebalanced as tasks come and go). A record's value is the body,
// its headers the user properties plus rocketmq.tags / rocketmq.keys / rocketmq.msgId, its key the
// KEYS property (key.from=keys). Position: partition {rocketmq.topic, rocketmq.broker,
// rocketmq.queue}, offset {offset: next offset to consume}.
//
// Offsets: commitRecord() (records the runtime reported safe, in poll order) raises the safe next
// offset of the record's queue; commit() sends those to the broker (UPDATE_CONSUMER_OFFSET), and
// a revoked queue's safe offset is committed before it is handed over. Records acknowledged after
// their queue was revoked are ignored (the consumer also refuses them, and offsets below what the
// current assignment started at); the consumer re-sends the last commit until the broker holds it. On assignment a queue with
// a position committed in the runtime's store resumes there (otherwise at the group's broker
// offset, or rocketmq.from for a new group).
//
// Messages a subclass skips (toRecord() false) produce no record; their offsets are committed
// once every record polled before them is safe.
//
// Threading: the connector and each task are called from their owner thread only; the consumer's
// rebalance callbacks run inside poll() on that thread.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "rocketmq/consumer.h"
#include "connectors/rocketmq/rocketmq_mapping.h"
#include "ferry/connector.h"

namespace spdlog {
class logger;
}

namespace ferry::connectors {

class RocketMQSourceConnector final : public SourceConnector {
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

class RocketMQSourceTask : public SourceTask, public rocketmq::RebalanceListener {
 public:
  RocketMQSourceTask();
  ~RocketMQSourceTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SourceTaskContext& context) override;
  // kNotify: the consumer wakes the runtime when messages are buffered (or a rebalance waits), so
  // a task runs on the worker's shared threads and an idle one costs no thread.
  PollMode pollMode() const override { return PollMode::kNotify; }
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                           std::chrono::milliseconds maxWait) override;
  void commitRecord(const Record& record) override;
  Status commit() override;
  void stop() override;

  // RebalanceListener (inside poll(), on the task thread).
  void onRevoked(const std::vector<rocketmq::MessageQueue>& queues) override;
  void onAssigned(const std::vector<rocketmq::MessageQueue>& queues) override;

 protected:
  // Hooks for tasks built on this one (the Replicator's). setup() parses `config` and fills the
  // client and consumer options (default: the RocketMQSource keys).
  virtual Status setup(const StringMap& config, SourceTaskContext& context,
                       rocketmq::ClientOptions& client, rocketmq::ConsumerOptions& consumer);
  // The record for a pulled message; false skips the message (its offset is still committed once
  // every record polled before it is safe). It may move the message's body into the record.
  virtual bool toRecord(rocketmq::PulledMessage& message, Record& out);
  rocketmq::RocketmqClient* client() { return client_.get(); }
  std::shared_ptr<spdlog::logger> log_;

 private:
  SourceTaskContext* context_ = nullptr;
  rmq::SourceOptions options_;
  std::unique_ptr<rocketmq::RocketmqClient> client_;
  std::unique_ptr<rocketmq::PullConsumer> consumer_;
  // Safe next offsets per queue not yet sent to the broker / all safe ones.
  std::map<rocketmq::MessageQueue, std::int64_t> safe_;
  bool dirty_ = false;
  // Queues assigned now (onAssigned .. onRevoked): commitRecord ignores records of other queues,
  // i.e. records polled before their queue was revoked and acknowledged afterwards.
  std::set<rocketmq::MessageQueue> assigned_;
  // Skipped messages: per queue, the next offset of the last record polled, and the offset to
  // raise `safe_` to once that record is safe.
  std::map<rocketmq::MessageQueue, std::int64_t> lastPolled_;
  std::map<rocketmq::MessageQueue, std::pair<std::int64_t, std::int64_t>> skipTo_;
};

}  // namespace ferry::connectors
