// Kafka Connect's JSON schemas and payload checks (connect_json.h).
#include "transforms/connect_json.h"

#include "core/json_bounds.h"
#include "core/json_text.h"
#include "transforms/json_fast.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace ferry::transforms {
namespace {

constexpr int kMaxSchemaDepth = 64;

bool isBase64(std::string_view s) {
  // Jackson's default variant: standard alphabet, '=' padding, length a multiple of 4.
  if (s.size() % 4 != 0) return false;
  std::size_t pad = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '=') {
      if (i + 2 < s.size()) return false;  // at most two, at the end
      ++pad;
      continue;
    }
    if (pad) return false;
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
                    c == '/';
    if (!ok) return false;
  }
  return true;
}

Status bad(const std::string& path, const std::string& what) {
  return Status::invalidArgument(path + ": " + what);
}

// Where in the payload a check is: built only when a check fails (no string per field of every
// record).
struct Path {
  const Path* up = nullptr;
  std::string_view key = "payload";  // a member; the root's label (what the whole value is called)
  std::int64_t index = -1;           // an element
  std::string str() const {
    std::string out = up ? up->str() : std::string(key);
    if (index >= 0) out += "[" + std::to_string(index) + "]";
    else if (up) out.append(".").append(key);
    return out;
  }
};

enum class Kind { kNull, kBool, kInt, kUInt, kDouble, kString, kArray, kObject, kOther };

const char* kindName(Kind k) {
  switch (k) {
    case Kind::kNull: return "null";
    case Kind::kBool: return "a boolean";
    case Kind::kInt:
    case Kind::kUInt: return "an integer";
    case Kind::kDouble: return "a number with a fraction";
    case Kind::kString: return "a string";
    case Kind::kArray: return "an array";
    case Kind::kObject: return "an object";
    default: return "a value of another kind";
  }
}

// The two documents the checker reads: nlohmann's (schemas' defaults, the slow path) and
// simdjson's read-only DOM (every record).
struct NlohmannNode {
  using Node = const Json&;
  static Kind kind(const Json& j) {
    switch (j.type()) {
      case Json::value_t::null: return Kind::kNull;
      case Json::value_t::boolean: return Kind::kBool;
      case Json::value_t::number_integer: return Kind::kInt;
      case Json::value_t::number_unsigned: return Kind::kUInt;
      case Json::value_t::number_float: return Kind::kDouble;
      case Json::value_t::string: return Kind::kString;
      case Json::value_t::array: return Kind::kArray;
      case Json::value_t::object: return Kind::kObject;
      default: return Kind::kOther;
    }
  }
  static std::int64_t asInt(const Json& j) { return j.get<std::int64_t>(); }
  static std::uint64_t asUInt(const Json& j) { return j.get<std::uint64_t>(); }
  static std::string_view asString(const Json& j) { return j.get_ref<const std::string&>(); }
  template <class F>
  static Status elements(const Json& j, F&& f) {
    std::int64_t i = 0;
    for (const auto& e : j) FERRY_RETURN_IF_ERROR(f(i++, e));
    return Status::ok();
  }
  template <class F>
  static Status members(const Json& j, F&& f) {
    for (const auto& [k, v] : j.items()) FERRY_RETURN_IF_ERROR(f(std::string_view(k), v));
    return Status::ok();
  }
};

const char* kindOf(const Json& j) { return kindName(NlohmannNode::kind(j)); }

struct SimdNode {
  using Node = simdjson::dom::element;
  static Kind kind(simdjson::dom::element e) {
    using T = simdjson::dom::element_type;
    switch (e.type()) {
      case T::NULL_VALUE: return Kind::kNull;
      case T::BOOL: return Kind::kBool;
      case T::INT64: return Kind::kInt;
      case T::UINT64: return Kind::kUInt;
      case T::DOUBLE: return Kind::kDouble;
      case T::STRING: return Kind::kString;
      case T::ARRAY: return Kind::kArray;
      case T::OBJECT: return Kind::kObject;
      default: return Kind::kOther;
    }
  }
  static std::int64_t asInt(simdjson::dom::element e) { return e.get_int64().value_unsafe(); }
  static std::uint64_t asUInt(simdjson::dom::element e) { return e.get_uint64().value_unsafe(); }
  static std::string_view asString(simdjson::dom::element e) { return e.get_string().value_unsafe(); }
  template <class F>
  static Status elements(simdjson::dom::element e, F&& f) {
    std::int64_t i = 0;
    const simdjson::dom::array items = e.get_array().value_unsafe();
    for (simdjson::dom::element c : items) FERRY_RETURN_IF_ERROR(f(i++, c));
    return Status::ok();
  }
  template <class F>
  static Status members(simdjson::dom::element e, F&& f) {
    const simdjson::dom::object fields = e.get_object().value_unsafe();
    for (simdjson::dom::key_value_pair kv : fields) FERRY_RETURN_IF_ERROR(f(kv.key, kv.value));
    return Status::ok();
  }
};

