// ferry connector SDK — schemas: the types of a record's key and value.
//
// The model is Kafka Connect's (org.apache.kafka.connect.data.Schema), so a Kafka Connect user
// finds the same types, flags and logical types, and Kafka Connect's JsonConverter envelope maps
// onto it one to one:
//   primitive types  int8 int16 int32 int64 float32 float64 boolean string bytes
//   containers       array (valueSchema), map (keySchema, valueSchema), struct (fields in order)
//   on every schema  optional, default, name, version, doc, parameters
//   logical types    a name on a primitive schema (see `logical` below): Kafka's Decimal (bytes,
//                    parameter `scale`), Date (int32 days since 1970-01-01), Time (int32 ms since
//                    midnight), Timestamp (int64 ms since the epoch), and ferry's own where Kafka
//                    has none: Uuid and Json (strings).
//
// How the data travels. ferry keeps keys and values as bytes end to end; a record whose value has
// a schema carries `Record::valueSchema` beside its value bytes, and those bytes hold the data in
// the JSON form Kafka Connect's JsonConverter writes as the envelope's "payload" (int64 as a JSON
// number, bytes and Decimal as base64 strings, Date as a number of days, a struct as an object
// with one member per field, a map with string keys as an object and with other keys as an array
// of [key, value] pairs, ...). So every transform and rule that reads JSON values works on typed
// records unchanged, and the converters at the backbone boundary only add or strip the schema.
// A record without a schema (the null SchemaPtr) is what it has always been and costs one null
// pointer per side.
//
// Schemas are immutable once built and shared by pointer: the records of one table share one
// Schema object. Thread-safety: a built Schema is safe to read from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/result.h"

namespace ferry {

enum class SchemaType : std::uint8_t {
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat32,
  kFloat64,
  kBoolean,
  kString,
  kBytes,
  kArray,
  kMap,
  kStruct,
};

// Kafka Connect's name of the type as its JSON schemas spell it: "int8" ... "int64", "float"
// (float32), "double" (float64), "boolean", "string", "bytes", "array", "map", "struct".
const char* schemaTypeJsonName(SchemaType type) noexcept;
// The reverse; nullopt for an unknown name.
std::optional<SchemaType> schemaTypeFromJsonName(std::string_view name) noexcept;
bool isPrimitive(SchemaType type) noexcept;

class Schema;
using SchemaPtr = std::shared_ptr<const Schema>;

struct SchemaField {
  std::string name;
  SchemaPtr schema;
};

// Parameters keep their order (Kafka Connect's builder keeps insertion order too).
using SchemaParameters = std::vector<std::pair<std::string, std::string>>;

class Schema {
 public:
  SchemaType type() const noexcept { return type_; }
  bool optional() const noexcept { return optional_; }
  const std::optional<std::string>& name() const noexcept { return name_; }
  const std::optional<std::int32_t>& version() const noexcept { return version_; }
  const std::optional<std::string>& doc() const noexcept { return doc_; }
  // nullopt: no parameters at all (Kafka's null); an empty vector is written as {}.
  const std::optional<SchemaParameters>& parameters() const noexcept { return parameters_; }
  const std::string* parameter(std::string_view key) const noexcept;
  // The default value in the payload's JSON form (compact text); nullopt when none.
  const std::optional<std::string>& defaultJson() const noexcept { return default_; }

  // struct: the fields in order; empty for other types.
  const std::vector<SchemaField>& fields() const noexcept { return fields_; }
  const SchemaField* field(std::string_view name) const noexcept;
  // map: the key schema; null for other types.
  const SchemaPtr& keySchema() const noexcept { return keySchema_; }
  // array: the element schema; map: the value schema; null for other types.
  const SchemaPtr& valueSchema() const noexcept { return valueSchema_; }

  // The logical type's name when this schema is one ferry knows (see `logical`), else empty.
  std::string_view logicalName() const noexcept;
  // Decimal's scale (parameter "scale"); nullopt for other schemas.
  std::optional<std::int32_t> decimalScale() const noexcept;

  // Deep equality of everything above (as Kafka's ConnectSchema.equals).
  friend bool operator==(const Schema& a, const Schema& b) noexcept;

  // A short human form for messages: "struct{id:int32,name:string?}" ('?' = optional),
  // logical names in angle brackets: "bytes<Decimal scale=2>".
  std::string describe() const;

