// JSON helpers (see json_util.h). nlohmann's exceptions are caught here, at the adapter.
#include "transforms/json_util.h"

#include "transforms/json_fast.h"

#include <charconv>
#include <regex>

#include "core/json_bounds.h"

namespace ferry::transforms {
namespace {

simdjson::dom::parser& fastParser();

// simdjson parses and validates several times faster than nlohmann's lexer; the document is then
// built as nlohmann's ordered_json (what the transforms edit), node by node with the same
// types nlohmann's own parser gives: non-negative integers unsigned, duplicate keys the last wins
// in the place of the first. Text simdjson refuses for a reason nlohmann may not (an integer
// beyond 64 bits) goes to nlohmann's parser, so what is JSON does not change — with two
// exceptions on purpose: nlohmann takes a NUL byte outside a string for the end of the input (it
// accepts "1\0garbage"); simdjson refuses that, and so do we. And a value nested deeper than
// core::kRecordJsonLimits.maxDepth is refused by both parsers (writing or copying a document
// recurses once per level: a deep value must not take the worker's stack).

simdjson::dom::parser& fastParser() {
  thread_local simdjson::dom::parser parser = boundedFastParser();
  return parser;
}

// Errors after which nlohmann's parser may still accept the text.
bool nlohmannMayAccept(simdjson::error_code e, std::string_view text) {
  // A raw NUL byte is never part of JSON (not even inside a string), but nlohmann would stop there.
  if (text.find('\0') != std::string_view::npos) return false;
  return e == simdjson::NUMBER_ERROR || e == simdjson::NUMBER_OUT_OF_RANGE ||
         e == simdjson::CAPACITY || e == simdjson::MEMALLOC;
}

// Strings of printable ASCII without quote or backslash are written as they are; anything else
// (escapes, UTF-8 to check and repair) takes nlohmann's serializer.
void writeString(const std::string& s, std::string& out) {
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') {
      out += Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
      return;
    }
  }
  out.push_back('"');
  out.append(s);
  out.push_back('"');
}

void write(const Json& j, std::string& out) {
  char buf[64];
  switch (j.type()) {
    case Json::value_t::null: out.append("null"); return;
    case Json::value_t::boolean: out.append(j.get<bool>() ? "true" : "false"); return;
    case Json::value_t::number_integer: {
      auto r = std::to_chars(buf, buf + sizeof buf, j.get<std::int64_t>());
      out.append(buf, r.ptr);
      return;
    }
    case Json::value_t::number_unsigned: {
      auto r = std::to_chars(buf, buf + sizeof buf, j.get<std::uint64_t>());
      out.append(buf, r.ptr);
      return;
    }
    case Json::value_t::number_float: {
      const double d = j.get<double>();
      if (!std::isfinite(d)) {
        out.append("null");  // as nlohmann writes it
        return;
      }
      char* end = nlohmann::detail::to_chars(buf, buf + sizeof buf, d);  // nlohmann's own digits
      out.append(buf, end);
      return;
    }
    case Json::value_t::string: writeString(j.get_ref<const std::string&>(), out); return;
    case Json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& v : j) {
        if (!first) out.push_back(',');
        first = false;
        write(v, out);
      }
      out.push_back(']');
      return;
    }
    case Json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!first) out.push_back(',');
        first = false;
        writeString(it.key(), out);
        out.push_back(':');
        write(it.value(), out);
      }
      out.push_back('}');
      return;
    }
    default: out += j.dump(-1, ' ', false, Json::error_handler_t::replace); return;
  }
}

}  // namespace

simdjson::dom::parser boundedFastParser() {
  simdjson::dom::parser p;
  // The depth is kept when the parser later grows its capacity for a longer text.
  // Should that allocation fail, a later one would use simdjson's default depth: instead the
  // parser takes nothing (every parse answers CAPACITY and callers use the bounded nlohmann path).
  if (p.allocate(simdjson::dom::MINIMAL_DOCUMENT_CAPACITY,
                 static_cast<std::size_t>(core::kRecordJsonLimits.maxDepth)) !=
      simdjson::SUCCESS)
    p.set_max_capacity(0);
  return p;
}

