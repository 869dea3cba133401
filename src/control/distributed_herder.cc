// The distributed herder (see distributed_herder.h).
#include "control/distributed_herder.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <thread>

#include "control/herder_common.h"
#include "control/task_host.h"
#include "core/clock.h"
#include "core/logging.h"
#include "core/thread.h"
#include "runtime/config_util.h"
#include "runtime/connector_config.h"
#include "runtime/log_position_store.h"
#include "runtime/task_stopper.h"
#include "runtime/tasks.h"

namespace ferry::control {
namespace {

using cluster::Event;
using cluster::EventType;
using cluster::Unit;
using runtime::ConnectorShape;
using runtime::TaskRunner;
using store::State;
using store::TargetState;

std::optional<State> parseState(const std::string& s) {
  for (State st : {State::kUnassigned, State::kRunning, State::kPaused, State::kStopped, State::kFailed,
                   State::kRestarting, State::kDestroyed})
    if (s == store::stateName(st)) return st;
  return std::nullopt;
}

// REST reads wait this long for the log's current end to be applied here, while the log is
// reachable (ClusterMember::syncedState: without the lease they answer at once).
constexpr std::chrono::milliseconds kReadSync{5000};

class HerderImpl;

class ClusterConnectorContext final : public ConnectorContext {
 public:
  ClusterConnectorContext(HerderImpl& h, std::string name) : h_(h), name_(std::move(name)) {}
  const std::string& connectorName() const override { return name_; }
  void requestTaskReconfiguration() override;
  void raiseError(const Status& error) override;

 private:
  HerderImpl& h_;
  std::string name_;
};

// A unit running on this worker.
struct Running {
  std::int64_t epoch = 0;
  std::int64_t generation = 0;   // instance: the config generation it started with
  StringMap taskConfig;          // task: the config it runs
  ConnectorInstances instance;   // instance units
  std::unique_ptr<ClusterConnectorContext> context;
  std::unique_ptr<TaskRunner> runner;  // task units
  bool failed = false;                 // instance failed to start: not retried until restarted
  bool paused = false;                 // instance: the target it last reported (PAUSED or RUNNING)
  std::optional<RestartState> restarts;  // task units: automatic restarts (task_host.h)
};

class HerderImpl final : public DistributedHerder {
 public:
  explicit HerderImpl(DistributedOptions o) : o_(std::move(o)), log_(core::logger("herder")) {
    member_ = std::make_unique<ClusterMember>(*o_.log, *o_.snapshots, o_.member,
                                              [this](const ClusterMember::StateRef&, bool lease) {
                                                {
                                                  std::lock_guard lock(mu_);
                                                  lease_ = lease;
                                                  ++version_;
                                                }
                                                cv_.notify_all();
                                              });
  }
  ~HerderImpl() override { stop(); }

  Status start() override {
    member_->setUnitReporter([this](cluster::Event& heartbeat) { reportLocalUnits(heartbeat); });
    FERRY_RETURN_IF_ERROR(member_->start());
    running_ = true;
    fencer_ = core::namedThread("fencer", [this] { fenceLoop(); });
    control_ = core::namedThread("herder", [this] { controlLoop(); });
    log_->info("joined cluster as {} (incarnation {})", member_->workerId(), member_->incarnation());
    return Status::ok();
  }

  void stop() override {
    if (!running_.exchange(false)) return;
    cv_.notify_all();
    if (control_.joinable()) control_.join();
    if (fencer_.joinable()) fencer_.join();
    stopAll();
    member_->stop(/*graceful=*/true);
  }

  // ----- reads

  std::string workerId() const override { return o_.worker.workerId; }
  WorkerLimits limits() const {
    return WorkerLimits{o_.worker.tasksMaxLimit, o_.backbone, o_.worker.configProviders.get(),
                        o_.worker.refuseUnknownConnectorKeys, o_.worker.clientOverridePolicy, &o_.worker};
  }
  std::size_t abandonedTasksRunning() const override { return host_.stopper().abandonedRunning(); }
  std::string healthProblem() const override {
    if (!running_) return "the worker is not running (starting or shutting down)";
    if (!member_->leaseValid()) return "the worker has no confirmed heartbeat in the cluster log (lease lost)";
    return {};
  }

  runtime::TapHub* taps() override { return &host_.taps(); }

  Result<std::vector<TopicRecord>> topicRecords(const std::string& topic, std::size_t limit) const override {
    return host_.topicRecords(topic, limit);
  }
  bool isInternalTopic(const std::string& topic) const override { return host_.isInternalTopic(topic); }
  Result<std::vector<backbone::TopicInfo>> topics() const override { return host_.topics(); }
  std::optional<std::int64_t> stateAgeMs() const override {
    const std::int64_t age = member_->stateAgeMs();
    return age < 0 ? std::nullopt : std::optional<std::int64_t>(age);
  }

  std::vector<std::string> connectors() const override {
    auto ref = member_->syncedState(kReadSync);
    const auto& s = *ref;
    std::vector<std::string> out;
    for (const auto& [name, c] : s.connectors()) out.push_back(name);
    return out;
  }

  Result<ConnectorInfo> connectorInfo(const std::string& name) const override {
    auto ref = member_->syncedState(kReadSync);
    const auto& s = *ref;
    auto it = s.connectors().find(name);
    if (it == s.connectors().end()) return notFound(name);
    return infoOf(name, it->second);
  }

