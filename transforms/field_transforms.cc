// Field transforms (see field_transforms.h).
//
// Every transform here works on the chain's parsed document (json_cache.h): the first JSON step
// parses, the following ones edit the same document, the bytes are written once. HoistField
// needs no document: when none is parsed yet, a value that is valid JSON is spliced into the new
// object as its original bytes.
#include "transforms/field_transforms.h"

namespace ferry::transforms {

Result<Json*> SidedTransform::objectOf(Record& r, JsonCache& cache) const {
  Json* j = cache.get(r, targetSide());
  if (!j || !j->is_object())
    return Status::invalidArgument(name_ + ": the " + side() + " of a record in topic '" +
                                   r.topic + "' is not a JSON object (" +
                                   (j ? std::string("a JSON ") + j->type_name() : "not JSON") +
                                   "); this transform needs one");
  return j;
}

Status SidedTransform::parse(const ConfigDef& def, const StringMap& config,
                             ParsedConfig& out) const {
  FERRY_ASSIGN_OR_RETURN(out, parseConfig(def, config, name_));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// HoistField

const ConfigDef& HoistField::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("field", ConfigType::kString, std::nullopt, Importance::kMedium,
             "The field the whole key/value is wrapped into: v becomes {\"<field>\": v}.",
             validators::nonEmptyString());
    return d;
  }();
  return def;
}

Status HoistField::configure(const StringMap& config) {
  ParsedConfig p;
  FERRY_RETURN_IF_ERROR(parse(definition(), config, p));
  field_ = p.getString("field");
  prefix_ = "{" + dumpJson(Json(field_)) + ":";
  return Status::ok();
}

Result<bool> HoistField::applyJson(Record& record, JsonCache& cache) {
  Bytes& b = target(record);
  if (b.isNull()) return true;
  // With a schema: struct{<field>: the old schema}.
  FERRY_RETURN_IF_ERROR(updateSchema(record, [&](const Schema& old) -> Result<SchemaPtr> {
    return SchemaBuilder::structure().field(field_, targetSchema(record)).build();
  }));
  if (cache.hasDocument(record, targetSide())) {  // a JSON step came before: wrap its document
    Json* doc = cache.get(record, targetSide());
    Json out = Json::object();
    out[field_] = std::move(*doc);
    cache.set(record, targetSide(), std::move(out));
    return true;
  }
  FERRY_RETURN_IF_ERROR(cache.flush(record));
  const std::string_view v = b.view();
  std::string out;
  if (isJson(v)) {
    out.reserve(prefix_.size() + v.size() + 1);
    out.append(prefix_).append(v).push_back('}');
  } else {
    out = prefix_ + dumpJson(Json(std::string(v))) + "}";
  }
  b = Bytes(std::move(out));
  return true;
}

// ---------------------------------------------------------------------------------------------
// InsertField

const ConfigDef& InsertField::definition() {
  static const ConfigDef def = [] {
    const std::string suffix =
        " Suffix the name with '!' to fail records that lack it, '?' (the default) to skip them.";
    ConfigDef d;
    d.define("topic.field", ConfigType::kString, "", Importance::kMedium,
             "Field for the record's topic; empty inserts nothing." + suffix);
    d.define("partition.field", ConfigType::kString, "", Importance::kMedium,
             "Field for the record's queue (partition); empty inserts nothing." + suffix);
    d.define("offset.field", ConfigType::kString, "", Importance::kMedium,
             "Field for the record's backbone offset (sink side); empty inserts nothing." + suffix);
    d.define("timestamp.field", ConfigType::kString, "", Importance::kMedium,
             "Field for the record's timestamp (epoch ms); empty inserts nothing." + suffix);
    d.define("static.field", ConfigType::kString, "", Importance::kMedium,
             "Field for a fixed value (static.value); empty inserts nothing.");
    d.define("static.value", ConfigType::kString, "", Importance::kMedium,
             "The fixed string inserted as static.field.");
    return d;
  }();
  return def;
}