void toJson(simdjson::dom::element e, Json& out) {
  using T = simdjson::dom::element_type;
  switch (e.type()) {
    case T::ARRAY: {
      out = Json::array();
      auto& arr = out.get_ref<Json::array_t&>();
      const simdjson::dom::array items = e.get_array().value_unsafe();
      arr.reserve(items.size());
      for (simdjson::dom::element c : items) {
        arr.emplace_back();
        toJson(c, arr.back());
      }
      return;
    }
    case T::OBJECT: {
      out = Json::object();
      const simdjson::dom::object fields = e.get_object().value_unsafe();
      out.get_ref<Json::object_t&>().reserve(fields.size());
      for (simdjson::dom::key_value_pair kv : fields) toJson(kv.value, out[std::string(kv.key)]);
      return;
    }
    case T::INT64: {
      const std::int64_t v = e.get_int64().value_unsafe();
      if (v >= 0) out = static_cast<std::uint64_t>(v);
      else out = v;
      return;
    }
    case T::UINT64: out = e.get_uint64().value_unsafe(); return;
    case T::DOUBLE: out = e.get_double().value_unsafe(); return;
    case T::STRING: out = std::string(e.get_string().value_unsafe()); return;
    case T::BOOL: out = e.get_bool().value_unsafe(); return;
    case T::NULL_VALUE: out = nullptr; return;
  }
}

std::optional<Json> parseJson(std::string_view text) {
  auto doc = fastParser().parse(text.data(), text.size());
  if (!doc.error()) {
    Json j;
    toJson(doc.value_unsafe(), j);
    return j;
  }
  if (!nlohmannMayAccept(doc.error(), text)) return std::nullopt;
  auto j = core::parseJsonBounded<Json>(text, core::kRecordJsonLimits);
  if (!j.isOk()) return std::nullopt;
  return std::move(*j);
}

bool isJson(std::string_view text) {
  auto doc = fastParser().parse(text.data(), text.size());
  if (!doc.error()) return true;
  return nlohmannMayAccept(doc.error(), text) &&
         core::parseJsonBounded<Json>(text, core::kRecordJsonLimits).isOk();
}

std::string jsonError(std::string_view text) {
  auto j = core::parseJsonBounded<Json>(text, core::kRecordJsonLimits);
  return j.isOk() ? std::string() : j.status().message();
}

std::string dumpJson(const Json& j) {
  std::string out;
  out.reserve(256);
  write(j, out);
  return out;
}

Result<ParsedConfig> parseConfig(const ConfigDef& def, const StringMap& config,
                                 const std::string& what) {
  auto parsed = def.parse(config, /*rejectUnknown=*/false);
  if (!parsed.isOk()) return parsed.status().withContext(what);
  return parsed;
}

Validator regexValidator() {
  return [](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
    const auto* s = std::get_if<std::string>(&v);
    if (!s) return name + ": must be a string";
    try {
      std::regex re(*s);
    } catch (const std::regex_error& e) {
      return "Invalid value " + *s + " for configuration " + name + ": not a valid regular " +
             "expression (" + e.what() + ")";
    }
    return std::nullopt;
  };
}

Validator renamesValidator() {
  return [](const std::string& name, const ConfigValue& v) -> std::optional<std::string> {
    const auto* l = std::get_if<std::vector<std::string>>(&v);
    if (!l) return name + ": must be a list";
    for (const auto& item : *l) {
      const auto colon = item.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == item.size() ||
          item.find(':', colon + 1) != std::string::npos)
        return "Invalid rename mapping '" + item + "' in " + name +
               ": use old:new pairs, e.g. a:b,c:d";
    }
    return std::nullopt;
  };
}

}  // namespace ferry::transforms
