// Converters (see converters.h). Valid data passes by reference (no copy) wherever the bytes do
// not change; JsonConverter only validates (SAX, no document) unless it must wrap or unwrap.
#include "transforms/converters.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "core/base64.h"
#include "core/json_bounds.h"
#include "core/json_text.h"
#include "transforms/connect_json.h"
#include "transforms/json_util.h"

namespace ferry::transforms {
namespace {

// The role the runtime gave this instance (converter.type, as Kafka Connect passes it), else the
// one `isKey` implies.
Result<std::string> roleOf(const StringMap& config, bool isKey, const char* converter) {
  auto it = config.find("converter.type");
  if (it == config.end()) return std::string(isKey ? "key" : "value");
  if (it->second == "key" || it->second == "value" || it->second == "header") return it->second;
  return Status::invalidArgument(std::string(converter) + ": converter.type must be key, value or header, not '" +
                                 it->second + "'");
}

// The text of a JSON string (a typed string or bytes value in its payload form).
Result<std::string> jsonStringText(const Bytes& data, const char* converter, const std::string& topic) {
  // The usual case, a string without escapes ("line 7"), is its inner bytes: no parse.
  const std::string_view v = data.view();
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"' &&
      core::plainJsonStringBytes(v.substr(1, v.size() - 2)) == v.size() - 2)
    return std::string(v.substr(1, v.size() - 2));
  auto j = Json::parse(v, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_string())
    return Status::invalidArgument(std::string(converter) + ": a value typed as a string or bytes on topic '" + topic +
                                   "' is not a JSON string");
  return j.get<std::string>();
}

}  // namespace

Result<Bytes> ByteArrayConverter::fromRecordWithSchema(const std::string& topic, const SchemaPtr& schema,
                                                       const Bytes& data) {
  if (!schema || schema->type() != SchemaType::kBytes || !schema->logicalName().empty() || data.isNull())
    return fromRecord(topic, data);
  FERRY_ASSIGN_OR_RETURN(auto text, jsonStringText(data, "ByteArrayConverter", topic));
  auto raw = core::base64Decode(text);
  if (!raw) return Status::invalidArgument("ByteArrayConverter: a bytes value on topic '" + topic + "' is not base64");
  return Bytes(std::move(*raw));
}

Result<Bytes> StringConverter::fromRecordWithSchema(const std::string& topic, const SchemaPtr& schema,
                                                    const Bytes& data) {
  if (!schema || schema->type() != SchemaType::kString || data.isNull()) return fromRecord(topic, data);
  FERRY_ASSIGN_OR_RETURN(auto text, jsonStringText(data, "StringConverter", topic));
  return Bytes(std::move(text));
}

const ConfigDef& ByteArrayConverter::definition() {
  static const ConfigDef def;
  return def;
}

Status ByteArrayConverter::configure(const StringMap& config, bool isKey) {
  (void)config;
  (void)isKey;
  return Status::ok();
}

Result<Bytes> ByteArrayConverter::fromRecord(const std::string& topic, const Bytes& data) {
  (void)topic;
  return data;
}

Result<Bytes> ByteArrayConverter::toRecord(const std::string& topic, const Bytes& data) {
  (void)topic;
  return data;
}

const ConfigDef& StringConverter::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("encoding", ConfigType::kString, "UTF-8", Importance::kLow,
             "Character encoding of the text; ferry keeps bytes as they are, so only UTF-8 is "
             "accepted.",
             validators::oneOf({"UTF-8", "UTF8"}));
    return d;
  }();
  return def;
}

Status StringConverter::configure(const StringMap& config, bool isKey) {
  (void)isKey;
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "StringConverter"));
  (void)p;
  return Status::ok();
}

Result<Bytes> StringConverter::fromRecord(const std::string& topic, const Bytes& data) {
  (void)topic;
  return data;
}

Result<Bytes> StringConverter::toRecord(const std::string& topic, const Bytes& data) {
  (void)topic;
  return data;
}