  // 64-bit FNV-1a over a canonical form of the whole schema: equal schemas have equal
  // fingerprints (a cache key; compare with == where a collision would matter).
  std::uint64_t fingerprint() const noexcept { return fingerprint_; }

 private:
  friend class SchemaBuilder;
  Schema() = default;

  SchemaType type_ = SchemaType::kString;
  bool optional_ = false;
  std::optional<std::string> name_;
  std::optional<std::int32_t> version_;
  std::optional<std::string> doc_;
  std::optional<SchemaParameters> parameters_;
  std::optional<std::string> default_;
  std::vector<SchemaField> fields_;
  SchemaPtr keySchema_;
  SchemaPtr valueSchema_;
  std::uint64_t fingerprint_ = 0;
};

// Builds a Schema; build() checks it. Not thread-safe (one builder, one thread).
class SchemaBuilder {
 public:
  explicit SchemaBuilder(SchemaType type);
  static SchemaBuilder int8() { return SchemaBuilder(SchemaType::kInt8); }
  static SchemaBuilder int16() { return SchemaBuilder(SchemaType::kInt16); }
  static SchemaBuilder int32() { return SchemaBuilder(SchemaType::kInt32); }
  static SchemaBuilder int64() { return SchemaBuilder(SchemaType::kInt64); }
  static SchemaBuilder float32() { return SchemaBuilder(SchemaType::kFloat32); }
  static SchemaBuilder float64() { return SchemaBuilder(SchemaType::kFloat64); }
  static SchemaBuilder boolean() { return SchemaBuilder(SchemaType::kBoolean); }
  static SchemaBuilder string() { return SchemaBuilder(SchemaType::kString); }
  static SchemaBuilder bytes() { return SchemaBuilder(SchemaType::kBytes); }
  static SchemaBuilder structure() { return SchemaBuilder(SchemaType::kStruct); }
  static SchemaBuilder array(SchemaPtr items);
  static SchemaBuilder map(SchemaPtr keys, SchemaPtr values);

  SchemaBuilder& optional(bool yes = true) { s_.optional_ = yes; return *this; }
  SchemaBuilder& name(std::string n) { s_.name_ = std::move(n); return *this; }
  SchemaBuilder& version(std::int32_t v) { s_.version_ = v; return *this; }
  SchemaBuilder& doc(std::string d) { s_.doc_ = std::move(d); return *this; }
  // Adds (or replaces) a parameter, keeping the first position of its key.
  SchemaBuilder& parameter(std::string key, std::string value);
  // No parameter yet, but written as {} rather than left out.
  SchemaBuilder& emptyParameters();
  // The default in the payload's JSON form (e.g. "0", "\"n/a\"", "{\"a\":1}").
  SchemaBuilder& defaultJson(std::string json) { s_.default_ = std::move(json); return *this; }
  // struct only.
  SchemaBuilder& field(std::string name, SchemaPtr schema);

  // InvalidArgument naming the problem: fields on a non-struct, a repeated or empty field name,
  // a missing element/key/value schema, a Decimal without an integer scale or not over bytes,
  // Date/Time not over int32, Timestamp not over int64, Uuid/Json not over string.
  Result<SchemaPtr> build() const;

 private:
  Schema s_;  // what build() checks and copies
};

// Logical types: names and builders (add optional(), doc(), ... before build()).
namespace logical {
inline constexpr std::string_view kDecimal = "org.apache.kafka.connect.data.Decimal";
inline constexpr std::string_view kDate = "org.apache.kafka.connect.data.Date";
inline constexpr std::string_view kTime = "org.apache.kafka.connect.data.Time";
inline constexpr std::string_view kTimestamp = "org.apache.kafka.connect.data.Timestamp";
inline constexpr std::string_view kUuid = "ferry.data.Uuid";  // string, canonical 8-4-4-4-12 form
inline constexpr std::string_view kJson = "ferry.data.Json";  // string holding one JSON text
inline constexpr std::string_view kDecimalScale = "scale";

SchemaBuilder decimal(std::int32_t scale);  // bytes: big-endian two's complement unscaled value
SchemaBuilder date();
SchemaBuilder time();
SchemaBuilder timestamp();
SchemaBuilder uuid();
SchemaBuilder json();
}  // namespace logical

}  // namespace ferry
