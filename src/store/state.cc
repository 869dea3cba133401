// Store state values, their mutations and their JSON form (state.h).
//
// Parsing is strict: a file whose shape is not exactly what toJson() writes is reported as
// damaged rather than half-loaded, because a silently dropped connector or position is worse
// than a worker that refuses to start and says which file to look at.
#include "store/state.h"

#include <algorithm>
#include <cctype>

#include "core/checked_file.h"

namespace ferry::store::internal {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Mutations

Status ConfigState::putConnector(const std::string& name, const StringMap& config,
                                 TargetState target) {
  auto it = connectors.find(name);
  if (it == connectors.end()) {
    ConnectorEntry e;
    e.config = config;
    e.target = target;
    e.generation = 1;
    connectors.emplace(name, std::move(e));
    return Status::ok();
  }
  ConnectorEntry& e = it->second;
  // Task configs were produced from the old config; they no longer describe the connector.
  if (e.config != config) e.taskConfigs.clear();
  e.config = config;
  e.target = target;
  ++e.generation;
  return Status::ok();
}

Status ConfigState::putTargetState(const std::string& name, TargetState target) {
  auto it = connectors.find(name);
  if (it == connectors.end()) return Status::notFound("connector '" + name + "' does not exist");
  it->second.target = target;
  return Status::ok();
}

Status ConfigState::putTaskConfigs(const std::string& name, const std::vector<StringMap>& tasks) {
  auto it = connectors.find(name);
  if (it == connectors.end()) return Status::notFound("connector '" + name + "' does not exist");
  it->second.taskConfigs = tasks;
  return Status::ok();
}

Status ConfigState::removeConnector(const std::string& name) {
  if (connectors.erase(name) == 0) {
    return Status::notFound("connector '" + name + "' does not exist");
  }
  return Status::ok();
}

std::optional<StringMap> PositionState::get(const std::string& connector,
                                            const StringMap& partition) const {
  auto c = connectors.find(connector);
  if (c == connectors.end()) return std::nullopt;
  auto p = c->second.find(partition);
  if (p == c->second.end()) return std::nullopt;
  return p->second;
}

std::vector<Position> PositionState::getAll(const std::string& connector) const {
  std::vector<Position> out;
  auto c = connectors.find(connector);
  if (c == connectors.end()) return out;
  out.reserve(c->second.size());
  for (const auto& [partition, offset] : c->second) out.push_back(Position{partition, offset});
  return out;
}

void PositionState::put(const std::string& connector, const std::vector<Position>& positions) {
  if (positions.empty()) return;
  auto& partitions = connectors[connector];
  for (const Position& p : positions) {  // in order: a later position of a partition wins
    if (p.offset.empty()) {
      partitions.erase(p.partition);
    } else {
      partitions[p.partition] = p.offset;
    }
  }
  if (partitions.empty()) connectors.erase(connector);
}

void PositionState::removeConnector(const std::string& connector) { connectors.erase(connector); }

void StatusState::putConnector(const std::string& connector, const StatusEntry& status) {
  connectors[connector].connector = status;
}

Status StatusState::putTask(const std::string& connector, int task, const StatusEntry& status) {
  if (task < 0) {
    return Status::invalidArgument("task number " + std::to_string(task) + " of connector '" +
                                   connector + "' is negative");
  }
  connectors[connector].tasks[task] = status;
  return Status::ok();
}

std::optional<StatusEntry> StatusState::connector(const std::string& connector) const {
  auto it = connectors.find(connector);
  if (it == connectors.end()) return std::nullopt;
  return it->second.connector;
}

std::map<int, StatusEntry> StatusState::tasks(const std::string& connector) const {
  auto it = connectors.find(connector);
  if (it == connectors.end()) return {};
  return it->second.tasks;
}

void StatusState::removeConnector(const std::string& connector) { connectors.erase(connector); }

std::optional<State> parseState(std::string_view s) noexcept {
  for (State st : {State::kUnassigned, State::kRunning, State::kPaused, State::kStopped,
                   State::kFailed, State::kRestarting, State::kDestroyed}) {
    std::string_view name = stateName(st);
    if (name.size() == s.size() && std::equal(s.begin(), s.end(), name.begin(), [](char a, char b) {
          return std::toupper(static_cast<unsigned char>(a)) == static_cast<unsigned char>(b);
        })) {
      return st;
    }
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// JSON

namespace {

json mapJson(const StringMap& m) {
  json j = json::object();
  for (const auto& [k, v] : m) j[k] = v;
  return j;
}

json statusJson(const StatusEntry& e) {
  return json{{"state", stateName(e.state)},
              {"trace", e.trace},
              {"worker_id", e.workerId},
              {"since_ms", e.sinceMs},
              {"generation", e.generation}};
}

// Each reader throws Damaged with a path inside the document; the *FromJson functions turn it
// into a kDataLoss status.
struct Damaged {
  std::string where;
};

const json& field(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) throw Damaged{where + "." + key + " is missing"};
  return *it;
}

const json& objectAt(const json& j, const std::string& where) {
  if (!j.is_object()) throw Damaged{where + " is not an object"};
  return j;
}

const json& arrayAt(const json& j, const std::string& where) {
  if (!j.is_array()) throw Damaged{where + " is not an array"};
  return j;
}

std::string stringAt(const json& j, const std::string& where) {
  if (!j.is_string()) throw Damaged{where + " is not a string"};
  return j.get<std::string>();
}

std::int64_t intAt(const json& j, const std::string& where) {
  if (!j.is_number_integer()) throw Damaged{where + " is not an integer"};
  return j.get<std::int64_t>();
}

StringMap mapAt(const json& j, const std::string& where) {
  StringMap m;
  for (const auto& [k, v] : objectAt(j, where).items()) m.emplace(k, stringAt(v, where + "." + k));
  return m;
}

StatusEntry statusAt(const json& j, const std::string& where) {
  objectAt(j, where);
  StatusEntry e;
  std::string state = stringAt(field(j, "state", where), where + ".state");
  auto parsed = parseState(state);
  if (!parsed) throw Damaged{where + ".state '" + state + "' is not a known state"};
  e.state = *parsed;
  e.trace = stringAt(field(j, "trace", where), where + ".trace");
  e.workerId = stringAt(field(j, "worker_id", where), where + ".worker_id");
  e.sinceMs = intAt(field(j, "since_ms", where), where + ".since_ms");
  e.generation = intAt(field(j, "generation", where), where + ".generation");
  return e;
}

// Checks the envelope {"format": N, "connectors": {...}} and returns the connectors object.
const json& envelope(const json& j) {
  objectAt(j, "document");
  const json& version = field(j, "format", "document");
  if (!version.is_number_integer()) throw Damaged{"document.format is not an integer"};
  return objectAt(field(j, "connectors", "document"), "document.connectors");
}

Status checkVersion(const json& j, const std::string& what) {
  if (j.is_object()) {
    auto it = j.find("format");
    if (it != j.end() && it->is_number_integer() && it->get<std::int64_t>() > kFormatVersion) {
      return Status::incompatible(what + " has format version " +
                                  std::to_string(it->get<std::int64_t>()) +
                                  "; this worker reads versions up to " +
                                  std::to_string(kFormatVersion) +
                                  ": run the newer ferry that wrote it");
    }
  }
  return Status::ok();
}

Status damaged(const std::string& detail) { return Status::dataLoss("damaged: " + detail); }

template <typename Fn>
auto parseGuarded(const json& j, const std::string& what, Fn fn) -> decltype(fn()) {
  Status v = checkVersion(j, what);
  if (!v.isOk()) return v;
  try {
    return fn();
  } catch (const Damaged& d) {
    return damaged(d.where);
  } catch (const json::exception& e) {
    return damaged(e.what());
  }
}

}  // namespace

json toJson(const ConfigState& s) {
  json connectors = json::object();
  for (const auto& [name, e] : s.connectors) {
    json tasks = json::array();
    for (const auto& t : e.taskConfigs) tasks.push_back(mapJson(t));
    connectors[name] = json{{"config", mapJson(e.config)},
                            {"target", targetStateName(e.target)},
                            {"generation", e.generation},
                            {"tasks", std::move(tasks)}};
  }
  return json{{"format", kFormatVersion}, {"connectors", std::move(connectors)}};
}

json toJson(const PositionState& s) {
  json connectors = json::object();
  for (const auto& [name, partitions] : s.connectors) {
    json list = json::array();
    for (const auto& [partition, offset] : partitions) {
      list.push_back(json{{"partition", mapJson(partition)}, {"offset", mapJson(offset)}});
    }
    connectors[name] = std::move(list);
  }
  return json{{"format", kFormatVersion}, {"connectors", std::move(connectors)}};
}

json toJson(const StatusState& s) {
  json connectors = json::object();
  for (const auto& [name, c] : s.connectors) {
    json tasks = json::object();
    for (const auto& [id, e] : c.tasks) tasks[std::to_string(id)] = statusJson(e);
    connectors[name] = json{{"connector", c.connector ? statusJson(*c.connector) : json(nullptr)},
                            {"tasks", std::move(tasks)}};
  }
  return json{{"format", kFormatVersion}, {"connectors", std::move(connectors)}};
}

Result<ConfigState> configStateFromJson(const json& j, const std::string& what) {
  return parseGuarded(j, what, [&]() -> Result<ConfigState> {
    ConfigState s;
    for (const auto& [name, c] : envelope(j).items()) {
      std::string where = "connectors." + name;
      objectAt(c, where);
      ConnectorEntry e;
      e.config = mapAt(field(c, "config", where), where + ".config");
      std::string target = stringAt(field(c, "target", where), where + ".target");
      auto t = parseTargetState(target);
      if (!t) throw Damaged{where + ".target '" + target + "' is not a target state"};
      e.target = *t;
      e.generation = intAt(field(c, "generation", where), where + ".generation");
      const json& tasks = arrayAt(field(c, "tasks", where), where + ".tasks");
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        e.taskConfigs.push_back(mapAt(tasks[i], where + ".tasks[" + std::to_string(i) + "]"));
      }
      s.connectors.emplace(name, std::move(e));
    }
    return s;
  });
}

Result<PositionState> positionStateFromJson(const json& j, const std::string& what) {
  return parseGuarded(j, what, [&]() -> Result<PositionState> {
    PositionState s;
    for (const auto& [name, list] : envelope(j).items()) {
      std::string where = "connectors." + name;
      arrayAt(list, where);
      auto& partitions = s.connectors[name];
      for (std::size_t i = 0; i < list.size(); ++i) {
        std::string at = where + "[" + std::to_string(i) + "]";
        objectAt(list[i], at);
        StringMap partition = mapAt(field(list[i], "partition", at), at + ".partition");
        StringMap offset = mapAt(field(list[i], "offset", at), at + ".offset");
        if (!offset.empty()) partitions[std::move(partition)] = std::move(offset);
      }
      if (partitions.empty()) s.connectors.erase(name);
    }
    return s;
  });
}

Result<StatusState> statusStateFromJson(const json& j, const std::string& what) {
  return parseGuarded(j, what, [&]() -> Result<StatusState> {
    StatusState s;
    for (const auto& [name, c] : envelope(j).items()) {
      std::string where = "connectors." + name;
      objectAt(c, where);
      StatusState::Connector entry;
      const json& conn = field(c, "connector", where);
      if (!conn.is_null()) entry.connector = statusAt(conn, where + ".connector");
      for (const auto& [id, t] : objectAt(field(c, "tasks", where), where + ".tasks").items()) {
        std::string at = where + ".tasks." + id;
        int task = 0;
        std::size_t used = 0;
        try {
          task = std::stoi(id, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != id.size() || task < 0) throw Damaged{at + " is not a task number"};
        entry.tasks[task] = statusAt(t, at);
      }
      s.connectors.emplace(name, std::move(entry));
    }
    return s;
  });
}

namespace {

template <typename StateT, typename Parse>
Result<StateT> fromText(std::string_view text, const std::string& what, Parse parse) {
  Result<core::CheckedText> checked = core::parseCheckedJson(text);
  if (!checked.isOk()) return checked.status();
  return parse(checked->doc, what);
}

}  // namespace

Result<ConfigState> configStateFromText(std::string_view text, const std::string& what) {
  return fromText<ConfigState>(text, what, configStateFromJson);
}

Result<PositionState> positionStateFromText(std::string_view text, const std::string& what) {
  return fromText<PositionState>(text, what, positionStateFromJson);
}

Result<StatusState> statusStateFromText(std::string_view text, const std::string& what) {
  return fromText<StatusState>(text, what, statusStateFromJson);
}

}  // namespace ferry::store::internal