const ConfigDef& JsonConverter::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("schemas.enable", ConfigType::kBool, "true", Importance::kHigh,
             "Write the record's schema with its data as {\"schema\":...,\"payload\":...} in the "
             "backbone (Kafka Connect's envelope; \"schema\":null for a schemaless record) and "
             "require that envelope when reading.");
    d.define("schemas.cache.size", ConfigType::kInt, "1000", Importance::kLow,
             "How many schemas each direction keeps in its cache (written JSON, parsed schemas).",
             validators::atLeast(0));
    d.define("replace.null.with.default", ConfigType::kBool, "true", Importance::kLow,
             "A null where the schema has a default is written and read as that default.");
    d.define("decimal.format", ConfigType::kString, "BASE64", Importance::kLow,
             "How Decimal values appear in the payload: BASE64 (the unscaled value's bytes), as "
             "ferry keeps them. NUMERIC is not supported yet.",
             validators::oneOf({"BASE64"}));
    return d;
  }();
  return def;
}

Status JsonConverter::configure(const StringMap& config, bool isKey) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(definition(), config, "JsonConverter"));
  FERRY_ASSIGN_OR_RETURN(role_, roleOf(config, isKey, "JsonConverter"));
  schemasEnable_ = p.getBool("schemas.enable");
  replaceNullWithDefault_ = p.getBool("replace.null.with.default");
  cacheSize_ = static_cast<std::size_t>(p.getInt("schemas.cache.size"));
  return Status::ok();
}

Status JsonConverter::notJson(const std::string& topic, const Bytes& data,
                              const char* direction) const {
  return Status::invalidArgument("JsonConverter: the " + role_ + " " + direction + " topic '" + topic +
                                 "' is not valid JSON: " + jsonError(data.view()));
}

Status JsonConverter::badData(const std::string& topic, const char* direction, const Status& why) const {
  return Status::invalidArgument("JsonConverter: the " + role_ + " " + direction + " topic '" + topic +
                                 "' does not match its schema: " + why.message());
}

namespace {
// A byte that starts a 4-byte UTF-8 sequence: a character outside the BMP (Jackson escapes them).
}  // namespace

namespace {

// The deepest JSON nesting of a payload that matches `s` (a struct is an object, an array an
// array, a map an object or an array of [key, value] pairs); bounded by `cap` (schemas parsed
// from outside are bounded too, this only stops the count early).
int payloadDepth(const Schema& s, int cap) {
  if (cap <= 0) return 0;
  switch (s.type()) {
    case SchemaType::kStruct: {
      int deepest = 0;
      for (const auto& f : s.fields()) deepest = std::max(deepest, payloadDepth(*f.schema, cap - 1));
      return 1 + deepest;
    }
    case SchemaType::kArray:
      return 1 + (s.valueSchema() ? payloadDepth(*s.valueSchema(), cap - 1) : 0);
    case SchemaType::kMap:
      return 2 + std::max(s.keySchema() ? payloadDepth(*s.keySchema(), cap - 2) : 0,
                          s.valueSchema() ? payloadDepth(*s.valueSchema(), cap - 2) : 0);
    default:
      return 0;
  }
}

}  // namespace

const JsonConverter::Written& JsonConverter::written(const SchemaPtr& schema) {
  if (auto it = writeCache_.find(schema.get()); it != writeCache_.end()) return it->second;
  if (writeCache_.size() >= std::max<std::size_t>(cacheSize_, 1)) writeCache_.clear();
  Written w{schema, connectSchemaJson(*schema), payloadDepth(*schema, core::kRecordJsonLimits.maxDepth + 1)};
  return writeCache_.emplace(schema.get(), std::move(w)).first->second;
}

Result<Bytes> JsonConverter::fromRecord(const std::string& topic, const Bytes& data) {
  return fromRecordWithSchema(topic, nullptr, data);
}