  Result<StringMap> connectorConfig(const std::string& name) const override {
    auto ref = member_->syncedState(kReadSync);
    const auto& s = *ref;
    auto it = s.connectors().find(name);
    if (it == s.connectors().end()) return notFound(name);
    return it->second.config;
  }

  Result<ConnectorStateInfo> connectorStatus(const std::string& name) const override {
    auto ref = member_->syncedState(kReadSync);
    const auto& s = *ref;
    auto it = s.connectors().find(name);
    if (it == s.connectors().end()) return notFound(name);
    ConnectorStateInfo out;
    out.name = name;
    out.type = infoOf(name, it->second).type;
    auto fill = [&](const Unit& u, State& state, std::string& worker, std::string& trace) {
      auto a = s.assignment().find(u);
      worker = a != s.assignment().end() ? urlOrId(s, a->second.owner) : "";
      if (it->second.target == "STOPPED") {
        state = State::kStopped;
        return;
      }
      auto st = s.statuses().find(u);
      // A report of an earlier epoch is about a previous owner (or run): not the current one.
      if (st == s.statuses().end() || a == s.assignment().end() || st->second.epoch != a->second.epoch) {
        state = State::kUnassigned;
        return;
      }
      state = parseState(st->second.state).value_or(State::kUnassigned);
      trace = st->second.trace;
    };
    fill(Unit{name, -1}, out.state, out.workerId, out.trace);
    for (std::size_t i = 0; i < it->second.tasks.size(); ++i) {
      TaskStateInfo t;
      t.id = static_cast<int>(i);
      fill(Unit{name, t.id}, t.state, t.workerId, t.trace);
      out.tasks.push_back(std::move(t));
    }
    // Progress and counters: of the tasks running here as they are now, of the others as their
    // owner's last heartbeat carried them (at most a heartbeat interval old).
    std::lock_guard lock(unitsMu_);
    for (auto& t : out.tasks) {
      if (auto u = units_.find(Unit{name, t.id}); u != units_.end() && u->second.runner) {
        if (auto p = u->second.runner->metrics().progress()) {
          t.progress = p->report;
          t.progressRate = p->ratePerSecond;
        }
        t.counters = TaskHost::countersOf(u->second.runner->metrics());
        t.connection = TaskHost::connectionOf(u->second.runner->metrics());
        continue;
      }
      const cluster::Member* m = currentOwner(s, Unit{name, t.id});
      if (!m) continue;
      const std::string unit = Unit{name, t.id}.toString();
      if (auto c = m->counters.find(unit); c != m->counters.end()) t.counters = c->second;
      if (auto c = m->connections.find(unit); c != m->connections.end())
        t.connection = TaskHost::readConnectionText(c->second);
      auto p = m->progress.find(unit);
      if (p == m->progress.end()) continue;
      if (auto read = readProgress(p->second)) {
        t.progress = read->first;
        t.progressRate = read->second;
      }
    }
    return out;
  }

  static std::size_t digits(std::int64_t n) {
    std::size_t d = 1;
    for (; n >= 10; n /= 10) ++d;
    return d;
  }

  // The member that runs `u` now: its owner, while it is the incarnation the unit was given to.
  static const cluster::Member* currentOwner(const cluster::ClusterState& s, const Unit& u) {
    auto a = s.assignment().find(u);
    if (a == s.assignment().end()) return nullptr;
    auto m = s.members().find(a->second.owner);
    if (m == s.members().end() || m->second.incarnation != a->second.incarnation) return nullptr;
    return &m->second;
  }

  std::map<std::string, TaskCounters> connectorCounters() const override {
    std::map<std::string, TaskCounters> out;
    auto ref = member_->state();
    const auto& s = *ref;
    std::lock_guard lock(unitsMu_);
    for (const auto& [u, owner] : s.assignment()) {
      if (u.task < 0) continue;  // the connector instance counts no records
      if (auto l = units_.find(u); l != units_.end() && l->second.runner) {
        addCounters(out[u.connector], TaskHost::countersOf(l->second.runner->metrics()));
        continue;
      }
      const cluster::Member* m = currentOwner(s, u);
      if (!m) continue;
      if (auto c = m->counters.find(u.toString()); c != m->counters.end()) addCounters(out[u.connector], c->second);
    }
    return out;
  }

  // What this worker's heartbeats say about the task units it runs: their progress
  // (cluster::Event::progress) and counters (::counters), each at most kMaxReportBytes in all, so
  // a worker of thousands of tasks keeps its heartbeats small (the rest show in this worker's own
  // answers only).
  void reportLocalUnits(cluster::Event& heartbeat) const {
    static constexpr std::size_t kMaxReportBytes = 32 * 1024;
    std::size_t progressBytes = 0, counterBytes = 0, connectionBytes = 0;
    std::lock_guard lock(unitsMu_);
    for (const auto& [u, r] : units_) {
      if (!r.runner) continue;
      std::string unit = u.toString();
      if (counterBytes < kMaxReportBytes) {
        const TaskCounters c = TaskHost::countersOf(r.runner->metrics());
        // As JSON: "unit":[in,out,errors,lag], and a comma.
        counterBytes += unit.size() + 10 + digits(c.recordsIn) + digits(c.recordsOut) + digits(c.errors) + digits(c.commitLag);
        heartbeat.counters.emplace(unit, c);
      }
      if (auto c = TaskHost::connectionOf(r.runner->metrics()); c && connectionBytes < kMaxReportBytes) {
        std::string text = TaskHost::connectionText(*c);
        connectionBytes += unit.size() + text.size();
        heartbeat.connections.emplace(unit, std::move(text));
      }
      auto p = r.runner->metrics().progress();
      if (!p || progressBytes >= kMaxReportBytes) continue;
      nlohmann::json j = {{"phase", p->report.phase}, {"done", p->report.done}, {"estimated", p->report.estimated},
                          {"unit", p->report.unit}, {"rate", p->ratePerSecond}};
      std::string text = j.dump();
      if (text.size() > 1024) continue;
      progressBytes += text.size();
      heartbeat.progress.emplace(std::move(unit), std::move(text));
    }
  }

