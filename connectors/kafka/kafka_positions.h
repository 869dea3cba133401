// What KafkaSource and KafkaReplicator share on the source side: a consumed message becomes a
// Record with its key, value, timestamp and Kafka position ({kafka.topic, kafka.partition} /
// {kafka.offset: next offset}), and the offsets a task may commit to its group once the runtime
// reported the records before them safe.
//
// Threading: a SafeOffsets belongs to its task's thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ferry/record.h"
#include "ferry/status.h"

struct rd_kafka_s;
struct rd_kafka_message_s;

namespace spdlog {
class logger;
}

namespace ferry::connectors {

// Key, value, timestamp and position of `m` (headers and topic are the caller's).
void fillFromKafka(const rd_kafka_message_s* m, const std::string& sourceTopic, Record& r);

// A Kafka source position read back: {kafka.topic, kafka.partition} / {kafka.offset}.
struct KafkaPosition {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t nextOffset = 0;  // the offset after the record's
};
// The Kafka position in `p`; nullopt when a field is missing or not a number in range (positions
// come back from stores and from REST offset changes: they are not trusted to be ours).
std::optional<KafkaPosition> kafkaPositionOf(const Position& p);
// `text` as a whole decimal integer (optional '-'), nullopt otherwise (no exceptions).
std::optional<std::int64_t> parseKafkaNumber(std::string_view text);

class SafeOffsets {
 public:
  // The record's next offset becomes committable (records without a valid Kafka position are
  // ignored).
  void markSafe(const Record& record);
  // Commits the committable offsets and waits for the answer up to `waitMs` (a commit to a
  // coordinator that is down would otherwise hold the task's thread until it is back, and with
  // it the polls that serve librdkafka's events and the connection reports); unanswered, the
  // offsets stay committable and go with the next commit. A failed commit (a rebalance moved a partition
  // away) is logged and kept for the next one: the partition's new owner re-reads from the last
  // committed offset (duplicates, not loss).
  Status commit(rd_kafka_s* rk, spdlog::logger& log, const char* who, int waitMs = 2000);

 private:
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> next_;
};

}  // namespace ferry::connectors
