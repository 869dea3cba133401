// Cluster log events (see events.h).
#include "cluster/events.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/json_bounds.h"

namespace ferry::cluster {
namespace {

using nlohmann::json;

constexpr std::pair<EventType, const char*> kNames[] = {
    {EventType::kHeartbeat, "heartbeat"},      {EventType::kLeave, "leave"},
    {EventType::kConnectorPut, "connector"},   {EventType::kConnectorDelete, "connector-deleted"},
    {EventType::kTargetState, "target-state"}, {EventType::kTaskConfigs, "task-configs"},
    {EventType::kReleased, "released"},        {EventType::kRestart, "restart"},
    {EventType::kStatus, "status"},
};

Status need(const json& j, const char* field, json::value_t type) {
  auto it = j.find(field);
  if (it == j.end()) return Status::invalidArgument(std::string("cluster event without '") + field + "'");
  const bool ok = type == json::value_t::number_integer
                      ? it->is_number_integer()
                      : (type == json::value_t::number_float ? it->is_number() : it->type() == type);
  if (!ok) return Status::invalidArgument(std::string("cluster event field '") + field + "' has the wrong type");
  return Status::ok();
}

Result<StringMap> stringMap(const json& j, const char* field) {
  StringMap m;
  const json& o = j.at(field);
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (!it->is_string())
      return Status::invalidArgument(std::string("cluster event field '") + field + "." + it.key() + "' is not a string");
    m[it.key()] = it->get<std::string>();
  }
  return m;
}

// A unit's progress text (a phase of a few words and four numbers) or connection text (a state,
// a reason of at most 300 bytes and two numbers).
constexpr std::size_t kMaxProgressBytes = 1024;

}  // namespace

const char* eventTypeName(EventType t) noexcept {
  for (const auto& [type, name] : kNames)
    if (type == t) return name;
  return "?";
}

std::string encode(const Event& e) {
  json j;
  j["type"] = eventTypeName(e.type);
  switch (e.type) {
    case EventType::kHeartbeat:
      j["worker"] = e.worker;
      j["incarnation"] = e.incarnation;
      j["url"] = e.url;
      j["capacity"] = e.capacity;
      j["sentMs"] = e.sentMs;
      j["loads"] = e.loads;
      if (!e.progress.empty()) j["progress"] = e.progress;
      if (!e.connections.empty()) j["connections"] = e.connections;
      if (!e.counters.empty()) {
        json& c = j["counters"];
        for (const auto& [unit, n] : e.counters) c[unit] = json::array({n.recordsIn, n.recordsOut, n.errors, n.commitLag});
      }
      break;
    case EventType::kLeave:
      j["worker"] = e.worker;
      j["incarnation"] = e.incarnation;
      break;
    case EventType::kConnectorPut:
      j["connector"] = e.connector;
      j["config"] = e.config;
      j["target"] = e.target;
      break;
    case EventType::kConnectorDelete:
      j["connector"] = e.connector;
      break;
    case EventType::kTargetState:
      j["connector"] = e.connector;
      j["target"] = e.target;
      break;
    case EventType::kTaskConfigs:
      j["connector"] = e.connector;
      j["generation"] = e.generation;
      j["tasks"] = e.taskConfigs;
      break;
    case EventType::kReleased:
      j["worker"] = e.worker;
      j["incarnation"] = e.incarnation;
      j["connector"] = e.connector;
      j["task"] = e.task;
      j["epoch"] = e.epoch;
      break;
    case EventType::kRestart:
      j["connector"] = e.connector;
      j["task"] = e.task;
      break;
    case EventType::kStatus:
      j["worker"] = e.worker;
      j["incarnation"] = e.incarnation;
      j["connector"] = e.connector;
      j["task"] = e.task;
      j["epoch"] = e.epoch;
      j["state"] = e.state;
      j["trace"] = e.trace;
      break;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);  // never throws on bad UTF-8
}