template <class A>
class Checker {
 public:
  using Node = typename A::Node;
  // Set when a null (or a missing struct field) stands where the schema has a default.
  bool defaultsApply = false;

  Status check(const Schema& s, Node j, const Path& path) {
    const Kind k = A::kind(j);
    if (k == Kind::kNull) return null(s, path);
    switch (s.type()) {
      case SchemaType::kInt8: return integer(j, k, -128, 127, path, "int8");
      case SchemaType::kInt16: return integer(j, k, -32768, 32767, path, "int16");
      case SchemaType::kInt32:
        return integer(j, k, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(),
                       path, "int32");
      case SchemaType::kInt64:
        return integer(j, k, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
                       path, "int64");
      case SchemaType::kFloat32:
      case SchemaType::kFloat64:
        if (k != Kind::kInt && k != Kind::kUInt && k != Kind::kDouble) return expected("a number", k, path);
        return Status::ok();
      case SchemaType::kBoolean:
        return k == Kind::kBool ? Status::ok() : expected("a boolean", k, path);
      case SchemaType::kString:
        return k == Kind::kString ? Status::ok() : expected("a string", k, path);
      case SchemaType::kBytes:
        if (k != Kind::kString) return expected("base64 text (bytes)", k, path);
        if (!isBase64(A::asString(j))) return bad(path.str(), "not base64 text (bytes)");
        return Status::ok();
      case SchemaType::kArray:
        if (k != Kind::kArray) return expected("an array", k, path);
        return A::elements(j, [&](std::int64_t i, Node e) {
          return check(*s.valueSchema(), e, Path{&path, {}, i});
        });
      case SchemaType::kMap:
        if (s.keySchema()->type() == SchemaType::kString) {
          if (k != Kind::kObject) return bad(path.str(), std::string("a map with string keys is an object, found ") + kindName(k));
          return A::members(j, [&](std::string_view key, Node v) {
            return check(*s.valueSchema(), v, Path{&path, key});
          });
        }
        if (k != Kind::kArray)
          return bad(path.str(), std::string("a map with non-string keys is an array of [key, value] pairs, found ") +
                                     kindName(k));
        return A::elements(j, [&](std::int64_t i, Node entry) -> Status {
          const Path at{&path, {}, i};
          if (A::kind(entry) != Kind::kArray) return bad(at.str(), "a map entry is a [key, value] pair");
          std::int64_t n = 0;
          FERRY_RETURN_IF_ERROR(A::elements(entry, [&](std::int64_t e, Node v) -> Status {
            ++n;
            if (e > 1) return Status::ok();
            return check(e == 0 ? *s.keySchema() : *s.valueSchema(), v, Path{&at, {}, e});
          }));
          if (n != 2) return bad(at.str(), "a map entry is a [key, value] pair");
          return Status::ok();
        });
      case SchemaType::kStruct:
        return structure(s, j, k, path);
    }
    return Status::ok();
  }

 private:
  Status null(const Schema& s, const Path& path) {
    if (s.defaultJson()) {
      defaultsApply = true;
      return Status::ok();
    }
    if (s.optional()) return Status::ok();
    return bad(path.str(), "null for a required " + s.describe());
  }

  static Status expected(const char* what, Kind k, const Path& path) {
    return bad(path.str(), std::string("expected ") + what + ", found " + kindName(k));
  }

  static Status integer(Node j, Kind k, std::int64_t lo, std::int64_t hi, const Path& path, const char* type) {
    if (k == Kind::kUInt) {
      if (A::asUInt(j) > static_cast<std::uint64_t>(hi)) return bad(path.str(), std::string("out of range for ") + type);
      return Status::ok();
    }
    if (k != Kind::kInt) return bad(path.str(), std::string("expected an integer (") + type + "), found " + kindName(k));
    const auto v = A::asInt(j);
    if (v < lo || v > hi) return bad(path.str(), std::string("out of range for ") + type);
    return Status::ok();
  }

