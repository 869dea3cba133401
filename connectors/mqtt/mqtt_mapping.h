// Pure mapping between MQTT messages and ferry records for the MQTT connectors (no I/O):
// message -> source record (value = payload; headers = topic, QoS, retain, dup, content type and
// MQTT 5 user properties; key = the MQTT topic), record -> message (topic from a template over
// the record, MQTT 5 user properties and content type from headers), topic templates, shared
// subscription filters, and the connection keys shared by source and sink.
//
// Thread-safety: free functions and immutable values.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/record_template.h"
#include "ferry/config.h"
#include "ferry/connector.h"
#include "ferry/record.h"
#include "ferry/result.h"
#include "mqtt/client.h"

namespace ferry::connectors::mqttc {

inline constexpr const char* kHeaderTopic = "mqtt.topic";
inline constexpr const char* kHeaderQos = "mqtt.qos";
inline constexpr const char* kHeaderRetain = "mqtt.retain";
inline constexpr const char* kHeaderDup = "mqtt.dup";
inline constexpr const char* kHeaderContentType = "mqtt.content.type";

// Keys of the connection, declared on both connectors' ConfigDefs.
void defineConnectionKeys(ConfigDef& def);
// The client's connection listener for a task: each ConnectionEvent becomes a
// reportConnection() of the same meaning (connected / reconnecting / degraded, with the reason).
// `Context` is SourceTaskContext or SinkTaskContext; it must outlive the client.
template <typename Context>
std::function<void(const mqtt::ConnectionEvent&)> connectionReporter(Context& context) {
  return [ctx = &context](const mqtt::ConnectionEvent& e) {
    ConnectionHealth h;
    h.state = e.kind == mqtt::ConnectionEvent::Kind::kConnected ? ConnectionHealth::State::kConnected
              : e.kind == mqtt::ConnectionEvent::Kind::kLost    ? ConnectionHealth::State::kReconnecting
                                                                : ConnectionHealth::State::kDegraded;
    h.reason = e.reason;
    ctx->reportConnection(h);
  };
}

// mqtt::ClientOptions from those keys (`clientIdSuffix` is appended to mqtt.client.id, e.g.
// "-<task>"). InvalidArgument for a malformed mqtt.server.uri.
Result<mqtt::ClientOptions> clientOptions(const ParsedConfig& config, const std::string& defaultClientId,
                                          const std::string& clientIdSuffix);
// "tcp://host:port" / "mqtt://..." (plain) or "ssl://", "tls://", "mqtts://" (TLS).
struct ServerUri {
  bool tls = false;
  std::string host;
  std::uint16_t port = 0;
};
Result<ServerUri> parseServerUri(std::string_view uri);

struct SourceMapping {
  std::string targetTopic;  // empty: the MQTT topic itself
  bool keyFromTopic = true;
};
// The record for `m` (headers in a fixed order; user properties after the mqtt.* ones).
Record recordFromMessage(const mqtt::IncomingMessage& m, const SourceMapping& mapping);

// What recordFromMessage(IncomingMessage&&) reuses from one message to the next (owned by one
// thread): the MQTT topic of the previous message as a shared buffer, and its fixed headers.
struct SourceCache {
  Bytes topic;
  std::uint8_t qos = 0;
  bool retain = false;
  Headers headers;  // mqtt.topic, mqtt.qos, mqtt.retain for (topic, qos, retain)
};
// The same record, built without copying: the payload moves into the value; the MQTT topic is
// one shared buffer for the key and the mqtt.topic header, and the fixed headers are copied from
// `cache` while messages keep arriving on the same topic (copying a Bytes only counts a
// reference). About three allocations per record instead of fifteen (the record's topic string,
// the value, the header list).
Record recordFromMessage(mqtt::IncomingMessage&& m, const SourceMapping& mapping, SourceCache& cache);

// Topic templates: a record template (core/record_template.h: ${topic}, ${key}, ${value:<json
// path>}, ${header:<name>}, ...) whose result must be a valid MQTT topic name.
class TopicTemplate {
 public:
  // InvalidArgument naming an unknown placeholder, an unclosed "${" or an empty template.
  static Result<TopicTemplate> parse(std::string_view text);
  // The MQTT topic for `r`; InvalidArgument when a referenced part is missing or the result is
  // not a valid MQTT topic name (empty, wildcard, bad UTF-8).
  Result<std::string> render(const Record& r) const;

 private:
  explicit TopicTemplate(core::RecordTemplate t) : template_(std::move(t)) {}
  core::RecordTemplate template_;
};

struct SinkMapping {
  std::uint8_t qos = 1;
  bool retain = false;
  bool propertiesFromHeaders = true;  // v5 user properties from headers (mqtt.* ones excluded)
};
// The message for `r` to `topic`: payload = value (null -> empty); content type from
// mqtt.content.type; retain from the option or a "true" mqtt.retain header.
mqtt::OutgoingMessage messageFromRecord(const Record& r, std::string topic, const SinkMapping& mapping);

// The filters a source subscribes: each of `filters`, prefixed with $share/<group>/ when
// `sharedGroup` is set (filters already shared stay as they are). InvalidArgument for a bad one.
Result<std::vector<std::string>> subscriptionFilters(const std::vector<std::string>& filters,
                                                     const std::string& sharedGroup);

}  // namespace ferry::connectors::mqttc
