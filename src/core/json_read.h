// Reading JSON values from outside bytes, fast: simdjson parses and validates, and the document is
// built as nlohmann's ordered_json with the types nlohmann's own parser gives (json_read.cc says
// where the two differ on purpose). Bounded to kRecordJsonLimits' depth. Used by the transforms
// (transforms/json_util.h re-exports these) and by connectors that read record values.
//
// Thread-safety: free functions (each thread keeps its own parser).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

namespace ferry::core {

// The parsed document, or nullopt when `text` is not one JSON value.
std::optional<nlohmann::ordered_json> parseJson(std::string_view text);
// True when `text` is one valid JSON value (no document is built).
bool isJson(std::string_view text);

}  // namespace ferry::core
