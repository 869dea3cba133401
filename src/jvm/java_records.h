// Records across the channel to the JVM host (jvm/README.md, "Records"), the worker's side.
//
// A key or value crosses as one of: 0 null; 1 raw bytes (schemaless); 2 typed: a schema id and
// the data in the JSON payload form of ferry/schema.h (or null). A schema crosses once per task
// and direction, as Kafka Connect's JSON schema under an id; later records name the id.
//
// Source batch (the host's answer to SOURCE_POLL):
//   [i32 n][i32 id, str schema JSON]*n  [i32 records]
//   per record: str topic, i32 partition (-1: none), i64 timestamp (-1: none), key, value,
//               [i32 n][str key, bytes value]*n headers, map-or-null partition, map-or-null offset
// Sink batch (SINK_PUT): [i32 n][i32 id, str schema JSON]*n [i32 records]
//   per record: str topic, i32 partition, i64 offset, i64 timestamp (-1: none), key, value, headers
//
// Thread-safety: one SchemasIn/SchemasOut per task, used by its thread.
#pragma once
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ferry/connector.h"
#include "ferry/record.h"
#include "ferry/result.h"
#include "jvm/wire.h"

namespace ferry::jvm {

// The schemas a task's host side sent, by id.
class SchemasIn {
 public:
  // Parses and keeps `json` under `id` (at most kMax schemas; a task with more is refused).
  Status add(std::int32_t id, std::string_view json);
  SchemaPtr find(std::int32_t id) const;
  static constexpr std::size_t kMax = 100000;

 private:
  std::unordered_map<std::int32_t, SchemaPtr> byId_;
};

// The schemas the worker sent to a task's host side, with their ids.
class SchemasOut {
 public:
  // The id of `schema`; a schema not sent yet gets one and is added to `fresh`.
  std::int32_t id(const SchemaPtr& schema, std::vector<std::pair<std::int32_t, SchemaPtr>>& fresh);

 private:
  std::unordered_map<const Schema*, std::int32_t> byPointer_;
  std::unordered_multimap<std::uint64_t, std::pair<SchemaPtr, std::int32_t>> byFingerprint_;
  std::vector<SchemaPtr> kept_;  // keeps the pointers of byPointer_ valid
  std::int32_t next_ = 1;
};

// Appends the records of a source batch to `out`; returns how many. Bounded reads: a malformed
// payload is InvalidArgument, never a crash, and appends nothing.
Result<std::size_t> readSourceBatch(std::string_view payload, SchemasIn& schemas, std::vector<Record>& out);

// Writes a sink batch.
void writeSinkBatch(Writer& w, const std::vector<Record>& records, SchemasOut& schemas);

// A Java sink task's SinkTaskContext offset() / pause() / resume(), in the order it asked: the
// trailer of the host's answers to SINK_OPEN, SINK_PUT and SINK_PRE_COMMIT,
// [i32 n][u8 kind, str topic, i32 queue, i64 offset]*n.
struct SinkContextRequest {
  enum Kind : std::uint8_t { kSeek = 0, kPause = 1, kResume = 2 };
  Kind kind = kSeek;
  TopicQueue queue;
  std::int64_t offset = -1;  // kSeek: >= 0
};
// Reads the trailer from `r` (bounded; a malformed one is InvalidArgument and returns nothing).
Result<std::vector<SinkContextRequest>> readSinkContextRequests(Reader& r);
// Applies them to `context` in order (seek: one queue at a time).
Status applySinkContextRequests(const std::vector<SinkContextRequest>& requests, SinkTaskContext& context);

}  // namespace ferry::jvm