InsertField::Field InsertField::fieldOf(const std::string& spec) {
  Field f;
  f.name = spec;
  if (!f.name.empty() && (f.name.back() == '!' || f.name.back() == '?')) {
    f.required = f.name.back() == '!';
    f.name.pop_back();
  }
  return f;
}

Status InsertField::configure(const StringMap& config) {
  ParsedConfig p;
  FERRY_RETURN_IF_ERROR(parse(definition(), config, p));
  topic_ = fieldOf(p.getString("topic.field"));
  partition_ = fieldOf(p.getString("partition.field"));
  offset_ = fieldOf(p.getString("offset.field"));
  timestamp_ = fieldOf(p.getString("timestamp.field"));
  static_ = fieldOf(p.getString("static.field"));
  staticValue_ = p.getString("static.value");
  if (topic_.name.empty() && partition_.name.empty() && offset_.name.empty() &&
      timestamp_.name.empty() && static_.name.empty())
    return Status::invalidArgument(name_ + ": set at least one of topic.field, partition.field, "
                                   "offset.field, timestamp.field, static.field");
  return Status::ok();
}

Result<bool> InsertField::applyJson(Record& record, JsonCache& cache) {
  Bytes& b = target(record);
  if (b.isNull()) return true;
  FERRY_ASSIGN_OR_RETURN(Json * doc, objectOf(record, cache));
  Json& obj = *doc;
  auto missing = [&](const Field& f, const char* what) {
    return Status::invalidArgument(name_ + ": " + f.name + "! is required but the record in topic '" +
                                   record.topic + "' has no " + what);
  };
  if (!topic_.name.empty()) obj[topic_.name] = record.topic;
  if (!partition_.name.empty()) {
    if (record.queue) obj[partition_.name] = *record.queue;
    else if (partition_.required) return missing(partition_, "queue (partition)");
  }
  if (!offset_.name.empty()) {
    if (record.offset >= 0) obj[offset_.name] = record.offset;
    else if (offset_.required) return missing(offset_, "backbone offset");
  }
  if (!timestamp_.name.empty()) {
    if (record.timestampMs > 0) obj[timestamp_.name] = record.timestampMs;
    else if (timestamp_.required) return missing(timestamp_, "timestamp");
  }
  if (!static_.name.empty()) obj[static_.name] = staticValue_;
  cache.changed(targetSide());
  // With a schema: the inserted fields appended, as Kafka's InsertField types them (optional
  // unless the name ends in '!').
  FERRY_RETURN_IF_ERROR(updateSchema(record, [&](const Schema& old) -> Result<SchemaPtr> {
    FERRY_RETURN_IF_ERROR(needStruct(old, name_, side()));
    return rebuildStruct(old, [&](SchemaBuilder& b) -> Status {
      for (const auto& f : old.fields()) b.field(f.name, f.schema);
      auto add = [&](const Field& f, SchemaBuilder type) -> Status {
        if (f.name.empty()) return Status::ok();
        if (old.field(f.name))
          return Status::invalidArgument(name_ + ": the " + side() + "'s schema already has a field '" + f.name + "'");
        FERRY_ASSIGN_OR_RETURN(auto fs, type.optional(!f.required).build());
        b.field(f.name, fs);
        return Status::ok();
      };
      FERRY_RETURN_IF_ERROR(add(topic_, SchemaBuilder::string()));
      FERRY_RETURN_IF_ERROR(add(partition_, SchemaBuilder::int32()));
      FERRY_RETURN_IF_ERROR(add(offset_, SchemaBuilder::int64()));
      FERRY_RETURN_IF_ERROR(add(timestamp_, logical::timestamp()));
      return add(static_, SchemaBuilder::string());
    });
  }));
  return true;
}

// ---------------------------------------------------------------------------------------------
// ReplaceField

