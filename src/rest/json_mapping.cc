#include "rest/json_mapping.h"

#include <cmath>
#include <charconv>
#include <exception>

#include "core/base64.h"
#include "core/cloudevents.h"  // rfc3339
#include "core/json_bounds.h"
#include "core/private_paths.h"

namespace ferry::rest {
namespace {

std::string describe(const Json& v) {
  return std::string(v.type_name());  // "object", "array", "null", "number", ...
}

}  // namespace

Result<StringMap> toStringMap(const Json& obj, const std::string& what) {
  return core::jsonObjectToStringMap(obj, what);
}

namespace {

Result<Json> parseObject(std::string_view body, std::string_view expected) {
  FERRY_ASSIGN_OR_RETURN(Json j, parseJson(body));
  if (!j.is_object())
    return Status::invalidArgument("request body must be a JSON object (" + std::string(expected) +
                                   "), not " + describe(j));
  return j;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Result<Json> parseJson(std::string_view body) {
  bool blank = true;
  for (char c : body) blank = blank && (c == ' ' || c == '\t' || c == '\r' || c == '\n');
  if (blank) return Status::invalidArgument("request body is empty: expected JSON");
  return core::parseJsonBounded<Json>(body, core::JsonLimits{kMaxJsonDepth, body.size()});
}

Status validateConnectorName(std::string_view name) {
  bool blank = true;
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      return Status::invalidArgument("connector name must not contain control characters");
    blank = blank && c == ' ';
  }
  if (blank) return Status::invalidArgument("connector name must not be empty");
  return Status::ok();
}

std::optional<store::TargetState> parseInitialState(std::string_view text) {
  std::string u = upper(text);
  if (u == "RUNNING" || u == "STARTED") return store::TargetState::kStarted;
  if (u == "PAUSED") return store::TargetState::kPaused;
  if (u == "STOPPED") return store::TargetState::kStopped;
  return std::nullopt;
}

Result<CreateConnectorRequest> parseCreateConnector(std::string_view body) {
  FERRY_ASSIGN_OR_RETURN(Json j, parseObject(body, R"({"name": ..., "config": {...}})"));
  CreateConnectorRequest req;
  auto name = j.find("name");
  if (name == j.end() || name->is_null())
    return Status::invalidArgument("field 'name' is required");
  if (!name->is_string())
    return Status::invalidArgument("field 'name' must be a string, not " + describe(*name));
  req.name = name->get<std::string>();
  FERRY_RETURN_IF_ERROR(validateConnectorName(req.name).withContext("field 'name'"));
  auto config = j.find("config");
  if (config == j.end() || config->is_null())
    return Status::invalidArgument("field 'config' is required (a JSON object of string values)");
  FERRY_ASSIGN_OR_RETURN(req.config, toStringMap(*config, "config"));
  if (auto it = req.config.find("name"); it != req.config.end() && it->second != req.name)
    return Status::invalidArgument("config 'name' (" + it->second +
                                   ") does not match the connector name (" + req.name + ")");
  auto state = j.find("initial_state");
  if (state != j.end() && !state->is_null()) {
    if (!state->is_string())
      return Status::invalidArgument("field 'initial_state' must be a string, not " +
                                     describe(*state));
    req.initialState = parseInitialState(state->get_ref<const std::string&>());
    if (!req.initialState)
      return Status::invalidArgument(
          "field 'initial_state' must be RUNNING, PAUSED or STOPPED, not '" +
          state->get<std::string>() + "'");
  }
  return req;
}

Result<StringMap> parseConfigMap(std::string_view body) {
  FERRY_ASSIGN_OR_RETURN(Json j, parseObject(body, "a config map of string values"));
  return toStringMap(j, "config");
}

Result<PatchRequest> parsePatch(std::string_view body) {
  FERRY_ASSIGN_OR_RETURN(Json j, parseObject(body, "a config map; null removes a key"));
  PatchRequest out;
  for (const auto& [k, v] : j.items()) {
    if (v.is_null()) {
      out.emplace(k, std::nullopt);
      continue;
    }
    auto text = core::jsonScalarText(v);
    if (!text)
      return Status::invalidArgument(
          "value of '" + k + "' in 'config' must be a string, number, boolean or null, not " +
          describe(v));
    out.emplace(k, std::move(*text));
  }
  return out;
}

Result<control::PositionList> parseOffsets(std::string_view body) {
  FERRY_ASSIGN_OR_RETURN(
      Json j, parseObject(body, R"({"offsets": [{"partition": {...}, "offset": {...}}]})"));
  auto offsets = j.find("offsets");
  if (offsets == j.end() || offsets->is_null())
    return Status::invalidArgument("field 'offsets' is required");
  if (!offsets->is_array())
    return Status::invalidArgument("field 'offsets' must be an array, not " + describe(*offsets));
  // Kafka Connect refuses an empty list: nothing to alter is a mistake, not a no-op.
  if (offsets->empty())
    return Status::invalidArgument("Partitions / offsets need to be provided for an alter offsets request");
  control::PositionList out;
  for (std::size_t i = 0; i < offsets->size(); ++i) {
    const Json& e = (*offsets)[i];
    std::string at = "offsets[" + std::to_string(i) + "]";
    if (!e.is_object())
      return Status::invalidArgument("'" + at + "' must be an object, not " + describe(e));
    Position p;
    auto part = e.find("partition");
    if (part == e.end() || part->is_null())
      return Status::invalidArgument("'" + at + ".partition' is required");
    FERRY_ASSIGN_OR_RETURN(p.partition, toStringMap(*part, at + ".partition"));
    if (p.partition.empty())
      return Status::invalidArgument("'" + at + ".partition' must not be empty");
    auto off = e.find("offset");
    if (off != e.end() && !off->is_null()) {
      FERRY_ASSIGN_OR_RETURN(p.offset, toStringMap(*off, at + ".offset"));
    }
    out.push_back(std::move(p));
  }
  return out;
}

Result<std::string> parseLoggerLevel(std::string_view body) {
  FERRY_ASSIGN_OR_RETURN(Json j, parseObject(body, R"({"level": "DEBUG"})"));
  auto level = j.find("level");
  if (level == j.end() || level->is_null())
    return Status::invalidArgument("field 'level' is required");
  if (!level->is_string())
    return Status::invalidArgument("field 'level' must be a string, not " + describe(*level));
  return level->get<std::string>();
}

// --- rendering

const char* stateText(store::State s) noexcept {
  switch (s) {
    case store::State::kUnassigned:
      return "UNASSIGNED";
    case store::State::kRunning:
      return "RUNNING";
    case store::State::kPaused:
      return "PAUSED";
    case store::State::kStopped:
      return "STOPPED";
    case store::State::kFailed:
      return "FAILED";
    case store::State::kRestarting:
      return "RESTARTING";
    case store::State::kDestroyed:
      return "DESTROYED";
  }
  return "UNASSIGNED";
}

const char* connectorTypeText(control::ConnectorType t) noexcept {
  switch (t) {
    case control::ConnectorType::kSource:
      return "source";
    case control::ConnectorType::kSink:
      return "sink";
    case control::ConnectorType::kDirect:
      // Kafka Connect's clients know only source and sink; a direct connector reads an outside
      // system like a source does (its positions are source positions). ferry_type says more.
      return "source";
    case control::ConnectorType::kUnknown:
      return "unknown";
  }
  return "unknown";
}

namespace {
// ferry's own shape beside Kafka's `type`, only where the two differ.
void addFerryType(Json& j, control::ConnectorType t) {
  if (t == control::ConnectorType::kDirect) j["ferry_type"] = "direct";
}
}  // namespace

const char* pluginTypeText(PluginKind k) noexcept {
  switch (k) {
    case PluginKind::kSourceConnector:
      return "source";
    case PluginKind::kSinkConnector:
      return "sink";
    case PluginKind::kTransform:
      return "transformation";
    case PluginKind::kPredicate:
      return "predicate";
    case PluginKind::kConverter:
      return "converter";
  }
  return "unknown";
}

Json connectorInfoJson(const control::ConnectorInfo& info) {
  Json tasks = Json::array();
  for (int id : info.tasks) tasks.push_back({{"connector", info.name}, {"task", id}});
  Json j = {{"name", info.name},
            {"config", info.config},
            {"tasks", std::move(tasks)},
            {"type", connectorTypeText(info.type)}};
  addFerryType(j, info.type);
  return j;
}

Json taskStatusJson(const control::TaskStateInfo& task, const std::string& version) {
  Json j = {{"id", task.id},
            {"state", stateText(task.state)},
            {"worker_id", task.workerId},
            {"version", version}};
  if (!task.trace.empty()) j["trace"] = core::withoutPrivatePaths(task.trace);
  if (!task.dataLoss.empty()) j["data_loss"] = task.dataLoss;
  if (task.progress) {
    const auto& p = *task.progress;
    Json progress = {{"phase", p.phase}, {"done", p.done}, {"unit", p.unit},
                     {"rate_per_second", std::round(task.progressRate * 10) / 10}};
    if (p.estimated >= 0) {
      progress["estimated"] = p.estimated;
      if (p.estimated > 0)
        progress["percent"] = std::min(100.0, std::round(1000.0 * static_cast<double>(p.done) / static_cast<double>(p.estimated)) / 10);
    }
    j["progress"] = std::move(progress);
  }
  if (task.connection) {
    // Kafka Connect keeps such a task RUNNING; the connection says what it is doing, and while it
    // is not connected its reason is the trace too.
    const auto& c = *task.connection;
    Json conn = {{"state", c.state}, {"since", core::cloudevents::rfc3339(c.sinceMs)}, {"since_ms", c.sinceMs},
                 {"reconnects", c.reconnects}};
    if (!c.reason.empty()) {
      conn["error"] = core::withoutPrivatePaths(c.reason);
      if (task.trace.empty()) j["trace"] = conn["error"];
    }
    j["connection"] = std::move(conn);
  }
  if (task.counters) {
    const auto& c = *task.counters;
    j["metrics"] = {{"records_in", c.recordsIn}, {"records_out", c.recordsOut}, {"errors", c.errors},
                    {"commit_lag_records", c.commitLag}};
  }
  return j;
}

Json connectorStatusJson(const control::ConnectorStateInfo& status, const std::string& version) {
  Json connector = {
      {"state", stateText(status.state)}, {"worker_id", status.workerId}, {"version", version}};
  if (!status.trace.empty()) connector["trace"] = core::withoutPrivatePaths(status.trace);
  Json tasks = Json::array();
  for (const auto& t : status.tasks) tasks.push_back(taskStatusJson(t, version));
  Json j = {{"name", status.name},
            {"connector", std::move(connector)},
            {"tasks", std::move(tasks)},
            {"type", connectorTypeText(status.type)}};
  addFerryType(j, status.type);
  return j;
}

Json taskConfigsJson(const std::string& connector, const std::vector<control::TaskInfo>& tasks) {
  Json out = Json::array();
  for (const auto& t : tasks)
    out.push_back({{"id", {{"connector", connector}, {"task", t.id}}}, {"config", t.config}});
  return out;
}

Json configKeyJson(const ConfigKey& key, int orderInGroup) {
  // Kafka Connect 4.x's ConfigKeyInfo: `order` (not order_in_group), null for no default.
  Json j = {{"name", key.name},
            {"type", configTypeName(key.type)},
            {"required", key.required()},
            {"default_value", nullptr},
            {"importance", importanceName(key.importance)},
            {"documentation", key.documentation},
            {"group", nullptr},
            {"order", orderInGroup},
            {"width", "NONE"},
            {"display_name", key.displayName.empty() ? key.name : key.displayName},
            {"dependents", Json::array()}};
  // An empty default is "no default" to Kafka's clients (null), except for lists and booleans
  // where "" is a value Kafka Connect shows as well.
  if (key.defaultValue &&
      (!key.defaultValue->empty() || key.type == ConfigType::kList || key.type == ConfigType::kBool))
    j["default_value"] = *key.defaultValue;
  if (!key.group.empty()) j["group"] = key.group;
  return j;
}

Json configKeysJson(const std::vector<ConfigKey>& keys) {
  Json out = Json::array();
  std::map<std::string, int> order;
  for (const auto& k : keys) {
    int o = k.group.empty() ? -1 : order[k.group]++;
    out.push_back(configKeyJson(k, o));
  }
  return out;
}

Json configReportJson(const control::ConfigReport& report) {
  Json configs = Json::array();
  std::map<std::string, int> order;
  for (const auto& k : report.keys) {
    int o = k.definition.group.empty() ? -1 : order[k.definition.group]++;
    Json value = {{"name", k.definition.name},
                  {"value", nullptr},
                  {"recommended_values", k.definition.recommended},
                  {"errors", k.errors},
                  {"visible", true}};
    if (k.value) value["value"] = *k.value;
    configs.push_back(
        {{"definition", configKeyJson(k.definition, o)}, {"value", std::move(value)}});
  }
  Json j = {{"name", report.className},
            {"error_count", report.errorCount},
            {"groups", report.groups},
            {"configs", std::move(configs)}};
  // Keys nobody declared (accepted): a field of its own that Kafka Connect's clients ignore, so
  // error_count and configs keep Kafka's meaning.
  if (!report.warnings.empty()) {
    Json w = Json::array();
    for (const auto& [key, message] : report.warnings) w.push_back({{"name", key}, {"message", message}});
    j["warnings"] = std::move(w);
  }
  return j;
}

std::string kafkaClassName(const runtime::PluginInfo& plugin) {
  for (const auto& a : plugin.aliases)
    if (a.find('.') != std::string::npos) return a;
  return plugin.className;
}

Json pluginJson(const runtime::PluginInfo& plugin, bool detailed) {
  Json j = {{"class", detailed ? plugin.className : kafkaClassName(plugin)},
            {"type", pluginTypeText(plugin.kind)},
            {"version", plugin.version}};
  if (detailed) {
    j["aliases"] = plugin.aliases;
    j["summary"] = plugin.summary;
    j["origin"] = plugin.origin;
  }
  return j;
}

Json positionsJson(const control::PositionList& positions) {
  // Positions are stored as text; a value that is an integer's canonical text was a number
  // (connectors store numbers that way, and PATCH stores JSON numbers that way), so it goes back
  // out as a number, as Kafka Connect shows it. Partition values stay text except
  // kafka_partition (a partition names a file, a topic, ...; "007" or "12" there is a name).
  auto canonicalInteger = [](const std::string& v, std::int64_t& n) {
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    return ec == std::errc() && end == v.data() + v.size() && !v.empty() && std::to_string(n) == v;
  };
  auto render = [&](const StringMap& m, bool offset) {
    Json j = Json::object();
    for (const auto& [k, v] : m) {
      if (offset || k == "kafka_partition") {
        std::int64_t n = 0;
        if (canonicalInteger(v, n)) {
          j[k] = n;
          continue;
        }
      }
      if (k == "kafka_partition" || k == "kafka_offset") {
        std::int64_t n = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec == std::errc() && end == v.data() + v.size() && !v.empty()) {
          j[k] = n;
          continue;
        }
      }
      j[k] = v;
    }
    return j;
  };
  Json list = Json::array();
  for (const auto& p : positions)
    list.push_back({{"partition", render(p.partition, false)}, {"offset", render(p.offset, true)}});
  return {{"offsets", std::move(list)}};
}

Json errorJson(int httpStatus, std::string_view message) {
  return {{"error_code", httpStatus}, {"message", core::withoutPrivatePaths(message)}};
}

std::string dumpJson(const Json& j, int indent) {
  try {
    return j.dump(indent, ' ', false, Json::error_handler_t::replace);
  } catch (...) {
    // Only allocation failure can get here; answer with something well-formed.
    return R"({"error_code": 500, "message": "could not render the response"})";
  }
}

int httpStatusFor(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
      return 409;
    default:
      return 500;
  }
}

