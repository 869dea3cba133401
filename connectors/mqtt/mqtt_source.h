// MQTTSource: subscribes to MQTT topic filters and turns messages into records.
//
// Each task owns one MqttClient (client id mqtt.client.id + "-<task>"), subscribed to
// mqtt.topics at mqtt.qos. With tasks.max > 1 the tasks must share the stream: filters are
// subscribed as $share/<mqtt.shared.group>/<filter> (or given that way), otherwise every task
// would get every message. QoS 1/2 messages are acknowledged to the broker only when their
// record is safe (commitRecord, in poll order: the Acknowledger of the record); a message a
// transform dropped counts as handled. With mqtt.clean.start=false (the default) the broker keeps
// the session while ferry is down, so QoS 1/2 messages published meanwhile arrive afterwards, and
// messages delivered but never acknowledged are delivered again.
//
// Records: value = payload; key = the MQTT topic (key.from=topic) or none; headers mqtt.topic,
// mqtt.qos, mqtt.retain, mqtt.dup (when set), mqtt.content.type (v5) and the v5 user properties;
// topic = `topic` or, when empty, the MQTT topic; timestamp = when poll() took the message (MQTT
// carries no time; one clock read per poll). No position: MQTT has no offsets to resume from;
// the session and the deferred acknowledgements carry delivery.
//
// Threading: the client's io thread delivers the messages of each socket read as one batch into a
// bounded queue (one lock per batch); poll() (task thread) takes the whole queue under one lock.
// The task is a kNotify source: poll() returns at once when called with maxWait 0, and the
// queue wakes the runtime (SourceTaskContext::wakeup) only when it turns non-empty; with
// maxWait > 0 (the thread-per-task runners) poll() waits on the queue, which then signals its
// condition variable, also only when it turns non-empty and someone waits. QoS 0 messages beyond
// the queue bound are dropped and counted.
//
// Per record: the payload moves into the value, the topic and fixed headers are shared
// (mqttc::SourceCache), and the acknowledgers of one poll live in one allocation (aliasing
// shared_ptrs into an array), so a record costs about three allocations.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "connectors/mqtt/mqtt_mapping.h"
#include "ferry/connector.h"
#include "mqtt/client.h"

namespace spdlog {
class logger;
}

namespace ferry::connectors {

class MQTTSourceConnector final : public SourceConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override;
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override;

 private:
  StringMap config_;
};

class MQTTSourceTask final : public SourceTask {
 public:
  MQTTSourceTask();
  ~MQTTSourceTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SourceTaskContext& context) override;
  PollMode pollMode() const override { return PollMode::kNotify; }
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                           std::chrono::milliseconds maxWait) override;
  void stop() override;

  std::uint64_t droppedQos0() const noexcept { return dropped_; }
  // Malformed PUBLISHes skipped and acknowledged under errors.tolerance=all.
  std::uint64_t malformedSkipped() const noexcept { return malformed_; }

 private:
  Status takeMalformed();  // task thread: deals with taken_'s malformed messages

  struct Queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<mqtt::IncomingMessage> items;  // guarded by mu
    std::size_t limit = 100000;
    std::uint64_t dropped = 0;                // guarded by mu
    bool waiting = false;                     // guarded by mu: poll() waits on cv
    // Woken when items turns non-empty. Set before the client connects, left alone until the
    // client (whose io thread calls wakeup) is closed.
    SourceTaskContext* context = nullptr;
  };

  std::shared_ptr<spdlog::logger> log_;
  mqttc::SourceMapping mapping_;
  mqttc::SourceCache cache_;                  // task thread
  std::deque<mqtt::IncomingMessage> taken_;   // task thread: what poll() took (kept for its blocks)
  std::shared_ptr<Queue> queue_;
  std::shared_ptr<mqtt::MqttClient> client_;  // shared with the records' acknowledgers
  std::uint64_t dropped_ = 0;
  std::shared_ptr<std::atomic<long>> pending_;  // QoS 1/2 records handed out and not settled
  SourceTaskContext* context_ = nullptr;
  long commitAt_ = 500;
  bool tolerateAll_ = false;     // errors.tolerance=all
  std::uint64_t malformed_ = 0;  // task thread
};

}  // namespace ferry::connectors
