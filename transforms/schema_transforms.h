// Kafka Connect's SetSchemaMetadata ($Key/$Value).
//
// Kafka renames (and re-versions) the Connect schema of the key/value. Where the record carries a
// schema (Record::keySchema / valueSchema, ferry/schema.h), that schema gets the new name and/or
// version and nothing else changes. For records without one, the schema is found where ferry can
// see one:
//   - a key/value that is a Kafka JsonConverter envelope, a JSON object of exactly `schema` (an
//     object) and `payload`: `schema.name` / `schema.version` are written into that schema as its
//     `name` / `version` (the payload is kept; the JSON is re-serialised compactly);
//   - anything else (plain JSON, text, binary, a null/tombstone, an envelope whose schema is null):
//     the name and version are written as record headers, replacing earlier ones, so that sinks
//     and later steps see them: `schema.name` / `schema.version` for the value,
//     `key.schema.name` / `key.schema.version` for the key (so the two never collide).
// At least one of `schema.name` and `schema.version` must be set (as in Kafka).
//
// Threading: one instance per task, called from that task's thread only.
#pragma once

#include <optional>
#include <string>

#include "ferry/transform.h"
#include "transforms/json_cache.h"
#include "transforms/schema_update.h"

namespace ferry::transforms {

class SetSchemaMetadata : public JsonTransform {
 public:
  explicit SetSchemaMetadata(bool onKey)
      : onKey_(onKey), name_(std::string("SetSchemaMetadata") + (onKey ? "$Key" : "$Value")) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

 private:
  // The key/value's document when it is a JsonConverter envelope (null otherwise): the chain's
  // document when an earlier step parsed it, else parsed only when the bytes may be one.
  static Json* envelopeOf(Record& record, Side side, JsonCache& cache);

  bool onKey_;
  std::string name_;
  SchemaMemo memo_;
  std::optional<std::string> schemaName_;
  std::optional<std::int32_t> schemaVersion_;
};

}  // namespace ferry::transforms
