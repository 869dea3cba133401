// The MQTT <-> RocketMQ bridge rules, as a transform (MqttRocketMQBridge) usable in any chain: in a
// direct task between MQTTSource and RocketMQSink (or RocketMQSource and MQTTSink), or on either
// side of the backbone. Configured the Kafka Connect way:
//
//   transforms=bridge
//   transforms.bridge.type=MqttRocketMQBridge
//   transforms.bridge.direction=mqtt-to-rocketmq
//   transforms.bridge.rules=telemetry,rest
//   transforms.bridge.rule.telemetry.mqtt.filter=devices/+/telemetry/#
//   transforms.bridge.rule.telemetry.rocketmq.topic=IOT_${level:3}
//   transforms.bridge.rule.telemetry.rocketmq.tag=${level:2}
//   transforms.bridge.rule.rest.mqtt.filter=#
//   transforms.bridge.rule.rest.rocketmq.topic=${level:1}
//   transforms.bridge.rule.rest.rocketmq.tag=${levels:2-}
//
// mqtt-to-rocketmq: the first rule whose filter matches the record's MQTT topic (the mqtt.topic
// header MQTTSource sets, else the record topic) gives the RocketMQ topic (the record's new
// topic) and tag (the rocketmq.tags header, which RocketMQSink sends as TAGS); the original MQTT
// topic stays in the mqtt.topic header, i.e. a message property on the RocketMQ side.
// rocketmq-to-mqtt: the first rule whose rocketmq.topic ('*' or a name) and rocketmq.tags ('*' or
// "a||b") match gives the MQTT topic (the record's new topic, which MQTTSink's default
// mqtt.topic=${topic} publishes to); its default ${header:mqtt.topic} sends a message back to the
// MQTT topic it came from.
//
// Templates: literal text with ${level:N} (the N-th MQTT level, 1-based), ${levels:N-} (levels N..
// joined by '/'), ${topic} (the record's topic before mapping), ${tag} (the rocketmq.tags header),
// ${key}, ${header:<name>}. Everything is checked when the connector is created: unknown rules,
// missing keys, bad filters, placeholders the direction cannot fill, ${level:N} beyond the fixed
// levels of the rule's filter, literal text a RocketMQ topic or MQTT topic cannot hold. A record
// that no rule matches fails (errors.tolerance / dead letter queue) or, with unmatched=drop, is
// dropped; a rendered name that is not a valid RocketMQ topic or MQTT topic fails likewise.
//
// Thread-safety: one instance per task (a Transform); the compiled rules are immutable.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/config.h"
#include "ferry/record.h"
#include "ferry/result.h"
#include "ferry/transform.h"

namespace ferry::connectors::mqttc {

class BridgeTemplate {
 public:
  struct Part {
    enum class Kind { kText, kLevel, kLevelsFrom, kTopic, kTag, kKey, kHeader } kind = Kind::kText;
    std::string text;  // kText: literal; kHeader: the header name
    int level = 0;     // kLevel / kLevelsFrom
  };
  // InvalidArgument naming an unknown placeholder, an unclosed "${" or a bad level number.
  static Result<BridgeTemplate> parse(std::string_view text);

  struct Input {
    std::string_view mqttTopic;  // for ${level:N} / ${levels:N-}
    std::string_view topic;
    std::string_view tag;
    const Record* record = nullptr;  // ${key}, ${header:x}
  };
  // InvalidArgument when ${level:N} does not exist in the topic or a header is missing.
  Result<std::string> render(const Input& in) const;

  const std::vector<Part>& parts() const { return parts_; }
  bool uses(Part::Kind kind) const;
  int maxLevel() const;  // highest N of ${level:N}, 0 when none
  std::string literalText() const;

 private:
  std::vector<Part> parts_;
};

// A RocketMQ topic name: 1..127 of [A-Za-z0-9_%|-].
Status validateRocketMQTopic(std::string_view name);

enum class BridgeDirection { kMqttToRocketMQ, kRocketMQToMqtt };

struct BridgeRule {
  std::string id;
  // mqtt-to-rocketmq
  std::string mqttFilter;
  BridgeTemplate rocketmqTopic;
  std::optional<BridgeTemplate> rocketmqTag;
  // rocketmq-to-mqtt
  std::string sourceTopic = "*";
  std::set<std::string> tags;  // empty: any tag
  BridgeTemplate mqttTopic;
};

struct BridgeRules {
  BridgeDirection direction = BridgeDirection::kMqttToRocketMQ;
  std::vector<BridgeRule> rules;
  bool dropUnmatched = false;
  std::string topicHeader = "mqtt.topic";

  // Compiles and checks the transform's own keys (see the header comment); the error names the
  // key ("rule.<id>.<key>: ...").
  static Result<BridgeRules> compile(const StringMap& config);
  // Maps `record` in place; false when it matched no rule and unmatched=drop.
  Result<bool> apply(Record& record) const;
};

class MqttRocketMQBridge final : public Transform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override { return rules_.apply(record); }

 private:
  BridgeRules rules_;
};

}  // namespace ferry::connectors::mqttc
