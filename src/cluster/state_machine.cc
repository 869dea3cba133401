// The cluster state machine (see state_machine.h).
#include "cluster/state_machine.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "core/json_bounds.h"

namespace ferry::cluster {
namespace {

double unitCost(const ConnectorInfo& c, const Unit& u, const std::map<std::string, Member>& members,
                const std::map<Unit, Ownership>& assignment) {
  // Measured (reported by the current owner) wins over declared (task.cost); 1 otherwise.
  if (auto a = assignment.find(u); a != assignment.end())
    if (auto m = members.find(a->second.owner); m != members.end())
      if (auto l = m->second.loads.find(u.toString()); l != m->second.loads.end()) return std::max(0.0, l->second);
  // Declared: the task config's task.cost, else the connector config's (for its tasks).
  auto declared = [](const StringMap& m) -> std::optional<double> {
    auto it = m.find("task.cost");
    if (it == m.end()) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(it->second.c_str(), &end);
    if (end == it->second.c_str() || v < 0) return std::nullopt;
    return v;
  };
  if (u.task >= 0 && u.task < static_cast<int>(c.tasks.size()))
    if (auto v = declared(c.tasks[static_cast<std::size_t>(u.task)])) return *v;
  if (u.task >= 0)
    if (auto v = declared(c.config)) return *v;
  return 1.0;
}

}  // namespace

Result<ClusterState> ClusterState::create(ClusterOptions options) {
  if (options.sessionTimeoutMs <= 0) return Status::invalidArgument("cluster session timeout must be > 0");
  FERRY_ASSIGN_OR_RETURN(auto strategy, makeStrategy(options.strategy));
  return ClusterState(std::move(options), std::move(strategy));
}

bool ClusterState::live(const Ownership& o) const {
  auto it = members_.find(o.owner);
  return it != members_.end() && it->second.incarnation == o.incarnation;
}

std::map<std::string, ConnectorInfo>& ClusterState::mutableConnectors() {
  if (connectors_.use_count() > 1) connectors_ = std::make_shared<std::map<std::string, ConnectorInfo>>(*connectors_);
  return *connectors_;
}

void ClusterState::bump(const Unit& u) {
  if (auto it = assignment_.find(u); it != assignment_.end()) ++it->second.epoch;
}

void ClusterState::expire() {
  for (auto it = members_.begin(); it != members_.end();) {
    if (it->second.lastSeenLogMs + options_.sessionTimeoutMs < logTimeMs_) {
      it = members_.erase(it);
      dirty_ = true;
    } else {
      ++it;
    }
  }
}

void ClusterState::apply(std::int64_t offset, std::int64_t logTimeMs, const Event& e) {
  offset_ = offset;
  logTimeMs_ = std::max(logTimeMs_, logTimeMs);  // log time never goes back
  expire();
  switch (e.type) {
    case EventType::kHeartbeat: {
      auto it = members_.find(e.worker);
      if (it == members_.end() || it->second.incarnation != e.incarnation) {
        // A new member, or a restarted process: its previous incarnation's units are orphans.
        Member m;
        m.incarnation = e.incarnation;
        m.joinedAt = offset;
        it = members_.insert_or_assign(e.worker, std::move(m)).first;
        dirty_ = true;
      }
      Member& m = it->second;
      m.url = e.url;
      m.lastSeenLogMs = logTimeMs_;
      if (m.capacity != e.capacity || (options_.strategy == "load-weighted" && m.loads != e.loads)) dirty_ = true;
      m.capacity = e.capacity > 0 ? e.capacity : 1.0;
      m.loads = e.loads;
      m.progress = e.progress;
      m.counters = e.counters;
      m.connections = e.connections;
      break;
    }
    case EventType::kLeave: {
      auto it = members_.find(e.worker);
      if (it != members_.end() && it->second.incarnation == e.incarnation) {
        members_.erase(it);
        dirty_ = true;
      }
      break;
    }
    case EventType::kConnectorPut: {
      auto [it, created] = mutableConnectors().try_emplace(e.connector);
      ConnectorInfo& c = it->second;
      if (!created && c.config == e.config && c.target == e.target) break;
      if (created || c.config != e.config) {
        c.config = e.config;
        ++c.generation;
        bump(Unit{e.connector, -1});  // its instance restarts with the new config
      }
      c.target = e.target;
      dirty_ = true;
      break;
    }
    case EventType::kConnectorDelete:
      if (connectors_->count(e.connector) && mutableConnectors().erase(e.connector) > 0) dirty_ = true;
      break;
    case EventType::kTargetState: {
      auto found = connectors_->find(e.connector);
      if (found == connectors_->end() || found->second.target == e.target) break;
      mutableConnectors().at(e.connector).target = e.target;
      dirty_ = true;
      break;
    }
    case EventType::kTaskConfigs: {
      auto found = connectors_->find(e.connector);
      if (found == connectors_->end() || e.generation != found->second.generation) break;  // stale
      if (found->second.tasksGeneration == e.generation && found->second.tasks == e.taskConfigs) break;
      ConnectorInfo& c = mutableConnectors().at(e.connector);
      c.tasksGeneration = e.generation;
      if (c.tasks == e.taskConfigs) break;
      for (std::size_t i = 0; i < e.taskConfigs.size() && i < c.tasks.size(); ++i)
        if (c.tasks[i] != e.taskConfigs[i]) bump(Unit{e.connector, static_cast<int>(i)});
      if (c.tasks.size() != e.taskConfigs.size()) dirty_ = true;
      c.tasks = e.taskConfigs;
      break;
    }
    case EventType::kReleased: {
      auto it = assignment_.find(Unit{e.connector, e.task});
      if (it == assignment_.end()) break;
      Ownership& o = it->second;
      if (o.owner != e.worker || o.incarnation != e.incarnation || o.epoch != e.epoch || o.next.empty()) break;
      auto m = members_.find(o.next);
      if (m == members_.end()) {  // the taker left meanwhile: assign again
        o.next.clear();
        dirty_ = true;
        break;
      }
      o.owner = o.next;
      o.incarnation = m->second.incarnation;
      o.next.clear();
      ++o.epoch;
      ++moves_;
      break;
    }
    case EventType::kRestart:
      bump(Unit{e.connector, e.task});
      break;
    case EventType::kStatus: {
      // Fenced: only the current owner's report for the current epoch counts (a zombie's is stale).
      auto it = assignment_.find(Unit{e.connector, e.task});
      if (it == assignment_.end() || it->second.owner != e.worker || it->second.incarnation != e.incarnation ||
          it->second.epoch != e.epoch)
        break;
      statuses_[it->first] = UnitStatus{e.state, e.trace, e.worker, e.epoch};
      break;
    }
  }
  if (dirty_) reassign();
}

void ClusterState::reassign() {
  dirty_ = false;
  AssignmentInput in;
  for (const auto& [id, m] : members_) in.workers.push_back(WorkerInfo{id, m.capacity});
  for (const auto& [name, c] : *connectors_) {
    if (c.target == "STOPPED") continue;
    in.units[Unit{name, -1}] = unitCost(c, Unit{name, -1}, members_, assignment_);
    for (std::size_t i = 0; i < c.tasks.size(); ++i) {
      const Unit u{name, static_cast<int>(i)};
      in.units[u] = unitCost(c, u, members_, assignment_);
    }
  }
  // Units that no longer exist (deleted, stopped, fewer tasks) are dropped.
  for (auto it = assignment_.begin(); it != assignment_.end();)
    it = in.units.count(it->first) ? std::next(it) : assignment_.erase(it);
  for (auto it = statuses_.begin(); it != statuses_.end();)
    it = in.units.count(it->first) ? std::next(it) : statuses_.erase(it);
  if (in.workers.empty()) {
    // Nobody to run anything: every unit is unowned (a later member takes them, epoch + 1).
    for (auto& [u, o] : assignment_) {
      o.owner.clear();
      o.incarnation.clear();
      o.next.clear();
    }
    return;
  }
  for (const auto& [u, o] : assignment_)
    if (live(o)) in.current[u] = o.owner;
  const auto desired = strategy_->assign(in);
  for (const auto& [u, want] : desired) {
    auto [it, created] = assignment_.try_emplace(u);
    Ownership& o = it->second;
    if (created || !live(o)) {
      if (!created) ++moves_;
      o.owner = want;
      o.incarnation = members_.at(want).incarnation;
      o.next.clear();
      ++o.epoch;
    } else if (want == o.owner) {
      o.next.clear();
    } else {
      o.next = want;
    }
  }
}

std::map<Unit, Ownership> ClusterState::unitsOf(const std::string& worker, const std::string& incarnation) const {
  std::map<Unit, Ownership> out;
  for (const auto& [u, o] : assignment_)
    if (o.owner == worker && o.incarnation == incarnation) out.emplace(u, o);
  return out;
}

// ----- snapshots

std::string ClusterState::toSnapshot() const {
  using nlohmann::json;
  json j;
  j["version"] = 1;
  j["offset"] = offset_;
  j["logTimeMs"] = logTimeMs_;
  j["moves"] = moves_;
  j["sessionTimeoutMs"] = options_.sessionTimeoutMs;
  j["strategy"] = options_.strategy;
  json members = json::object();
  for (const auto& [id, m] : members_)
    members[id] = {{"incarnation", m.incarnation}, {"url", m.url},         {"capacity", m.capacity},
                   {"lastSeenLogMs", m.lastSeenLogMs}, {"joinedAt", m.joinedAt}, {"loads", m.loads}};
  j["members"] = members;
  json connectors = json::object();
  for (const auto& [name, c] : *connectors_)
    connectors[name] = {{"config", c.config}, {"target", c.target}, {"generation", c.generation},
                        {"tasks", c.tasks}, {"tasksGeneration", c.tasksGeneration}};
  j["connectors"] = connectors;
  json units = json::array();
  for (const auto& [u, o] : assignment_)
    units.push_back({{"connector", u.connector}, {"task", u.task}, {"owner", o.owner},
                     {"incarnation", o.incarnation}, {"epoch", o.epoch}, {"next", o.next}});
  j["assignment"] = units;
  json statuses = json::array();
  for (const auto& [u, st] : statuses_)
    statuses.push_back({{"connector", u.connector}, {"task", u.task}, {"state", st.state}, {"trace", st.trace},
                        {"worker", st.worker}, {"epoch", st.epoch}});
  j["statuses"] = statuses;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);  // never throws on bad UTF-8
}