Result<Bytes> JsonConverter::fromRecordWithSchema(const std::string& topic, const SchemaPtr& schema,
                                                  const Bytes& data) {
  if (data.isNull() && (!schema || !schemasEnable_)) return data;
  if (!schema || !schemasEnable_) {
    if (!isJson(data.view())) return notJson(topic, data, "for");
    if (!schemasEnable_) return data;
  }
  // The envelope adds a level: a value at the record bound could not be read back. A payload that
  // matches a schema is no deeper than the schema allows: the scan is left out where that is
  // within the bound (a payload that does not match is refused below).
  const int limit = core::kRecordJsonLimits.maxDepth;
  if ((!schema || written(schema).depth >= limit) && core::jsonNesting(data.view(), limit) >= limit)
    return Status::invalidArgument("JsonConverter: the " + role_ + " for topic '" + topic +
                                   "' is nested " + std::to_string(limit) +
                                   " levels deep; with schemas.enable=true at most " +
                                   std::to_string(limit - 1) + " fit in the envelope");
  if (!schema) {
    static constexpr std::string_view kHead = "{\"schema\":null,\"payload\":";
    std::string out;
    out.reserve(kHead.size() + data.size() + 1);
    out.append(kHead).append(data.view()).push_back('}');
    return Bytes(std::move(out));
  }
  const Written& w = written(schema);
  std::string payloadText;
  std::string_view payload;
  if (data.isNull()) {
    if (schema->defaultJson() && replaceNullWithDefault_) {
      payload = *schema->defaultJson();
    } else if (schema->optional() || schema->defaultJson()) {
      payload = "null";
    } else {
      return badData(topic, "for", Status::invalidArgument("payload: null for a required " + schema->describe()));
    }
  } else {
    bool defaultsApply = false;
    bool json = true;
    Status st = checkPayloadText(*schema, data.view(), defaultsApply, json);
    if (!json) return notJson(topic, data, "for");
    if (!st.isOk()) return badData(topic, "for", st);
    if (defaultsApply && replaceNullWithDefault_) {
      auto j = parseJson(data.view());
      if (!j) return notJson(topic, data, "for");
      FERRY_RETURN_IF_ERROR(applyDefaults(*schema, *j));
      appendJackson(payloadText, *j);
      payload = payloadText;
    } else if (core::hasNonBmp(data.view())) {
      payloadText = escapeNonBmp(data.view());
      payload = payloadText;
    } else {
      payload = data.view();
    }
  }
  static constexpr std::string_view kSchema = "{\"schema\":";
  static constexpr std::string_view kPayload = ",\"payload\":";
  std::string out;
  out.reserve(kSchema.size() + w.json.size() + kPayload.size() + payload.size() + 1);
  out.append(kSchema).append(w.json).append(kPayload).append(payload).push_back('}');
  return Bytes(std::move(out));
}

Result<Bytes> JsonConverter::toRecord(const std::string& topic, const Bytes& data) {
  FERRY_ASSIGN_OR_RETURN(auto r, toRecordWithSchema(topic, data));
  return std::move(r.data);
}

