#include "core/properties.h"

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/json_bounds.h"

namespace ferry::core {
namespace {

std::string trimLeft(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f')) ++i;
  return std::string(s.substr(i));
}

// Appends the UTF-8 encoding of `cp`.
void appendUtf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

Result<std::string> unescape(std::string_view s, int line) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\' || i + 1 >= s.size()) {
      out += c;
      continue;
    }
    char n = s[++i];
    switch (n) {
      case 't': out += '\t'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        unsigned cp = 0;
        for (int k = 1; k <= 4; ++k) {
          if (i + k >= s.size()) return Status::invalidArgument("line " + std::to_string(line) + ": malformed \\u escape");
          char h = s[i + k];
          cp <<= 4;
          if (h >= '0' && h <= '9') cp |= h - '0';
          else if (h >= 'a' && h <= 'f') cp |= h - 'a' + 10;
          else if (h >= 'A' && h <= 'F') cp |= h - 'A' + 10;
          else return Status::invalidArgument("line " + std::to_string(line) + ": malformed \\u escape");
        }
        i += 4;
        appendUtf8(out, cp);
        break;
      }
      default: out += n;
    }
  }
  return out;
}

std::string scalarText(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

Result<ConnectorDefinition> fromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Status::invalidArgument("connector definition must be a JSON object");
  ConnectorDefinition def;
  const nlohmann::json* cfg = &j;
  if (j.contains("config")) {
    if (!j["config"].is_object()) return Status::invalidArgument("\"config\" must be an object");
    cfg = &j["config"];
    if (j.contains("name")) def.name = scalarText(j["name"]);
  }
  for (auto it = cfg->begin(); it != cfg->end(); ++it) {
    if (it->is_object() || it->is_array())
      return Status::invalidArgument("config value of '" + it.key() + "' must be a string, number or boolean");
    def.config[it.key()] = scalarText(*it);
  }
  if (def.name.empty() && def.config.count("name")) def.name = def.config["name"];
  return def;
}

Result<nlohmann::json> yamlToJson(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : n) {
      auto v = yamlToJson(kv.second);
      if (!v.isOk()) return v.status();
      o[kv.first.as<std::string>()] = *v;
    }
    return o;
  }
  if (n.IsSequence()) return Status::invalidArgument("lists are not allowed in a connector definition");
  if (n.IsNull()) return nlohmann::json(nullptr);
  return nlohmann::json(n.as<std::string>());
}

}  // namespace

Result<StringMap> parseProperties(std::string_view text) {
  StringMap out;
  std::istringstream in{std::string(text)};
  std::string raw;
  int lineNo = 0;
  std::string logical;
  int logicalStart = 0;
  while (std::getline(in, raw)) {
    ++lineNo;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    std::string line = logical.empty() ? trimLeft(raw) : trimLeft(raw);
    if (logical.empty()) {
      if (line.empty() || line[0] == '#' || line[0] == '!') continue;
      logicalStart = lineNo;
    }
    // Count trailing backslashes: an odd number continues the line.
    std::size_t bs = 0;
    while (bs < line.size() && line[line.size() - 1 - bs] == '\\') ++bs;
    if (bs % 2 == 1) {
      logical += line.substr(0, line.size() - 1);
      continue;
    }
    logical += line;
    // Split at the first unescaped '=' or ':' (or whitespace).
    std::size_t i = 0;
    for (; i < logical.size(); ++i) {
      char c = logical[i];
      if (c == '\\') { ++i; continue; }
      if (c == '=' || c == ':' || c == ' ' || c == '\t') break;
    }
    std::string key = logical.substr(0, i);
    std::size_t j = i;
    while (j < logical.size() && (logical[j] == ' ' || logical[j] == '\t')) ++j;
    if (j < logical.size() && (logical[j] == '=' || logical[j] == ':')) ++j;
    while (j < logical.size() && (logical[j] == ' ' || logical[j] == '\t')) ++j;
    std::string value = j < logical.size() ? logical.substr(j) : "";
    // Trailing whitespace of a value is kept by Java; we trim it, which is what users mean.
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
    auto k = unescape(key, logicalStart);
    if (!k.isOk()) return k.status();
    auto v = unescape(value, logicalStart);
    if (!v.isOk()) return v.status();
    if (k->empty()) return Status::invalidArgument("line " + std::to_string(logicalStart) + ": empty key");
    out[*k] = *v;
    logical.clear();
  }
  if (!logical.empty()) return Status::invalidArgument("line " + std::to_string(logicalStart) + ": continuation at end of file");
  return out;
}

Result<ConnectorDefinition> parseConnectorDefinition(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
  if (i < text.size() && text[i] == '{') {
    auto j = parseJsonBounded<nlohmann::json>(text);
    if (!j.isOk()) return Status::invalidArgument("connector definition: " + j.status().message());
    return fromJson(*j);
  }
  // YAML when it parses to a map whose values are maps/scalars and uses ': ' syntax; otherwise
  // properties. A properties file with `key: value` lines is valid YAML too, which is fine: both
  // readings agree for flat maps.
  bool looksYaml = text.find(": ") != std::string_view::npos && text.find('=') == std::string_view::npos;
  if (looksYaml) {
    try {
      YAML::Node n = YAML::Load(std::string(text));
      if (n.IsMap()) {
        auto j = yamlToJson(n);
        if (!j.isOk()) return j.status().withContext("YAML connector definition");
        return fromJson(*j);
      }
    } catch (const YAML::Exception& e) {
      return Status::invalidArgument(std::string("malformed YAML connector definition: ") + e.what());
    }
  }
  auto props = parseProperties(text);
  if (!props.isOk()) return props.status().withContext("properties connector definition");
  ConnectorDefinition def;
  def.config = std::move(*props);
  if (def.config.count("name")) def.name = def.config["name"];
  return def;
}

}  // namespace ferry::core
