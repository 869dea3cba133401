// KafkaReplicator: Kafka cluster → Kafka cluster replication (the MirrorMaker 2 class) as a
// direct task: no backbone hop, records go from a consumer on the source straight to a producer
// on the target. `connector.class=KafkaReplicator` alone makes a direct connector: the runtime
// pairs it with KafkaReplicatorSink and hands both sides the same keys.
//
// Source side (KafkaReplicatorTask, on the source cluster):
//   - every task joins one consumer group on the source (`source.group`, cooperative-sticky), so
//     the partitions are spread over tasks and workers. Not as a static member: its topics change
//     while it runs, and a static member rejoining after a restart is handed its old assignment
//     (a restarted worker waits for the session timeout, 10 s, instead);
//   - the task re-reads the source's topic list every topics.refresh.interval.ms and subscribes
//     to the topics `topics` selects and `topics.exclude` does not (regexes on the whole name):
//     new topics and new partitions are picked up without a restart;
//   - loop prevention: under replication.policy=prefix a topic named "<target alias>.<...>" came
//     from the target and is never replicated back; under identity every copy carries the header
//     ferry.replication.path (aliases it came through) and a record whose path names the target
//     is skipped;
//   - records keep key, value, headers and timestamp; topic = the renamed target topic, queue =
//     the source partition; offsets are committed to the source group only behind records the
//     runtime reported safe (after the target acknowledged them).
// Target side (KafkaReplicatorSinkTask):
//   - an idempotent producer (acks=all) writes each record to the same partition number on the
//     target; a missing target topic is created with the source topic's partition count, a target
//     topic with fewer partitions than the source is grown;
//   - delivery acknowledgements give (source offset, target offset) pairs (OffsetSyncs); every
//     sync.group.offsets.interval.ms the committed source offsets of the consumer groups `groups`
//     selects are translated and written to the same groups on the target (never moving a group
//     backwards, never while it has members there), so consumers can fail over to the target
//     and lose nothing.
// At-least-once by default: a crash re-reads from the last committed source offsets (duplicates on
// the target, never loss). exactly.once=true: each flush commits the copies and the source
// positions they cover in one transaction on the target (positions stored as offsets of the target
// topics in group exactly.once.offsets.group); partitions are assigned to tasks statically
// ((hash(topic) + partition) % tasks) with no group on the source, and transactional.id
// ferry-<connector>-<task> fences a zombie of the same task. A crash aborts the open transaction;
// read_committed consumers of the target see every record once.
//
// Threading: connectors and tasks are called from their owner threads; delivery reports run inside
// rd_kafka_poll / rd_kafka_flush on the sink task's thread.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "connectors/kafka/kafka_positions.h"
#include "connectors/kafka/kafka_replicator_logic.h"
#include "ferry/connector.h"
#include "kafka/rdkafka_util.h"

namespace spdlog {
class logger;
}

struct rd_kafka_s;
struct rd_kafka_error_s;

namespace ferry::connectors {

// Keys of both sides (the sink side gets the same keys).
const ConfigDef& kafkaReplicatorDefinition();
void validateKafkaReplicatorConfig(const StringMap& config, ConfigValidation& validation);

class KafkaReplicatorConnector final : public SourceConnector {
 public:
  std::string version() const override;
  const ConfigDef& configDef() const override { return kafkaReplicatorDefinition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override {
    validateKafkaReplicatorConfig(config, validation);
  }
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override;

 private:
  StringMap config_;
};

class KafkaReplicatorTask final : public SourceTask {
 public:
  KafkaReplicatorTask();
  ~KafkaReplicatorTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SourceTaskContext& context) override;
  // kNotify: librdkafka's consumer queue wakes the runtime (kafka::QueueWaker), so the task
  // runs on the worker's shared threads and an idle one costs no thread.
  PollMode pollMode() const override { return PollMode::kNotify; }
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords, std::chrono::milliseconds maxWait) override;
  void commitRecord(const Record& record) override;
  Status commit() override;
  void stop() override;

 private:
  Status refreshTopics();
  Status assignStatically(const std::map<std::string, std::int32_t>& all, const std::set<std::string>& want);

