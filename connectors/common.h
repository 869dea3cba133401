// Small helpers shared by the built-in connectors: the version they report and config parsing
// that turns a ConfigDef failure into one InvalidArgument naming the plugin.
//
// Thread-safety: free functions.
#pragma once

#include <string>

#include "ferry/config.h"
#include "ferry/result.h"

namespace ferry::connectors {

inline constexpr const char* kVersion = "0.1.0";

// Parses `config` against `def`; unknown keys are ignored (task configs carry framework keys).
inline Result<ParsedConfig> parseConfig(const ConfigDef& def, const StringMap& config,
                                        const std::string& what) {
  auto parsed = def.parse(config, /*rejectUnknown=*/false);
  if (!parsed.isOk()) return parsed.status().withContext(what);
  return parsed;
}

}  // namespace ferry::connectors
