// SetSchemaMetadata (see schema_transforms.h).
//
// Why headers outside an envelope: a transform must not change what a schemaless value means, and
// a header is the one place every ferry sink and the backbone carry without touching the data.
#include "transforms/schema_transforms.h"

namespace ferry::transforms {

const ConfigDef& SetSchemaMetadata::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("schema.name", ConfigType::kString, "", Importance::kHigh,
             "Schema name to set (empty: not set): the envelope schema's `name`, else the "
             "schema.name header (key.schema.name for $Key).");
    d.define("schema.version", ConfigType::kInt, "-1", Importance::kHigh,
             "Schema version to set (-1: not set): the envelope schema's `version`, else the "
             "schema.version header (key.schema.version for $Key).");
    d.define("replace.null.with.default", ConfigType::kBool, "true", Importance::kLow,
             "Kafka's switch for schema defaults of null fields; accepted for compatibility, no effect "
             "(ferry never rewrites the payload, so a null stays null).");
    return d;
  }();
  return def;
}

Status SetSchemaMetadata::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, name_));
  schemaName_.reset();
  schemaVersion_.reset();
  if (std::string n = p.getString("schema.name"); !n.empty()) schemaName_ = std::move(n);
  const std::int32_t v = p.getInt("schema.version");
  if (v < -1)
    return Status::invalidArgument(name_ + ": schema.version must be a version (>= 0), or -1 for none; got " +
                                   std::to_string(v));
  if (v >= 0) schemaVersion_ = v;
  if (!schemaName_ && !schemaVersion_)
    return Status::invalidArgument(name_ + ": neither schema.name nor schema.version is configured; set one or both");
  return Status::ok();
}

Json* SetSchemaMetadata::envelopeOf(Record& record, Side side, JsonCache& cache) {
  if (!cache.hasDocument(record, side)) {
    // Cheap test first: most values are not envelopes and need no parse.
    const std::string_view v = (side == Side::kKey ? record.key : record.value).view();
    const std::size_t first = v.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos || v[first] != '{' || v.find("\"payload\"") == std::string_view::npos)
      return nullptr;
  }
  Json* doc = cache.get(record, side);
  if (!doc || !doc->is_object() || doc->size() != 2 || !doc->contains("payload")) return nullptr;
  auto schema = doc->find("schema");
  if (schema == doc->end() || !schema->is_object()) return nullptr;
  return doc;
}

Result<bool> SetSchemaMetadata::applyJson(Record& record, JsonCache& cache) {
  const Side side = onKey_ ? Side::kKey : Side::kValue;
  if (SchemaPtr& schema = onKey_ ? record.keySchema : record.valueSchema) {
    FERRY_ASSIGN_OR_RETURN(schema, memo_.get(schema, [&](const Schema& old) {
      return copySchema(old, [&](SchemaBuilder& b) {
        if (schemaName_) b.name(*schemaName_);
        if (schemaVersion_) b.version(*schemaVersion_);
      });
    }));
    return true;
  }
  if (!(onKey_ ? record.key : record.value).isNull()) {
    if (Json* env = envelopeOf(record, side, cache)) {
      Json& schema = (*env)["schema"];
      if (schemaName_) schema["name"] = *schemaName_;
      if (schemaVersion_) schema["version"] = *schemaVersion_;
      cache.changed(side);
      return true;
    }
  }
  const std::string prefix = onKey_ ? "key." : "";
  if (schemaName_) record.headers.set(prefix + "schema.name", Bytes(*schemaName_));
  if (schemaVersion_) record.headers.set(prefix + "schema.version", Bytes(std::to_string(*schemaVersion_)));
  return true;
}

}  // namespace ferry::transforms