Result<SchemaAndBytes> JsonConverter::toRecordWithSchema(const std::string& topic, const Bytes& data) {
  if (data.isNull()) return SchemaAndBytes{nullptr, data};
  if (!schemasEnable_) {
    if (!isJson(data.view())) return notJson(topic, data, "from");
    return SchemaAndBytes{nullptr, data};
  }
  // Records of one topic mostly carry the same schema text, written compactly: when this one
  // starts with the last such envelope's head, the payload is what lies between it and the
  // closing brace, found with one comparison instead of a scan of the schema. Kept only when the
  // payload checks as one value of the schema (then the envelope is exactly {head payload});
  // anything else takes the full path below, with its own errors.
  const std::string_view text = data.view();
  if (lastSchema_ && text.size() > lastHead_.size() + 1 && text.back() == '}' &&
      text.compare(0, lastHead_.size(), lastHead_) == 0) {
    const std::string_view payload = text.substr(lastHead_.size(), text.size() - lastHead_.size() - 1);
    bool defaultsApply = false;
    bool json = true;
    const char last = payload.empty() ? ' ' : payload.back();
    if (last != ' ' && last != '\t' && last != '\n' && last != '\r' &&
        checkPayloadText(*lastSchema_, payload, defaultsApply, json).isOk() && json && !defaultsApply) {
      if (payload == "null") return SchemaAndBytes{lastSchema_, Bytes::null()};
      return SchemaAndBytes{lastSchema_, Bytes::copyOf(payload)};
    }
  }
  // The envelope is taken apart without a document: the schema's text is the cache key (the
  // records of one table carry the same text), the payload's text is checked and kept as it is.
  auto env = splitEnvelope(data.view());
  if (!env.isOk()) {
    if (!isJson(data.view())) return notJson(topic, data, "from");
    return Status::invalidArgument(
        "JsonConverter: the " + role_ + " from topic '" + topic +
        "' is not a {\"schema\": ..., \"payload\": ...} envelope (exactly those two members); "
        "with schemas.enable=true it must be (set schemas.enable=false to read plain JSON)");
  }
  const std::string_view payload = env->payload;
  if (env->schema == "null") {
    if (!isJson(payload)) return notJson(topic, data, "from");
    if (payload == "null") return SchemaAndBytes{nullptr, Bytes::null()};
    return SchemaAndBytes{nullptr, Bytes::copyOf(payload)};
  }
  SchemaPtr schema;
  if (auto it = readCache_.find(env->schema); it != readCache_.end()) {
    schema = it->second;
  } else {
    auto j = parseJson(env->schema);
    if (!j) return notJson(topic, data, "from");
    auto read = readConnectSchema(*j);
    if (!read.isOk())
      return Status::invalidArgument("JsonConverter: the " + role_ + " from topic '" + topic +
                                     "' has an invalid schema: " + read.status().message());
    schema = *read;
    if (readCache_.size() >= std::max<std::size_t>(cacheSize_, 1)) readCache_.clear();
    readCache_.emplace(std::string(env->schema), schema);
  }
  // The head of this envelope when it is written compactly, for the fast path above.
  static constexpr std::string_view kHead = "{\"schema\":";
  static constexpr std::string_view kPayloadKey = ",\"payload\":";
  if (schema != lastSchema_ && text.size() > kHead.size() + env->schema.size() + kPayloadKey.size() &&
      text.compare(0, kHead.size(), kHead) == 0 &&
      text.compare(kHead.size(), env->schema.size(), env->schema) == 0 &&
      text.compare(kHead.size() + env->schema.size(), kPayloadKey.size(), kPayloadKey) == 0) {
    lastSchema_ = schema;
    lastHead_.assign(text.substr(0, kHead.size() + env->schema.size() + kPayloadKey.size()));
  }
  bool defaultsApply = false;
  bool json = true;
  Status st = checkPayloadText(*schema, payload, defaultsApply, json);
  if (!json) return notJson(topic, data, "from");
  if (!st.isOk()) return badData(topic, "from", st);
  if (defaultsApply && replaceNullWithDefault_) {
    auto j = parseJson(payload);
    if (!j) return notJson(topic, data, "from");
    FERRY_RETURN_IF_ERROR(applyDefaults(*schema, *j));
    if (j->is_null()) return SchemaAndBytes{schema, Bytes::null()};
    std::string text;
    appendJackson(text, *j);
    return SchemaAndBytes{schema, Bytes(std::move(text))};
  }
  if (payload == "null") return SchemaAndBytes{schema, Bytes::null()};
  return SchemaAndBytes{schema, Bytes::copyOf(payload)};
}

const ConfigDef& SimpleHeaderConverter::definition() {
  static const ConfigDef def;
  return def;
}

Status SimpleHeaderConverter::configure(const StringMap& config, bool isKey) {
  return roleOf(config, isKey, "SimpleHeaderConverter").status();
}

Result<Bytes> SimpleHeaderConverter::fromRecord(const std::string& topic, const Bytes& data) {
  (void)topic;
  return data;
}

