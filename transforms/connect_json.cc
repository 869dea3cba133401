// Kafka Connect's JSON schemas and payload checks (connect_json.h).
#include "transforms/connect_json.h"

#include <cstdint>
#include <limits>

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

const char* kindOf(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number with a fraction";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "a value of another kind";
  }
}

Status checkInteger(const Json& j, std::int64_t lo, std::int64_t hi, const std::string& path, const char* type) {
  if (j.is_number_unsigned()) {
    if (j.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) return bad(path, std::string("out of range for ") + type);
    return Status::ok();
  }
  if (!j.is_number_integer()) return bad(path, std::string("expected an integer (") + type + "), found " + kindOf(j));
  const auto v = j.get<std::int64_t>();
  if (v < lo || v > hi) return bad(path, std::string("out of range for ") + type);
  return Status::ok();
}

Status check(const Schema& s, const Json& j, const std::string& path) {
  if (j.is_null()) {
    if (s.optional() || s.defaultJson()) return Status::ok();
    return bad(path, "null for a required " + s.describe());
  }
  switch (s.type()) {
    case SchemaType::kInt8: return checkInteger(j, -128, 127, path, "int8");
    case SchemaType::kInt16: return checkInteger(j, -32768, 32767, path, "int16");
    case SchemaType::kInt32:
      return checkInteger(j, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(), path,
                          "int32");
    case SchemaType::kInt64:
      return checkInteger(j, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), path,
                          "int64");
    case SchemaType::kFloat32:
    case SchemaType::kFloat64:
      if (!j.is_number()) return bad(path, std::string("expected a number, found ") + kindOf(j));
      return Status::ok();
    case SchemaType::kBoolean:
      if (!j.is_boolean()) return bad(path, std::string("expected a boolean, found ") + kindOf(j));
      return Status::ok();
    case SchemaType::kString:
      if (!j.is_string()) return bad(path, std::string("expected a string, found ") + kindOf(j));
      return Status::ok();
    case SchemaType::kBytes:
      if (!j.is_string()) return bad(path, std::string("expected base64 text (bytes), found ") + kindOf(j));
      if (!isBase64(j.get_ref<const std::string&>())) return bad(path, "not base64 text (bytes)");
      return Status::ok();
    case SchemaType::kArray: {
      if (!j.is_array()) return bad(path, std::string("expected an array, found ") + kindOf(j));
      for (std::size_t i = 0; i < j.size(); ++i)
        FERRY_RETURN_IF_ERROR(check(*s.valueSchema(), j[i], path + "[" + std::to_string(i) + "]"));
      return Status::ok();
    }
    case SchemaType::kMap: {
      if (s.keySchema()->type() == SchemaType::kString) {
        if (!j.is_object())
          return bad(path, std::string("a map with string keys is an object, found ") + kindOf(j));
        for (const auto& [k, v] : j.items()) FERRY_RETURN_IF_ERROR(check(*s.valueSchema(), v, path + "." + k));
        return Status::ok();
      }
      if (!j.is_array())
        return bad(path, std::string("a map with non-string keys is an array of [key, value] pairs, found ") +
                             kindOf(j));
      for (std::size_t i = 0; i < j.size(); ++i) {
        const std::string at = path + "[" + std::to_string(i) + "]";
        if (!j[i].is_array() || j[i].size() != 2) return bad(at, "a map entry is a [key, value] pair");
        FERRY_RETURN_IF_ERROR(check(*s.keySchema(), j[i][0], at + "[0]"));
        FERRY_RETURN_IF_ERROR(check(*s.valueSchema(), j[i][1], at + "[1]"));
      }
      return Status::ok();
    }
    case SchemaType::kStruct: {
      if (!j.is_object()) return bad(path, std::string("a struct is an object, found ") + kindOf(j));
      static const Json kNull;
      for (const auto& f : s.fields()) {
        auto it = j.find(f.name);
        FERRY_RETURN_IF_ERROR(check(*f.schema, it == j.end() ? kNull : *it, path + "." + f.name));
      }
      return Status::ok();
    }
  }
  return Status::ok();
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

bool anyDefault(const Schema& s) {
  if (s.defaultJson()) return true;
  for (const auto& f : s.fields())
    if (anyDefault(*f.schema)) return true;
  if (s.keySchema() && anyDefault(*s.keySchema())) return true;
  return s.valueSchema() && anyDefault(*s.valueSchema());
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

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

void appendU16(std::string& out, unsigned v) {
  out += "\\u";
  out.push_back(kHex[(v >> 12) & 0xf]);
  out.push_back(kHex[(v >> 8) & 0xf]);
  out.push_back(kHex[(v >> 4) & 0xf]);
  out.push_back(kHex[v & 0xf]);
}

// A 4-byte UTF-8 sequence at text[i] (a character outside the BMP) as Jackson writes it: two
// \uXXXX escapes of its UTF-16 surrogates. False (nothing appended) when the bytes there are not
// one such sequence.
bool appendSurrogates(std::string& out, std::string_view text, std::size_t i) {
  if (i + 3 >= text.size()) return false;
  const auto b0 = static_cast<unsigned char>(text[i]);
  const auto b1 = static_cast<unsigned char>(text[i + 1]);
  const auto b2 = static_cast<unsigned char>(text[i + 2]);
  const auto b3 = static_cast<unsigned char>(text[i + 3]);
  if ((b0 & 0xf8) != 0xf0 || (b1 & 0xc0) != 0x80 || (b2 & 0xc0) != 0x80 || (b3 & 0xc0) != 0x80) return false;
  const unsigned cp = ((b0 & 0x07u) << 18) | ((b1 & 0x3fu) << 12) | ((b2 & 0x3fu) << 6) | (b3 & 0x3fu);
  if (cp < 0x10000 || cp > 0x10ffff) return false;
  const unsigned v = cp - 0x10000;
  appendU16(out, 0xd800 + (v >> 10));
  appendU16(out, 0xdc00 + (v & 0x3ff));
  return true;
}

}  // namespace

std::string escapeNonBmp(std::string_view json) {
  std::string out;
  out.reserve(json.size() + 16);
  for (std::size_t i = 0; i < json.size(); ++i) {
    if (static_cast<unsigned char>(json[i]) >= 0xf0 && appendSurrogates(out, json, i)) {
      i += 3;
      continue;
    }
    out.push_back(json[i]);
  }
  return out;
}

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

void appendJsonString(std::string& out, std::string_view text) {
  out.push_back('"');
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0xf0 && appendSurrogates(out, text, i)) {
      i += 3;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          appendU16(out, c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
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

bool hasDefaults(const Schema& s) { return anyDefault(s); }

Status applyDefaults(const Schema& s, Json& payload) { return fill(s, payload); }

}  // namespace ferry::transforms
