// The standalone herder (see standalone_herder.h).
#include "control/standalone_herder.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/clock.h"
#include "core/logging.h"
#include "core/thread.h"
#include "runtime/config_util.h"
#include "runtime/connector_config.h"
#include "runtime/task_stopper.h"
#include "runtime/tasks.h"
#include "control/herder_common.h"
#include "control/task_host.h"

namespace ferry::control {

const char* connectorTypeName(ConnectorType t) noexcept {
  switch (t) {
    case ConnectorType::kSource: return "source";
    case ConnectorType::kSink: return "sink";
    case ConnectorType::kDirect: return "direct";
    case ConnectorType::kUnknown: return "unknown";
  }
  return "unknown";
}

namespace {

using runtime::ConnectorShape;
using runtime::TaskRunner;
using store::State;
using store::StatusEntry;
using store::TargetState;



class ConnectorContextImpl;

class HerderImpl final : public StandaloneHerder {
 public:
  explicit HerderImpl(StandaloneOptions o) : o_(std::move(o)), log_(core::logger("herder")) {}
  ~HerderImpl() override { stop(); }

  // ---------------------------------------------------------------------------------------------
  // Lifecycle

  Status start() override {
    FERRY_ASSIGN_OR_RETURN(auto stored, o_.configs->loadAll());
    {
      std::lock_guard lock(mu_);
      for (auto& [name, e] : stored) {
        Entry entry;
        entry.config = e.config;
        entry.target = e.target;
        entry.generation = e.generation;
        entry.taskConfigs = e.taskConfigs;
        auto v = runtime::validateConnectorConfig(*o_.registry, e.config);
        entry.shape = v.isOk() ? v->shape : ConnectorShape::kSource;
        entry.known = v.isOk();
        entries_[name] = std::move(entry);
        queue_.push_back(name);
      }
    }
    log_->info("loaded {} connector(s) from the config store", stored.size());
    running_ = true;
    stopThread_ = core::namedThread("task-stop", [this] { stopLoop(); });
    control_ = core::namedThread("herder", [this] { controlLoop(); });
    return Status::ok();
  }

  void stop() override {
    if (!running_.exchange(false)) return;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (control_.joinable()) control_.join();
    // Stop every task at once (each commits what is safe), then wait for all, up to
    // task.shutdown.graceful.timeout.ms; the rest are abandoned.
    std::vector<std::unique_ptr<TaskRunner>> all;
    {
      std::lock_guard lock(runtimeMu_);
      for (auto& [name, rt] : runtimes_)
        for (auto& t : rt.tasks)
          if (t) all.push_back(std::move(t));
    }
    {
      std::lock_guard lock(stopMu_);
      stopExit_ = true;  // the stopping thread finishes what it was given (same deadline), then exits
    }
    stopCv_.notify_all();
    if (const std::size_t n = host_.stopper().stop(std::move(all)))
      log_->error("{} task(s) abandoned at shutdown", n);
    if (stopThread_.joinable()) stopThread_.join();
    std::lock_guard lock(runtimeMu_);
    for (auto& [name, rt] : runtimes_) stopInstances(rt);
    runtimes_.clear();
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  std::string workerId() const override { return o_.worker.workerId; }
  WorkerLimits limits() const {
    return WorkerLimits{o_.worker.tasksMaxLimit, o_.backbone, o_.worker.configProviders.get(),
                        o_.worker.refuseUnknownConnectorKeys, o_.worker.clientOverridePolicy, &o_.worker};
  }
  std::size_t abandonedTasksRunning() const override { return host_.stopper().abandonedRunning(); }
  runtime::TapHub* taps() override { return &host_.taps(); }
  Result<std::vector<TopicRecord>> topicRecords(const std::string& topic, std::size_t limit) const override {
    return host_.topicRecords(topic, limit);
  }
  bool isInternalTopic(const std::string& topic) const override { return host_.isInternalTopic(topic); }
  Result<std::vector<backbone::TopicInfo>> topics() const override { return host_.topics(); }

  std::string healthProblem() const override {
    if (!running_) return "the worker is not running (starting or shutting down)";
    return {};
  }

  std::vector<std::string> connectors() const override {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& [name, e] : entries_) out.push_back(name);
    return out;
  }

