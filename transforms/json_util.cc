// JSON helpers (see json_util.h). nlohmann's exceptions are caught here, at the adapter.
#include "transforms/json_util.h"


#include <charconv>
#include <regex>

#include "core/json_bounds.h"

namespace ferry::transforms {
namespace {

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
