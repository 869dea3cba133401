// MQTT 3.1.1 and 5.0 control packets as bytes: encode and decode, the fixed header framing, the
// variable byte integer, MQTT 5 properties, topic name/filter validation and matching (with the
// `+` / `#` wildcards, `$`-topics, and `$share/<group>/<filter>` shared subscriptions).
// Pure functions and value types: no I/O, no threads. Decoders never read past their input and
// return InvalidArgument (with the reason) for malformed packets.
//
// Why our own codec (and client) rather than libmosquitto or Paho C: see README.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/result.h"

namespace ferry::mqtt {

enum class Version : std::uint8_t { k311 = 4, k5 = 5 };

enum class PacketType : std::uint8_t {
  kConnect = 1, kConnack = 2, kPublish = 3, kPuback = 4, kPubrec = 5, kPubrel = 6, kPubcomp = 7,
  kSubscribe = 8, kSuback = 9, kUnsubscribe = 10, kUnsuback = 11, kPingreq = 12, kPingresp = 13,
  kDisconnect = 14, kAuth = 15,
};
const char* packetTypeName(PacketType t) noexcept;

// MQTT 5 property identifiers (§2.2.2.2).
namespace prop {
inline constexpr std::uint8_t kPayloadFormat = 0x01, kMessageExpiry = 0x02, kContentType = 0x03,
    kResponseTopic = 0x08, kCorrelationData = 0x09, kSubscriptionId = 0x0B, kSessionExpiry = 0x11,
    kAssignedClientId = 0x12, kServerKeepAlive = 0x13, kAuthMethod = 0x15, kAuthData = 0x16,
    kRequestProblemInfo = 0x17, kWillDelay = 0x18, kRequestResponseInfo = 0x19,
    kResponseInfo = 0x1A, kServerReference = 0x1C, kReasonString = 0x1F, kReceiveMaximum = 0x21,
    kTopicAliasMaximum = 0x22, kTopicAlias = 0x23, kMaximumQos = 0x24, kRetainAvailable = 0x25,
    kUserProperty = 0x26, kMaximumPacketSize = 0x27, kWildcardSubAvailable = 0x28,
    kSubIdAvailable = 0x29, kSharedSubAvailable = 0x2A;
}  // namespace prop

// One property: numbers in `number`, strings/binary in `text`, a user property's value in `value`.
struct Property {
  std::uint8_t id = 0;
  std::uint32_t number = 0;
  std::string text;
  std::string value;
  friend bool operator==(const Property&, const Property&) = default;
};

struct Properties {
  std::vector<Property> items;  // in wire order; user properties may repeat

  std::optional<std::uint32_t> number(std::uint8_t id) const;
  std::optional<std::string> text(std::uint8_t id) const;
  std::vector<std::pair<std::string, std::string>> userProperties() const;
  void setNumber(std::uint8_t id, std::uint32_t v);
  void setText(std::uint8_t id, std::string v);
  void addUser(std::string key, std::string value);
  bool empty() const noexcept { return items.empty(); }
  friend bool operator==(const Properties&, const Properties&) = default;
};

struct Subscription {
  std::string filter;
  std::uint8_t qos = 0;
  bool noLocal = false;            // v5
  bool retainAsPublished = false;  // v5
  std::uint8_t retainHandling = 0; // v5
  friend bool operator==(const Subscription&, const Subscription&) = default;
};

// Every packet type in one value; fields a type does not use stay default. For v3.1.1 the
// reason codes of CONNACK / SUBACK are the 3.1.1 return codes.
struct Packet {
  PacketType type = PacketType::kPingreq;
  std::uint16_t packetId = 0;   // PUBLISH (QoS > 0), PUB*, (UN)SUBSCRIBE, (UN)SUBACK
  std::uint8_t reasonCode = 0;  // CONNACK, PUB* (v5), DISCONNECT, AUTH
  Properties properties;        // v5
  // PUBLISH
  std::string topic;
  std::string payload;
  std::uint8_t qos = 0;
  bool retain = false;
  bool dup = false;
  // CONNECT
  Version version = Version::k311;
  std::string clientId;
  bool cleanStart = true;
  std::uint16_t keepAliveS = 60;
  std::optional<std::string> username;
  std::optional<std::string> password;
  bool hasWill = false;
  std::string willTopic;
  std::string willPayload;
  std::uint8_t willQos = 0;
  bool willRetain = false;
  Properties willProperties;
  // CONNACK
  bool sessionPresent = false;
  // SUBSCRIBE / UNSUBSCRIBE (filters only) / SUBACK, UNSUBACK (reason codes)
  std::vector<Subscription> subscriptions;
  std::vector<std::uint8_t> reasonCodes;
  friend bool operator==(const Packet&, const Packet&) = default;
};

// The variable byte integer (§1.5.5): at most 4 bytes, values up to 268,435,455.
inline constexpr std::uint32_t kMaxVarint = 268435455;
void appendVarint(std::string& out, std::uint32_t value);

// Framing: whether `data` starts with a whole packet. kOk gives its total size (fixed header +
// remaining length); kInvalid for a malformed remaining length or a packet over `maxPacket`.
struct Frame {
  enum class State { kNeedMore, kOk, kInvalid } state = State::kNeedMore;
  std::size_t size = 0;
  std::string error;
};
Frame frame(std::string_view data, std::size_t maxPacket = kMaxVarint + 5);

// Encodes `p` for protocol `version` (CONNECT uses p.version). InvalidArgument for values the
// wire cannot carry (a string over 65,535 bytes, QoS 3, a QoS > 0 PUBLISH without packet id, ...).
Result<std::string> encode(const Packet& p, Version version);
// Decodes one whole packet (as `frame` delimited it) of protocol `version` (a CONNECT carries
// its own).
Result<Packet> decode(std::string_view packet, Version version);
// For a whole PUBLISH that decode() refused (an invalid topic name, bad UTF-8, bad properties):
// what can still be read of it — QoS, dup/retain, the packet id (for its acknowledgement), the
// topic's bytes as they are, and the payload when the properties could be skipped (else empty).
// Fails when even that cannot be read (QoS 3, packet id 0, a topic length past the end): then
// the packet cannot be taken and acknowledged at all.
Result<Packet> decodeUnvalidatedPublish(std::string_view packet, Version version);

// Topic names and filters (§4.7): non-empty UTF-8 up to 65,535 bytes, no NUL; names without
// wildcards; in filters `#` only as the whole last level and `+` only as a whole level.
Status validateTopicName(std::string_view topic);
Status validateTopicFilter(std::string_view filter);
// `$share/<group>/<filter>` split into group and filter (nullopt when not a shared one);
// InvalidArgument for a malformed shared subscription.
Result<std::optional<std::pair<std::string, std::string>>> parseShared(std::string_view filter);
// True when `topic` matches `filter` (a `$share/g/` prefix is ignored). Wildcards at the first
// level do not match topics starting with `$` (§4.7.2).
bool topicMatches(std::string_view filter, std::string_view topic);

}  // namespace ferry::mqtt