  Result<ConnectorInfo> connectorInfo(const std::string& name) const override {
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    return infoOf(name, it->second);
  }

  Result<StringMap> connectorConfig(const std::string& name) const override {
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    return it->second.config;
  }

  Result<ConnectorStateInfo> connectorStatus(const std::string& name) const override {
    ConnectorType type;
    {
      std::lock_guard lock(mu_);
      auto it = entries_.find(name);
      if (it == entries_.end()) return notFound(name);
      type = it->second.known ? typeOf(it->second.shape) : ConnectorType::kUnknown;
    }
    std::map<int, std::string> dataLoss;
    std::map<int, std::optional<runtime::TaskMetrics::Progress>> progress;
    std::map<int, TaskCounters> counters;
    std::map<int, std::optional<ConnectionInfo>> connections;
    {
      std::lock_guard lock(runtimeMu_);
      if (auto rt = runtimes_.find(name); rt != runtimes_.end())
        for (const auto& t : rt->second.tasks)
          if (t) {
            dataLoss[t->env().taskId] = t->dataLossNote();
            progress[t->env().taskId] = t->metrics().progress();
            counters[t->env().taskId] = TaskHost::countersOf(t->metrics());
            connections[t->env().taskId] = TaskHost::connectionOf(t->metrics());
          }
    }
    std::lock_guard lock(statusMu_);
    ConnectorStateInfo out;
    out.name = name;
    out.type = type;
    out.workerId = o_.worker.workerId;
    auto st = statuses_.find(name);
    if (st != statuses_.end()) {
      out.state = st->second.connector.state;
      out.trace = st->second.connector.trace;
      for (const auto& [id, t] : st->second.tasks) {
        out.tasks.push_back(TaskStateInfo{id, t.state, o_.worker.workerId, t.trace, dataLoss[id]});
        if (const auto& p = progress[id]) {
          out.tasks.back().progress = p->report;
          out.tasks.back().progressRate = p->ratePerSecond;
        }
        if (auto c = counters.find(id); c != counters.end()) out.tasks.back().counters = c->second;
        out.tasks.back().connection = connections[id];
      }
    }
    return out;
  }

  Result<TaskStateInfo> taskStatus(const std::string& name, int task) const override {
    FERRY_ASSIGN_OR_RETURN(auto s, connectorStatus(name));
    for (const auto& t : s.tasks)
      if (t.id == task) return t;
    return Status::notFound("task " + std::to_string(task) + " of connector " + name + " not found");
  }

  Result<std::vector<TaskInfo>> taskConfigs(const std::string& name) const override {
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    std::vector<TaskInfo> out;
    for (std::size_t i = 0; i < it->second.taskConfigs.size(); ++i)
      out.push_back(TaskInfo{static_cast<int>(i), it->second.taskConfigs[i]});
    return out;
  }

  // ---------------------------------------------------------------------------------------------
  // Writes

  Result<ConnectorInfo> createConnector(const std::string& name, const StringMap& config,
                                        std::optional<TargetState> initialState) override {
    FERRY_RETURN_IF_ERROR(validName(name));
    StringMap full = runtime::expandDirectPair(*o_.registry, config);
    FERRY_ASSIGN_OR_RETURN(auto shape, checkConfig(name, full));
    std::lock_guard write(writeMu_);
    if (exists(name)) return Status::alreadyExists("Connector " + name + " already exists");
    const TargetState target = initialState.value_or(TargetState::kStarted);
    FERRY_RETURN_IF_ERROR(o_.configs->putConnector(name, full, target));
    std::lock_guard lock(mu_);
    Entry& e = entries_[name];
    e.config = std::move(full);
    e.target = target;
    e.generation = 1;
    e.shape = shape;
    e.known = true;
    enqueueLocked(name);
    log_->info("created connector {} ({}, {})", name, runtime::connectorShapeName(shape), store::targetStateName(target));
    return infoOf(name, e);
  }