  // A heartbeat's progress text; nullopt when it is not what progressOfLocalUnits() writes.
  static std::optional<std::pair<TaskProgress, double>> readProgress(const std::string& text) {
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("phase") || !j["phase"].is_string() || !j.contains("done") ||
        !j["done"].is_number_integer() || !j.contains("estimated") || !j["estimated"].is_number_integer() ||
        !j.contains("unit") || !j["unit"].is_string() || !j.contains("rate") || !j["rate"].is_number())
      return std::nullopt;
    TaskProgress p;
    p.phase = j["phase"].get<std::string>();
    p.done = j["done"].get<std::int64_t>();
    p.estimated = j["estimated"].get<std::int64_t>();
    p.unit = j["unit"].get<std::string>();
    return std::pair{p, j["rate"].get<double>()};
  }

  Result<TaskStateInfo> taskStatus(const std::string& name, int task) const override {
    FERRY_ASSIGN_OR_RETURN(auto s, connectorStatus(name));
    for (const auto& t : s.tasks)
      if (t.id == task) return t;
    return Status::notFound("task " + std::to_string(task) + " of connector " + name + " not found");
  }

  Result<std::vector<TaskInfo>> taskConfigs(const std::string& name) const override {
    auto ref = member_->syncedState(kReadSync);
    const auto& s = *ref;
    auto it = s.connectors().find(name);
    if (it == s.connectors().end()) return notFound(name);
    std::vector<TaskInfo> out;
    for (std::size_t i = 0; i < it->second.tasks.size(); ++i)
      out.push_back(TaskInfo{static_cast<int>(i), it->second.tasks[i]});
    return out;
  }

  Result<std::string> clusterJson() const override {
    auto ref = member_->state();
    const auto& s = *ref;
    nlohmann::json j;
    j["worker"] = o_.worker.workerId;
    j["incarnation"] = member_->incarnation();
    j["lease"] = member_->leaseValid();
    j["log_offset"] = s.offset();
    j["log_time_ms"] = s.logTimeMs();
    j["state_age_ms"] = member_->stateAgeMs();
    j["strategy"] = s.options().strategy;
    j["session_timeout_ms"] = s.options().sessionTimeoutMs;
    j["moves"] = s.moves();
    nlohmann::json workers = nlohmann::json::array();
    for (const auto& [id, m] : s.members()) {
      int units = 0;
      for (const auto& [u, own] : s.assignment())
        if (own.owner == id) ++units;
      workers.push_back({{"id", id}, {"url", m.url}, {"incarnation", m.incarnation}, {"capacity", m.capacity},
                         {"last_heartbeat_log_ms", m.lastSeenLogMs}, {"units", units}});
    }
    j["workers"] = workers;
    nlohmann::json assignment = nlohmann::json::array();
    for (const auto& [u, own] : s.assignment()) {
      nlohmann::json a = {{"connector", u.connector}, {"owner", own.owner}, {"epoch", own.epoch}};
      if (u.task >= 0) a["task"] = u.task;
      if (!own.next.empty()) a["handoff_to"] = own.next;
      // The owner's report for this epoch; an earlier epoch's is about a previous run.
      auto st = s.statuses().find(u);
      a["state"] = st != s.statuses().end() && st->second.epoch == own.epoch ? st->second.state : "UNASSIGNED";
      // The task's connection: its owner's last heartbeat's.
      if (const cluster::Member* m = currentOwner(s, u)) {
        if (auto c = m->connections.find(u.toString()); c != m->connections.end())
          if (auto read = TaskHost::readConnectionText(c->second))
            a["connection"] = {{"state", read->state}, {"reason", read->reason}, {"since_ms", read->sinceMs},
                               {"reconnects", read->reconnects}};
      }
      assignment.push_back(std::move(a));
    }
    j["assignment"] = assignment;
    return j.dump();
  }

  // ----- writes: events in the log, answered once applied here

  Result<ConnectorInfo> createConnector(const std::string& name, const StringMap& config,
                                        std::optional<TargetState> initialState) override {
    FERRY_RETURN_IF_ERROR(validName(name));
    StringMap full = runtime::expandDirectPair(*o_.registry, config);
    FERRY_RETURN_IF_ERROR(checkConnectorConfig(*o_.registry, name, full, limits()).status());
    std::lock_guard write(writeMu_);
    if (member_->state()->connectors().count(name)) return Status::alreadyExists("Connector " + name + " already exists");
    Event e;
    e.type = EventType::kConnectorPut;
    e.connector = name;
    e.config = full;
    e.target = store::targetStateName(initialState.value_or(TargetState::kStarted));
    FERRY_RETURN_IF_ERROR(appendApplied(e));
    return connectorInfo(name);
  }