Result<Bytes> SimpleHeaderConverter::toRecord(const std::string& topic, const Bytes& data) {
  (void)topic;
  return data;
}

// ----- numeric converters ------------------------------------------------------------------

namespace {

struct NumberTraits {
  const char* converter;  // class name, for messages
  std::size_t width;      // bytes on the wire
  const char* what;       // "a 32-bit integer (-2147483648..2147483647)"
};

const NumberTraits& traitsOf(NumberKind kind) {
  static constexpr NumberTraits kTraits[] = {
      {"ShortConverter", 2, "a 16-bit integer (-32768..32767)"},
      {"IntegerConverter", 4, "a 32-bit integer (-2147483648..2147483647)"},
      {"LongConverter", 8, "a 64-bit integer (-9223372036854775808..9223372036854775807)"},
      {"FloatConverter", 4, "a 32-bit float"},
      {"DoubleConverter", 8, "a 64-bit float"},
      {"BooleanConverter", 1, "a boolean (true or false)"},
  };
  return kTraits[static_cast<std::size_t>(kind)];
}

std::string_view trimAscii(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\f\v";
  const auto first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// A leading '+' (Java's parsers accept it; std::from_chars does not) before a digit or '.'.
std::string_view dropPlus(std::string_view s) {
  if (s.size() >= 2 && s[0] == '+' && (s[1] == '.' || (s[1] >= '0' && s[1] <= '9'))) s.remove_prefix(1);
  return s;
}

template <typename U>
std::string bigEndian(U bits) {
  std::string out(sizeof(U), '\0');
  for (std::size_t i = 0; i < sizeof(U); ++i)
    out[sizeof(U) - 1 - i] = static_cast<char>(static_cast<unsigned char>(bits >> (8 * i)));
  return out;
}

template <typename U>
U fromBigEndian(std::string_view b) {
  U bits = 0;
  for (unsigned char c : b) bits = static_cast<U>((bits << 8) | c);
  return bits;
}

enum class ParseError { kNone, kNotANumber, kOutOfRange };

template <typename T>
ParseError parseInteger(std::string_view text, T& out) {
  text = dropPlus(text);
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 10);
  if (ec == std::errc::result_out_of_range && ptr == text.data() + text.size()) return ParseError::kOutOfRange;
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return ParseError::kNotANumber;
  return ParseError::kNone;
}

template <typename T>
ParseError parseFloating(std::string_view text, T& out) {
  // Java's spellings first; from_chars accepts inf/nan/infinity in any case as well.
  if (text == "NaN") {
    out = std::numeric_limits<T>::quiet_NaN();
    return ParseError::kNone;
  }
  if (text == "Infinity" || text == "+Infinity" || text == "-Infinity") {
    out = text[0] == '-' ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    return ParseError::kNone;
  }
  text = dropPlus(text);
  const auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), out, std::chars_format::general);
  if (ec == std::errc::result_out_of_range && ptr == text.data() + text.size()) return ParseError::kOutOfRange;
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return ParseError::kNotANumber;
  // Every NaN spelling ("-nan", "nan(0x1)") is Java's one NaN (as Double.parseDouble("-NaN")): the
  // bits written must not depend on the spelling, and toRecord writes every NaN back as "NaN".
  if (std::isnan(out)) out = std::numeric_limits<T>::quiet_NaN();
  return ParseError::kNone;
}

template <typename T>
Bytes integerText(std::string_view wire) {
  using U = std::make_unsigned_t<T>;
  const T v = static_cast<T>(fromBigEndian<U>(wire));  // two's complement (C++20)
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return Bytes(std::string(buf, r.ptr));
}

template <typename T, typename U>
Bytes floatingText(std::string_view wire) {
  const T v = std::bit_cast<T>(fromBigEndian<U>(wire));
  if (std::isnan(v)) return Bytes(std::string("NaN"));
  if (std::isinf(v)) return Bytes(std::string(v < 0 ? "-Infinity" : "Infinity"));
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round trip
  return Bytes(std::string(buf, r.ptr));
}

}  // namespace