  Result<ConnectorInfo> putConnectorConfig(const std::string& name, const StringMap& config, bool* created) override {
    FERRY_RETURN_IF_ERROR(validName(name));
    StringMap full = runtime::expandDirectPair(*o_.registry, config);
    FERRY_ASSIGN_OR_RETURN(auto shape, checkConfig(name, full));
    std::lock_guard write(writeMu_);
    bool isNew;
    TargetState target;
    {
      std::lock_guard lock(mu_);
      auto it = entries_.find(name);
      isNew = it == entries_.end();
      target = isNew ? TargetState::kStarted : it->second.target;
    }
    if (created) *created = isNew;
    FERRY_RETURN_IF_ERROR(o_.configs->putConnector(name, full, target));
    std::lock_guard lock(mu_);
    Entry& e = entries_[name];
    const bool changed = isNew || e.config != full;
    e.config = std::move(full);
    e.target = target;
    e.shape = shape;
    e.known = true;
    if (changed) {
      e.generation++;
      e.taskConfigs.clear();
    }
    enqueueLocked(name);
    return infoOf(name, e);
  }

  Result<ConnectorInfo> patchConnectorConfig(
      const std::string& name, const std::map<std::string, std::optional<std::string>>& patch) override {
    StringMap merged;
    {
      std::lock_guard lock(mu_);
      auto it = entries_.find(name);
      if (it == entries_.end()) return notFound(name);
      merged = it->second.config;
    }
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
    if (!exists(name)) return notFound(name);
    FERRY_RETURN_IF_ERROR(o_.configs->removeConnector(name));
    std::lock_guard lock(mu_);
    entries_.erase(name);
    enqueueLocked(name);
    log_->info("deleted connector {}", name);
    return Status::ok();
  }

  Status restartConnector(const std::string& name, bool includeTasks, bool onlyFailed) override {
    std::set<int> failedTasks;
    bool connectorFailed = false;
    {
      std::lock_guard lock(statusMu_);
      auto st = statuses_.find(name);
      if (st != statuses_.end()) {
        connectorFailed = st->second.connector.state == State::kFailed;
        for (const auto& [id, t] : st->second.tasks)
          if (t.state == State::kFailed) failedTasks.insert(id);
      }
    }
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    Entry& e = it->second;
    if (!onlyFailed || connectorFailed) e.restartInstance = true;
    if (includeTasks) {
      if (onlyFailed) {
        e.restartTasks.insert(failedTasks.begin(), failedTasks.end());
      } else {
        for (std::size_t i = 0; i < e.taskConfigs.size(); ++i) e.restartTasks.insert(static_cast<int>(i));
      }
    }
    enqueueLocked(name);
    return Status::ok();
  }

  Status restartTask(const std::string& name, int task) override {
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    if (task < 0 || task >= static_cast<int>(it->second.taskConfigs.size()))
      return Status::notFound("task " + std::to_string(task) + " of connector " + name + " not found");
    it->second.restartTasks.insert(task);
    enqueueLocked(name);
    return Status::ok();
  }

  Status pauseConnector(const std::string& name) override { return setTarget(name, TargetState::kPaused); }
  Status resumeConnector(const std::string& name) override { return setTarget(name, TargetState::kStarted); }
  Status stopConnector(const std::string& name) override { return setTarget(name, TargetState::kStopped); }

  // ---------------------------------------------------------------------------------------------
  // Offsets

  Result<PositionList> offsets(const std::string& name) const override {
    ConnectorShape shape;
    {
      std::lock_guard lock(mu_);
      auto it = entries_.find(name);
      if (it == entries_.end()) return notFound(name);
      shape = it->second.shape;
    }
    if (shape != ConnectorShape::kSink) return o_.positions->getAll(name);
    return sinkOffsets(*o_.backbone, name);
  }

  Status alterOffsets(const std::string& name, const PositionList& positions) override {
    FERRY_ASSIGN_OR_RETURN(auto shape, stoppedShape(name));
    if (shape != ConnectorShape::kSink) return o_.positions->put(name, positions);
    return alterSinkOffsets(*o_.backbone, name, positions);
  }

  Status resetOffsets(const std::string& name) override {
    FERRY_ASSIGN_OR_RETURN(auto shape, stoppedShape(name));
    if (shape != ConnectorShape::kSink) return o_.positions->removeConnector(name);
    return o_.backbone->admin().setCommittedOffsets(sinkGroupOf(name), {});
  }

