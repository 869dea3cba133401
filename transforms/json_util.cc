// JSON helpers (see json_util.h). nlohmann's exceptions are caught here, at the adapter.
#include "transforms/json_util.h"

#include <regex>

namespace ferry::transforms {

std::optional<Json> parseJson(std::string_view text) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

bool isJson(std::string_view text) { return Json::accept(text.begin(), text.end()); }

std::string jsonError(std::string_view text) {
  try {
    Json ignored = Json::parse(text.begin(), text.end());
    (void)ignored;
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string dumpJson(const Json& j) {
  return j.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
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