const ConfigDef& NumberConverter::definition() {
  static const ConfigDef def;
  return def;
}

Status NumberConverter::configure(const StringMap& config, bool isKey) {
  FERRY_ASSIGN_OR_RETURN(role_, roleOf(config, isKey, traitsOf(kind_).converter));
  return Status::ok();
}

Status NumberConverter::bad(const std::string& topic, const char* direction, const std::string& what) const {
  return Status::invalidArgument(std::string(traitsOf(kind_).converter) + ": the " + role_ + " " + direction +
                                 " topic '" + topic + "' " + what);
}

Result<Bytes> NumberConverter::fromRecord(const std::string& topic, const Bytes& data) {
  if (data.isNull()) return data;
  const NumberTraits& t = traitsOf(kind_);
  const std::string_view text = trimAscii(data.view());
  ParseError err = ParseError::kNone;
  std::string wire;
  switch (kind_) {
    case NumberKind::kShort: {
      std::int16_t v = 0;
      if ((err = parseInteger(text, v)) == ParseError::kNone) wire = bigEndian(static_cast<std::uint16_t>(v));
      break;
    }
    case NumberKind::kInteger: {
      std::int32_t v = 0;
      if ((err = parseInteger(text, v)) == ParseError::kNone) wire = bigEndian(static_cast<std::uint32_t>(v));
      break;
    }
    case NumberKind::kLong: {
      std::int64_t v = 0;
      if ((err = parseInteger(text, v)) == ParseError::kNone) wire = bigEndian(static_cast<std::uint64_t>(v));
      break;
    }
    case NumberKind::kFloat: {
      float v = 0;
      if ((err = parseFloating(text, v)) == ParseError::kNone) wire = bigEndian(std::bit_cast<std::uint32_t>(v));
      break;
    }
    case NumberKind::kDouble: {
      double v = 0;
      if ((err = parseFloating(text, v)) == ParseError::kNone) wire = bigEndian(std::bit_cast<std::uint64_t>(v));
      break;
    }
    case NumberKind::kBoolean:
      if (equalsIgnoreCase(text, "true")) {
        wire.assign(1, '\x01');
      } else if (equalsIgnoreCase(text, "false")) {
        wire.assign(1, '\0');
      } else {
        err = ParseError::kNotANumber;
      }
      break;
  }
  if (err == ParseError::kOutOfRange) return bad(topic, "for", std::string("is out of range for ") + t.what);
  if (err != ParseError::kNone)
    return bad(topic, "for", std::string("is not ") + t.what + " in text (" + std::to_string(data.size()) +
                                 " bytes)");
  return Bytes(std::move(wire));
}

Result<Bytes> NumberConverter::toRecord(const std::string& topic, const Bytes& data) {
  if (data.isNull()) return data;
  const NumberTraits& t = traitsOf(kind_);
  if (data.size() != t.width)
    return bad(topic, "from", "has " + std::to_string(data.size()) + " bytes; " + t.converter + " reads exactly " +
                                  std::to_string(t.width) + " (" + t.what + ", big-endian)");
  const std::string_view wire = data.view();
  switch (kind_) {
    case NumberKind::kShort: return integerText<std::int16_t>(wire);
    case NumberKind::kInteger: return integerText<std::int32_t>(wire);
    case NumberKind::kLong: return integerText<std::int64_t>(wire);
    case NumberKind::kFloat: return floatingText<float, std::uint32_t>(wire);
    case NumberKind::kDouble: return floatingText<double, std::uint64_t>(wire);
    case NumberKind::kBoolean: {
      const auto b = static_cast<unsigned char>(wire[0]);
      if (b > 1)
        return bad(topic, "from", "has the byte " + std::to_string(b) + "; a boolean is 0 (false) or 1 (true)");
      return Bytes(std::string(b ? "true" : "false"));
    }
  }
  return Status::internal("NumberConverter: unknown kind");
}

}  // namespace ferry::transforms