  Result<std::vector<std::string>> activeTopics(const std::string& name) const override {
    {
      std::lock_guard lock(mu_);
      if (!entries_.count(name)) return notFound(name);
    }
    std::lock_guard lock(statusMu_);
    auto st = statuses_.find(name);
    if (st == statuses_.end()) return std::vector<std::string>{};
    return std::vector<std::string>(st->second.topics.begin(), st->second.topics.end());
  }

  Status resetActiveTopics(const std::string& name) override {
    {
      std::lock_guard lock(mu_);
      if (!entries_.count(name)) return notFound(name);
    }
    std::lock_guard lock(statusMu_);
    if (auto st = statuses_.find(name); st != statuses_.end()) st->second.topics.clear();
    return Status::ok();
  }

  // ---------------------------------------------------------------------------------------------
  // Plugins

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

  // ---------------------------------------------------------------------------------------------
  // Metrics

  std::map<std::string, TaskCounters> connectorCounters() const override {
    std::map<std::string, TaskCounters> out;
    std::lock_guard lock(runtimeMu_);
    for (const auto& [name, rt] : runtimes_)
      for (const auto& t : rt.tasks)
        if (t) addCounters(out[name], TaskHost::countersOf(t->metrics()));
    return out;
  }

  std::vector<MetricSample> metrics() const override {
    std::vector<MetricSample> out;
    auto add = [&](const char* name, const char* type, const char* help, std::map<std::string, std::string> labels,
                   double value) { out.push_back(MetricSample{name, std::move(labels), value, help, type}); };
    std::size_t connectors = 0, tasks = 0;
    {
      std::lock_guard lock(runtimeMu_);
      for (const auto& [name, rt] : runtimes_) {
        ++connectors;
        for (const auto& t : rt.tasks) {
          if (!t) continue;
          ++tasks;
          TaskHost::appendTaskMetrics(out, name, t->env().taskId, t->metrics());
        }
      }
    }
    // What the backbone found damaged or missing in its own storage (the embedded log).
    std::map<std::string, std::pair<double, double>> byKind;  // kind -> (issues, offsets lost)
    for (const auto& i : o_.backbone->storageIssues()) {
      auto& k = byKind[i.kind];
      k.first += 1;
      if (i.firstOffset >= 0 && i.lastOffset >= i.firstOffset) k.second += static_cast<double>(i.lastOffset - i.firstOffset + 1);
    }
    for (const char* kind : {"damaged", "torn-tail", "missing", "group-ahead", "group-lost"}) {
      add("ferry_backbone_storage_issues", "gauge",
          "Damage or loss the backbone found in its storage since the worker started, by kind (see the log).",
          {{"kind", kind}}, byKind[kind].first);
      add("ferry_backbone_storage_lost_records", "gauge",
          "Offsets whose records the backbone's storage lost, by kind of damage.", {{"kind", kind}}, byKind[kind].second);
    }
    add("ferry_worker_connectors", "gauge", "Connectors with a runtime on this worker.", {}, static_cast<double>(connectors));
    host_.appendWorkerMetrics(out, tasks);
    return out;
  }

 private:
  friend class ConnectorContextImpl;

  struct Entry {
    StringMap config;
    TargetState target = TargetState::kStarted;
    std::int64_t generation = 0;
    std::vector<StringMap> taskConfigs;
    ConnectorShape shape = ConnectorShape::kSource;
    bool known = true;
    // Requests for the control thread.
    bool restartInstance = false;
    bool reconfigure = false;
    std::set<int> restartTasks;
  };


  // What runs for one connector. Owned by the control thread; runtimeMu_ guards structural changes
  // against metrics() readers.
  struct Runtime {
    std::int64_t generation = -1;
    runtime::PluginPtr<Connector> instance;
    runtime::PluginPtr<Connector> sinkInstance;  // direct connectors
    std::unique_ptr<ConnectorContextImpl> context;
    std::vector<std::unique_ptr<TaskRunner>> tasks;
    std::vector<StringMap> runningTaskConfigs;
    std::map<int, RestartState> slots;  // automatic restarts per task id
    int connectorFailures = 0;
    std::int64_t connectorRestartAtMs = -1;
    bool connectorFailed = false;
  };

  struct StatusRecord {
    StatusEntry connector;
    std::map<int, StatusEntry> tasks;
    std::set<std::string> topics;
  };

  static Status notFound(const std::string& name) {
    return Status::notFound("Connector " + name + " not found");
  }

