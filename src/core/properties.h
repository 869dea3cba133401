// Java-style .properties parsing (what Kafka Connect's worker and connector files use), and
// reading a connector definition from a JSON, YAML or properties file.
//
// Thread-safety: free functions.
#pragma once

#include <string>
#include <string_view>

#include "ferry/record.h"
#include "ferry/result.h"

namespace ferry::core {

// Parses `key=value` / `key: value` lines; `#` and `!` start comments; a trailing backslash
// continues a line; \t \n \\ \uXXXX escapes are understood. Errors name the line.
Result<StringMap> parseProperties(std::string_view text);

// A connector definition as users write it: {"name": ..., "config": {...}} or a flat config map
// with a "name" key, in JSON, YAML or .properties (chosen by content). Values that are numbers or
// booleans become their text. Errors name the file format and the problem.
struct ConnectorDefinition {
  std::string name;
  StringMap config;
};
Result<ConnectorDefinition> parseConnectorDefinition(std::string_view text);

}  // namespace ferry::core
