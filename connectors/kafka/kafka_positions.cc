// Kafka source positions and committable offsets (see kafka_positions.h).
#include "connectors/kafka/kafka_positions.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "core/logging.h"

namespace ferry::connectors {

void fillFromKafka(const rd_kafka_message_t* m, const std::string& sourceTopic, Record& r) {
  if (m->key) r.key = Bytes(std::string(static_cast<const char*>(m->key), m->key_len));
  if (m->payload) r.value = Bytes(std::string(static_cast<const char*>(m->payload), m->len));
  rd_kafka_timestamp_type_t tt;
  r.timestampMs = std::max<std::int64_t>(0, rd_kafka_message_timestamp(m, &tt));
  r.position.partition = {{"kafka.topic", sourceTopic}, {"kafka.partition", std::to_string(m->partition)}};
  r.position.offset = {{"kafka.offset", std::to_string(m->offset + 1)}};
}

std::optional<std::int64_t> parseKafkaNumber(std::string_view text) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

std::optional<KafkaPosition> kafkaPositionOf(const Position& pos) {
  auto t = pos.partition.find("kafka.topic");
  auto p = pos.partition.find("kafka.partition");
  auto o = pos.offset.find("kafka.offset");
  if (t == pos.partition.end() || p == pos.partition.end() || o == pos.offset.end())
    return std::nullopt;
  auto partition = parseKafkaNumber(p->second);
  auto offset = parseKafkaNumber(o->second);
  if (!partition || !offset || *partition < 0 ||
      *partition > std::numeric_limits<std::int32_t>::max() || *offset < 0)
    return std::nullopt;
  return KafkaPosition{t->second, static_cast<std::int32_t>(*partition), *offset};
}

void SafeOffsets::markSafe(const Record& record) {
  auto pos = kafkaPositionOf(record.position);
  if (!pos) return;
  auto& next = next_[{pos->topic, pos->partition}];
  next = std::max<std::int64_t>(next, pos->nextOffset);
}

Status SafeOffsets::commit(rd_kafka_t* rk, spdlog::logger& log, const char* who, int waitMs) {
  if (rk == nullptr || next_.empty()) return Status::ok();
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(next_.size()));
  for (const auto& [tp, next] : next_) rd_kafka_topic_partition_list_add(list, tp.first.c_str(), tp.second)->offset = next;
  // Asynchronous, its answer on a queue of its own, waited for up to waitMs.
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_resp_err_t e = rd_kafka_commit_queue(rk, list, q, nullptr, nullptr);
  rd_kafka_topic_partition_list_destroy(list);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_event_t* ev = rd_kafka_queue_poll(q, waitMs);
    if (ev == nullptr) {
      rd_kafka_queue_destroy(q);  // the answer, when it comes, is dropped
      log.warn("{}: committing source offsets: no answer within {} ms; committed with the next commit", who, waitMs);
      return Status::ok();
    }
    e = rd_kafka_event_error(ev);
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_queue_destroy(q);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR__NO_OFFSET) {
    log.warn("{}: committing source offsets failed: {}", who, rd_kafka_err2str(e));
    return Status::ok();
  }
  next_.clear();
  return Status::ok();
}

}  // namespace ferry::connectors