  Result<ConnectorInfo> putConnectorConfig(const std::string& name, const StringMap& config, bool* created) override {
    FERRY_RETURN_IF_ERROR(validName(name));
    StringMap full = runtime::expandDirectPair(*o_.registry, config);
    FERRY_RETURN_IF_ERROR(checkConnectorConfig(*o_.registry, name, full, limits()).status());
    std::lock_guard write(writeMu_);
    auto ref = member_->state();
    const auto& s = *ref;
    auto it = s.connectors().find(name);
    if (created) *created = it == s.connectors().end();
    Event e;
    e.type = EventType::kConnectorPut;
    e.connector = name;
    e.config = full;
    e.target = it == s.connectors().end() ? "STARTED" : it->second.target;
    FERRY_RETURN_IF_ERROR(appendApplied(e));
    return connectorInfo(name);
  }

  Result<ConnectorInfo> patchConnectorConfig(
      const std::string& name, const std::map<std::string, std::optional<std::string>>& patch) override {
    FERRY_ASSIGN_OR_RETURN(StringMap merged, connectorConfig(name));
    for (const auto& [k, v] : patch) {
      if (v) {
        merged[k] = *v;
      } else {
        merged.erase(k);
      }
    }
    bool created = false;
    return putConnectorConfig(name, merged, &created);
  }

  Status deleteConnector(const std::string& name) override {
    std::lock_guard write(writeMu_);
    if (!member_->state()->connectors().count(name)) return notFound(name);
    Event e;
    e.type = EventType::kConnectorDelete;
    e.connector = name;
    return appendApplied(e);
  }

  Status restartConnector(const std::string& name, bool includeTasks, bool onlyFailed) override {
    auto ref = member_->state();
    const auto& s = *ref;
    auto it = s.connectors().find(name);
    if (it == s.connectors().end()) return notFound(name);
    auto failed = [&](const Unit& u) {
      auto st = s.statuses().find(u);
      return st != s.statuses().end() && st->second.state == "FAILED";
    };
    std::vector<Unit> units;
    if (!onlyFailed || failed(Unit{name, -1})) units.push_back(Unit{name, -1});
    if (includeTasks)
      for (std::size_t i = 0; i < it->second.tasks.size(); ++i)
        if (!onlyFailed || failed(Unit{name, static_cast<int>(i)})) units.push_back(Unit{name, static_cast<int>(i)});
    for (const auto& u : units) {
      Event e;
      e.type = EventType::kRestart;
      e.connector = u.connector;
      e.task = u.task;
      FERRY_RETURN_IF_ERROR(appendApplied(e));
    }
    return Status::ok();
  }

  Status restartTask(const std::string& name, int task) override {
    auto ref = member_->state();
    const auto& s = *ref;
    auto it = s.connectors().find(name);
    if (it == s.connectors().end()) return notFound(name);
    if (task < 0 || task >= static_cast<int>(it->second.tasks.size()))
      return Status::notFound("task " + std::to_string(task) + " of connector " + name + " not found");
    Event e;
    e.type = EventType::kRestart;
    e.connector = name;
    e.task = task;
    return appendApplied(e);
  }

  Status pauseConnector(const std::string& name) override { return setTarget(name, "PAUSED"); }
  Status resumeConnector(const std::string& name) override { return setTarget(name, "STARTED"); }
  Status stopConnector(const std::string& name) override { return setTarget(name, "STOPPED"); }

  // ----- offsets

  Result<PositionList> offsets(const std::string& name) const override {
    FERRY_ASSIGN_OR_RETURN(auto shape, shapeOf(name));
    if (shape == ConnectorShape::kSink) return sinkOffsets(*o_.backbone, name);
    if (auto* lp = dynamic_cast<runtime::LogPositionStore*>(o_.positions)) FERRY_RETURN_IF_ERROR(lp->reload(false));
    return o_.positions->getAll(name);
  }

  Status alterOffsets(const std::string& name, const PositionList& positions) override {
    FERRY_ASSIGN_OR_RETURN(auto shape, stoppedShape(name));
    if (shape == ConnectorShape::kSink) return alterSinkOffsets(*o_.backbone, name, positions);
    return o_.positions->put(name, positions);
  }

  Status resetOffsets(const std::string& name) override {
    FERRY_ASSIGN_OR_RETURN(auto shape, stoppedShape(name));
    if (shape == ConnectorShape::kSink) return o_.backbone->admin().setCommittedOffsets(sinkGroupOf(name), {});
    if (auto* lp = dynamic_cast<runtime::LogPositionStore*>(o_.positions)) FERRY_RETURN_IF_ERROR(lp->reload(false));
    return o_.positions->removeConnector(name);
  }

  Result<std::vector<std::string>> activeTopics(const std::string& name) const override {
    FERRY_RETURN_IF_ERROR(connectorInfo(name).status());
    std::lock_guard lock(topicsMu_);
    auto it = topics_.find(name);
    if (it == topics_.end()) return std::vector<std::string>{};
    return std::vector<std::string>(it->second.begin(), it->second.end());
  }
  Status resetActiveTopics(const std::string& name) override {
    FERRY_RETURN_IF_ERROR(connectorInfo(name).status());
    std::lock_guard lock(topicsMu_);
    topics_.erase(name);
    return Status::ok();
  }

  // ----- plugins and metrics

