// Converters at the backbone boundary: ByteArrayConverter (identity; typed bytes written as the
// bytes), StringConverter (identity, typed strings written as their text; only UTF-8 is accepted
// as encoding), JsonConverter (checks that data is JSON; with
// schemas.enable=true, like Kafka's default, wraps it as {"schema":null,"payload":...} on the
// way in and unwraps the payload on the way out), SimpleHeaderConverter (identity; Kafka's
// default header converter), and the numeric converters (see NumberConverter).
//
// Every converter serves one role: key, value or header. The runtime says which by adding
// `converter.type` = key|value|header to the config (Kafka Connect's convention); without it the
// role follows `isKey`. Errors name the converter, the role and the topic (the runtime adds the
// header's name).
//
// Threading: one instance per task side, called from that task's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ferry/transform.h"

namespace ferry::transforms {

class ByteArrayConverter final : public Converter {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config, bool isKey) override;
  Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> toRecord(const std::string& topic, const Bytes& data) override;
  // A record typed as bytes is written as the bytes themselves, as Kafka's ByteArrayConverter
  // writes a byte[] (ferry keeps typed bytes as base64 text in their JSON form); other data as
  // fromRecord writes it.
  Result<Bytes> fromRecordWithSchema(const std::string& topic, const SchemaPtr& schema, const Bytes& data) override;
};

class StringConverter final : public Converter {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config, bool isKey) override;
  Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> toRecord(const std::string& topic, const Bytes& data) override;
  // A record typed as a string is written as the text itself, as Kafka's StringConverter writes
  // a String (ferry keeps typed strings in their JSON form, quoted); other data as fromRecord
  // writes it.
  Result<Bytes> fromRecordWithSchema(const std::string& topic, const SchemaPtr& schema, const Bytes& data) override;
};

// With schemas.enable=true (the default, as Kafka's), a record's schema travels in Kafka
// Connect's envelope, byte-compatible with Kafka Connect 4.x's JsonConverter (see
// transforms/connect_json.h): {"schema":<schema>,"payload":<data>}; a schemaless record is written
// {"schema":null,"payload":<data>}. Reading requires exactly those two members, builds the schema
// (cached by its text, at most schemas.cache.size) and checks the payload against it. Where the
// schema has defaults, a null stands for the default on both ways (replace.null.with.default).
// decimal.format=BASE64 only: Decimal values are base64 text of the unscaled value in both.
class JsonConverter final : public Converter {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config, bool isKey) override;
  Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> toRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> fromRecordWithSchema(const std::string& topic, const SchemaPtr& schema,
                                     const Bytes& data) override;
  Result<SchemaAndBytes> toRecordWithSchema(const std::string& topic, const Bytes& data) override;
  bool schemasEnabled() const { return schemasEnable_; }

 private:
  struct Written {
    SchemaPtr schema;  // keeps the key of writeCache_ alive
    std::string json;
    int depth = 0;  // the deepest nesting of a payload that matches the schema
  };
  Status notJson(const std::string& topic, const Bytes& data, const char* direction) const;
  Status badData(const std::string& topic, const char* direction, const Status& why) const;
  const Written& written(const SchemaPtr& schema);
  bool schemasEnable_ = true;
  bool replaceNullWithDefault_ = true;
  std::size_t cacheSize_ = 1000;
  std::string role_ = "value";
  std::unordered_map<const Schema*, Written> writeCache_;
  // Looked up by the envelope's schema text without copying it.
  struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, SchemaPtr, TextHash, std::equal_to<>> readCache_;
  // The last compact envelope head read ({"schema":<text>,"payload":) and its schema.
  SchemaPtr lastSchema_;
  std::string lastHead_;
};

// Kafka's default header converter. Kafka writes header values as their string form; ferry's
// headers already are bytes (text), so it is the identity both ways (the same buffer, no copy).
class SimpleHeaderConverter final : public Converter {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config, bool isKey) override;
  Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> toRecord(const std::string& topic, const Bytes& data) override;
};

// Kafka Connect's numeric converters (org.apache.kafka.connect.converters.*), wire-compatible
// with Kafka's serializers: big-endian, fixed width.
//   ShortConverter 2 bytes, IntegerConverter 4, LongConverter 8 (two's complement);
//   FloatConverter 4, DoubleConverter 8 (IEEE 754 bits, as floatToRawIntBits/doubleToRawLongBits);
//   BooleanConverter 1 byte, 0x00 false / 0x01 true (Kafka 3.x).
// ferry records carry bytes, so the record side is the number's text: decimal for the integers
// ("42", "-7"; a leading '+' is accepted), decimal or exponent form for the floats ("-1.5",
// "1e-3"; NaN, Infinity, -Infinity as Java spells them), true/false (any case) for booleans;
// ASCII whitespace around the text is ignored.
//   fromRecord: text -> the fixed-width bytes. Text that is not such a number, or is out of range
//               for the width (floats: overflow, or a non-zero value that underflows to zero),
//               fails with InvalidArgument.
//   toRecord:   bytes -> text: integers in decimal, floats in the shortest form that reads back to
//               the same bits (0.1f -> "0.1", 1e20 -> "1e+20"), booleans as "true"/"false". Any
//               other length (or a boolean byte other than 0/1) fails with InvalidArgument.
// A null key/value/header stays null (a tombstone stays a tombstone). No configuration keys.
enum class NumberKind : std::uint8_t { kShort, kInteger, kLong, kFloat, kDouble, kBoolean };

class NumberConverter : public Converter {
 public:
  static const ConfigDef& definition();
  const ConfigDef& configDef() const override { return definition(); }
  Status configure(const StringMap& config, bool isKey) override;
  Result<Bytes> fromRecord(const std::string& topic, const Bytes& data) override;
  Result<Bytes> toRecord(const std::string& topic, const Bytes& data) override;

 protected:
  explicit NumberConverter(NumberKind kind) : kind_(kind) {}

 private:
  Status bad(const std::string& topic, const char* direction, const std::string& what) const;
  NumberKind kind_;
  std::string role_ = "value";
};

class ShortConverter final : public NumberConverter {
 public:
  ShortConverter() : NumberConverter(NumberKind::kShort) {}
};
class IntegerConverter final : public NumberConverter {
 public:
  IntegerConverter() : NumberConverter(NumberKind::kInteger) {}
};
class LongConverter final : public NumberConverter {
 public:
  LongConverter() : NumberConverter(NumberKind::kLong) {}
};
class FloatConverter final : public NumberConverter {
 public:
  FloatConverter() : NumberConverter(NumberKind::kFloat) {}
};
class DoubleConverter final : public NumberConverter {
 public:
  DoubleConverter() : NumberConverter(NumberKind::kDouble) {}
};
class BooleanConverter final : public NumberConverter {
 public:
  BooleanConverter() : NumberConverter(NumberKind::kBoolean) {}
};

}  // namespace ferry::transforms