Result<Event> decode(std::string_view bytes) {
  auto parsed = core::parseJsonBounded<json>(bytes);
  if (!parsed.isOk())
    return Status::invalidArgument("cluster event is not a JSON object (" + parsed.status().message() + ")");
  json j = std::move(*parsed);
  if (!j.is_object()) return Status::invalidArgument("cluster event is not a JSON object");
  FERRY_RETURN_IF_ERROR(need(j, "type", json::value_t::string));
  Event e;
  const std::string type = j["type"].get<std::string>();
  bool known = false;
  for (const auto& [t, name] : kNames)
    if (type == name) {
      e.type = t;
      known = true;
    }
  if (!known) return Status::invalidArgument("unknown cluster event type '" + type + "'");
  using V = json::value_t;
  auto str = [&](const char* f, std::string& out) -> Status {
    FERRY_RETURN_IF_ERROR(need(j, f, V::string));
    out = j[f].get<std::string>();
    return Status::ok();
  };
  auto integer = [&](const char* f, auto& out) -> Status {
    FERRY_RETURN_IF_ERROR(need(j, f, V::number_integer));
    out = j[f].get<std::decay_t<decltype(out)>>();
    return Status::ok();
  };
  switch (e.type) {
    case EventType::kHeartbeat: {
      FERRY_RETURN_IF_ERROR(str("worker", e.worker));
      FERRY_RETURN_IF_ERROR(str("incarnation", e.incarnation));
      FERRY_RETURN_IF_ERROR(str("url", e.url));
      FERRY_RETURN_IF_ERROR(need(j, "capacity", V::number_float));
      e.capacity = j["capacity"].get<double>();
      FERRY_RETURN_IF_ERROR(integer("sentMs", e.sentMs));
      FERRY_RETURN_IF_ERROR(need(j, "loads", V::object));
      for (auto it = j["loads"].begin(); it != j["loads"].end(); ++it) {
        if (!it->is_number()) return Status::invalidArgument("cluster event field 'loads." + it.key() + "' is not a number");
        e.loads[it.key()] = it->get<double>();
      }
      if (j.contains("progress")) {  // optional: workers of earlier versions send none
        FERRY_RETURN_IF_ERROR(need(j, "progress", V::object));
        for (auto it = j["progress"].begin(); it != j["progress"].end(); ++it) {
          if (!it->is_string() || it->get_ref<const std::string&>().size() > kMaxProgressBytes)
            return Status::invalidArgument("cluster event field 'progress." + it.key() + "' is not a short string");
          e.progress[it.key()] = it->get<std::string>();
        }
      }
      if (j.contains("connections")) {  // optional: workers of earlier versions send none
        FERRY_RETURN_IF_ERROR(need(j, "connections", V::object));
        for (auto it = j["connections"].begin(); it != j["connections"].end(); ++it) {
          if (!it->is_string() || it->get_ref<const std::string&>().size() > kMaxProgressBytes)
            return Status::invalidArgument("cluster event field 'connections." + it.key() + "' is not a short string");
          e.connections[it.key()] = it->get<std::string>();
        }
      }
      if (j.contains("counters")) {  // optional too: [records in, records out, errors, commit lag]
        FERRY_RETURN_IF_ERROR(need(j, "counters", V::object));
        for (auto it = j["counters"].begin(); it != j["counters"].end(); ++it) {
          const json& a = *it;
          bool good = a.is_array() && a.size() == 4;
          for (std::size_t i = 0; good && i < 4; ++i) good = a[i].is_number_unsigned();
          if (!good)
            return Status::invalidArgument("cluster event field 'counters." + it.key() +
                                           "' is not four counts [records in, records out, errors, commit lag]");
          auto n = [&](std::size_t i) {
            return static_cast<std::int64_t>(std::min<std::uint64_t>(a[i].get<std::uint64_t>(), std::numeric_limits<std::int64_t>::max()));
          };
          e.counters[it.key()] = UnitCounters{n(0), n(1), n(2), n(3)};
        }
      }
      break;
    }
    case EventType::kLeave:
      FERRY_RETURN_IF_ERROR(str("worker", e.worker));
      FERRY_RETURN_IF_ERROR(str("incarnation", e.incarnation));
      break;
    case EventType::kConnectorPut: {
      FERRY_RETURN_IF_ERROR(str("connector", e.connector));
      FERRY_RETURN_IF_ERROR(need(j, "config", V::object));
      FERRY_ASSIGN_OR_RETURN(e.config, stringMap(j, "config"));
      FERRY_RETURN_IF_ERROR(str("target", e.target));
      break;
    }
    case EventType::kConnectorDelete:
      FERRY_RETURN_IF_ERROR(str("connector", e.connector));
      break;
    case EventType::kTargetState:
      FERRY_RETURN_IF_ERROR(str("connector", e.connector));
      FERRY_RETURN_IF_ERROR(str("target", e.target));
      break;
    case EventType::kTaskConfigs: {
      FERRY_RETURN_IF_ERROR(str("connector", e.connector));
      FERRY_RETURN_IF_ERROR(integer("generation", e.generation));
      FERRY_RETURN_IF_ERROR(need(j, "tasks", V::array));
      for (const auto& t : j["tasks"]) {
        if (!t.is_object()) return Status::invalidArgument("cluster event field 'tasks' holds a non-object");
        json holder = {{"t", t}};
        FERRY_ASSIGN_OR_RETURN(auto m, stringMap(holder, "t"));
        e.taskConfigs.push_back(std::move(m));
      }
      break;
    }
    case EventType::kReleased:
      FERRY_RETURN_IF_ERROR(str("worker", e.worker));
      FERRY_RETURN_IF_ERROR(str("incarnation", e.incarnation));
      FERRY_RETURN_IF_ERROR(str("connector", e.connector));
      FERRY_RETURN_IF_ERROR(integer("task", e.task));
      FERRY_RETURN_IF_ERROR(integer("epoch", e.epoch));
      break;
    case EventType::kRestart:
      FERRY_RETURN_IF_ERROR(str("connector", e.connector));
      FERRY_RETURN_IF_ERROR(integer("task", e.task));
      break;
    case EventType::kStatus:
      FERRY_RETURN_IF_ERROR(str("worker", e.worker));
      FERRY_RETURN_IF_ERROR(str("incarnation", e.incarnation));
      FERRY_RETURN_IF_ERROR(str("connector", e.connector));
      FERRY_RETURN_IF_ERROR(integer("task", e.task));
      FERRY_RETURN_IF_ERROR(integer("epoch", e.epoch));
      FERRY_RETURN_IF_ERROR(str("state", e.state));
      FERRY_RETURN_IF_ERROR(str("trace", e.trace));
      break;
  }
  if (e.type == EventType::kConnectorPut || e.type == EventType::kTargetState) {
    if (e.target != "STARTED" && e.target != "PAUSED" && e.target != "STOPPED")
      return Status::invalidArgument("cluster event target '" + e.target + "' (STARTED, PAUSED, STOPPED)");
  }
  return e;
}

}  // namespace ferry::cluster