  ConnectorInfo infoOf(const std::string& name, const Entry& e) const {
    ConnectorInfo info;
    info.name = name;
    info.config = e.config;
    info.type = e.known ? typeOf(e.shape) : ConnectorType::kUnknown;
    for (std::size_t i = 0; i < e.taskConfigs.size(); ++i) info.tasks.push_back(static_cast<int>(i));
    return info;
  }

  // Validates a connector config (adding `name`); returns its shape.
  Result<ConnectorShape> checkConfig(const std::string& name, StringMap& config) const {
    return checkConnectorConfig(*o_.registry, name, config, limits());
  }

  Result<ConnectorShape> stoppedShape(const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    if (it->second.target != TargetState::kStopped)
      return Status::failedPrecondition("Connector " + name + " must be STOPPED (PUT /connectors/" + name +
                                        "/stop) before its offsets can be changed");
    std::lock_guard slock(statusMu_);
    auto st = statuses_.find(name);
    if (st == statuses_.end() || st->second.connector.state != State::kStopped)
      return Status::failedPrecondition("Connector " + name + " is still stopping; try again in a moment");
    return it->second.shape;
  }

  Status setTarget(const std::string& name, TargetState target) {
    std::lock_guard write(writeMu_);
    std::optional<TargetState> current;
    {
      std::lock_guard lock(mu_);
      if (auto it = entries_.find(name); it != entries_.end()) current = it->second.target;
    }
    if (!current) return notFound(name);
    if (*current != target) FERRY_RETURN_IF_ERROR(o_.configs->putTargetState(name, target));
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(name); it != entries_.end()) it->second.target = target;
    enqueueLocked(name);
    return Status::ok();
  }

  bool exists(const std::string& name) const {
    std::lock_guard lock(mu_);
    return entries_.count(name) != 0;
  }

  // Records the task configs a connector produced (control thread), in the store and the map.
  void storeTaskConfigs(const std::string& name, const std::vector<StringMap>& taskConfigs) {
    std::lock_guard write(writeMu_);
    {
      std::lock_guard lock(mu_);
      auto it = entries_.find(name);
      if (it == entries_.end() || it->second.taskConfigs == taskConfigs) return;
    }
    o_.configs->putTaskConfigs(name, taskConfigs).isOk();
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(name); it != entries_.end()) it->second.taskConfigs = taskConfigs;
  }

  void enqueueLocked(const std::string& name) {
    queue_.push_back(name);
    cv_.notify_all();
  }
  void enqueue(const std::string& name) {
    std::lock_guard lock(mu_);
    enqueueLocked(name);
  }

  // ---------------------------------------------------------------------------------------------
  // Status

  void setConnectorStatus(const std::string& name, State s, const std::string& trace = {}) {
    StatusEntry e{s, trace, o_.worker.workerId, core::nowMs(), 0};
    {
      std::lock_guard lock(statusMu_);
      auto& rec = statuses_[name];
      if (rec.connector.state == s && rec.connector.trace == trace && rec.connector.sinceMs != 0) return;
      rec.connector = e;
    }
    if (o_.statuses) o_.statuses->putConnector(name, e).isOk();
  }

  void setTaskStatus(const std::string& name, int task, State s, const std::string& trace = {}) {
    StatusEntry e{s, trace, o_.worker.workerId, core::nowMs(), 0};
    {
      std::lock_guard lock(statusMu_);
      statuses_[name].tasks[task] = e;
    }
    if (o_.statuses) o_.statuses->putTask(name, task, e).isOk();
  }

  void clearTaskStatuses(const std::string& name) {
    std::lock_guard lock(statusMu_);
    if (auto it = statuses_.find(name); it != statuses_.end()) it->second.tasks.clear();
  }

  // ---------------------------------------------------------------------------------------------
  // The control thread

