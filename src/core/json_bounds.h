// Bounded JSON parsing for bytes that come from outside the process: REST bodies, record values
// (converters, transforms, rules), cluster events and snapshots, position-store records, RocketMQ
// route data, state files. One parse function with a depth and a size limit that returns a
// Status instead of throwing, and whose error text never quotes more than a few escaped
// characters of the input (no echoed bodies, no secrets from a config in an error answer).
//
// Why a depth limit: nlohmann's parser is iterative, but everything after it (dump, copying,
// the transforms' writers, comparisons) recurses once per level; a 0.4 MB text nested 200,000
// deep overflows the stack of whoever serialises it. A document that came through this parse is
// at most `maxDepth` deep, so those recursions are bounded.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/config.h"
#include "ferry/result.h"

namespace ferry::core {

struct JsonLimits {
  int maxDepth;          // arrays/objects nested deeper than this are refused
  std::size_t maxBytes;  // longer texts are refused before parsing
};

// REST bodies, configs, cluster events and snapshots, position records, route data.
inline constexpr JsonLimits kConfigJsonLimits{64, std::size_t{64} << 20};
// Record values parsed by converters, transforms and rules.
inline constexpr JsonLimits kRecordJsonLimits{128, std::size_t{64} << 20};

// The deepest nesting of arrays and objects in `text` (brackets outside strings), counting
// stops as soon as it exceeds `limit` (then limit + 1 is returned). Linear, allocates nothing,
// does not validate: for a quick refusal before any parser sees the text.
int jsonNesting(std::string_view text, int limit);

// At most `radius` characters either side of `pos`, escaped (printable ASCII but quote and
// backslash as they are, everything else \xNN), for an error message.
std::string jsonExcerpt(std::string_view text, std::size_t pos, std::size_t radius = 8);

// Parses `text` as exactly one JSON document (J is nlohmann::json or nlohmann::ordered_json).
// Errors (InvalidArgument): "malformed JSON: parse error at line L, column C: <reason> near
// '<excerpt>'", "JSON nesting deeper than N levels", "JSON text longer than N bytes". Never throws.
// A NUL byte outside a string ends nlohmann's input; it is refused here (it is not JSON).
template <class J>
Result<J> parseJsonBounded(std::string_view text, const JsonLimits& limits = kConfigJsonLimits);

extern template Result<nlohmann::json> parseJsonBounded<nlohmann::json>(std::string_view,
                                                                       const JsonLimits&);
extern template Result<nlohmann::ordered_json> parseJsonBounded<nlohmann::ordered_json>(
    std::string_view, const JsonLimits&);

// Nesting depth of a built document (a scalar is 0, [] is 1), without recursion: for documents
// built from parts (a check before serialising one whose parts came from elsewhere).
template <class J>
int documentDepth(const J& doc);

extern template int documentDepth<nlohmann::json>(const nlohmann::json&);
extern template int documentDepth<nlohmann::ordered_json>(const nlohmann::ordered_json&);

// A scalar JSON value as config text (strings as they are, booleans as true/false, numbers as
// JSON writes them); nullopt for null, objects and arrays.
std::optional<std::string> jsonScalarText(const nlohmann::json& v);

// A JSON object whose values are strings, numbers or booleans, as a StringMap (connector configs
// in REST bodies and pipeline definitions). `what` names the object in messages, e.g. "config" or
// "sinks[1]".
Result<StringMap> jsonObjectToStringMap(const nlohmann::json& obj, const std::string& what);

}  // namespace ferry::core
