// Tolerant reader for the JSON dialect RocketMQ servers write with fastjson 1.2.x (spec §5.1).
//
// parseFastjson() first rewrites the text into strict JSON and then parses it with nlohmann::json:
//   - bare object keys (numbers such as `{0:"addr"}`, `-1`, or identifiers) become quoted keys;
//   - a JSON value in key position (`{{"brokerName":"b","queueId":0}:5}`) becomes a string key
//     holding that value's compact strict-JSON text;
//   - single-quoted strings, trailing commas and raw control characters inside strings are
//     accepted.
// Integers keep full int64/uint64 precision (nlohmann stores them exactly). Duplicate keys: the
// last one wins. Nesting deeper than 256 levels is rejected. Never throws.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ferry/result.h"

namespace ferry::rocketmq {

// Parses `text` (strict JSON or fastjson's dialect). InvalidArgument when it is neither.
Result<nlohmann::json> parseFastjson(std::string_view text);

// The strict-JSON text parseFastjson() hands to nlohmann (exposed for tests).
Result<std::string> normalizeFastjson(std::string_view text);

// Appends `text` as a quoted JSON string: '"', '\\' and control characters escaped as nlohmann's
// dump() writes them (\b \f \n \r \t, the others \u00xx), every other byte as it is (the
// caller answers for UTF-8). Used by the normalizer and by encodeJsonHeader's plain path.
void appendJsonString(std::string& out, std::string_view text);

}  // namespace ferry::rocketmq