  // Members are matched to fields in one pass; payloads written in the schema's field order (as
  // every writer does) find each field at the next position.
  Status structure(const Schema& s, Node j, Kind k, const Path& path) {
    if (k != Kind::kObject) return bad(path.str(), std::string("a struct is an object, found ") + kindName(k));
    const auto& fields = s.fields();
    std::vector<bool> seen(fields.size());
    std::size_t next = 0;
    FERRY_RETURN_IF_ERROR(A::members(j, [&](std::string_view key, Node v) -> Status {
      std::size_t at = fields.size();
      if (next < fields.size() && fields[next].name == key) {
        at = next;
      } else {
        for (std::size_t i = 0; i < fields.size(); ++i)
          if (fields[i].name == key) at = i;
      }
      if (at == fields.size()) return Status::ok();  // not in the schema: ignored, as Kafka does
      seen[at] = true;
      next = at + 1;
      return check(*fields[at].schema, v, Path{&path, key});
    }));
    for (std::size_t i = 0; i < fields.size(); ++i)
      if (!seen[i]) FERRY_RETURN_IF_ERROR(null(*fields[i].schema, Path{&path, fields[i].name}));
    return Status::ok();
  }
};

simdjson::dom::parser& checkParser() {
  thread_local simdjson::dom::parser parser = boundedFastParser();
  return parser;
}

// nlohmann's document, for the defaults of a schema read from JSON.
Status check(const Schema& s, const Json& j, const std::string& where) {
  Checker<NlohmannNode> c;
  const Path root{nullptr, where};
  return c.check(s, j, root);
}

Result<SchemaPtr> read(const Json& j, const std::string& path, int depth) {
  if (depth > kMaxSchemaDepth) return bad(path, "schemas nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels");
  if (!j.is_object()) return bad(path, std::string("a schema is an object, found ") + kindOf(j));
  auto typeIt = j.find("type");
  if (typeIt == j.end() || !typeIt->is_string()) return bad(path, "a schema needs a 'type' string");
  const auto type = schemaTypeFromJsonName(typeIt->get_ref<const std::string&>());
  if (!type) return bad(path, "unknown schema type '" + typeIt->get<std::string>() + "'");
  SchemaBuilder b(*type);
  switch (*type) {
    case SchemaType::kArray: {
      auto it = j.find("items");
      if (it == j.end() || it->is_null()) return bad(path, "an array schema needs 'items'");
      FERRY_ASSIGN_OR_RETURN(auto items, read(*it, path + ".items", depth + 1));
      b = SchemaBuilder::array(std::move(items));
      break;
    }
    case SchemaType::kMap: {
      auto k = j.find("keys");
      auto v = j.find("values");
      if (k == j.end() || v == j.end()) return bad(path, "a map schema needs 'keys' and 'values'");
      FERRY_ASSIGN_OR_RETURN(auto keys, read(*k, path + ".keys", depth + 1));
      FERRY_ASSIGN_OR_RETURN(auto values, read(*v, path + ".values", depth + 1));
      b = SchemaBuilder::map(std::move(keys), std::move(values));
      break;
    }
    case SchemaType::kStruct: {
      auto it = j.find("fields");
      if (it == j.end() || !it->is_array()) return bad(path, "a struct schema's 'fields' is an array");
      for (std::size_t i = 0; i < it->size(); ++i) {
        const Json& f = (*it)[i];
        const std::string at = path + ".fields[" + std::to_string(i) + "]";
        auto name = f.is_object() ? f.find("field") : f.end();
        if (!f.is_object() || name == f.end() || !name->is_string()) return bad(at, "a field needs a 'field' name");
        FERRY_ASSIGN_OR_RETURN(auto fs, read(f, at, depth + 1));
        b.field(name->get<std::string>(), std::move(fs));
      }
      break;
    }
    default:
      break;
  }
  if (auto it = j.find("optional"); it != j.end() && it->is_boolean() && it->get<bool>()) b.optional();
  if (auto it = j.find("name"); it != j.end() && it->is_string()) b.name(it->get<std::string>());
  if (auto it = j.find("version"); it != j.end() && (it->is_number_integer() || it->is_number_unsigned())) {
    const auto v = it->get<std::int64_t>();
    if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
      return bad(path + ".version", "out of range for a version (int32)");
    b.version(static_cast<std::int32_t>(v));
  }
  if (auto it = j.find("doc"); it != j.end() && it->is_string()) b.doc(it->get<std::string>());
  if (auto it = j.find("parameters"); it != j.end() && it->is_object()) {
    b.emptyParameters();
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) return bad(path + ".parameters." + k, "schema parameters are strings");
      b.parameter(k, v.get<std::string>());
    }
  }
  if (auto it = j.find("default"); it != j.end()) {
    // Checked against the schema without its default: null is a valid default only when the
    // schema is optional, and then means none (as Kafka reads it).
    FERRY_ASSIGN_OR_RETURN(auto plain, b.build());
    FERRY_RETURN_IF_ERROR(check(*plain, *it, path + ".default"));
    if (!it->is_null()) b.defaultJson(dumpJson(*it));
  }
  auto built = b.build();
  if (!built.isOk()) return bad(path, built.status().message());
  return built;
}