  std::shared_ptr<spdlog::logger> log_;
  rd_kafka_s* rk_ = nullptr;
  kafka::QueueWaker waker_;  // on rk_'s consumer queue, while rk_ lives
  // The source brokers' reachability, reported to the runtime; outlives rk_ (its opaque).
  std::unique_ptr<kafka::ConnectionWatch> watch_;
  krepl::Naming naming_;
  std::unique_ptr<krepl::TopicSelector> selector_;
  std::int64_t refreshMs_ = 5000;
  std::int64_t nextRefresh_ = 0;
  std::set<std::string> subscribed_;
  std::map<std::string, std::string> renamed_;  // source topic -> target topic
  std::uint64_t skippedLoops_ = 0;
  // Exactly-once mode: static assignment, positions read from the target.
  bool eos_ = false;
  std::string eosGroup_;
  int taskCount_ = 1;
  int taskId_ = 0;
  bool fromLatest_ = false;
  rd_kafka_s* targetAdmin_ = nullptr;
  StringMap eosTargetSettings_, eosTargetClient_;  // for reading the positions group on the target
  std::set<std::pair<std::string, std::int32_t>> assigned_;
  SafeOffsets safe_;
};

class KafkaReplicatorSinkConnector final : public SinkConnector {
 public:
  std::string version() const override;
  const ConfigDef& configDef() const override { return kafkaReplicatorDefinition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override {
    validateKafkaReplicatorConfig(config, validation);
  }
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override;

 private:
  StringMap config_;
};

class KafkaReplicatorSinkTask final : public SinkTask {
 public:
  KafkaReplicatorSinkTask();
  ~KafkaReplicatorSinkTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SinkTaskContext& context) override;
  Status put(std::vector<Record>& records) override;
  Status flush() override;
  void stop() override;

  // One copy handed to the producer, until its delivery report (defined in the .cc).
  struct PendingCopy;
  // Delivery reports land here (on the task thread, inside rd_kafka_poll / rd_kafka_flush).
  struct Shared {
    std::uint64_t ok = 0;
    std::uint64_t failed = 0;
    std::string firstError;
    std::vector<std::string> sourceTopics;                 // id -> source topic
    std::map<std::pair<int, std::int32_t>, krepl::OffsetSyncs> syncs;  // (topic id, partition)
    // Copies without a delivery report yet (a list through PendingCopy::prev/next): the producer
    // reads their key and value in place, so they are freed only after the report, or after the
    // producer is destroyed (no report comes for what it still held then).
    PendingCopy* pending = nullptr;
  };

 private:
  Status ensureTarget(const std::string& target, const std::string& source, std::int32_t partition);
  Status txnFailure(rd_kafka_error_s* e, const std::string& what);
  void syncGroupOffsets(bool force);
  int topicId(const std::string& sourceTopic);

  std::shared_ptr<spdlog::logger> log_;
  rd_kafka_s* producer_ = nullptr;
  // The target brokers' reachability, reported to the runtime; outlives producer_ (its opaque).
  std::unique_ptr<kafka::ConnectionWatch> watch_;
  rd_kafka_s* targetAdmin_ = nullptr;
  rd_kafka_s* sourceAdmin_ = nullptr;
  krepl::Naming naming_;
  bool createTopics_ = true;
  std::int32_t replicationFactor_ = -1;
  std::int64_t timeoutMs_ = 30000;
  std::vector<std::regex> groups_;
  std::vector<std::regex> groupsExclude_;
  std::int64_t syncIntervalMs_ = 5000;
  std::int64_t nextSync_ = 0;
  std::map<std::string, std::int32_t> targetPartitions_;  // target topic -> partitions known
  StringMap sourceSettings_, targetSettings_;  // bootstrap + client id of the group-offset consumers
  StringMap sourceClient_, targetClient_;      // source.client.* / target.client.*
  std::map<std::string, int> topicIds_;
  Shared shared_;
  // Exactly-once mode: one transaction per flush; the source positions it covers, by target
  // topic and partition (next source offset).
  bool eos_ = false;
  std::string eosGroup_;
  bool inTxn_ = false;
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> txnOffsets_;
  // Time the task spent in flush() waiting for the target's acknowledgements (reading stops then).
  std::uint64_t flushes_ = 0;
  std::int64_t flushWaitMs_ = 0;
};

}  // namespace ferry::connectors
