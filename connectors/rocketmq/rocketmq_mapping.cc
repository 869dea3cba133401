// Record <-> RocketMQ message mapping (see rocketmq_mapping.h).
#include "connectors/rocketmq/rocketmq_mapping.h"

#include <array>
#include <charconv>

#include "rocketmq/producer.h"

namespace ferry::connectors::rmq {
namespace {

// MessageConst property names of the Java client (4.9 / 5.x) that are not user data.
constexpr std::array<std::string_view, 44> kSystemProperties = {
    "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID", "TRAN_MSG",
    "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG",
    "CORRECTION_FLAG", "MQ2_FLAG", "RECONSUME_TIME", "MSG_REGION", "TRACE_ON", "UNIQ_KEY",
    "MAX_RECONSUME_TIMES", "CONSUME_START_TIME", "TRAN_PREPARED_QUEUE_OFFSET",
    "TRANSACTION_CHECK_TIMES", "CHECK_IMMUNITY_TIME_IN_SECONDS", "INSTANCE_ID",
    "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER",
    "MSG_TYPE", "INNER_MULTI_DISPATCH", "INNER_MULTI_QUEUE_OFFSET", "SHARDING_KEY",
    "INNER_NUM", "INNER_BASE", "DLQ_ORIGIN_TOPIC", "DLQ_ORIGIN_MESSAGE_ID",
    "CRC32", "BORN_TIMESTAMP", "TRACE_CONTEXT", "POP_CK"};

// Upper case, digits and '_' only: the alphabet of every system property name.
constexpr bool systemPropertyAlphabet(std::string_view name) {
  for (char c : name)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}
static_assert([] {
  for (std::string_view p : kSystemProperties)
    if (!systemPropertyAlphabet(p)) return false;
  return true;
}());

bool validUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

}  // namespace

bool isSystemProperty(std::string_view name) {
  if (name.starts_with("__") || name.starts_with("TIMER_")) return true;
  // A name outside their alphabet — every header of ours and most users' — is not one.
  if (!systemPropertyAlphabet(name)) return false;
  for (std::string_view p : kSystemProperties)
    if (p == name) return true;
  return false;
}

Record recordFromMessage(rocketmq::StoredMessage& message, const std::string& brokerName,
                         const SourceOptions& options) {
  Record r;
  r.topic = options.targetTopic.empty() ? message.topic : options.targetTopic;
  r.value = Bytes(std::move(message.body));
  r.timestampMs = message.bornTimestamp > 0 ? message.bornTimestamp : message.storeTimestamp;
  std::string_view msgId = message.offsetMsgId;
  r.headers.reserve(message.properties.size() + 2);
  for (const auto& [name, value] : message.properties) {
    if (name == rocketmq::kPropTags) {
      r.headers.add(kHeaderTags, std::string_view(value));
    } else if (name == rocketmq::kPropKeys) {
      r.headers.add(kHeaderKeys, std::string_view(value));
      if (options.keyFromKeys) r.key = Bytes(value);
    } else if (name == rocketmq::kPropUniqKey) {
      msgId = value;
    } else if (!isSystemProperty(name)) {
      r.headers.add(name, std::string_view(value));
    }
  }
  if (!msgId.empty()) r.headers.add(kHeaderMsgId, msgId);
  // Written to another backbone topic: keep the RocketMQ topic for what runs after (bridge rules).
  if (r.topic != message.topic) r.headers.add(kHeaderTopic, std::string_view(message.topic));
  r.position.partition = queuePartition({message.topic, brokerName, message.queueId});
  r.position.offset.emplace("offset", std::to_string(message.queueOffset + 1));
  return r;
}

StringMap queuePartition(const rocketmq::MessageQueue& queue) {
  return {{"rocketmq.topic", queue.topic},
          {"rocketmq.broker", queue.brokerName},
          {"rocketmq.queue", std::to_string(queue.queueId)}};
}

std::optional<rocketmq::MessageQueue> queueFromPartition(const StringMap& partition) {
  auto t = partition.find("rocketmq.topic");
  auto b = partition.find("rocketmq.broker");
  auto q = partition.find("rocketmq.queue");
  if (t == partition.end() || b == partition.end() || q == partition.end()) return std::nullopt;
  std::int32_t id = 0;
  const std::string& s = q->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || p != s.data() + s.size() || id < 0) return std::nullopt;
  return rocketmq::MessageQueue{t->second, b->second, id};
}

std::optional<std::int64_t> offsetFromPosition(const StringMap& offset) {
  auto it = offset.find("offset");
  if (it == offset.end()) return std::nullopt;
  std::int64_t v = 0;
  const std::string& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

bool propertyCarriable(std::string_view name, std::string_view value) {
  if (name.empty() || value.empty()) return false;
  if (name.find('\x01') != std::string_view::npos || name.find('\x02') != std::string_view::npos)
    return false;
  if (value.find('\x02') != std::string_view::npos) return false;
  if (isSystemProperty(name)) return false;
  return validUtf8(name) && validUtf8(value);
}

rocketmq::OutgoingMessage messageFromRecord(const Record& record, const SinkOptions& options,
                                            std::size_t* skipped) {
  rocketmq::OutgoingMessage m;
  m.topic = options.topic.empty() ? record.topic : options.topic;
  m.body = record.value.str();
  std::size_t dropped = 0;
  std::string headerTag;
  for (const Header& h : record.headers) {
    if (h.key == kHeaderTags) {  // ours: the TAGS of a message read by RocketMQSource, or a bridge rule's
      headerTag = h.value.str();
      continue;
    }
    if (h.key == kHeaderTopic) continue;  // ours: where RocketMQSource read it; the topic is m.topic

    if (propertyCarriable(h.key, h.value.view())) {
      m.properties[h.key] = h.value.str();
    } else {
      ++dropped;
    }
  }
  if (!record.key.isNull()) {
    // KEYS is a system property, so check the value only.
    if (propertyCarriable("k", record.key.view())) {
      m.properties[rocketmq::kPropKeys] = record.key.str();
    } else {
      ++dropped;
    }
  }
  const std::string& tag = options.tag.empty() ? headerTag : options.tag;
  if (!tag.empty()) m.properties[rocketmq::kPropTags] = tag;
  if (skipped != nullptr) *skipped += dropped;
  return m;
}

std::string safeName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '%' || c == '|';
    out.push_back(ok ? c : '_');
  }
  if (out.size() > 255) out.resize(255);
  return out;
}

}  // namespace ferry::connectors::rmq
