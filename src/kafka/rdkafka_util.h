// Helpers over librdkafka (the Debian package) shared by the kafka backbone and the Kafka
// connectors: client settings built in layers with the refused key named, librdkafka's log lines
// routed to ferry's logger, and the few admin requests ferry makes (topics, partitions, group
// offsets), each waited for synchronously with a timeout.
//
// Thread-safety: every function may be called from any thread; a handle passed in must stay
// alive for the call.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"
#include "ferry/status.h"

struct rd_kafka_s;
struct rd_kafka_conf_s;
struct rd_kafka_headers_s;
struct rd_kafka_message_s;
struct rd_kafka_queue_s;

namespace ferry::kafka {

using Handle = rd_kafka_s;

// One layer of client settings. `namePrefix` is how the user wrote these keys (for example
// "producer.override." or "backbone.kafka.client."), so a property librdkafka refuses is reported
// under the name the user gave it.
struct ConfLayer {
  const StringMap* settings;
  std::string namePrefix;
};

// A librdkafka configuration with the layers applied in order (later ones win) and log lines
// routed to the "kafka" logger. The caller owns it (rd_kafka_new takes it on success).
Result<rd_kafka_conf_s*> makeConf(const std::vector<ConfLayer>& layers);

// A producer handle for metadata and admin requests only (never produces).
Result<Handle*> newAdminHandle(const std::vector<ConfLayer>& layers);
void destroy(Handle* rk);

// Partition count of every topic of the cluster (one all-topics metadata request: a request naming
// a missing topic could make a broker with auto.create.topics.enable create it).
Result<std::map<std::string, std::int32_t>> topicPartitions(Handle* rk, std::int64_t timeoutMs);

// Creates a topic (with topic-level `configs`); OK when it exists already. replicationFactor -1:
// the brokers' default.
Status createTopic(Handle* rk, const std::string& topic, std::int32_t partitions, std::int32_t replicationFactor,
                   std::int64_t timeoutMs, const StringMap& configs = {});
// Grows a topic to `total` partitions (Kafka cannot shrink one).
Status createPartitions(Handle* rk, const std::string& topic, std::int32_t total, std::int64_t timeoutMs);
// Deletes a topic; OK when it does not exist.
Status deleteTopic(Handle* rk, const std::string& topic, std::int64_t timeoutMs);

using PartitionOffsets = std::map<std::pair<std::string, std::int32_t>, std::int64_t>;

// Consumer groups known to the cluster.
Result<std::vector<std::string>> listGroups(Handle* rk, std::int64_t timeoutMs);
// A group's committed offsets (partitions without one are left out).
Result<PartitionOffsets> groupOffsets(Handle* rk, const std::string& group, std::int64_t timeoutMs);
// Writes a group's offsets; FailedPrecondition while the group has live members.
Status alterGroupOffsets(Handle* rk, const std::string& group, const PartitionOffsets& offsets,
                         std::int64_t timeoutMs);
// Deletes a group (OK when unknown); FailedPrecondition while it has members.
Status deleteGroup(Handle* rk, const std::string& group, std::int64_t timeoutMs);

// The same reads and writes through a consumer handle of the group itself (group.id = group, never
// subscribed), which goes through librdkafka's consumer-group code: with librdkafka 2.0.2 the admin
// group-offset requests above crashed the process (a null consumer group inside rdk:main) when
// the group coordinator was still loading on a freshly started broker; these do not.
// `layers` carry bootstrap.servers and the client settings. committedVia reads only `partitions`;
// commitVia is refused (FailedPrecondition) while the group has live members.
Result<PartitionOffsets> committedVia(const std::vector<ConfLayer>& layers, const std::string& group,
                                      const std::vector<std::pair<std::string, std::int32_t>>& partitions,
                                      std::int64_t timeoutMs);
Status commitVia(const std::vector<ConfLayer>& layers, const std::string& group, const PartitionOffsets& offsets,
                 std::int64_t timeoutMs);

// A static member id (group.instance.id) for `member` that changes with its subscription. A
// static member that rejoins after a restart is handed its previous assignment without a
// rebalance, even when it now subscribes to other topics (Kafka 4.1 with librdkafka 2.0.2 kept
// consuming the old topics in our runs); a new id for a new subscription avoids that, and the old
// id expires after the session timeout.
std::string staticInstanceId(const std::string& member, std::vector<std::string> subscription);

// A message's headers as ferry headers (order, repeats and null values kept).
Headers readHeaders(const rd_kafka_message_s* m);
// ferry headers as a librdkafka header list for rd_kafka_producev (which takes ownership on
// success; destroy it otherwise); null when there are none.
rd_kafka_headers_s* toKafkaHeaders(const Headers& headers);

// Low and high watermark of one partition.
Result<std::pair<std::int64_t, std::int64_t>> watermarks(Handle* rk, const std::string& topic, std::int32_t partition,
                                                         std::int64_t timeoutMs);

// Calls `wake` (from a librdkafka thread, quickly) whenever the consumer queue of a consumer
// handle (after rd_kafka_poll_set_consumer) turns from empty to non-empty: a message, an error or
// a rebalance to serve. Lets its owner poll without waiting: after a poll that found the queue
// empty, the next thing enqueued calls `wake`. detach() (also the destructor) stops the calls;
// call it before rd_kafka_consumer_close.
class QueueWaker {
 public:
  QueueWaker() = default;
  ~QueueWaker() { detach(); }
  QueueWaker(const QueueWaker&) = delete;
  QueueWaker& operator=(const QueueWaker&) = delete;
  void attach(Handle* consumer, std::function<void()> wake);
  void detach();

 private:
  static void onEvent(Handle* rk, void* opaque);
  rd_kafka_queue_s* queue_ = nullptr;
  std::function<void()> wake_;
};

}  // namespace ferry::kafka
