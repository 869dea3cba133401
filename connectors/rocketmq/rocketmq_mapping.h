// Pure mapping between ferry records and RocketMQ messages for the RocketMQ connectors (no I/O):
// RocketMQ message -> source record, sink record -> RocketMQ message, the list of RocketMQ system
// properties, source positions <-> message queues, and group-name sanitising.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rocketmq/remoting.h"
#include "rocketmq/routes.h"
#include "ferry/record.h"

namespace ferry::connectors::rmq {

// Header names the source sets from system properties.
inline constexpr const char* kHeaderTags = "rocketmq.tags";
inline constexpr const char* kHeaderKeys = "rocketmq.keys";
inline constexpr const char* kHeaderMsgId = "rocketmq.msgId";
// The RocketMQ topic a record was read from, set only when RocketMQSource writes it to another
// backbone topic (`topic`); never written back as a property.
inline constexpr const char* kHeaderTopic = "rocketmq.topic";

// True for properties RocketMQ itself sets or interprets (TAGS, KEYS, UNIQ_KEY, WAIT, DELAY,
// REAL_TOPIC, ..., anything starting with "__" or "TIMER_"); they are never user headers.
bool isSystemProperty(std::string_view name);

struct SourceOptions {
  std::string targetTopic;  // empty: the RocketMQ topic's name
  bool keyFromKeys = true;  // record key = the KEYS property
};

// The source record for `message` pulled from `brokerName`: value = body, headers = user
// properties plus rocketmq.tags/keys/msgId, timestamp = born timestamp, position = the queue and
// the next offset (queueOffset + 1). The body is moved out of `message`.
Record recordFromMessage(rocketmq::StoredMessage& message, const std::string& brokerName,
                         const SourceOptions& options);

// Position partition of a queue, and back (nullopt when the map is not one of ours).
StringMap queuePartition(const rocketmq::MessageQueue& queue);
std::optional<rocketmq::MessageQueue> queueFromPartition(const StringMap& partition);
// The "offset" value of a position offset (nullopt when missing or not a non-negative number).
std::optional<std::int64_t> offsetFromPosition(const StringMap& offset);

struct SinkOptions {
  std::string topic;  // empty: the record's topic
  std::string tag;    // empty: no TAGS
};

// True when the properties format carries `name`/`value` unchanged: both non-empty, valid UTF-8,
// no 0x01/0x02 in the name, no 0x02 in the value, and the name is not a system property.
bool propertyCarriable(std::string_view name, std::string_view value);

// The message for a sink record: body = value (null -> empty), KEYS = key (when carriable),
// TAGS = options.tag or, when that is empty, the rocketmq.tags header (never copied as a
// property), user properties = the other headers (the last of repeated names wins). Headers and
// keys the format cannot carry are left out and counted in *skipped.
rocketmq::OutgoingMessage messageFromRecord(const Record& record, const SinkOptions& options,
                                            std::size_t* skipped);

// A RocketMQ group/topic-safe name: bytes outside [A-Za-z0-9_%|-] become '_', cut to 255.
std::string safeName(std::string_view name);

}  // namespace ferry::connectors::rmq
