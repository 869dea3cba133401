// The kafka backbone: source tasks write into Kafka topics, each sink connector reads through its
// own consumer group; offsets live in Kafka (__consumer_offsets). On librdkafka.
//
// Mapping: a ferry queue is a Kafka partition; key, value, headers (null values kept null) and
// timestamps travel as Kafka's own fields, so other Kafka clients read the topics as they are.
// Topic names outside Kafka's [a-zA-Z0-9._-] have those bytes replaced by '_'.
//
// Producers: one librdkafka producer per createProducer() (one per source task), idempotent,
// acks=all, batched (linger.ms 5); a thread per producer serves delivery reports, so send
// callbacks run on that thread. send() blocks while the local queue is full (backpressure).
// Consumers: one librdkafka consumer per sink task, group "connect-<connector>" as the runtime
// names it, auto-commit off (offsets are committed only by commit(), which the runtime calls once
// the sink flushed), cooperative-sticky assignment (a member joining or leaving moves only the
// partitions that change owner; nobody stops reading the rest) and, by default, static
// membership (group.instance.id = the task's member id): a worker restarted after a crash gets
// its partitions back at once instead of after session.timeout.ms.
//
// Thread-safety: as backbone.h says.
#pragma once

#include <memory>
#include <string>

#include "backbone/backbone.h"

namespace ferry::backbone {

struct KafkaBackboneOptions {
  std::string bootstrapServers = "127.0.0.1:9092";
  std::int32_t defaultQueues = 4;
  std::int32_t replicationFactor = -1;  // -1: the brokers' default.replication.factor
  bool staticMembership = true;
  std::int64_t sessionTimeoutMs = 10000;
  std::int64_t requestTimeoutMs = 10000;
  // librdkafka properties for every client, then for producers / consumers only (they win).
  StringMap clientOverrides;
  StringMap producerOverrides;
  StringMap consumerOverrides;
};

// Fails (naming the servers) when no broker answers a metadata request within the request timeout.
Result<std::unique_ptr<Backbone>> openKafkaBackbone(const KafkaBackboneOptions& options);

// Kafka allows [a-zA-Z0-9._-] in topic and group names: other bytes become '_'.
std::string kafkaSafeName(const std::string& name);

}  // namespace ferry::backbone
