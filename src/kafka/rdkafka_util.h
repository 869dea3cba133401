// Helpers over librdkafka (the Debian package) shared by the kafka backbone and the Kafka
// connectors: client settings built in layers with the refused key named, librdkafka's log lines
// routed to ferry's logger, and the few admin requests ferry makes (topics, partitions, group
// offsets), each waited for synchronously with a timeout.
//
// Thread-safety: every function may be called from any thread; a handle passed in must stay
// alive for the call.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/connector.h"
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

// Client settings ferry's connectors (KafkaSource, KafkaSink, the replicator) start from, below
// their own settings and the user's overrides (the backbone does not use them):
//   reconnect.backoff.max.ms = 500: librdkafka's default of 10 s between attempts to a broker
//     that is down (plus up to 50% jitter) means up to 15 s before it notices the broker is back;
//     500 ms bounds that to 0.75 s at the cost of about two connection attempts a second per
//     broker during an outage;
//   statistics.interval.ms = 1000: the statistics event ConnectionWatch reads the brokers' state
//     from (0 turns the watch's return to "connected" off; see ConnectionWatch).
StringMap connectorClientDefaults();
// True when a configuration asks for statistics events (statistics.interval.ms > 0).
bool statsEnabled(const rd_kafka_conf_s* conf);

// Whether a client reaches its brokers, from librdkafka's own signals, for a task's
// reportConnection (librdkafka reconnects by itself; this only watches):
//   lost: an error event meaning the client has no broker to talk to (all brokers down, a
//     refused authentication, a failed TLS handshake, a fatal error), or two statistics events
//     in a row with no broker UP while the client keeps trying to connect (librdkafka does not
//     always raise "all brokers down": a broker it reconnects to at once is not counted down);
//     the reason is librdkafka's, with the last broker-level error before it (which broker,
//     refused or reset, ...);
//   back: a statistics event in which a broker is UP, or a delivery the brokers acknowledged.
// Records fetched into librdkafka's queue before a loss say nothing about the connection and are
// not a signal. `report(connected, reason)` is called on each change only, from the thread that
// serves the event (under the watch's mutex: it must not call back into the watch).
// Thread-safety: every member may be called from any thread.
class ConnectionWatch {
 public:
  using Report = std::function<void(bool connected, const std::string& reason)>;
  void setReport(Report report);
  // An error event (error_cb, or a consumer message whose err is set).
  void onError(int err, const char* reason);
  // A statistics event (stats_cb): a substring search while a broker is UP, parsed otherwise.
  void onStats(std::string_view json);
  // The brokers acknowledged a message.
  void onAcknowledged();
  bool connected() const;
  // From librdkafka's statistics JSON: whether a broker is in state UP; the connection attempts
  // of all brokers so far.
  static bool statsShowBrokerUp(std::string_view json);
  static std::int64_t connectAttempts(std::string_view json);
  // True for the errors that mean the client has lost its brokers (see above).
  static bool isLoss(int err);

 private:
  void lose(std::string text);  // mu_ held
  void regain();                // mu_ held
  mutable std::mutex mu_;
  std::atomic<bool> lost_{false};  // mirrors !connected_ for onAcknowledged's fast path
  bool connected_ = true;          // guarded by mu_
  std::string lastBroker_;         // guarded by mu_: the last broker-level error
  std::int64_t attempts_ = 0;      // guarded by mu_: connection attempts at the last statistics
  int failedStats_ = 0;            // guarded by mu_: statistics in a row with no broker UP, trying
  Report report_;                  // guarded by mu_
};

// A ConnectionWatch report passing each change to a task's context (SourceTaskContext or
// SinkTaskContext::reportConnection; any thread). The context must outlive the watch's client.
template <class Context>
ConnectionWatch::Report reportTo(Context& context) {
  return [ctx = &context](bool connected, const std::string& reason) {
    ctx->reportConnection(
        {connected ? ConnectionHealth::State::kConnected : ConnectionHealth::State::kReconnecting, reason});
  };
}

}  // namespace ferry::kafka
