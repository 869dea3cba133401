// Pipelines: a source, a transform chain and one or more sinks declared as one object
// (REST `/pipelines`, pipeline files given to `ferry standalone|distributed`), materialised as
// ordinary connectors. Pure functions, no I/O; control/pipeline_ops.h applies them to a Herder
// (validate, create, replace, delete, with rollback) for the REST routes and the worker's files.
//
// Body (POST /pipelines; PUT /pipelines/{name} takes the same body, name optional):
//   {"name": "iot-up",
//    "mode": "direct" | "backbone",                      default "direct"
//    "source": {"connector.class": "MQTTSource", ...},   a source connector's config
//    "transforms": [{"alias": "bridge", "type": "MqttRocketMQBridge", ...}, ...],   optional
//    "sinks": [{"connector.class": "RocketMQSink", ..., "rule": "SELECT ..."}, ...]
//                                                        ("sink": {...} for just one)
//    "filter": "SELECT * FROM \"sensors/#\" WHERE payload.temp > 30",   optional
//    "topic": "..."}                                     backbone only; default "pipeline-<name>"
//
// Rules (transforms/rules/README.md) filter and route: `filter` decides which records enter the
// pipeline at all (its FROM and WHERE; the record passes unchanged); a sink's `rule` decides which
// records reach that sink and shapes them (its SELECT becomes the value), as an EMQX rule feeds
// its action. Both are materialised as Rule transforms with the reserved aliases
// `pipeline-filter` and `pipeline-route`, ahead of the pipeline's transforms; records matching no
// FROM filter are dropped.
//
// Materialisation (every connector carries pipeline=<name> and pipeline.role):
//   direct    one direct connector <name>: the source's keys, filter + rule + transforms, the sink's
//             keys under sink.* (a direct task: no backbone hop; exactly one sink).
//   backbone  <name>-source applies the filter and writes to the backbone topic (its `topic` key);
//             <name>-sink-<i> (i = 1..N) each read it (`topics`) and apply their rule and the
//             transforms, so the backbone holds the filtered records as they came and every sink
//             selects and maps them itself.
// The connectors keep their names across PUTs that keep the mode, so a source keeps its positions.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/config.h"
#include "ferry/result.h"
#include <nlohmann/json.hpp>

namespace ferry::control {

using Json = nlohmann::json;

inline constexpr const char* kPipelineKey = "pipeline";
inline constexpr const char* kPipelineRoleKey = "pipeline.role";

enum class PipelineMode { kDirect, kBackbone };

struct PipelineTransform {
  std::string alias;
  StringMap config;  // "type" and the transform's own keys
};

struct PipelineSpec {
  std::string name;
  PipelineMode mode = PipelineMode::kDirect;
  StringMap source;
  std::vector<PipelineTransform> transforms;
  std::vector<StringMap> sinks;
  std::string topic;  // backbone mode only
  std::string filter;                 // a rule; empty = every record
  std::vector<std::string> sinkRules;  // one per sink; empty = every record, unchanged
};

inline constexpr const char* kFilterAlias = "pipeline-filter";
inline constexpr const char* kRouteAlias = "pipeline-route";

// One materialised connector: its name, full config and the pipeline field it came from (for
// naming validation errors in the pipeline's own terms).
struct PipelineConnector {
  std::string name;
  StringMap config;
};

// A JSON list of {"alias": "a", "type": "T", ...} objects (transforms or predicates), as pipelines
// and POST /rules/test take them. A missing alias becomes <defaultPrefix><n> (1-based); aliases
// are non-empty, without ',', '.' or spaces, and unique; "type" is required. Errors name the field
// ("transforms[1].alias: ...").
Result<std::vector<PipelineTransform>> parseAliasedList(const Json& list, const std::string& field,
                                                        const std::string& defaultPrefix);
// The connector keys of such a list: <kind>=a,b and <kind>.a.type=T, ...
void addAliasedKeys(const std::vector<PipelineTransform>& items, const std::string& kind, StringMap& out);

// Pipeline names: 1-200 characters of [A-Za-z0-9._-] (they prefix connector and topic names).
Status validatePipelineName(std::string_view name);

// Parses a body. `pathName` is the name from PUT's URL: a name in the body must then equal it.
// Errors name the field: "sinks[1]: ...", "transforms[0].alias: ...", "source: ...".
Result<PipelineSpec> parsePipeline(std::string_view body, const std::optional<std::string>& pathName);

// The connectors the pipeline consists of, in creation order (source first).
std::vector<PipelineConnector> materialisePipeline(const PipelineSpec& spec);

// The pipeline field a materialised connector's config key came from, e.g. ("p-sink-2",
// "mqtt.qos") -> "sinks[1].mqtt.qos", ("p", "sink.mqtt.qos") -> "sinks[0].mqtt.qos",
// ("p", "transforms.bridge.rules") -> "transforms.bridge.rules", ("p", "tasks.max") ->
// "source.tasks.max".
std::string pipelineField(const PipelineSpec& spec, const std::string& connector, const std::string& key);

// Rebuilds a pipeline from the configs of its connectors (those whose `pipeline` key is `name`).
// FailedPrecondition when they do not form a pipeline (a connector of it deleted by hand, say).
Result<PipelineSpec> pipelineFromConnectors(const std::string& name, const std::vector<PipelineConnector>& connectors);

// The body shape above, with "transforms" and "sinks" always as lists.
Json pipelineJson(const PipelineSpec& spec);

}  // namespace ferry::control