Result<ClusterState> ClusterState::fromSnapshot(std::string_view text) {
  using nlohmann::json;
  auto parsed = core::parseJsonBounded<json>(text);
  if (!parsed.isOk())
    return Status::invalidArgument("cluster snapshot is not a JSON object (" + parsed.status().message() + ")");
  json j = std::move(*parsed);
  if (!j.is_object()) return Status::invalidArgument("cluster snapshot is not a JSON object");
  try {
    if (j.at("version").get<int>() != 1) return Status::incompatible("cluster snapshot version is not 1");
    ClusterOptions o;
    o.sessionTimeoutMs = j.at("sessionTimeoutMs").get<std::int64_t>();
    o.strategy = j.at("strategy").get<std::string>();
    FERRY_ASSIGN_OR_RETURN(ClusterState s, create(o));
    s.offset_ = j.at("offset").get<std::int64_t>();
    s.logTimeMs_ = j.at("logTimeMs").get<std::int64_t>();
    s.moves_ = j.at("moves").get<std::int64_t>();
    for (auto it = j.at("members").begin(); it != j.at("members").end(); ++it) {
      Member m;
      m.incarnation = it->at("incarnation").get<std::string>();
      m.url = it->at("url").get<std::string>();
      m.capacity = it->at("capacity").get<double>();
      m.lastSeenLogMs = it->at("lastSeenLogMs").get<std::int64_t>();
      m.joinedAt = it->at("joinedAt").get<std::int64_t>();
      m.loads = it->at("loads").get<std::map<std::string, double>>();
      s.members_[it.key()] = std::move(m);
    }
    for (auto it = j.at("connectors").begin(); it != j.at("connectors").end(); ++it) {
      ConnectorInfo c;
      c.config = it->at("config").get<StringMap>();
      c.target = it->at("target").get<std::string>();
      c.generation = it->at("generation").get<std::int64_t>();
      c.tasks = it->at("tasks").get<std::vector<StringMap>>();
      c.tasksGeneration = it->at("tasksGeneration").get<std::int64_t>();
      (*s.connectors_)[it.key()] = std::move(c);
    }
    for (const auto& u : j.at("assignment")) {
      Ownership o;
      o.owner = u.at("owner").get<std::string>();
      o.incarnation = u.at("incarnation").get<std::string>();
      o.epoch = u.at("epoch").get<std::int64_t>();
      o.next = u.at("next").get<std::string>();
      s.assignment_[Unit{u.at("connector").get<std::string>(), u.at("task").get<int>()}] = std::move(o);
    }
    for (const auto& u : j.at("statuses"))
      s.statuses_[Unit{u.at("connector").get<std::string>(), u.at("task").get<int>()}] =
          UnitStatus{u.at("state").get<std::string>(), u.at("trace").get<std::string>(),
                     u.at("worker").get<std::string>(), u.at("epoch").get<std::int64_t>()};
    return s;
  } catch (const json::exception& e) {
    return Status::invalidArgument(std::string("cluster snapshot: ") + e.what());
  }
}

}  // namespace ferry::cluster
