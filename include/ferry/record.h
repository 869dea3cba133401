// ferry connector SDK — records and the byte buffers they carry.
//
// A Record is one unit of data moving through ferry. Keys, values and header values are Bytes:
// immutable buffers held by shared reference, so copying a Record (into a batch, a retry, a
// dead-letter message) never copies payloads. A null Bytes (no buffer) is distinct from an empty
// one: a null value is a tombstone, as in Kafka.
//
// Thread-safety: Bytes is immutable and safe to share across threads. A Record is a value: one
// thread at a time mutates it (the task thread that owns it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/schema.h"

namespace ferry {

using StringMap = std::map<std::string, std::string>;

// An immutable, shared byte buffer. Copying shares the buffer.
class Bytes {
 public:
  Bytes() = default;  // null
  explicit Bytes(std::string data) : data_(std::make_shared<const std::string>(std::move(data))) {}
  explicit Bytes(std::shared_ptr<const std::string> data) : data_(std::move(data)) {}
  static Bytes copyOf(std::string_view v) { return Bytes(std::string(v)); }
  static Bytes null() { return Bytes(); }

  bool isNull() const noexcept { return data_ == nullptr; }
  std::string_view view() const noexcept { return data_ ? std::string_view(*data_) : std::string_view(); }
  const char* data() const noexcept { return data_ ? data_->data() : nullptr; }
  std::size_t size() const noexcept { return data_ ? data_->size() : 0; }
  bool empty() const noexcept { return size() == 0; }
  std::string str() const { return std::string(view()); }
  // The shared buffer itself (null when isNull()).
  const std::shared_ptr<const std::string>& buffer() const noexcept { return data_; }

  friend bool operator==(const Bytes& a, const Bytes& b) noexcept {
    return a.isNull() == b.isNull() && a.view() == b.view();
  }

 private:
  std::shared_ptr<const std::string> data_;
};

struct Header {
  std::string key;
  Bytes value;
};

// Ordered list of headers; keys may repeat (as in Kafka). Lookups return the last one.
class Headers {
 public:
  void add(std::string key, Bytes value) { items_.push_back({std::move(key), std::move(value)}); }
  void add(std::string key, std::string_view value) { add(std::move(key), Bytes::copyOf(value)); }
  void reserve(std::size_t n) { items_.reserve(n); }
  // Replaces every header named `key` by one with `value`.
  void set(const std::string& key, Bytes value) {
    remove(key);
    add(key, std::move(value));
  }
  // Removes every header named `key`; returns how many were removed.
  std::size_t remove(const std::string& key) {
    std::size_t before = items_.size();
    std::erase_if(items_, [&](const Header& h) { return h.key == key; });
    return before - items_.size();
  }
  const Header* last(std::string_view key) const noexcept {
    for (auto it = items_.rbegin(); it != items_.rend(); ++it)
      if (it->key == key) return &*it;
    return nullptr;
  }
  bool has(std::string_view key) const noexcept { return last(key) != nullptr; }
  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  void clear() noexcept { items_.clear(); }
  auto begin() const noexcept { return items_.begin(); }
  auto end() const noexcept { return items_.end(); }
  const std::vector<Header>& items() const noexcept { return items_; }

  friend bool operator==(const Headers& a, const Headers& b) noexcept {
    if (a.items_.size() != b.items_.size()) return false;
    for (std::size_t i = 0; i < a.items_.size(); ++i)
      if (a.items_[i].key != b.items_[i].key || !(a.items_[i].value == b.items_[i].value)) return false;
    return true;
  }

 private:
  std::vector<Header> items_;
};

// Where a source record came from: `partition` names the stream (e.g. {file: /a.log}),
// `offset` the place in it to resume after this record (e.g. {pos: 4096}). Both are string maps
// so any store can keep them. Committed positions are how a source task resumes.
struct Position {
  StringMap partition;
  StringMap offset;
  bool empty() const noexcept { return partition.empty() && offset.empty(); }
  friend bool operator==(const Position&, const Position&) = default;
};

// Called by the runtime once a record is safe (in the backbone, or flushed by the sink of a
// direct task). Push-style sources use it to acknowledge the outside system. Implementations must
// be cheap and thread-safe: the runtime may call it from a producer-callback thread.
class Acknowledger {
 public:
  virtual ~Acknowledger() = default;
  virtual void ack() noexcept = 0;
  // The record will never be safe (dropped by a filter or tolerated error, or the task stopped).
  // `delivered` is false when the outside system should redeliver it.
  virtual void release(bool delivered) noexcept { (void)delivered; }
};

struct Record {
  std::string topic;
  std::optional<std::int32_t> queue;  // backbone queue/partition; nullopt = let the runtime pick
  Bytes key;
  Bytes value;
  Headers headers;
  std::int64_t timestampMs = 0;  // epoch milliseconds; 0 = unknown (the runtime stamps it)

  // Source side: where the record came from (committed after it is safe).
  Position position;
  // Source side, optional: acknowledged when the record is safe (see Acknowledger).
  std::shared_ptr<Acknowledger> acknowledger;

  // Sink side: the backbone offset of this record in (topic, queue); -1 for source records, except
  // in SourceTask::commitRecord, where `queue` and `offset` say where the backbone put the record
  // when it says so (-1 otherwise: a dropped record, an exactly-once or direct task).
  std::int64_t offset = -1;

  // When the worker received the record: std::chrono::steady_clock nanoseconds since its epoch.
  // Sources that read from a socket set it when the bytes were read; 0 = the runtime stamps it
  // when it takes the record from poll(). Never leaves the worker; the runtime measures from it
  // how long records spend inside ferry (ferry_task_record_latency_seconds).
  std::int64_t receivedNs = 0;

  // The types of the key and the value (ferry/schema.h); null = schemaless, as every record was
  // before schemas existed. With a schema, the bytes hold the data in the JSON payload form that
  // schema.h describes. Shared: copying a record copies two pointers.
  SchemaPtr keySchema;
  SchemaPtr valueSchema;

  std::size_t sizeBytes() const noexcept {
    std::size_t n = topic.size() + key.size() + value.size() + 32;
    for (const auto& h : headers) n += h.key.size() + h.value.size();
    return n;
  }
};

// A backbone topic and queue (a Kafka partition, a RocketMQ message queue).
struct TopicQueue {
  std::string topic;
  std::int32_t queue = 0;
  friend auto operator<=>(const TopicQueue&, const TopicQueue&) = default;
  friend bool operator==(const TopicQueue&, const TopicQueue&) = default;
  std::string toString() const { return topic + "-" + std::to_string(queue); }
};

// Next offsets to consume per queue (what a sink commits).
using OffsetMap = std::map<TopicQueue, std::int64_t>;

}  // namespace ferry