  std::vector<runtime::PluginInfo> plugins() const override { return o_.registry->list(); }
  Result<std::unique_ptr<runtime::TransformChain>> buildTransformChain(const StringMap& config) const override {
    return runtime::TransformChain::build(*o_.registry, config);
  }
  Result<std::vector<ConfigKey>> pluginConfig(const std::string& pluginClass) const override {
    return pluginConfigKeys(*o_.registry, pluginClass);
  }
  Result<ConfigReport> validateConfig(const std::string& pluginClass, const StringMap& config) const override {
    return validationReport(*o_.registry, pluginClass, config, limits());
  }
  StringMap maskConfig(const StringMap& config) const override { return maskedConfig(*o_.registry, config); }

  std::vector<MetricSample> metrics() const override {
    std::vector<MetricSample> out;
    auto ref = member_->state();
    const auto& s = *ref;
    out.push_back(MetricSample{"ferry_cluster_members", {}, static_cast<double>(s.members().size()),
                               "Live members of the cluster at the applied log position.", "gauge"});
    out.push_back(MetricSample{"ferry_cluster_log_offset", {}, static_cast<double>(s.offset()),
                               "Offset of the last cluster log event applied here.", "gauge"});
    out.push_back(MetricSample{"ferry_cluster_lease", {}, member_->leaseValid() ? 1.0 : 0.0,
                               "1 while this worker holds its lease (may run units).", "gauge"});
    std::lock_guard lock(unitsMu_);
    std::size_t tasks = 0;
    for (const auto& [u, r] : units_) {
      if (!r.runner) continue;
      ++tasks;
      TaskHost::appendTaskMetrics(out, u.connector, u.task, r.runner->metrics());
    }
    host_.appendWorkerMetrics(out, tasks);
    return out;
  }

  // ----- connector context callbacks (any thread)

  void requestReconfiguration(const std::string& name) {
    {
      std::lock_guard lock(mu_);
      reconfigure_.insert(name);
      ++version_;
    }
    cv_.notify_all();
  }
  void connectorError(const std::string& name, const Status& error) {
    auto ref = member_->state();
    const auto& s = *ref;
    auto a = s.assignment().find(Unit{name, -1});
    if (a == s.assignment().end()) return;
    reportStatus(Unit{name, -1}, a->second.epoch, State::kFailed, error.toString());
  }

 private:
  static Status notFound(const std::string& name) { return Status::notFound("Connector " + name + " not found"); }

  static std::string urlOrId(const cluster::ClusterState& s, const std::string& worker) {
    (void)s;
    return worker;
  }

  ConnectorInfo infoOf(const std::string& name, const cluster::ConnectorInfo& c) const {
    ConnectorInfo info;
    info.name = name;
    info.config = c.config;
    auto v = runtime::validateConnectorConfig(*o_.registry, c.config);
    info.type = v.isOk() ? typeOf(v->shape) : ConnectorType::kUnknown;
    for (std::size_t i = 0; i < c.tasks.size(); ++i) info.tasks.push_back(static_cast<int>(i));
    return info;
  }

  Result<ConnectorShape> shapeOf(const std::string& name) const {
    FERRY_ASSIGN_OR_RETURN(StringMap config, connectorConfig(name));
    FERRY_ASSIGN_OR_RETURN(auto v, runtime::validateConnectorConfig(*o_.registry, config));
    return v.shape;
  }

  Result<ConnectorShape> stoppedShape(const std::string& name) {
    auto ref = member_->state();
    const auto& s = *ref;
    auto it = s.connectors().find(name);
    if (it == s.connectors().end()) return notFound(name);
    if (it->second.target != "STOPPED")
      return Status::failedPrecondition("Connector " + name + " must be STOPPED (PUT /connectors/" + name +
                                        "/stop) before its offsets can be changed");
    return shapeOf(name);
  }

  Status setTarget(const std::string& name, const std::string& target) {
    std::lock_guard write(writeMu_);
    if (!member_->state()->connectors().count(name)) return notFound(name);
    Event e;
    e.type = EventType::kTargetState;
    e.connector = name;
    e.target = target;
    return appendApplied(e);
  }

  Status appendApplied(const Event& e) {
    FERRY_ASSIGN_OR_RETURN(std::int64_t off, member_->append(e));
    if (!member_->waitApplied(off, std::chrono::seconds(30)))
      return Status::timeout("the cluster log event at offset " + std::to_string(off) +
                             " was written but not yet applied by this worker");
    return Status::ok();
  }

  void appendQuiet(const Event& e) {
    if (auto r = member_->append(e); !r.isOk())
      log_->warn("cluster event {} not appended: {}", cluster::eventTypeName(e.type), r.status().toString());
  }

  void reportStatus(const Unit& u, std::int64_t epoch, State state, const std::string& trace) {
    // Without the lease this worker owns nothing for sure: its report would be fenced anyway, and
    // a worker that lost its lease under load must not add thousands of events to the log.
    if (!member_->leaseValid()) return;
    Event e;
    e.type = EventType::kStatus;
    e.worker = member_->workerId();
    e.incarnation = member_->incarnation();
    e.connector = u.connector;
    e.task = u.task;
    e.epoch = epoch;
    e.state = store::stateName(state);
    e.trace = trace;
    // Not waited for: reports come from the task threads, which must not wait for the broker.
    member_->post(e);
  }