Result<runtime::TapOptions> parseTapOptions(std::string_view body) {
  runtime::TapOptions o;
  bool blank = true;
  for (char c : body) blank = blank && (c == ' ' || c == '\t' || c == '\r' || c == '\n');
  if (blank) return o;
  FERRY_ASSIGN_OR_RETURN(Json j, parseObject(body, "the tap's options"));
  for (const auto& [key, value] : j.items()) {
    if (!value.is_number())
      return Status::invalidArgument("'" + key.substr(0, 64) + "' must be a number, not " + describe(value));
    const double v = value.get<double>();
    if (key == "max_records_per_second") {
      o.recordsPerSecond = v;
    } else if (key == "buffer") {
      if (v < 1 || v > static_cast<double>(runtime::kMaxTapCapacity) || v != static_cast<double>(static_cast<std::int64_t>(v)))
        return Status::invalidArgument("buffer must be a whole number between 1 and " + std::to_string(runtime::kMaxTapCapacity));
      o.capacity = static_cast<std::size_t>(v);
    } else if (key == "idle_timeout_ms") {
      if (!(v >= 1000 && v <= 300000)) return Status::invalidArgument("idle_timeout_ms must be between 1000 and 300000");
      o.idleMs = static_cast<std::int64_t>(v);
    } else {
      return Status::invalidArgument("unknown tap option '" + key.substr(0, 64) +
                                     "' (max_records_per_second, buffer, idle_timeout_ms)");
    }
  }
  return o;
}

