// What KafkaSource and KafkaReplicator share on the source side: a consumed message becomes a
// Record with its key, value, timestamp and Kafka position ({kafka.topic, kafka.partition} /
// {kafka.offset: next offset}), and the offsets a task may commit to its group once the runtime
// reported the records before them safe.
//
// Threading: a SafeOffsets belongs to its task's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/record.h"
#include "ferry/status.h"

struct rd_kafka_s;
struct rd_kafka_message_s;

namespace spdlog {
class logger;
}

namespace ferry::connectors {

// Buffers for the values of consumed records, handed back when the last Bytes sharing one is
// gone (after the target acknowledged the copy, or the sink dropped the record) and reused for the
// next value. Why: a 1 KB value copied into a fresh std::string is a glibc "large" allocation
// (>= 1024 bytes), which sweeps the fast bins (malloc_consolidate) first; with librdkafka's and
// the runtime's small allocations in between that cost more than the copy itself (the profile of
// the 1 KB kafka-replicate bench: _int_malloc, unlink_chunk and malloc_consolidate ~15 % of the
// worker's samples). Values below kMinPooled stay ordinary Bytes (small allocations are cheap),
// values above kMaxPooled too (rare, and not worth keeping); at most kMaxKeptBytes of capacity is
// kept.
//
// Thread-safety: copyOf() and the hand-back may run on any thread (a Bytes is freed wherever its
// last holder drops it); one mutex guards the free list.
class PayloadPool : public std::enable_shared_from_this<PayloadPool> {
 public:
  static constexpr std::size_t kMinPooled = 512;
  static constexpr std::size_t kMaxPooled = 64 * 1024;
  static constexpr std::size_t kMaxKeptBytes = 32u << 20;

  static std::shared_ptr<PayloadPool> make() { return std::shared_ptr<PayloadPool>(new PayloadPool()); }
  ~PayloadPool();
  // A Bytes holding a copy of [data, data + n).
  Bytes copyOf(const void* data, std::size_t n);
  // Buffers waiting for reuse (tests).
  std::size_t kept() const {
    std::lock_guard<std::mutex> lock(mu_);
    return free_.size();
  }

 private:
  PayloadPool() = default;
  void giveBack(std::string* s) noexcept;

  mutable std::mutex mu_;
  std::vector<std::string*> free_;
  std::size_t keptBytes_ = 0;
};

// Key, value, timestamp and position of `m` (headers and topic are the caller's). With `pool`,
// values of pooled sizes are copied into its buffers.
void fillFromKafka(const rd_kafka_message_s* m, const std::string& sourceTopic, Record& r,
                   PayloadPool* pool = nullptr);

// A Kafka source position read back: {kafka.topic, kafka.partition} / {kafka.offset}.
struct KafkaPosition {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t nextOffset = 0;  // the offset after the record's
};
// The Kafka position in `p`; nullopt when a field is missing or not a number in range (positions
// come back from stores and from REST offset changes: they are not trusted to be ours).
std::optional<KafkaPosition> kafkaPositionOf(const Position& p);
// `text` as a whole decimal integer (optional '-'), nullopt otherwise (no exceptions).
std::optional<std::int64_t> parseKafkaNumber(std::string_view text);

class SafeOffsets {
 public:
  // The record's next offset becomes committable (records without a valid Kafka position are
  // ignored).
  void markSafe(const Record& record);
  // Commits the committable offsets synchronously. A failed commit (a rebalance moved a partition
  // away) is logged and kept for the next one: the partition's new owner re-reads from the last
  // committed offset (duplicates, not loss).
  Status commit(rd_kafka_s* rk, spdlog::logger& log, const char* who);

 private:
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> next_;
};

}  // namespace ferry::connectors