Status fill(const Schema& s, Json& j) {
  if (j.is_null()) {
    if (!s.defaultJson()) return Status::ok();
    auto d = parseJson(*s.defaultJson());
    if (!d) return Status::internal("a schema default that is not JSON");
    j = std::move(*d);
    return Status::ok();
  }
  switch (s.type()) {
    case SchemaType::kArray:
      if (j.is_array())
        for (auto& e : j) FERRY_RETURN_IF_ERROR(fill(*s.valueSchema(), e));
      break;
    case SchemaType::kMap:
      if (j.is_object()) {
        for (auto& [k, v] : j.items()) FERRY_RETURN_IF_ERROR(fill(*s.valueSchema(), v));
      } else if (j.is_array()) {
        for (auto& e : j) {
          if (!e.is_array() || e.size() != 2) continue;
          FERRY_RETURN_IF_ERROR(fill(*s.keySchema(), e[0]));
          FERRY_RETURN_IF_ERROR(fill(*s.valueSchema(), e[1]));
        }
      }
      break;
    case SchemaType::kStruct:
      if (j.is_object()) {
        for (const auto& f : s.fields()) {
          auto it = j.find(f.name);
          if (it == j.end()) {
            if (!f.schema->defaultJson()) continue;
            j[f.name] = nullptr;
            it = j.find(f.name);
          }
          FERRY_RETURN_IF_ERROR(fill(*f.schema, *it));
        }
      }
      break;
    default:
      break;
  }
  return Status::ok();
}

}  // namespace

void appendJackson(std::string& out, const Json& j) {
  switch (j.type()) {
    case Json::value_t::string:
      appendJsonString(out, j.get_ref<const std::string&>());
      return;
    case Json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : j) {
        if (!first) out.push_back(',');
        first = false;
        appendJackson(out, e);
      }
      out.push_back(']');
      return;
    }
    case Json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [k, v] : j.items()) {
        if (!first) out.push_back(',');
        first = false;
        appendJsonString(out, k);
        out.push_back(':');
        appendJackson(out, v);
      }
      out.push_back('}');
      return;
    }
    default:
      out += j.dump();  // null, booleans, numbers
  }
}

void appendConnectSchema(std::string& out, const Schema& s) {
  out += "{\"type\":\"";
  out += schemaTypeJsonName(s.type());
  out += '"';
  switch (s.type()) {
    case SchemaType::kArray:
      out += ",\"items\":";
      appendConnectSchema(out, *s.valueSchema());
      break;
    case SchemaType::kMap:
      out += ",\"keys\":";
      appendConnectSchema(out, *s.keySchema());
      out += ",\"values\":";
      appendConnectSchema(out, *s.valueSchema());
      break;
    case SchemaType::kStruct:
      out += ",\"fields\":[";
      for (std::size_t i = 0; i < s.fields().size(); ++i) {
        if (i) out += ',';
        const auto& f = s.fields()[i];
        appendConnectSchema(out, *f.schema);
        out.pop_back();  // the field's own '}': "field" comes last
        out += ",\"field\":";
        appendJsonString(out, f.name);
        out += '}';
      }
      out += ']';
      break;
    default:
      break;
  }
  out += s.optional() ? ",\"optional\":true" : ",\"optional\":false";
  if (s.defaultJson()) {
    out += ",\"default\":";
    out += *s.defaultJson();
  }
  if (s.name()) {
    out += ",\"name\":";
    appendJsonString(out, *s.name());
  }
  if (s.version()) out += ",\"version\":" + std::to_string(*s.version());
  if (s.doc()) {
    out += ",\"doc\":";
    appendJsonString(out, *s.doc());
  }
  if (s.parameters()) {
    out += ",\"parameters\":{";
    bool first = true;
    for (const auto& [k, v] : *s.parameters()) {
      if (!first) out += ',';
      first = false;
      appendJsonString(out, k);
      out += ':';
      appendJsonString(out, v);
    }
    out += '}';
  }
  out += '}';
}