  // Queues the `released` event of a handoff; flushReleases() appends the pass's events at once
  // (a worker handing off its share of thousands of tasks appended them one at a time, ~2 ms each).
  void release(const Unit& u, std::int64_t epoch) {
    Event e;
    e.type = EventType::kReleased;
    e.worker = member_->workerId();
    e.incarnation = member_->incarnation();
    e.connector = u.connector;
    e.task = u.task;
    e.epoch = epoch;
    releases_.push_back(std::move(e));
    log_->info("released {} (epoch {})", u.toString(), epoch);
  }
  void flushReleases() {
    if (releases_.empty()) return;
    if (auto r = member_->appendAll(releases_); !r.isOk())
      log_->warn("{} released event(s) not all appended: {}", releases_.size(), r.status().toString());
    releases_.clear();
  }

  // ----- the fencing thread
  //
  // A worker without its lease must send nothing more: another worker may run its tasks by now.
  // The control thread stops the tasks, but it may be busy (stopping other tasks, up to
  // task.shutdown.graceful.timeout.ms) and a task's records may already sit in the client's
  // queue. So this thread watches the lease on its own (it is read from the clock, every 10 ms)
  // and the moment it ends fences the worker's producers: the shared producer of the source tasks
  // and the position store's drop what they hold (librdkafka's purge: queued and in flight) and
  // refuse every send until the lease is back. Purged records were never acknowledged, so no
  // position covers them; a task that is still ours when the lease returns resends them, else
  // the next owner reads them again. After SIGSTOP/SIGCONT this thread wakes with librdkafka's:
  // it purges at once, but what librdkafka sent before the purge is beyond reach (see
  // src/control/README.md).
  void fenceLoop() {
    bool fenced = false;
    bool held = false;  // the lease was held since the last fence (nothing to report before the first)
    while (running_) {
      const bool lease = member_->leaseValid();
      if (lease == fenced) {
        const std::int64_t t0 = core::monotonicMs();
        Status a = host_.producers() ? host_.producers()->fence(!lease) : Status::ok();
        Status b = Status::ok();
        if (auto* lp = dynamic_cast<runtime::LogPositionStore*>(o_.positions)) b = lp->fence(!lease);
        fenced = !lease;
        if (fenced && held) {
          leaseLostAtMs_ = t0;
          log_->warn("lease lost: producers fenced (what they held purged) in {} ms{}{}", core::monotonicMs() - t0,
                     a.isOk() ? "" : "; tasks: " + a.toString(), b.isOk() ? "" : "; positions: " + b.toString());
        } else if (!fenced && leaseLostAtMs_.load() > 0) {
          log_->info("lease back after {} ms: producers unfenced", t0 - leaseLostAtMs_.load());
        }
        held = lease;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // ----- the control thread

  void controlLoop() {
    std::uint64_t seen = 0;
    bool lastLease = false;
    std::int64_t lastPass = 0;
    while (running_) {
      bool lease;
      bool changed;
      std::set<std::string> reconfigure;
      {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return !running_ || version_ != seen; });
        if (!running_) break;
        changed = version_ != seen;
        seen = version_;
        lease = lease_;
        reconfigure.swap(reconfigure_);
      }
      // The lease is also read live: the tail thread that reports changes may sit in a read the
      // broker does not answer (a partition), and the lease must end on time all the same. Read
      // before the state, so a confirmation it counts is in the state reconciled against.
      lease = lease && member_->leaseValid();
      const std::int64_t now = core::monotonicMs();
      // A pass on every change; otherwise every 500 ms (local restarts after a backoff).
      if (!changed && lease == lastLease && reconfigure.empty() && now - lastPass < 500) continue;
      lastLease = lease;
      lastPass = now;
      host_.stopper().reap();  // abandoned tasks whose threads ended at last
      reconcile(*member_->state(), lease, reconfigure);
    }
  }

  // Stops a unit's task within task.shutdown.graceful.timeout.ms (else it is abandoned:
  // cancelled, so it commits and reports nothing more, and a release is safe) and its instance.
  void stopUnit(const Unit& u, Running& r) {
    if (r.runner) host_.stopper().stop(std::move(r.runner));
    for (auto* inst : {&r.instance.instance, &r.instance.sinkInstance})
      if (*inst) {
        try {
          (void)(*inst)->stop();
        } catch (...) {
        }
      }
    log_->info("stopped {}", u.toString());
  }

  void stopAll() {
    std::map<Unit, Running> all;
    {
      std::lock_guard lock(unitsMu_);
      all.swap(units_);
    }
    std::vector<std::unique_ptr<TaskRunner>> runners;  // all at once, under one deadline
    for (auto& [u, r] : all) runners.push_back(std::move(r.runner));
    host_.stopper().stop(std::move(runners));
    for (auto& [u, r] : all) stopUnit(u, r);
  }

  void reconcile(const cluster::ClusterState& s, bool lease, const std::set<std::string>& reconfigure) {
    const auto mine = lease ? s.unitsOf(member_->workerId(), member_->incarnation()) : std::map<Unit, cluster::Ownership>{};
    if (mine.size() != lastMine_) {
      log_->info("{} unit(s) assigned here at log offset {} ({} member(s))", mine.size(), s.offset(), s.members().size());
      lastMine_ = mine.size();
    }
    // 1. Stop what must stop: not ours any more, a new epoch, a handoff, a changed config, a
    //    stopped connector, or the lease ended (then everything, all at once).
    std::vector<std::pair<Unit, Running>> stopping;
    {
      std::lock_guard lock(unitsMu_);
      for (auto it = units_.begin(); it != units_.end();) {
        const Unit& u = it->first;
        Running& r = it->second;
        auto m = mine.find(u);
        auto c = s.connectors().find(u.connector);
        bool keep = m != mine.end() && m->second.epoch == r.epoch && m->second.next.empty() &&
                    c != s.connectors().end() && c->second.target != "STOPPED";
        if (keep && u.task < 0) keep = c->second.generation == r.generation && !reconfigure.count(u.connector);
        if (keep && u.task >= 0)
          keep = u.task < static_cast<int>(c->second.tasks.size()) &&
                 c->second.tasks[static_cast<std::size_t>(u.task)] == r.taskConfig;
        if (keep) {
          ++it;
          continue;
        }
        stopping.emplace_back(u, std::move(r));
        it = units_.erase(it);
      }
    }
    {
      std::vector<std::unique_ptr<TaskRunner>> runners;  // all at once, under one deadline
      for (auto& [u, r] : stopping) runners.push_back(std::move(r.runner));
      host_.stopper().stop(std::move(runners));
    }
    const bool timed = !lease && !stopping.empty() && leaseLostAtMs_.load() > 0;
    for (auto& [u, r] : stopping) {
      stopUnit(u, r);
      auto m = mine.find(u);
      if (m != mine.end() && !m->second.next.empty() && m->second.epoch == r.epoch &&
          released_.insert({u, r.epoch}).second)
        release(u, r.epoch);
    }
    if (timed)
      log_->warn("without the lease: {} unit(s) stopped {} ms after the lease was lost", stopping.size(),
                 core::monotonicMs() - leaseLostAtMs_.load());
    if (!lease) {
      flushReleases();
      return;
    }
    // 2. Units we own but must hand off and do not run: release at once.
    for (const auto& [u, own] : mine) {
      if (own.next.empty()) continue;
      std::lock_guard lock(unitsMu_);
      if (units_.count(u)) continue;
      if (!released_.insert({u, own.epoch}).second) continue;
      release(u, own.epoch);
    }
    flushReleases();
    // 3. Start what is ours; restart failed tasks after their backoff; follow pause/resume.
    // Positions written by a task's previous owner are read once per pass, before any task starts
    // (exactly-once tasks re-read them themselves after fencing).
    auto* lp = dynamic_cast<runtime::LogPositionStore*>(o_.positions);
    bool positionsFresh = o_.worker.exactlyOnceSource || lp == nullptr;
    auto refreshPositions = [&](const auto& u) {
      if (positionsFresh) return;
      const std::int64_t t0 = core::monotonicMs();
      // A position write purged on its way to the broker at a lease loss may still be stored:
      // wait for its answer (or its timeout), so the read below sees it.
      if (Status st = lp->awaitPurged(std::chrono::seconds(5)); !st.isOk())
        log_->warn("re-reading positions without waiting any longer for purged writes: {}", st.toString());
      if (Status st = lp->reload(false); !st.isOk())
        log_->warn("positions not re-read before starting {}: {}", u.toString(), st.toString());
      if (core::monotonicMs() - t0 > 200)
        log_->info("re-reading source positions took {} ms", core::monotonicMs() - t0);
      positionsFresh = true;
    };
    for (const auto& [u, own] : mine) {
      if (!own.next.empty()) continue;
      auto c = s.connectors().find(u.connector);
      if (c == s.connectors().end() || c->second.target == "STOPPED") continue;
      const bool paused = c->second.target == "PAUSED";
      bool reportInstance = false;  // a running connector instance follows pause/resume in its status
      std::int64_t instanceEpoch = 0;
      {
        std::unique_lock lock(unitsMu_);
        auto r = units_.find(u);
        if (r != units_.end()) {
          if (u.task < 0 && !r->second.failed && r->second.paused != paused) {
            r->second.paused = paused;
            reportInstance = true;
            instanceEpoch = r->second.epoch;
          }
          if (r->second.runner) {
            if (r->second.runner->finished() && r->second.runner->failed()) {
              if (!r->second.restarts) r->second.restarts.emplace(host_.restartState());
              if (host_.restartDue(*r->second.restarts, *r->second.runner, u.connector, u.task)) {
                r->second.runner->join();
                // The failed run's last position writes may have been stored after this worker
                // last read the topic (a write answered after a lease flap purged its callback):
                // read them first, as for a task taken over, or the new run starts from an older
                // position and moves the committed one back. Not under the lock (a slow read).
                if (!positionsFresh) {
                  lock.unlock();
                  refreshPositions(u);
                  lock.lock();
                  r = units_.find(u);
                  if (r == units_.end() || !r->second.runner || !r->second.runner->finished()) continue;
                }
                log_->info("restarting task {}", u.toString());
                r->second.runner = startTask(u, own.epoch, c->second.tasks[static_cast<std::size_t>(u.task)], paused);
                TaskHost::restarted(*r->second.restarts);
              }
            } else {
              r->second.runner->setPaused(paused);
            }
          }
          if (!reportInstance) continue;
        }
      }
      if (reportInstance) {
        reportStatus(u, instanceEpoch, paused ? State::kPaused : State::kRunning, "");
        continue;
      }
      Running r;
      r.epoch = own.epoch;
      if (u.task < 0) {
        r.generation = c->second.generation;
        startInstanceUnit(u, own.epoch, c->second, r, paused);
      } else {
        if (u.task >= static_cast<int>(c->second.tasks.size())) continue;
        r.taskConfig = c->second.tasks[static_cast<std::size_t>(u.task)];
        refreshPositions(u);
        r.runner = startTask(u, own.epoch, r.taskConfig, paused);
      }
      std::lock_guard lock(unitsMu_);
      units_[u] = std::move(r);
    }
  }

  void startInstanceUnit(const Unit& u, std::int64_t epoch, const cluster::ConnectorInfo& c, Running& r, bool paused) {
    auto shape = runtime::validateConnectorConfig(*o_.registry, c.config);
    if (!shape.isOk()) {
      r.failed = true;
      reportStatus(u, epoch, State::kFailed, shape.status().toString());
      return;
    }
    r.context = std::make_unique<ClusterConnectorContext>(*this, u.connector);
    std::vector<StringMap> taskConfigs;
    Status s = startConnectorInstance(*o_.registry, u.connector, c.config, shape->shape, *r.context, r.instance,
                                      taskConfigs, o_.worker.configProviders.get());
    if (!s.isOk()) {
      r.failed = true;
      log_->error("connector {} failed: {}", u.connector, s.toString());
      reportStatus(u, epoch, State::kFailed, s.toString());
      return;
    }
    if (c.tasksGeneration != c.generation || c.tasks != taskConfigs) {
      Event e;
      e.type = EventType::kTaskConfigs;
      e.connector = u.connector;
      e.generation = c.generation;
      e.taskConfigs = std::move(taskConfigs);
      appendQuiet(e);
    }
    r.paused = paused;
    reportStatus(u, epoch, paused ? State::kPaused : State::kRunning, "");
    log_->info("started connector {} (epoch {})", u.connector, epoch);
  }

  std::unique_ptr<TaskRunner> startTask(const Unit& u, std::int64_t epoch, const StringMap& config, bool paused) {
    auto v = runtime::validateConnectorConfig(*o_.registry, config);
    TaskHooks hooks;
    auto last = std::make_shared<std::pair<State, std::string>>(State::kUnassigned, "");
    hooks.onState = [this, u, epoch, last](State st, const std::string& trace) {
      if (last->first == st && last->second == trace) return;
      *last = {st, trace};
      reportStatus(u, epoch, st, trace);
    };
    // Before every poll/put/commit: the lease holds and the unit is still ours at this epoch (a
    // worker thawed after SIGSTOP regains its lease only after applying the moves made meanwhile).
    hooks.mayRun = [this, u, epoch] { return member_->leaseValid() && member_->owns(u, epoch); };
    // The unit gone while the lease holds: stopped, deleted, reconfigured or moved on purpose.
    hooks.leaseValid = [this] { return member_->leaseValid(); };
    // A final flush/commit needs the lease, and the task not given to anyone else meanwhile (a
    // worker thawed after SIGSTOP regains a lease, but its old tasks run elsewhere by then: a
    // position it committed now would move the new owner's back).
    hooks.mayCommit = [this, u, epoch] {
      if (!member_->leaseValid()) return false;
      const auto s = member_->state();
      auto it = s->assignment().find(u);
      return it == s->assignment().end() || (it->second.owner == member_->workerId() &&
                                             it->second.incarnation == member_->incarnation() &&
                                             it->second.epoch == epoch);
    };
    hooks.onTopic = [this, name = u.connector](const std::string& topic) {
      std::lock_guard lock(topicsMu_);
      topics_[name].insert(topic);
    };
    auto runner = host_.start(u.connector, u.task, v.isOk() ? v->shape : ConnectorShape::kSource, config, paused,
                              std::move(hooks));
    log_->info("started task {} (epoch {})", u.toString(), epoch);
    return runner;
  }

  DistributedOptions o_;
  // The tasks that run here: their creation, restarts, stops and metrics (task_host.h).
  TaskHost host_{TaskHostOptions{&o_.worker, o_.registry, o_.backbone, o_.positions}};
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<ClusterMember> member_;
  std::atomic<bool> running_{false};
  std::thread control_;
  std::thread fencer_;  // fenceLoop()
  std::atomic<std::int64_t> leaseLostAtMs_{0};  // monotonic time fenceLoop() saw the lease end (0: never)
  std::mutex writeMu_;  // serializes REST writes (check-then-append)

  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t version_ = 0;             // guarded by mu_: bumped on every change to act on
  bool lease_ = false;                    // guarded by mu_
  std::set<std::string> reconfigure_;     // guarded by mu_

  mutable std::mutex unitsMu_;
  std::map<Unit, Running> units_;                   // guarded by unitsMu_ (changed by the control thread)
  std::set<std::pair<Unit, std::int64_t>> released_;  // control thread: handoffs released without running
  std::vector<Event> releases_;                       // control thread: released events of this pass
  std::size_t lastMine_ = 0;                          // control thread

  mutable std::mutex topicsMu_;
  std::map<std::string, std::set<std::string>> topics_;
};

void ClusterConnectorContext::requestTaskReconfiguration() { h_.requestReconfiguration(name_); }
void ClusterConnectorContext::raiseError(const Status& error) { h_.connectorError(name_, error); }

}  // namespace

std::unique_ptr<DistributedHerder> makeDistributedHerder(DistributedOptions options) {
  return std::make_unique<HerderImpl>(std::move(options));
}

}  // namespace ferry::control