const ConfigDef& ReplaceField::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("exclude", ConfigType::kList, "", Importance::kMedium,
             "Fields to drop. Takes precedence over include.");
    d.define("include", ConfigType::kList, "", Importance::kMedium,
             "Fields to keep; empty keeps every field not excluded.");
    d.define("renames", ConfigType::kList, "", Importance::kMedium,
             "Renames as old:new pairs, e.g. foo:bar,abc:xyz.", renamesValidator());
    d.define("blacklist", ConfigType::kList, "", Importance::kLow,
             "Deprecated name of exclude (added to it).");
    d.define("whitelist", ConfigType::kList, "", Importance::kLow,
             "Deprecated name of include (added to it).");
    return d;
  }();
  return def;
}

Status ReplaceField::configure(const StringMap& config) {
  ParsedConfig p;
  FERRY_RETURN_IF_ERROR(parse(definition(), config, p));
  include_.clear();
  exclude_.clear();
  renames_.clear();
  for (const char* k : {"include", "whitelist"})
    for (auto& f : p.getList(k)) include_.insert(f);
  for (const char* k : {"exclude", "blacklist"})
    for (auto& f : p.getList(k)) exclude_.insert(f);
  for (const auto& r : p.getList("renames")) {
    const auto colon = r.find(':');
    renames_[r.substr(0, colon)] = r.substr(colon + 1);
  }
  return Status::ok();
}

Result<bool> ReplaceField::applyJson(Record& record, JsonCache& cache) {
  Bytes& b = target(record);
  if (b.isNull()) return true;
  FERRY_ASSIGN_OR_RETURN(Json * doc, objectOf(record, cache));
  Json& obj = *doc;
  Json out = Json::object();
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    if (exclude_.count(k) || (!include_.empty() && !include_.count(k))) continue;
    auto r = renames_.find(k);
    out[r == renames_.end() ? k : r->second] = std::move(it.value());
  }
  obj = std::move(out);
  cache.changed(targetSide());
  // With a schema: the same fields kept and renamed, in the schema's order.
  FERRY_RETURN_IF_ERROR(updateSchema(record, [&](const Schema& old) -> Result<SchemaPtr> {
    FERRY_RETURN_IF_ERROR(needStruct(old, name_, side()));
    return rebuildStruct(old, [&](SchemaBuilder& b) -> Status {
      for (const auto& f : old.fields()) {
        if (exclude_.count(f.name) || (!include_.empty() && !include_.count(f.name))) continue;
        auto r = renames_.find(f.name);
        b.field(r == renames_.end() ? f.name : r->second, f.schema);
      }
      return Status::ok();
    });
  }));
  return true;
}

// ---------------------------------------------------------------------------------------------
// MaskField

const ConfigDef& MaskField::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("fields", ConfigType::kList, std::nullopt, Importance::kHigh,
             "Fields to mask.", validators::nonEmptyList());
    d.define("replacement", ConfigType::kString, "", Importance::kLow,
             "What masked fields become. Empty: an empty value of the field's type (0, \"\", "
             "false, [], {}). Otherwise this string (a number for numeric fields when it is "
             "one).");
    return d;
  }();
  return def;
}

Status MaskField::configure(const StringMap& config) {
  ParsedConfig p;
  FERRY_RETURN_IF_ERROR(parse(definition(), config, p));
  fields_ = p.getList("fields");
  replacement_.reset();
  numericReplacement_.reset();
  if (const std::string r = p.getString("replacement"); !r.empty()) {
    replacement_ = r;
    if (auto j = parseJson(r); j && j->is_number()) numericReplacement_ = std::move(*j);
  }
  return Status::ok();
}

Result<bool> MaskField::applyJson(Record& record, JsonCache& cache) {
  Bytes& b = target(record);
  if (b.isNull()) return true;
  FERRY_ASSIGN_OR_RETURN(Json * doc, objectOf(record, cache));
  Json& obj = *doc;
  for (const auto& f : fields_) {
    auto it = obj.find(f);
    if (it == obj.end() || it->is_null()) continue;
    Json& v = *it;
    if (replacement_) {
      if (v.is_number() && numericReplacement_) v = *numericReplacement_;
      else v = *replacement_;
    } else if (v.is_number_float()) {
      v = 0.0;
    } else if (v.is_number()) {
      v = 0;
    } else if (v.is_string()) {
      v = "";
    } else if (v.is_boolean()) {
      v = false;
    } else if (v.is_array()) {
      v = Json::array();
    } else if (v.is_object()) {
      v = Json::object();
    }
  }
  cache.changed(targetSide());
  return true;
}

