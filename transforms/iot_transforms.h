// Transforms for IoT bridging and Kafka Connect's HeaderFrom:
//   HeaderFrom$Value/$Key  fields of a JSON key/value copied or moved into headers;
//   DecodePayload$Value/$Key  base64 or hex text decoded into the bytes it encodes;
//   TopicLevelRouter       the topic rebuilt from levels of the MQTT topic ("iot-${level2}");
//   Sample                 keeps one record in N (the 1st, the N+1th, ...) or at most N a second.
//
// Threading: one instance per task, called from that task's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
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
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

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
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

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

// Exactly one of:
//   every: keep one record in `every` (the 1st, the N+1th, ...; 1 keeps all);
//   rate:  keep at most `rate` records per second (fractions allowed: 0.1 = one per 10 s), by a
//          token bucket of capacity max(rate, 1) that starts full and refills continuously at
//          `rate` per second from a monotonic clock: a burst of up to `rate` records passes at
//          once, then one every 1/rate s; over any t seconds at most rate * (t + 1) records pass.
// Records are counted per task (each task has its own instance).
class Sample final : public Transform {
 public:
  Sample();
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;
  // The monotonic millisecond clock `rate` reads (default: the steady clock); for tests.
  void setClock(std::function<std::int64_t()> monotonicMs) { clock_ = std::move(monotonicMs); }

 private:
  std::int64_t every_ = 0;  // > 0: one in N
  double rate_ = 0;         // > 0: records per second
  std::int64_t seen_ = 0;
  double tokens_ = 0;
  std::optional<std::int64_t> lastMs_;  // when tokens_ was last refilled
  std::function<std::int64_t()> clock_;
};

}  // namespace ferry::transforms
