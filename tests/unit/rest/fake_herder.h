// An in-memory Herder for REST and ctl unit tests: connectors live in a map, every connector has
// one task on worker "w1", states follow the target state at once, and offsets may be changed
// only while STOPPED (as the real contract says). Thread-safe (one mutex guards everything).
#pragma once

#include <mutex>
#include <set>
#include <stdexcept>

#include "control/herder.h"
#include "runtime/tap.h"

namespace ferry::rest::testing {

class FakeHerder : public control::Herder {
 public:
  struct Entry {
    StringMap config;
    store::TargetState target = store::TargetState::kStarted;
    control::PositionList positions;
    bool failed = false;
  };

  std::string workerId() const override { return "w1"; }
  runtime::TapHub* taps() override { return &tapHub; }
  // A backbone of one topic "t" (two queues) and the worker's own "ferry-offsets"; the last
  // topicRecords() limit asked is kept.
  std::vector<control::TopicRecord> topicT;
  mutable std::size_t lastLimit = 0;
  Result<std::vector<backbone::TopicInfo>> topics() const override {
    return std::vector<backbone::TopicInfo>{{"t", 2}};
  }
  bool isInternalTopic(const std::string& topic) const override { return topic == "ferry-offsets"; }
  Result<std::vector<control::TopicRecord>> topicRecords(const std::string& topic, std::size_t limit) const override {
    lastLimit = limit;
    if (topic.find('/') != std::string::npos || topic.size() > 249) return Status::invalidArgument("invalid topic name");
    if (topic != "t") return Status::notFound("topic " + topic + " not found");
    std::vector<control::TopicRecord> out = topicT;
    if (out.size() > limit) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(limit));
    return out;
  }
  runtime::TapHub tapHub;  // a test offers records to it as a task would
  std::string healthProblem() const override {
    std::lock_guard l(mu_);
    return healthProblem_;
  }
  void setHealthProblem(std::string p) {
    std::lock_guard l(mu_);
    healthProblem_ = std::move(p);
  }
  void setFailed(const std::string& name) {
    std::lock_guard l(mu_);
    entries_[name].failed = true;
  }
  void setPositions(const std::string& name, control::PositionList p) {
    std::lock_guard l(mu_);
    entries_[name].positions = std::move(p);
  }
  // The next `n` offset changes of a STOPPED connector fail as if its tasks were still leaving.
  void setStillStopping(int n) {
    std::lock_guard l(mu_);
    stillStopping_ = n;
  }
  // Distributed mode's GET /cluster answer; empty = a standalone worker (NotFound).
  void setClusterJson(std::string j) {
    std::lock_guard l(mu_);
    clusterJson_ = std::move(j);
  }
  Result<std::string> clusterJson() const override {
    std::lock_guard l(mu_);
    if (clusterJson_.empty()) return Status::notFound("standalone");
    return clusterJson_;
  }
  std::vector<std::string> calls() const {
    std::lock_guard l(mu_);
    return calls_;
  }

  // Creating or writing the config of this connector fails (Unavailable) from now on, as when
  // the config store cannot be written; "" = none.
  void setFailWritesOf(std::string name) {
    std::lock_guard l(mu_);
    failWritesOf_ = std::move(name);
  }

  // connectors() throws this text from now on (an unexpected failure inside a handler).
  void setThrowOnList(std::string what) {
    std::lock_guard l(mu_);
    throwOnList_ = std::move(what);
  }

