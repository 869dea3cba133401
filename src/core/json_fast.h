// simdjson's read-only DOM next to nlohmann's documents: for code that only reads a value (the
// rule evaluator's payload paths) and for parseJson's fast path (json_read.h). Kept apart so only
// the files that need simdjson include it.
//
// Thread-safety: free functions.
#pragma once

#include <simdjson.h>

#include <nlohmann/json.hpp>

namespace ferry::core {

// A simdjson parser bounded to kRecordJsonLimits.maxDepth levels (a deeper text fails with
// DEPTH_ERROR), for a caller to keep (each keeps its own: a parse invalidates the elements of the
// parser's previous document).
simdjson::dom::parser boundedFastParser();

// `out` becomes the nlohmann document of `e`, with the types nlohmann's own parser gives:
// non-negative integers unsigned, duplicate keys the last value in the place of the first.
void toJson(simdjson::dom::element e, nlohmann::ordered_json& out);

}  // namespace ferry::core
