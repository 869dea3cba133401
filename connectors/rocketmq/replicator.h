// RocketMQReplicator: cluster → cluster replication of RocketMQ topics as a direct task (no
// backbone hop). `connector.class=RocketMQReplicator` alone makes a direct connector: the runtime
// pairs it with RocketMQReplicatorSink and hands both sides the same keys (see README).
//
// Source side (RocketMQReplicatorConnector + ReplicatorSourceTask, on the source cluster):
//   - the connector lists the source cluster's topics (NameServer), keeps the ones the filter
//     selects (topics / topics.regex / topics.exclude; system topics never), re-lists every
//     topics.refresh.interval.ms and asks for new task configs when the set changed; it also
//     writes a heartbeat message into heartbeats.topic on the source cluster every
//     heartbeats.interval.ms (replicated like any topic: its arrival time on the target measures
//     the replication latency even when no traffic flows);
//   - every task joins one consumer group on the source (source.group) — the broker spreads the
//     queues; queues added to a topic are picked up by the consumer's periodic rebalance;
//   - a message whose replication path (FERRY_REPL_PATH) names the target alias is skipped (it
//     came from there: loop prevention for A <-> B); others become records whose topic is the
//     renamed target topic, value the body (byte for byte), key the KEYS property, with two
//     headers: the properties to write (source's minus broker-set ones, plus the path) and the
//     source queue/offset/flag metadata (replicator_logic.h).
// Sink side (RocketMQReplicatorSinkConnector + ReplicatorSinkTask, on the target cluster):
//   - creates a missing target topic with the source topic's queue count (target.create.topics);
//   - places each message on the target queue with the source queue's index (placement=preserve)
//     or by a hash of its key (placement=hash); sends batches per target queue, one batch per
//     queue in flight, so a queue's order is kept while sends succeed;
//   - remembers which target offset each source offset landed at, and every
//     checkpoint.interval.ms translates the committed offsets of checkpoint.groups on the source
//     into offsets of the same groups on the target (never moving a target group backwards), so
//     their consumers can fail over to the target cluster and lose nothing;
//   - logs the replication latency (target store ack minus source store time) per interval.
// Source offsets are committed (runtime positions and the source group) only after the sink
// flushed: at-least-once, duplicates after a crash.
//
// Threading: connectors and tasks are called from their owner threads; the connector's refresh /
// heartbeat thread only touches its own state; send callbacks (io thread) lock `mu_`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "connectors/rocketmq/batch_sender.h"
#include "connectors/rocketmq/replicator_logic.h"
#include "connectors/rocketmq/rocketmq_source.h"
#include "ferry/connector.h"
#include "rocketmq/client.h"
#include "rocketmq/producer.h"

namespace ferry::connectors {

// Keys of both sides (the sink side gets the same keys).
const ConfigDef& replicatorDefinition();
// Cross-field checks (at least one topic selector, regexes, rename format, distinct clusters).
void validateReplicatorConfig(const StringMap& config, ConfigValidation& validation);

class RocketMQReplicatorConnector final : public SourceConnector {
 public:
  ~RocketMQReplicatorConnector() override;
  std::string version() const override;
  const ConfigDef& configDef() const override { return replicatorDefinition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override {
    validateReplicatorConfig(config, validation);
  }
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override;
  std::unique_ptr<SourceTask> createTask() override;

 private:
  Result<std::vector<std::string>> selectTopics();
  void background();

  StringMap config_;
  ConnectorContext* context_ = nullptr;
  std::unique_ptr<repl::TopicFilter> filter_;
  std::shared_ptr<rocketmq::RocketmqClient> client_;  // shared (client_pool.h)
  std::unique_ptr<rocketmq::Producer> heartbeatProducer_;
  std::string heartbeatTopic_;
  std::string sourceAlias_;
  std::int64_t heartbeatMs_ = 0;
  std::int64_t refreshMs_ = 10000;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::string> topics_;  // guarded by mu_
  std::thread thread_;
};

class ReplicatorSourceTask final : public RocketMQSourceTask {
 protected:
  Status setup(const StringMap& config, SourceTaskContext& context, rocketmq::ClientOptions& client,
               rocketmq::ConsumerOptions& consumer) override;
  bool toRecord(rocketmq::PulledMessage& message, Record& out) override;

 private:
  // (index in the topic's queue order, queue count) of a source queue.
  std::pair<int, int> queueIndex(const rocketmq::MessageQueue& queue);

  std::string renameFormat_;
  std::string heartbeatTopic_;
  std::int64_t startedMs_ = 0;
  std::string sourceAlias_;
  std::string targetAlias_;
  std::uint64_t skippedLoops_ = 0;
  std::map<std::string, std::vector<rocketmq::MessageQueue>> queues_;  // per source topic
};

class RocketMQReplicatorSinkConnector final : public SinkConnector {
 public:
  std::string version() const override;
  const ConfigDef& configDef() const override { return replicatorDefinition(); }
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override;
};

class ReplicatorSinkTask final : public SinkTask {
 public:
  ReplicatorSinkTask();
  ~ReplicatorSinkTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SinkTaskContext& context) override;
  Status put(std::vector<Record>& records) override;
  Status flush() override;
  void stop() override;

 private:
  struct TargetTopic {
    std::vector<rocketmq::MessageQueue> queues;
    std::int64_t fetchedMs = 0;
  };
  Result<const TargetTopic*> target(const std::string& topic, int sourceQueues);
  void checkpoint();

  std::shared_ptr<spdlog::logger> log_;
  SinkTaskContext* context_ = nullptr;
  bool preserve_ = true;
  bool createTopics_ = true;
  std::vector<std::string> targetClusters_;
  std::size_t batchSize_ = 128;
  std::vector<std::string> groups_;
  std::int64_t checkpointMs_ = 5000;
  std::int64_t nextCheckpoint_ = 0;
  std::shared_ptr<rocketmq::RocketmqClient> target_;  // shared (client_pool.h)
  std::shared_ptr<rocketmq::RocketmqClient> source_;  // for checkpoints only; shared
  std::unique_ptr<rocketmq::Producer> producer_;
  std::unique_ptr<rmq::BatchSender> sender_;
  std::map<std::string, TargetTopic> topics_;

  // Shared with send callbacks.
  std::mutex mu_;
  repl::OffsetTranslator translator_;
  // source queue key -> (source queue, target queue), for checkpoints.
  std::map<std::string, std::pair<rocketmq::MessageQueue, rocketmq::MessageQueue>> queueMap_;
  std::int64_t latencyMaxMs_ = -1;
  std::int64_t latencyLastMs_ = -1;
  std::uint64_t replicated_ = 0;
};

}  // namespace ferry::connectors