namespace {
void putBytes(Json& out, const std::string& name, const Bytes& b, bool isNull, std::size_t size, bool truncated) {
  if (isNull) {
    out[name] = nullptr;
    return;
  }
  if (runtime::tapValidUtf8(b.view())) {
    out[name] = std::string(b.view());
    out[name + "_encoding"] = "utf8";
  } else {
    out[name] = core::base64Encode(b.view());
    out[name + "_encoding"] = "base64";
  }
  out[name + "_size"] = size;
  if (truncated) out[name + "_truncated"] = true;
}
}  // namespace

Json tappedRecordJson(const runtime::TappedRecord& r) {
  Json j = {{"task", r.task}, {"topic", runtime::tapValidUtf8(r.topic) ? r.topic : core::base64Encode(r.topic)},
            {"timestamp", r.timestampMs}, {"tapped_at", r.tappedAtMs}};
  putBytes(j, "key", r.key, r.keyNull, r.keySize, r.keyTruncated);
  putBytes(j, "value", r.value, r.valueNull, r.valueSize, r.valueTruncated);
  Json headers = Json::array();
  for (const auto& h : r.headers) {
    Json hj = {{"key", runtime::tapValidUtf8(h.key) ? h.key : core::base64Encode(h.key)}};
    putBytes(hj, "value", h.value, h.value.isNull(), h.value.size(), false);
    headers.push_back(std::move(hj));
  }
  j["headers"] = std::move(headers);
  return j;
}

Json tapBatchJson(const runtime::TapBatch& b) {
  Json records = Json::array();
  for (const auto& r : b.records) records.push_back(tappedRecordJson(r));
  return {{"connector", b.connector}, {"records", std::move(records)}, {"sampled_out", b.sampledOut},
          {"overflowed", b.overflowed}};
}

}  // namespace ferry::rest
