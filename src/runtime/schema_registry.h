// Schemas in the backbone without repeating them in every record (src/runtime/README.md, "Schemas:
// typed records").
//
// A record whose value (or key) has a schema and is written with JsonConverter and
// schemas.enable=false leaves the backbone as its plain JSON payload plus one header,
// `ferry.schema.value` (`ferry.schema.key`), holding the schema's id: 16 hex digits of
// Schema::fingerprint(). The schema itself is appended once to the schema topic (a SharedLog of
// the backbone, worker key schema.storage.topic, default ferry-schemas) before the first record
// that names it; each entry is {"id": "<id>", "schema": <Kafka Connect's JSON form>}. A reader
// with JsonConverter and schemas.enable=false resolves the header through this registry's cache,
// reading the topic on a miss, checks the payload against the schema and hands the sink a typed
// record; other consumers see plain JSON and can ignore the header.
//
// Since the writer's append is durable before any record naming the id is produced, a reader that
// has the record finds the schema by reading the topic to its end. The first entry of an id wins
// (later ones with that id are ignored): a schema whose id is taken by a different schema (a
// 64-bit fingerprint collision, or a hostile entry) is refused to the writer (FailedPrecondition),
// never written under another schema's id.
//
// Thread-safe: every task of a worker shares one registry. Lookups of known ids take a short
// lock on the cache only; reading or appending the topic (a miss) is serialised on a lock of its
// own, so a slow broker holds up the tasks that miss, not those that hit.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "backbone/backbone.h"
#include "ferry/result.h"
#include "ferry/schema.h"

namespace ferry::runtime {

inline constexpr std::string_view kValueSchemaHeader = "ferry.schema.value";
inline constexpr std::string_view kKeySchemaHeader = "ferry.schema.key";

class SchemaRegistry {
 public:
  SchemaRegistry(backbone::Backbone& backbone, std::string topic) : backbone_(backbone), topic_(std::move(topic)) {}

  // The id records carry for `schema`, appended to the topic first when the topic does not hold
  // it yet.
  Result<std::string> idOf(const SchemaPtr& schema);
  // The schema of `id`; NotFound when the topic holds no entry of that id.
  Result<SchemaPtr> schemaOf(std::string_view id);

  // 16 lower-case hex digits.
  static std::string idText(std::uint64_t fingerprint);

 private:
  // With ioMu_ held: opens the log, and reads the entries appended since the last read (by
  // anyone) into byId_.
  Status openLocked();
  Status refreshLocked();
  // The cached schema of `id` (null: none); FailedPrecondition when the id holds another schema
  // than `expected`.
  Result<SchemaPtr> cached(const std::string& id, const Schema* expected);

  backbone::Backbone& backbone_;
  const std::string topic_;
  std::mutex ioMu_;  // the log, next_
  std::unique_ptr<backbone::SharedLog> log_;
  std::int64_t next_ = 0;
  std::mutex mu_;  // byId_ only; never held across I/O
  std::unordered_map<std::string, SchemaPtr> byId_;
};

}  // namespace ferry::runtime