  void controlLoop() {
    while (true) {
      std::set<std::string> names;
      {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(200), [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        names.insert(queue_.begin(), queue_.end());
        queue_.clear();
      }
      host_.stopper().reap();  // abandoned tasks whose threads ended at last
      // Failed tasks and connectors due for an automatic restart.
      const std::int64_t now = core::monotonicMs();
      for (auto& [name, rt] : runtimes_) {
        if (rt.connectorFailed && rt.connectorRestartAtMs >= 0 && now >= rt.connectorRestartAtMs) names.insert(name);
        for (std::size_t i = 0; i < rt.tasks.size(); ++i) {
          auto& t = rt.tasks[i];
          if (!t || !t->finished()) continue;
          if (host_.restartDue(slotOf(rt, static_cast<int>(i)), *t, name, static_cast<int>(i))) names.insert(name);
        }
      }
      for (const auto& name : names) {
        try {
          reconcile(name);
        } catch (const std::exception& e) {
          log_->error("reconciling {} threw: {}", name, e.what());
        }
      }
    }
  }

  RestartState& slotOf(Runtime& rt, int id) {
    auto it = rt.slots.find(id);
    if (it == rt.slots.end()) it = rt.slots.emplace(id, host_.restartState()).first;
    return it->second;
  }

  // Takes the tasks (all, or `only`) out of `rt` and hands them to the stopping thread: the control
  // thread does not wait for them. New tasks of `name` start only once they have stopped or been
  // abandoned (stopsPending), so a task's successor resumes from the positions it committed.
  void stopTasks(const std::string& name, Runtime& rt, const std::set<int>* only = nullptr) {
    std::vector<std::unique_ptr<TaskRunner>> victims;
    {
      std::lock_guard lock(runtimeMu_);
      for (std::size_t i = 0; i < rt.tasks.size(); ++i)
        if (rt.tasks[i] && (!only || only->count(static_cast<int>(i)))) victims.push_back(std::move(rt.tasks[i]));
      if (!only) {
        rt.tasks.clear();
        rt.runningTaskConfigs.clear();
      }
    }
    if (victims.empty()) return;
    for (auto& t : victims) t->requestStop();  // they start committing now
    std::lock_guard lock(stopMu_);
    ++stopsPending_[name];
    stopQueue_.push_back(StopBatch{name, std::move(victims), std::chrono::steady_clock::now() + host_.stopper().timeout()});
    stopCv_.notify_all();
  }

  bool stopsPending(const std::string& name) const {
    std::lock_guard lock(stopMu_);
    return stopsPending_.count(name) != 0;
  }

  // The stopping thread: stops what stopTasks() queued, each batch within
  // task.shutdown.graceful.timeout.ms of its request (batches queued together wait together),
  // then has the connector reconciled again.
  void stopLoop() {
    while (true) {
      StopBatch batch;
      {
        std::unique_lock lock(stopMu_);
        stopCv_.wait(lock, [&] { return stopExit_ || !stopQueue_.empty(); });
        if (stopQueue_.empty()) return;  // exiting, nothing left
        batch = std::move(stopQueue_.front());
        stopQueue_.pop_front();
      }
      host_.stopper().stop(std::move(batch.runners), batch.deadline);
      {
        std::lock_guard lock(stopMu_);
        if (auto it = stopsPending_.find(batch.name); it != stopsPending_.end() && --it->second == 0)
          stopsPending_.erase(it);
      }
      enqueue(batch.name);
    }
  }

  void stopInstances(Runtime& rt) {
    if (rt.instance) {
      try {
        rt.instance->stop();
      } catch (...) {
      }
    }
    if (rt.sinkInstance) {
      try {
        rt.sinkInstance->stop();
      } catch (...) {
      }
    }
    rt.instance.reset();
    rt.sinkInstance.reset();
    rt.context.reset();
  }

  void teardown(const std::string& name, Runtime& rt) {
    stopTasks(name, rt);
    stopInstances(rt);
  }

  // Brings what runs for `name` in line with what is wanted.
  void reconcile(const std::string& name);

  // Starts the connector instance(s) and computes the task configs.
  Status startInstance(const std::string& name, const Entry& wanted, Runtime& rt, std::vector<StringMap>& taskConfigs);

  StandaloneOptions o_;
  // The tasks that run here: their creation, restarts, stops and metrics (task_host.h).
  TaskHost host_{TaskHostOptions{&o_.worker, o_.registry, o_.backbone, o_.positions}};
  std::shared_ptr<spdlog::logger> log_;

  // Writers (REST calls, the control thread recording task configs) take writeMu_ first and keep
  // it across the config-store write (an fsync); mu_ is held only to read or update the map, so
  // readers never wait on the disk. Lock order: writeMu_, then mu_.
  std::mutex writeMu_;
  mutable std::mutex mu_;  // entries_, queue_, stopping_
  std::condition_variable cv_;
  std::map<std::string, Entry> entries_;
  std::deque<std::string> queue_;
  bool stopping_ = false;

  mutable std::mutex statusMu_;
  std::map<std::string, StatusRecord> statuses_;

  mutable std::mutex runtimeMu_;
  std::map<std::string, Runtime> runtimes_;  // control thread (writes under runtimeMu_)

  // Tasks handed to the stopping thread (stopTasks -> stopLoop), per connector.
  mutable std::mutex stopMu_;
  std::condition_variable stopCv_;
  struct StopBatch {
    std::string name;
    std::vector<std::unique_ptr<TaskRunner>> runners;
    std::chrono::steady_clock::time_point deadline;
  };
  std::deque<StopBatch> stopQueue_;  // guarded by stopMu_
  std::map<std::string, int> stopsPending_;  // guarded by stopMu_: batches queued or being stopped
  bool stopExit_ = false;                    // guarded by stopMu_
  std::thread stopThread_;

  std::atomic<bool> running_{false};
  std::thread control_;
};

class ConnectorContextImpl final : public ConnectorContext {
 public:
  ConnectorContextImpl(HerderImpl& h, std::string name) : h_(h), name_(std::move(name)) {}
  const std::string& connectorName() const override { return name_; }
  void requestTaskReconfiguration() override {
    {
      std::lock_guard lock(h_.mu_);
      if (auto it = h_.entries_.find(name_); it != h_.entries_.end()) it->second.reconfigure = true;
    }
    h_.enqueue(name_);
  }
  void raiseError(const Status& error) override {
    h_.setConnectorStatus(name_, State::kFailed, error.toString());
  }

