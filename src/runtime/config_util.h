// Small helpers over string-map configs, shared by the runtime's files.
#pragma once

#include <string>
#include <vector>

#include "ferry/config.h"

namespace ferry::runtime {

// The value of `key`, or `fallback` when absent or empty.
inline std::string configValue(const StringMap& m, const std::string& key, const std::string& fallback = {}) {
  auto it = m.find(key);
  return it == m.end() || it->second.empty() ? fallback : it->second;
}

// Keys under `prefix`, with the prefix stripped (keys equal to the prefix are left out).
inline StringMap configWithPrefix(const StringMap& m, const std::string& prefix) {
  StringMap out;
  for (const auto& [k, v] : m)
    if (k.size() > prefix.size() && k.compare(0, prefix.size(), prefix) == 0) out.emplace(k.substr(prefix.size()), v);
  return out;
}

// A comma-separated list value (trimmed, empty items dropped); empty when absent.
inline std::vector<std::string> configList(const StringMap& m, const std::string& key) {
  auto it = m.find(key);
  if (it == m.end()) return {};
  auto parsed = ConfigDef::parseValue(ConfigType::kList, it->second);
  if (!parsed.isOk()) return {};
  return std::get<std::vector<std::string>>(*parsed);
}

}  // namespace ferry::runtime