std::string connectSchemaJson(const Schema& s) {
  std::string out;
  appendConnectSchema(out, s);
  return out;
}

Result<SchemaPtr> readConnectSchema(const Json& j) { return read(j, "schema", 0); }

Status checkPayload(const Schema& s, const Json& payload) { return check(s, payload, "payload"); }

namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }

// An integer token at t[i] (-?(0|[1-9][0-9]*), at most 18 digits, not followed by a fraction or
// an exponent, not -0, which simdjson reads as a double) within [lo, hi].
bool flatInteger(std::string_view t, std::size_t& i, std::int64_t lo, std::int64_t hi) {
  const bool negative = i < t.size() && t[i] == '-';
  if (negative) ++i;
  const std::size_t start = i;
  if (i >= t.size() || !digit(t[i]) || (t[i] == '0' && negative)) return false;
  std::int64_t v = 0;
  if (t[i] == '0') {
    ++i;
  } else {
    while (i < t.size() && digit(t[i])) {
      if (i - start == 18) return false;
      v = v * 10 + (t[i] - '0');
      ++i;
    }
  }
  if (i < t.size() && (t[i] == '.' || t[i] == 'e' || t[i] == 'E' || digit(t[i]))) return false;
  if (negative) v = -v;
  return v >= lo && v <= hi;
}

// A number token at t[i] for a float field: an integer of at most 18 digits with an optional
// fraction, no exponent (one that overflows a double is left to the full check).
bool flatDecimal(std::string_view t, std::size_t& i) {
  if (i < t.size() && t[i] == '-') ++i;
  const std::size_t start = i;
  if (i >= t.size() || !digit(t[i])) return false;
  if (t[i] == '0') {
    ++i;
  } else {
    while (i < t.size() && digit(t[i])) ++i;
    if (i - start > 18) return false;
  }
  if (i < t.size() && t[i] == '.') {
    ++i;
    const std::size_t fraction = i;
    while (i < t.size() && digit(t[i])) ++i;
    if (i == fraction) return false;
  }
  return !(i < t.size() && (t[i] == 'e' || t[i] == 'E' || digit(t[i])));
}

// A string token at t[i] whose escapes are the two-character ones (a \u escape is left to the
// full check, which knows about surrogates). UTF-8 was validated for the whole text.
bool flatString(std::string_view t, std::size_t& i) {
  if (i >= t.size() || t[i] != '"') return false;
  for (++i; i < t.size(); ++i) {
    i += core::plainJsonStringBytes(t.substr(i));
    if (i >= t.size()) break;
    const auto c = static_cast<unsigned char>(t[i]);
    if (c == '"') {
      ++i;
      return true;
    }
    if (c < 0x20) return false;
    if (c == '\\') {
      if (++i >= t.size()) return false;
      switch (t[i]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': break;
        default: return false;
      }
    }
  }
  return false;
}

bool flatLiteral(std::string_view t, std::size_t& i, std::string_view word) {
  if (t.substr(i, word.size()) != word) return false;
  i += word.size();
  return true;
}

// One field's value at t[i]: a scalar of the field's schema, or a null where the full check would
// accept it without a default.
bool flatValue(const Schema& s, std::string_view t, std::size_t& i) {
  if (i < t.size() && t[i] == 'n') return !s.defaultJson() && s.optional() && flatLiteral(t, i, "null");
  switch (s.type()) {
    case SchemaType::kInt8: return flatInteger(t, i, -128, 127);
    case SchemaType::kInt16: return flatInteger(t, i, -32768, 32767);
    case SchemaType::kInt32:
      return flatInteger(t, i, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max());
    case SchemaType::kInt64:
      return flatInteger(t, i, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
    case SchemaType::kFloat32:
    case SchemaType::kFloat64: return flatDecimal(t, i);
    case SchemaType::kBoolean: return flatLiteral(t, i, "true") || flatLiteral(t, i, "false");
    case SchemaType::kString: return flatString(t, i);
    default: return false;
  }
}

}  // namespace