 private:
  HerderImpl& h_;
  std::string name_;
};

Status HerderImpl::startInstance(const std::string& name, const Entry& wanted, Runtime& rt,
                                 std::vector<StringMap>& taskConfigs) {
  rt.context = std::make_unique<ConnectorContextImpl>(*this, name);
  ConnectorInstances instances;
  Status s = startConnectorInstance(*o_.registry, name, wanted.config, wanted.shape, *rt.context, instances, taskConfigs,
                                    o_.worker.configProviders.get());
  rt.instance = std::move(instances.instance);
  rt.sinkInstance = std::move(instances.sinkInstance);
  return s;
}

void HerderImpl::reconcile(const std::string& name) {
  Entry wanted;
  bool exists;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    exists = it != entries_.end();
    if (exists) {
      wanted = it->second;
      it->second.restartInstance = false;
      it->second.reconfigure = false;
      it->second.restartTasks.clear();
    }
  }
  if (!exists) {
    auto rtIt = runtimes_.find(name);
    if (rtIt != runtimes_.end()) {
      teardown(name, rtIt->second);
      std::lock_guard lock(runtimeMu_);
      runtimes_.erase(rtIt);
    }
    {
      std::lock_guard lock(statusMu_);
      statuses_.erase(name);
    }
    if (o_.statuses) o_.statuses->removeConnector(name).isOk();
    // Positions are kept (as Kafka Connect keeps offsets): a connector re-created under the same
    // name resumes where it was. DELETE /connectors/{name}/offsets (while STOPPED) removes them.
    return;
  }
  Runtime* rtp;
  {
    std::lock_guard lock(runtimeMu_);
    rtp = &runtimes_[name];
  }
  Runtime& rt = *rtp;
  const std::int64_t now = core::monotonicMs();