// ---------------------------------------------------------------------------------------------
// ExtractField

const ConfigDef& ExtractField::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("field", ConfigType::kString, std::nullopt, Importance::kMedium,
             "The field that replaces the whole key/value (a string field as its raw text).",
             validators::nonEmptyString());
    return d;
  }();
  return def;
}

Status ExtractField::configure(const StringMap& config) {
  ParsedConfig p;
  FERRY_RETURN_IF_ERROR(parse(definition(), config, p));
  field_ = p.getString("field");
  return Status::ok();
}

Result<bool> ExtractField::applyJson(Record& record, JsonCache& cache) {
  Bytes& b = target(record);
  if (b.isNull()) return true;
  FERRY_ASSIGN_OR_RETURN(Json * doc, objectOf(record, cache));
  // With a schema: the field's schema, and the field's data in its JSON form (a string stays
  // quoted: it is a payload, not raw text).
  const bool typed = targetSchema(record) != nullptr;
  FERRY_RETURN_IF_ERROR(updateSchema(record, [&](const Schema& old) -> Result<SchemaPtr> {
    FERRY_RETURN_IF_ERROR(needStruct(old, name_, side()));
    const SchemaField* f = old.field(field_);
    if (!f) return Status::invalidArgument(name_ + ": the " + std::string(side()) + "'s schema has no field '" + field_ + "'");
    return f->schema;
  }));
  auto it = doc->find(field_);
  if (it == doc->end() || it->is_null()) {
    cache.setBytes(record, targetSide(), Bytes::null());
  } else if (it->is_string() && !typed) {
    cache.setBytes(record, targetSide(), Bytes(it->get<std::string>()));
  } else {
    Json field = std::move(*it);
    cache.set(record, targetSide(), std::move(field));
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// ValueToKey

const ConfigDef& ValueToKey::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("fields", ConfigType::kList, std::nullopt, Importance::kHigh,
             "Fields of the value that make up the new key (a JSON object of them).",
             validators::nonEmptyList());
    return d;
  }();
  return def;
}

Status ValueToKey::configure(const StringMap& config) {
  ParsedConfig p;
  FERRY_RETURN_IF_ERROR(parse(definition(), config, p));
  fields_ = p.getList("fields");
  return Status::ok();
}

Result<bool> ValueToKey::applyJson(Record& record, JsonCache& cache) {
  if (record.value.isNull()) return true;
  FERRY_ASSIGN_OR_RETURN(Json * doc, objectOf(record, cache));
  Json key = Json::object();
  for (const auto& f : fields_) {
    auto it = doc->find(f);
    key[f] = it == doc->end() ? Json(nullptr) : *it;  // the value keeps its fields
  }
  cache.set(record, Side::kKey, std::move(key));
  // With a value schema: the key's schema is a struct of those fields' schemas (memoised per
  // value schema); a record without one gets a schemaless key.
  if (!record.valueSchema) {
    record.keySchema = nullptr;
    return true;
  }
  FERRY_ASSIGN_OR_RETURN(record.keySchema, memo_.get(record.valueSchema, [&](const Schema& v) -> Result<SchemaPtr> {
    FERRY_RETURN_IF_ERROR(needStruct(v, name_, "value"));
    SchemaBuilder b = SchemaBuilder::structure();
    for (const auto& name : fields_) {
      const SchemaField* f = v.field(name);
      if (!f) return Status::invalidArgument(name_ + ": the value's schema has no field '" + name + "'");
      b.field(name, f->schema);
    }
    return b.build();
  }));
  return true;
}

}  // namespace ferry::transforms
