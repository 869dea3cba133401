// Kafka Connect's SetSchemaMetadata ($Key/$Value), for records that carry no schema objects.
//
// Kafka renames (and re-versions) the Connect schema of the key/value. ferry records are bytes, so
// the schema is found where ferry can see one:
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
#include "transforms/json_util.h"

namespace ferry::transforms {

class SetSchemaMetadata : public Transform {
 public:
  explicit SetSchemaMetadata(bool onKey)
      : onKey_(onKey), name_(std::string("SetSchemaMetadata") + (onKey ? "$Key" : "$Value")) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> apply(Record& record) override;

 private:
  // The key/value parsed as JSON when it may be an envelope (nullopt otherwise). Kept apart so
  // the chain's JSON cache can take its place later.
  static std::optional<Json> envelopeOf(const Bytes& bytes);

  bool onKey_;
  std::string name_;
  std::optional<std::string> schemaName_;
  std::optional<std::int32_t> schemaVersion_;
};

}  // namespace ferry::transforms
