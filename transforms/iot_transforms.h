// Transforms for IoT bridging and Kafka Connect's HeaderFrom:
//   HeaderFrom$Value/$Key  fields of a JSON key/value copied or moved into headers;
//   DecodePayload$Value/$Key  base64 or hex text decoded into the bytes it encodes;
//   TopicLevelRouter       the topic rebuilt from levels of the MQTT topic ("iot-${level2}");
//   Sample                 keeps one record in N (deterministic: the 1st, the N+1th, ...).
//
// Threading: one instance per task, called from that task's thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transforms/field_transforms.h"

namespace ferry::transforms {

// fields, headers (same length), operation copy|move: header i = the JSON text of field i
// (strings as their text); a missing field adds no header.
class HeaderFrom : public SidedTransform {
 public:
  explicit HeaderFrom(bool onKey) : SidedTransform("HeaderFrom", onKey) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

 private:
  std::vector<std::string> fields_, headers_;
  bool move_ = false;
};

// encoding base64|hex: the key/value text decoded; text that does not decode fails the record.
class DecodePayload : public SidedTransform {
 public:
  explicit DecodePayload(bool onKey) : SidedTransform("DecodePayload", onKey) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

 private:
  bool hex_ = false;
};

// topic.format: the new topic; ${level1}.. are levels of the MQTT topic (the mqtt.topic header,
// else the record's topic, split at '/'), ${topic} the record's topic. A record whose topic has
// fewer levels than the format names fails (errors.tolerance decides). Characters MQTT allows but
// backbone topic names do not ('/', '+', '#', ' ') become '_' in the result.
class TopicLevelRouter final : public Transform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

 private:
  struct Part {
    std::string text;
    int level = 0;  // > 0: ${levelN}; -1: ${topic}
  };
  std::vector<Part> parts_;
};

// every: keep one record in `every` (1 keeps all).
class Sample final : public Transform {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

 private:
  std::int64_t every_ = 1;
  std::int64_t seen_ = 0;
};

}  // namespace ferry::transforms
