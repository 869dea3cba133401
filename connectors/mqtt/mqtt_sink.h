// MQTTSink: publishes records to an MQTT broker.
//
// Each task owns one MqttClient. The MQTT topic of a record comes from mqtt.topic, a template
// over the record (${topic}, ${key}, ${header:<name>}, ${value:<json path>}, ...); the payload is the value; QoS mqtt.qos,
// retain mqtt.retain (or a "true" mqtt.retain header); MQTT 5 user properties from the headers
// (mqtt.* ones excluded) and the content type from mqtt.content.type. At most mqtt.max.inflight
// QoS 1/2 publishes are outstanding; flush() waits until the broker acknowledged all of them, so
// the runtime commits a sink offset only behind acknowledged messages. The client keeps a
// persistent session (mqtt.clean.start=false) and re-sends unacknowledged publishes after a
// reconnect: a broker restart loses nothing. A record whose topic cannot be rendered (missing
// header, wildcard in the result) is a bad record (errors.tolerance / dead letter queue).
// flushAsync() (direct tasks) answers once every publish put before it was acknowledged, while
// later puts go on: a direct task keeps reading its source while the broker acknowledges.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "connectors/mqtt/mqtt_mapping.h"
#include "core/flush_epochs.h"
#include "ferry/connector.h"
#include "mqtt/client.h"

namespace spdlog {
class logger;
}

namespace ferry::connectors {

class MQTTSinkConnector final : public SinkConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override;
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override;

 private:
  StringMap config_;
};

class MQTTSinkTask final : public SinkTask {
 public:
  MQTTSinkTask();
  ~MQTTSinkTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SinkTaskContext& context) override;
  Status put(std::vector<Record>& records) override;
  bool readyForPut() override;
  Status flush() override;
  bool flushAsync(std::function<void(Status)> done) override;
  void stop() override;

 private:
  // Publishes by flush epoch (flushAsync), and the first failure since the last flushAsync
  // answered. Shared with the publish callbacks (io thread).
  struct Epochs {
    std::mutex mu;
    core::FlushEpochs epochs;
    Status firstError;
  };
  static Status flushStatus(Status s);

  std::shared_ptr<spdlog::logger> log_;
  SinkTaskContext* context_ = nullptr;
  std::unique_ptr<mqttc::TopicTemplate> topic_;
  mqttc::SinkMapping mapping_;
  std::int64_t flushTimeoutMs_ = 30000;
  std::unique_ptr<mqtt::MqttClient> client_;
  std::shared_ptr<Epochs> epochs_ = std::make_shared<Epochs>();
};

}  // namespace ferry::connectors
