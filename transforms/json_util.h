// JSON over bytes, for the transforms and converters. ferry values are bytes; a transform that
// needs a field parses the value (nlohmann::ordered_json, so field order survives), changes it
// and writes it back compactly. Nothing here throws.
//
// Thread-safety: free functions.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "core/json_read.h"
#include "ferry/config.h"
#include "ferry/record.h"
#include "ferry/result.h"

namespace ferry::transforms {

using Json = nlohmann::ordered_json;

// The parsed document, or nullopt when `text` is not one JSON value; whether `text` is one valid
// JSON value (core/json_read.h: simdjson first).
using core::isJson;
using core::parseJson;
// The parser's message for invalid `text` (empty when it is valid).
std::string jsonError(std::string_view text);
// Compact text; invalid UTF-8 in strings is replaced by U+FFFD rather than failing.
std::string dumpJson(const Json& j);
inline Bytes toBytes(const Json& j) { return Bytes(dumpJson(j)); }

// Parses `config` against `def` (unknown keys are the runtime's business), naming `what` in the
// InvalidArgument it returns.
Result<ParsedConfig> parseConfig(const ConfigDef& def, const StringMap& config,
                                 const std::string& what);

// Validators shared by several plugins.
Validator regexValidator();     // the value compiles as a std::regex (ECMAScript)
Validator renamesValidator();   // a list of old:new pairs

}  // namespace ferry::transforms