  std::vector<std::string> connectors() const override {
    std::lock_guard l(mu_);
    if (!throwOnList_.empty()) throw std::runtime_error(throwOnList_);
    std::vector<std::string> out;
    for (const auto& [k, v] : entries_) out.push_back(k);
    return out;
  }
  Result<control::ConnectorInfo> connectorInfo(const std::string& name) const override {
    std::lock_guard l(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    return infoLocked(name, it->second);
  }
  Result<StringMap> connectorConfig(const std::string& name) const override {
    std::lock_guard l(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    return it->second.config;
  }
  Result<control::ConnectorInfo> createConnector(
      const std::string& name, const StringMap& config,
      std::optional<store::TargetState> initial) override {
    std::lock_guard l(mu_);
    if (entries_.count(name)) return Status::alreadyExists("connector " + name + " already exists");
    if (name == failWritesOf_) return Status::unavailable("config store of " + name + " unreachable");
    if (auto s = check(config); !s.isOk()) return s;
    Entry& e = entries_[name];
    e.config = config;
    e.target = initial.value_or(store::TargetState::kStarted);
    calls_.push_back("create " + name);
    return infoLocked(name, e);
  }
  Result<control::ConnectorInfo> putConnectorConfig(const std::string& name,
                                                    const StringMap& config,
                                                    bool* created) override {
    std::lock_guard l(mu_);
    if (name == failWritesOf_) return Status::unavailable("config store of " + name + " unreachable");
    if (auto s = check(config); !s.isOk()) return s;
    *created = entries_.count(name) == 0;
    Entry& e = entries_[name];
    e.config = config;
    return infoLocked(name, e);
  }
  Result<control::ConnectorInfo> patchConnectorConfig(
      const std::string& name,
      const std::map<std::string, std::optional<std::string>>& patch) override {
    std::lock_guard l(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    for (const auto& [k, v] : patch) {
      if (v)
        it->second.config[k] = *v;
      else
        it->second.config.erase(k);
    }
    return infoLocked(name, it->second);
  }
  Status deleteConnector(const std::string& name) override {
    std::lock_guard l(mu_);
    if (entries_.erase(name) == 0) return notFound(name);
    return Status::ok();
  }
  Result<control::ConnectorStateInfo> connectorStatus(const std::string& name) const override {
    std::lock_guard l(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    control::ConnectorStateInfo s;
    s.name = name;
    s.state = stateLocked(it->second);
    s.workerId = "w1";
    s.type = typeOf(it->second.config);
    control::TaskStateInfo t{0, s.state, "w1",
                             it->second.failed ? "java.lang.Boom: it broke\n\tat x" : "", ""};
    s.tasks.push_back(t);
    return s;
  }
  Result<control::TaskStateInfo> taskStatus(const std::string& name, int task) const override {
    auto s = connectorStatus(name);
    if (!s.isOk()) return s.status();
    if (task != 0)
      return Status::notFound("connector " + name + " has no task " + std::to_string(task));
    return s->tasks[0];
  }
  Result<std::vector<control::TaskInfo>> taskConfigs(const std::string& name) const override {
    std::lock_guard l(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    return std::vector<control::TaskInfo>{{0, it->second.config}};
  }
  Status restartConnector(const std::string& name, bool includeTasks, bool onlyFailed) override {
    return record(
        name, "restart " + name + (includeTasks ? " tasks" : "") + (onlyFailed ? " failed" : ""));
  }
  Status restartTask(const std::string& name, int task) override {
    if (task != 0)
      return Status::notFound("connector " + name + " has no task " + std::to_string(task));
    return record(name, "restart-task " + name);
  }
  Status pauseConnector(const std::string& name) override {
    return target(name, store::TargetState::kPaused);
  }
  Status resumeConnector(const std::string& name) override {
    return target(name, store::TargetState::kStarted);
  }
  Status stopConnector(const std::string& name) override {
    return target(name, store::TargetState::kStopped);
  }
  Result<control::PositionList> offsets(const std::string& name) const override {
    std::lock_guard l(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    return it->second.positions;
  }
  Status alterOffsets(const std::string& name, const control::PositionList& positions) override {
    std::lock_guard l(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    if (it->second.target != store::TargetState::kStopped)
      return Status::failedPrecondition("connector " + name + " must be STOPPED to alter offsets");
    if (stillStopping_ > 0) {
      --stillStopping_;
      return Status::failedPrecondition("group connect-" + name + " has 1 live member(s)");
    }
    it->second.positions = positions;
    return Status::ok();
  }
  Status resetOffsets(const std::string& name) override {
    std::lock_guard l(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    if (it->second.target != store::TargetState::kStopped)
      return Status::failedPrecondition("connector " + name + " must be STOPPED to reset offsets");
    if (stillStopping_ > 0) {
      --stillStopping_;
      return Status::failedPrecondition("group connect-" + name + " has 1 live member(s)");
    }
    it->second.positions.clear();
    return Status::ok();
  }
  Result<std::vector<std::string>> activeTopics(const std::string& name) const override {
    std::lock_guard l(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    return std::vector<std::string>{"lines"};
  }
  Status resetActiveTopics(const std::string& name) override {
    return record(name, "reset-topics " + name);
  }
  std::vector<runtime::PluginInfo> plugins() const override {
    return {{"FileStreamSource",
             {"FileSource"},
             PluginKind::kSourceConnector,
             "1.0",
             "reads a file",
             "builtin"},
            {"FileStreamSink", {}, PluginKind::kSinkConnector, "1.0", "writes a file", "builtin"},
            {"Filter", {}, PluginKind::kTransform, "1.0", "drops records", "builtin"},
            {"JsonConverter", {}, PluginKind::kConverter, "1.0", "json", "builtin"}};
  }
  // The real built-in transforms: trying rules out needs nothing else from a worker.
  Result<std::unique_ptr<runtime::TransformChain>> buildTransformChain(const StringMap& config) const override {
    static const runtime::PluginRegistry* registry = [] {
      auto* r = new runtime::PluginRegistry();
      (void)runtime::registerBuiltins(*r);
      return r;
    }();
    return runtime::TransformChain::build(*registry, config);
  }
  Result<std::vector<ConfigKey>> pluginConfig(const std::string& cls) const override {
    if (cls != "FileStreamSource") return Status::notFound("unknown plugin " + cls);
    return keys();
  }
  Result<control::ConfigReport> validateConfig(const std::string& cls,
                                               const StringMap& config) const override {
    if (cls != "FileStreamSource" && cls != "FileStreamSink")
      return Status::notFound("unknown plugin " + cls +
                              "; known: FileStreamSource, FileStreamSink");
    control::ConfigReport r;
    r.className = cls;
    r.groups = {"Common"};
    for (const auto& k : keys(cls)) {
      control::ConfigKeyReport kr;
      kr.definition = k;
      auto it = config.find(k.name);
      if (it != config.end())
        kr.value = it->second;
      else if (k.defaultValue)
        kr.value = k.defaultValue;
      else
        kr.errors.push_back("Missing required configuration \"" + k.name +
                            "\" which has no default value.");
      r.errorCount += static_cast<int>(kr.errors.size());
      r.keys.push_back(std::move(kr));
    }
    return r;
  }
  std::map<std::string, control::TaskCounters> connectorCounters() const override { return {{"a\"b", {42, 0, 0, 0}}}; }
  std::vector<control::MetricSample> metrics() const override {
    return {{"ferry_task_records_in_total",
             {{"connector", "a\"b"}, {"task", "0"}},
             42,
             "Records read",
             "counter"}};
  }

 private:
  static Status notFound(const std::string& name) {
    return Status::notFound("connector " + name + " not found");
  }
  static std::vector<ConfigKey> keys(const std::string& cls = "FileStreamSource") {
    auto key = [](std::string name, ConfigType type, std::optional<std::string> def,
                  std::string group) {
      ConfigKey k;
      k.name = std::move(name);
      k.type = type;
      k.defaultValue = std::move(def);
      k.importance = Importance::kHigh;
      k.documentation = "the " + k.name;
      k.group = std::move(group);
      return k;
    };
    return {key("file", ConfigType::kString, std::nullopt, "Common"),
            key(cls == "FileStreamSink" ? "topics" : "topic", ConfigType::kString, std::nullopt, "Common"),
            key("tasks.max", ConfigType::kInt, "1", "")};
  }
  static control::ConnectorType typeOf(const StringMap& c) {
    auto it = c.find("connector.class");
    if (it == c.end()) return control::ConnectorType::kUnknown;
    return it->second == "FileStreamSink" ? control::ConnectorType::kSink
                                          : control::ConnectorType::kSource;
  }
  static Status check(const StringMap& config) {
    auto it = config.find("connector.class");
    if (it == config.end()) return Status::invalidArgument("1 error: connector.class: required");
    if (it->second != "FileStreamSource" && it->second != "FileStreamSink")
      return Status::notFound("unknown connector class " + it->second +
                              "; known: FileStreamSource, FileStreamSink");
    if (!config.count("topic") && !config.count("topics"))
      return Status::invalidArgument("1 error: topic: Missing required configuration");
    return Status::ok();
  }
  control::ConnectorInfo infoLocked(const std::string& name, const Entry& e) const {
    return {name, e.config, {0}, typeOf(e.config)};
  }
  static store::State stateLocked(const Entry& e) {
    if (e.failed) return store::State::kFailed;
    switch (e.target) {
      case store::TargetState::kStarted:
        return store::State::kRunning;
      case store::TargetState::kPaused:
        return store::State::kPaused;
      case store::TargetState::kStopped:
        return store::State::kStopped;
    }
    return store::State::kUnassigned;
  }
  Status target(const std::string& name, store::TargetState t) {
    std::lock_guard l(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return notFound(name);
    it->second.target = t;
    return Status::ok();
  }
  Status record(const std::string& name, std::string call) {
    std::lock_guard l(mu_);
    if (!entries_.count(name)) return notFound(name);
    calls_.push_back(std::move(call));
    return Status::ok();
  }

  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;  // guarded by mu_
  std::string healthProblem_;            // guarded by mu_
  std::string clusterJson_;              // guarded by mu_
  int stillStopping_ = 0;                // guarded by mu_
  std::string failWritesOf_;
  std::string throwOnList_;              // guarded by mu_
  std::vector<std::string> calls_;        // guarded by mu_
};

}  // namespace ferry::rest::testing
