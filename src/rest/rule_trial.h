// POST /rules/test: try a rule or a whole transform chain on sample records. Pure functions, no
// I/O; the route in rest_server.cc builds the chain with the Herder's plugins and traces it.
//
// Body — what to run, exactly one of:
//   {"rule": "SELECT ... FROM \"sensors/+/data\" WHERE ...",     a rule alone (as a Rule
//    "unmatched": "drop" | "pass"}                                transform; default drop)
//   {"transforms": [{"alias": "a", "type": "Rule", "sql": ...}, ...],   the pipeline shape, and
//    "predicates": [{"alias": "p", "type": "TopicNameMatches", ...}]}   optionally predicates
//   {"config": {"transforms": "a,b", "transforms.a.type": ..., ...}}   a connector's keys
// and the records (1 to 1000):
//   "records": [{"topic": "t", "mqtt_topic": "sensors/d1/data", "key": ..., "value": ...,
//                "headers": {"h": "v"}, "timestamp": 1764800000000}]
// A value or key that is a JSON string is used as its text; any other JSON (object, array,
// number, boolean) as its compact JSON text; null (or absent) is a null (a tombstone value).
// `mqtt_topic` becomes the `mqtt.topic` header, as the MQTT source sets it.
//
// Response 200: {"records": [{"index": 0, "result": "kept" | "dropped" | "error",
//   "error": "...", "output": <record>, "steps": [{"alias", "type",
//   "result": "ok" | "skipped" | "dropped" | "error", "error": "...", "record": <record>}]}]}
// where <record> = {"topic", "key", "value", "headers", "timestamp"} and a key or value that is
// valid JSON is shown as JSON, other bytes as a string. A chain that does not build (an unknown
// transform, a rule with a syntax error — "line L, column C: ...") is a 400.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <string_view>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"
#include "rest/json_mapping.h"
#include "runtime/transform_chain.h"

namespace ferry::rest {

inline constexpr std::size_t kMaxTrialRecords = 1000;

struct RuleTrial {
  StringMap chainConfig;        // transforms=..., predicates=..., as a connector carries them
  std::vector<Record> records;
};

// Parses a body; errors name the field ("records[2].headers.h: must be a string").
Result<RuleTrial> parseRuleTrial(std::string_view body);

// The response object for records traced through a chain: traces[i] belongs to records[i].
Json ruleTrialJson(const std::vector<std::vector<runtime::TransformChain::StepTrace>>& traces,
                   const std::vector<Record>& outputs);

}  // namespace ferry::rest