bool flatStructMatches(const Schema& s, std::string_view t) {
  if (s.type() != SchemaType::kStruct || t.size() < 2 || t.front() != '{') return false;
  if (!simdjson::validate_utf8(t.data(), t.size())) return false;
  const auto& fields = s.fields();
  std::size_t i = 1;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (f > 0) {
      if (i >= t.size() || t[i] != ',') return false;
      ++i;
    }
    // The key: the field's name as it is, which is its JSON text only when the name holds no
    // quote, backslash or control character.
    const std::string& name = fields[f].name;
    for (const char c : name)
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
    if (i >= t.size() || t[i] != '"' || t.size() - i < name.size() + 3 || t.compare(i + 1, name.size(), name) != 0 ||
        t[i + 1 + name.size()] != '"' || t[i + 2 + name.size()] != ':')
      return false;
    i += name.size() + 3;
    if (!flatValue(*fields[f].schema, t, i)) return false;
  }
  return i + 1 == t.size() && t[i] == '}';
}

Status checkPayloadText(const Schema& s, std::string_view json, bool& defaultsApply, bool& isJson) {
  defaultsApply = false;
  isJson = true;
  if (flatStructMatches(s, json)) return Status::ok();
  return checkPayloadTextInFull(s, json, defaultsApply, isJson);
}

Status checkPayloadTextInFull(const Schema& s, std::string_view json, bool& defaultsApply, bool& isJson) {
  defaultsApply = false;
  isJson = true;
  const Path root;
  auto doc = checkParser().parse(json.data(), json.size());
  if (!doc.error()) {
    Checker<SimdNode> c;
    Status st = c.check(s, doc.value_unsafe(), root);
    defaultsApply = c.defaultsApply;
    return st;
  }
  // What simdjson refuses but nlohmann reads (an integer beyond 64 bits, for a double field).
  auto j = parseJson(json);
  if (!j) {
    isJson = false;
    return Status::invalidArgument("not JSON");
  }
  Checker<NlohmannNode> c;
  Status st = c.check(s, *j, root);
  defaultsApply = c.defaultsApply;
  return st;
}

namespace {

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The end of the JSON value starting at text[i] (not validated: brackets and strings balanced,
// anything else up to the next delimiter); npos when it does not end.
std::size_t valueEnd(std::string_view text, std::size_t i, int maxDepth) {
  int depth = 0;
  bool inString = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\') ++i;
      else if (c == '"') {
        inString = false;
        if (depth == 0) return i + 1;
      }
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      if (++depth > maxDepth) return std::string_view::npos;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return i;  // the end of an enclosing container: a scalar ended before it
      if (--depth == 0) return i + 1;
    } else if (depth == 0 && (c == ',' || space(c))) {
      return i;
    }
  }
  return depth == 0 && !inString ? i : std::string_view::npos;
}

}  // namespace

Result<EnvelopeSlices> splitEnvelope(std::string_view text) {
  auto fail = [] {
    return Status::invalidArgument("not a {\"schema\": ..., \"payload\": ...} envelope (exactly those two members)");
  };
  std::size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && space(text[i])) ++i;
  };
  skip();
  if (i >= text.size() || text[i] != '{') return fail();
  ++i;
  EnvelopeSlices out;
  bool haveSchema = false;
  bool havePayload = false;
  for (int member = 0; member < 2; ++member) {
    skip();
    std::string_view key;
    if (text.substr(i, 8) == "\"schema\"") key = "schema";
    else if (text.substr(i, 9) == "\"payload\"") key = "payload";
    else return fail();
    i += key.size() + 2;
    skip();
    if (i >= text.size() || text[i] != ':') return fail();
    ++i;
    skip();
    const std::size_t end = valueEnd(text, i, core::kRecordJsonLimits.maxDepth);
    if (end == std::string_view::npos || end == i) return fail();
    const std::string_view value = text.substr(i, end - i);
    i = end;
    if (key == "schema") {
      if (haveSchema) return fail();
      haveSchema = true;
      out.schema = value;
    } else {
      if (havePayload) return fail();
      havePayload = true;
      out.payload = value;
    }
    skip();
    if (i >= text.size()) return fail();
    if (member == 0 && text[i] != ',') return fail();
    if (member == 1 && text[i] != '}') return fail();
    ++i;
  }
  skip();
  if (i != text.size()) return fail();
  return out;
}

Status applyDefaults(const Schema& s, Json& payload) { return fill(s, payload); }

}  // namespace ferry::transforms
