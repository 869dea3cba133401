#include "rest/json_mapping.h"

#include <charconv>
#include <exception>

#include "core/json_bounds.h"
#include "core/private_paths.h"

namespace ferry::rest {
namespace {

std::string describe(const Json& v) {
  return std::string(v.type_name());  // "object", "array", "null", "number", ...
}

// A scalar JSON value as config text; nullopt for null, objects and arrays.
std::optional<std::string> scalarText(const Json& v) {
  switch (v.type()) {
    case Json::value_t::string:
      return v.get_ref<const std::string&>();
    case Json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case Json::value_t::number_integer:
      return std::to_string(v.get<std::int64_t>());
    case Json::value_t::number_unsigned:
      return std::to_string(v.get<std::uint64_t>());
    case Json::value_t::number_float:
      return v.dump();
    default:
      return std::nullopt;
  }
}

}  // namespace

Result<StringMap> toStringMap(const Json& obj, const std::string& what) {
  if (!obj.is_object())
    return Status::invalidArgument("'" + what + "' must be a JSON object of string values, not " +
                                   describe(obj));
  StringMap out;
  for (const auto& [k, v] : obj.items()) {
    auto text = scalarText(v);
    if (!text)
      return Status::invalidArgument("value of '" + k + "' in '" + what +
                                     "' must be a string, number or boolean, not " + describe(v));
    out.emplace(k, std::move(*text));
  }
  return out;
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
    auto text = scalarText(v);
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
      return "direct";
    case control::ConnectorType::kUnknown:
      return "unknown";
  }
  return "unknown";
}

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
  return {{"name", info.name},
          {"config", info.config},
          {"tasks", std::move(tasks)},
          {"type", connectorTypeText(info.type)}};
}

Json taskStatusJson(const control::TaskStateInfo& task) {
  Json j = {{"id", task.id}, {"state", stateText(task.state)}, {"worker_id", task.workerId}};
  if (!task.trace.empty()) j["trace"] = core::withoutPrivatePaths(task.trace);
  if (!task.dataLoss.empty()) j["data_loss"] = task.dataLoss;
  return j;
}

Json connectorStatusJson(const control::ConnectorStateInfo& status) {
  Json connector = {{"state", stateText(status.state)}, {"worker_id", status.workerId}};
  if (!status.trace.empty()) connector["trace"] = core::withoutPrivatePaths(status.trace);
  Json tasks = Json::array();
  for (const auto& t : status.tasks) tasks.push_back(taskStatusJson(t));
  return {{"name", status.name},
          {"connector", std::move(connector)},
          {"tasks", std::move(tasks)},
          {"type", connectorTypeText(status.type)}};
}

Json taskConfigsJson(const std::string& connector, const std::vector<control::TaskInfo>& tasks) {
  Json out = Json::array();
  for (const auto& t : tasks)
    out.push_back({{"id", {{"connector", connector}, {"task", t.id}}}, {"config", t.config}});
  return out;
}

Json configKeyJson(const ConfigKey& key, int orderInGroup) {
  Json j = {{"name", key.name},
            {"type", configTypeName(key.type)},
            {"required", key.required()},
            {"default_value", nullptr},
            {"importance", importanceName(key.importance)},
            {"documentation", key.documentation},
            {"group", nullptr},
            {"order_in_group", orderInGroup},
            {"width", "NONE"},
            {"display_name", key.displayName.empty() ? key.name : key.displayName},
            {"dependents", Json::array()}};
  if (key.defaultValue) j["default_value"] = *key.defaultValue;
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
  return {{"name", report.className},
          {"error_count", report.errorCount},
          {"groups", report.groups},
          {"configs", std::move(configs)}};
}

Json pluginJson(const runtime::PluginInfo& plugin, bool detailed) {
  Json j = {{"class", plugin.className},
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
  auto render = [](const StringMap& m) {
    Json j = Json::object();
    for (const auto& [k, v] : m) {
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
    list.push_back({{"partition", render(p.partition)}, {"offset", render(p.offset)}});
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

}  // namespace ferry::rest
