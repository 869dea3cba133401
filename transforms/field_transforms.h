// Field transforms on JSON keys or values (Kafka Connect's schemaless semantics, over bytes):
// HoistField, InsertField, ReplaceField, MaskField, ExtractField (each as $Key and $Value), and
// ValueToKey. A null key/value (tombstone) passes through unchanged; a value that must be a JSON
// object and is not fails the record with InvalidArgument naming the transform and the topic.
//
// Threading: one instance per task, called from that task's thread only.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ferry/transform.h"
#include "transforms/json_cache.h"
#include "transforms/schema_update.h"

namespace ferry::transforms {

// Base of the $Key / $Value transforms: which side of the record they change, and their name.
class SidedTransform : public JsonTransform {
 protected:
  // `sided` false: the name is `base` alone (ValueToKey).
  SidedTransform(const char* base, bool onKey, bool sided = true)
      : onKey_(onKey), name_(std::string(base) + (sided ? (onKey ? "$Key" : "$Value") : "")) {}
  Bytes& target(Record& r) const { return onKey_ ? r.key : r.value; }
  Side targetSide() const { return onKey_ ? Side::kKey : Side::kValue; }
  const char* side() const { return onKey_ ? "key" : "value"; }
  // The target parsed as a JSON object (shared through the chain's cache: edit it in place and
  // call cache.changed(targetSide())), or an InvalidArgument naming the topic.
  Result<Json*> objectOf(Record& r, JsonCache& cache) const;
  Status parse(const ConfigDef& def, const StringMap& config, ParsedConfig& out) const;
  // The schema of the side this transform changes (null when the record has none).
  SchemaPtr& targetSchema(Record& r) const { return onKey_ ? r.keySchema : r.valueSchema; }
  // Replaces the target's schema, when there is one, by derive(schema) (memoised per input
  // schema). Kafka Connect's SMTs in their schema'd mode are the model.
  template <class Derive>
  Status updateSchema(Record& r, Derive&& derive) {
    SchemaPtr& s = targetSchema(r);
    if (!s) return Status::ok();
    FERRY_ASSIGN_OR_RETURN(s, memo_.get(s, derive));
    return Status::ok();
  }

  const bool onKey_;
  const std::string name_;
  SchemaMemo memo_;
};

// Binds a sided transform to one side, for plugin entries: Sided<HoistField, true> is $Key.
template <typename Base, bool kOnKey>
class Sided final : public Base {
 public:
  Sided() : Base(kOnKey) {}
};

// field: the value becomes {"<field>": value} (value embedded as JSON when it is JSON, else as
// a JSON string).
class HoistField : public SidedTransform {
 public:
  explicit HoistField(bool onKey) : SidedTransform("HoistField", onKey) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

 private:
  std::string field_;
  std::string prefix_;  // {"<field>":
};

// static.field/static.value, topic.field, partition.field, offset.field, timestamp.field; a
// field name ending in '!' is required (the record fails when it lacks that datum), '?' (the
// default) optional.
class InsertField : public SidedTransform {
 public:
  explicit InsertField(bool onKey) : SidedTransform("InsertField", onKey) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

 private:
  struct Field {
    std::string name;  // empty = not inserted
    bool required = false;
  };
  static Field fieldOf(const std::string& spec);
  Field topic_, partition_, offset_, timestamp_, static_;
  std::string staticValue_;
};

// include / exclude (old names whitelist / blacklist) and renames old:new.
class ReplaceField : public SidedTransform {
 public:
  explicit ReplaceField(bool onKey) : SidedTransform("ReplaceField", onKey) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

 private:
  std::set<std::string> include_, exclude_;
  std::map<std::string, std::string> renames_;
};

// fields are replaced by an empty value of their type (0, "", false, [], {}) or `replacement`.
class MaskField : public SidedTransform {
 public:
  explicit MaskField(bool onKey) : SidedTransform("MaskField", onKey) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

 private:
  std::vector<std::string> fields_;
  std::optional<std::string> replacement_;
  std::optional<Json> numericReplacement_;  // replacement_ when it is a JSON number
};

// field: the value becomes that field (a string as its raw text, anything else as JSON; a
// missing or null field gives null).
class ExtractField : public SidedTransform {
 public:
  explicit ExtractField(bool onKey) : SidedTransform("ExtractField", onKey) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

 private:
  std::string field_;
};

// fields: the key becomes a JSON object of those fields of the value (missing ones are null).
class ValueToKey final : public SidedTransform {
 public:
  ValueToKey() : SidedTransform("ValueToKey", false, false) {}
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config) override;
  Result<bool> applyJson(Record& record, JsonCache& cache) override;

 private:
  std::vector<std::string> fields_;
};

}  // namespace ferry::transforms
