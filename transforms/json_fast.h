// simdjson's read-only DOM next to the nlohmann documents the transforms edit: for code that only
// reads a value (the rule evaluator's payload paths) and for parseJson's fast path. Kept out of
// json_util.h so only the files that need simdjson include it.
//
// Thread-safety: free functions.
#pragma once

#include <simdjson.h>

#include "transforms/json_util.h"

namespace ferry::transforms {

// A simdjson parser bounded to core::kRecordJsonLimits.maxDepth levels (a deeper text fails with
// DEPTH_ERROR), for a caller to keep (each keeps its own: a parse invalidates the elements of the
// parser's previous document).
simdjson::dom::parser boundedFastParser();

// `out` becomes the nlohmann document of `e`, with the types nlohmann's own parser gives:
// non-negative integers unsigned, duplicate keys the last value in the place of the first.
void toJson(simdjson::dom::element e, Json& out);

}  // namespace ferry::transforms