  // A new config: start over. An explicit restart of the connector restarts its instance only;
  // its tasks restart too when the task configs it produces differ (or when asked with
  // includeTasks).
  if (rt.generation != wanted.generation) {
    if (rt.instance || !rt.tasks.empty()) log_->info("restarting connector {} with its new config", name);
    teardown(name, rt);
    rt.generation = wanted.generation;
    rt.connectorFailed = false;
    rt.connectorRestartAtMs = -1;
    clearTaskStatuses(name);
  } else if (wanted.restartInstance) {
    log_->info("restarting connector {}", name);
    stopInstances(rt);
    rt.connectorFailed = false;
    rt.connectorRestartAtMs = -1;
    rt.connectorFailures = 0;
  }
  if (wanted.target == TargetState::kStopped) {
    teardown(name, rt);
    clearTaskStatuses(name);
    rt.connectorFailed = false;
    storeTaskConfigs(name, {});
    // STOPPED once its tasks have stopped (a sink's consumer has left its group), so the offsets
    // can be changed as soon as the status says STOPPED; the stopping thread reconciles again.
    if (!stopsPending(name)) setConnectorStatus(name, State::kStopped);
    return;
  }
  if (rt.connectorFailed && now < rt.connectorRestartAtMs) return;  // waiting for its automatic restart
  if (!wanted.known) {
    auto v = runtime::validateConnectorConfig(*o_.registry, wanted.config);
    if (!v.isOk()) {
      setConnectorStatus(name, State::kFailed, v.status().toString());
      return;
    }
  }
  if (!rt.instance || wanted.reconfigure) {
    std::vector<StringMap> taskConfigs;
    if (rt.instance) stopInstances(rt);
    Status s = startInstance(name, wanted, rt, taskConfigs);
    if (!s.isOk()) {
      log_->error("connector {} failed: {}", name, s.toString());
      stopInstances(rt);
      teardown(name, rt);
      setConnectorStatus(name, State::kFailed, s.toString());
      rt.connectorFailed = true;
      rt.connectorRestartAtMs =
          o_.worker.taskRestartEnable ? now + host_.connectorRestartDelayMs(rt.connectorFailures++)
                                      : std::numeric_limits<std::int64_t>::max();
      return;
    }
    rt.connectorFailed = false;
    if (taskConfigs != rt.runningTaskConfigs) {
      stopTasks(name, rt);
      clearTaskStatuses(name);
      rt.runningTaskConfigs = taskConfigs;
    }
    storeTaskConfigs(name, taskConfigs);
  }
  setConnectorStatus(name, wanted.target == TargetState::kPaused ? State::kPaused : State::kRunning);

  // Tasks: explicit restarts, then failed tasks whose backoff passed, then missing ones.
  if (!wanted.restartTasks.empty()) {
    stopTasks(name, rt, &wanted.restartTasks);
    for (int id : wanted.restartTasks) rt.slots.insert_or_assign(id, host_.restartState());
  }
  // Tasks of this connector still stopping: their successors start when they have (the stopping
  // thread enqueues the connector again).
  if (stopsPending(name)) return;
  {
    std::lock_guard lock(runtimeMu_);
    rt.tasks.resize(rt.runningTaskConfigs.size());
  }
  for (std::size_t i = 0; i < rt.runningTaskConfigs.size(); ++i) {
    const int id = static_cast<int>(i);
    auto& slot = slotOf(rt, id);
    if (rt.tasks[i] && rt.tasks[i]->finished()) {
      if (slot.restartAtMs < 0 || now < slot.restartAtMs) continue;  // FAILED, waiting for its restart
      std::unique_ptr<TaskRunner> ended;
      {
        std::lock_guard lock(runtimeMu_);
        ended = std::move(rt.tasks[i]);
      }
      host_.stopper().stop(std::move(ended));  // its thread has ended: returns at once
      log_->info("restarting task {}-{}", name, id);
    }
    if (!rt.tasks[i]) {
      TaskHost::restarted(slot);
      TaskHooks hooks;
      hooks.onState = [this, name, id](State s, const std::string& trace) { setTaskStatus(name, id, s, trace); };
      hooks.onTopic = [this, name](const std::string& topic) {
        std::lock_guard lock(statusMu_);
        statuses_[name].topics.insert(topic);
      };
      setTaskStatus(name, id, State::kUnassigned);
      auto runner = host_.start(name, id, wanted.shape, rt.runningTaskConfigs[i],
                                wanted.target == TargetState::kPaused, std::move(hooks));
      std::lock_guard lock(runtimeMu_);
      rt.tasks[i] = std::move(runner);
    }
    rt.tasks[i]->setPaused(wanted.target == TargetState::kPaused);
  }
}

}  // namespace

std::unique_ptr<StandaloneHerder> makeStandaloneHerder(StandaloneOptions options) {
  return std::make_unique<HerderImpl>(std::move(options));
}

}  // namespace ferry::control
