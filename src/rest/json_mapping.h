// JSON <-> ferry values for the REST surface: pure functions, no I/O, no server.
//
// Parsing: every parse* function takes the raw request body and returns a value or an
// InvalidArgument Status whose message says where the JSON is malformed (line, column) or which
// field has the wrong shape. No exception escapes any function here (the body goes through
// core::parseJsonBounded, nesting is bounded to kMaxJsonDepth, and every access is
// type-checked), so they are safe on arbitrary bytes (see tests/fuzz/rest_config). Messages
// quote at most a few escaped characters of the body, never the body itself.
//
// Leniency: Kafka Connect accepts only strings as config values; ferry also accepts numbers and
// booleans and turns them into their JSON text ("tasks.max": 2 -> "2", true -> "true").
//
// Rendering: the to*Json functions produce Kafka Connect's response shapes. dumpJson never throws
// (invalid UTF-8 coming from configs or traces is replaced by U+FFFD).
//
// Thread-safety: free functions without shared state.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/herder.h"
#include "ferry/config.h"
#include "ferry/result.h"
#include "runtime/tap.h"

namespace ferry::rest {

using Json = nlohmann::json;

inline constexpr int kMaxJsonDepth = 64;

// Parses a JSON text. Errors: "malformed JSON: parse error at line L, column C: ... near '...'",
// an empty body, or nesting deeper than kMaxJsonDepth.
Result<Json> parseJson(std::string_view body);

// A JSON object whose values are strings, numbers or booleans, as a StringMap. `what` names the
// object in messages, e.g. "config" or "offsets[1].partition".
Result<StringMap> toStringMap(const Json& obj, const std::string& what);

// POST /connectors: {"name": "...", "config": {...}, "initial_state": "RUNNING|PAUSED|STOPPED"?}.
// A "name" inside config must equal the outer name. Unknown top-level fields are ignored.
struct CreateConnectorRequest {
  std::string name;
  StringMap config;
  std::optional<store::TargetState> initialState;
};
Result<CreateConnectorRequest> parseCreateConnector(std::string_view body);

// PUT /connectors/{name}/config, validate, RocketMQ-style create: a flat object whose values are
// strings, numbers or booleans.
Result<StringMap> parseConfigMap(std::string_view body);

// PATCH /connectors/{name}/config: like a config map, but null removes the key (nullopt).
using PatchRequest = std::map<std::string, std::optional<std::string>>;
Result<PatchRequest> parsePatch(std::string_view body);

// PATCH /connectors/{name}/offsets: {"offsets": [{"partition": {...}, "offset": {...} | null}]}.
// An empty list is refused (400), as Kafka Connect does.
// A null offset becomes an empty offset map (which resets that partition). Partition and offset
// values may be strings, numbers or booleans (Kafka's sink offsets are numbers).
Result<control::PositionList> parseOffsets(std::string_view body);

// PUT /admin/loggers/{name}: {"level": "DEBUG"}. Returns the level text as given.
Result<std::string> parseLoggerLevel(std::string_view body);

// Checks a connector name taken from a URL or a body: not empty or blank, no control characters.
Status validateConnectorName(std::string_view name);

// Parses "RUNNING"/"STARTED", "PAUSED", "STOPPED" (any case) as Kafka Connect's initial_state.
std::optional<store::TargetState> parseInitialState(std::string_view text);

// --- rendering (Kafka Connect shapes)
const char* stateText(store::State s) noexcept;                    // "RUNNING", "FAILED", ...
// Kafka's words only: "source", "sink" ("source" for a direct connector, whose answers also carry
// "ferry_type": "direct").
const char* connectorTypeText(control::ConnectorType t) noexcept;
const char* pluginTypeText(PluginKind k) noexcept;  // "source", "transformation", ...

// {"name", "config", "tasks": [{"connector", "task"}], "type", "ferry_type"?}
Json connectorInfoJson(const control::ConnectorInfo& info);
// {"name", "connector": {"state", "worker_id", "version", "trace"?}, "tasks": [...], "type",
// "ferry_type"?}; `version` is the connector plugin's version (Kafka Connect 4.x).
Json connectorStatusJson(const control::ConnectorStateInfo& status, const std::string& version = "");
// {"id", "state", "worker_id", "version", "trace"?, "data_loss"?}
Json taskStatusJson(const control::TaskStateInfo& task, const std::string& version = "");
// [{"id": {"connector", "task"}, "config": {...}}]
Json taskConfigsJson(const std::string& connector, const std::vector<control::TaskInfo>& tasks);
// ConfigKeyInfo as Kafka Connect 4.x: {"name", "type", "required", "default_value" (null when
// there is none or it is empty, except lists and booleans), "importance", "documentation",
// "group", "order", "width", "display_name", "dependents"}
Json configKeyJson(const ConfigKey& key, int orderInGroup);
// [ConfigKeyInfo...] with order counted per group.
Json configKeysJson(const std::vector<ConfigKey>& keys);
// ConfigInfos: {"name", "error_count", "groups", "configs": [{"definition", "value"}],
// "warnings"?: [{"name", "message"}]} (warnings: undeclared keys that were accepted; ferry's own
// field, which Kafka Connect's clients ignore)
Json configReportJson(const control::ConfigReport& report);
// The name Kafka Connect would list for a plugin: its first dotted alias (the Java class name,
// e.g. org.apache.kafka.connect.file.FileStreamSinkConnector), else ferry's class name.
std::string kafkaClassName(const runtime::PluginInfo& plugin);
// {"class" (kafkaClassName), "type", "version"}; `detailed` (RocketMQ's /plugin/list) has ferry's
// class name and adds "aliases", "summary", "origin".
Json pluginJson(const runtime::PluginInfo& plugin, bool detailed = false);
// {"offsets": [{"partition": {...}, "offset": {...}}]}. Offset values and kafka_partition that are
// an integer's canonical text ("370", not "0370") are rendered as JSON numbers, as Kafka Connect
// shows them (positions are stored as text; PATCH stores a number as its text).
Json positionsJson(const control::PositionList& positions);
// {"error_code": status, "message": message}, the worker's private folders (data.dir) in the
// message shown relative to them (core::withoutPrivatePaths).
Json errorJson(int httpStatus, std::string_view message);

// Serialises without ever throwing (invalid UTF-8 is replaced).
std::string dumpJson(const Json& j, int indent = -1);

// The HTTP status for a Status code, as herder.h specifies: InvalidArgument 400, NotFound 404,
// AlreadyExists and FailedPrecondition 409, everything else 500.
int httpStatusFor(StatusCode code) noexcept;

// POST /connectors/{name}/tap's body: empty, or {"max_records_per_second": n, "buffer": n,
// "idle_timeout_ms": n} (each optional, numbers; others refused by name).
Result<runtime::TapOptions> parseTapOptions(std::string_view body);
// GET /taps/{id}: {"connector", "records": [{task, topic, key, key_encoding, key_size,
// key_truncated, value, ..., headers: [{key, value, encoding}], timestamp, tapped_at}],
// "sampled_out", "overflowed"}. Text that is valid UTF-8 is a string ("utf8"), other bytes base64.
Json tapBatchJson(const runtime::TapBatch& batch);
// One record of a tap batch: {task, topic, key, ..., headers, timestamp, tapped_at}.
Json tappedRecordJson(const runtime::TappedRecord& record);

}  // namespace ferry::rest
