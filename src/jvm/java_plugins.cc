// Java connectors in the plugin registry (java_plugins.h).
#include "jvm/java_plugins.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>

#include "core/logging.h"
#include "jvm/java_records.h"

namespace ferry::jvm {

namespace {

constexpr std::chrono::milliseconds kCallTimeout{30000};

ConfigType typeOf(const std::string& kafkaType) {
  if (kafkaType == "INT" || kafkaType == "SHORT") return ConfigType::kInt;
  if (kafkaType == "LONG") return ConfigType::kLong;
  if (kafkaType == "DOUBLE") return ConfigType::kDouble;
  if (kafkaType == "BOOLEAN") return ConfigType::kBool;
  if (kafkaType == "LIST") return ConfigType::kList;
  if (kafkaType == "PASSWORD") return ConfigType::kPassword;
  if (kafkaType == "CLASS") return ConfigType::kClass;
  return ConfigType::kString;
}

Importance importanceOf(const std::string& s) {
  if (s == "HIGH") return Importance::kHigh;
  if (s == "LOW") return Importance::kLow;
  return Importance::kMedium;
}

// A Java connector class's ConfigDef, asked of the host once (per worker process) and kept.
class ConfigDefCache {
 public:
  Result<std::shared_ptr<const ConfigDef>> get(JvmHostSupervisor& host, const std::string& cls) {
    {
      std::lock_guard lock(mu_);
      if (auto it = defs_.find(cls); it != defs_.end()) return it->second;
    }
    FERRY_ASSIGN_OR_RETURN(auto payload, host.call(kConfigDef, [&](Writer& w) { w.str(cls); }, kCallTimeout));
    FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfigDef(payload));
    auto def = std::make_shared<ConfigDef>(std::move(parsed));
    std::lock_guard lock(mu_);
    defs_[cls] = def;
    return std::shared_ptr<const ConfigDef>(def);
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const ConfigDef>> defs_;
};

// What both proxies share: the class, the host, the ConfigDef and validate().
class JavaConnectorCore {
 public:
  JavaConnectorCore(std::string cls, std::string version, std::shared_ptr<JvmHostSupervisor> host,
                    std::shared_ptr<ConfigDefCache> cache)
      : cls_(std::move(cls)), version_(std::move(version)), host_(std::move(host)) {
    auto def = cache->get(*host_, cls_);
    if (def.isOk()) {
      def_ = *def;
    } else {
      defError_ = def.status().message();
      def_ = std::make_shared<const ConfigDef>();
    }
  }
  const std::string& version() const { return version_; }
  const ConfigDef& configDef() const { return *def_; }

  void validate(const StringMap& config, ConfigValidation& validation) const {
    if (!defError_.empty()) {
      validation.errors["connector.class"].push_back("the JVM host could not describe " + cls_ + ": " + defError_);
      return;
    }
    auto payload = host_->call(kValidate, [&](Writer& w) { w.str(cls_).map(config); }, kCallTimeout);
    if (!payload.isOk()) {
      validation.errors["connector.class"].push_back(cls_ + ".validate() failed: " + payload.status().message());
      return;
    }
    auto read = parseValidation(*payload);
    if (!read.isOk()) {
      validation.errors["connector.class"].push_back("the JVM host's validation of " + cls_ +
                                                     " could not be read: " + read.status().message());
      return;
    }
    for (auto& [key, messages] : *read) {
      // The ConfigDef's own checks ran here already (the same keys and types): a key with an
      // error of ours keeps it, without the Java wording of the same fault beside it.
      if (messages.empty() || validation.errors.count(key)) continue;
      auto& mine = validation.errors[key];
      mine.insert(mine.end(), messages.begin(), messages.end());
    }
  }

  const std::string& className() const { return cls_; }
  const std::shared_ptr<JvmHostSupervisor>& supervisor() const { return host_; }

 private:
  std::string cls_, version_;
  std::shared_ptr<JvmHostSupervisor> host_;
  std::shared_ptr<const ConfigDef> def_;
  std::string defError_;
};

std::atomic<std::int64_t> nextHandle{1};

// Long calls into Java code: a task's start that connects to a database, a put that waits for
// its peer (tasks run on the worker's task threads).
constexpr std::chrono::milliseconds kTaskCallTimeout{300000};
// (A connector's start, taskConfigs and stop run on the herder's control thread: they are bounded
// by kCallTimeout, as validate() is, so a connector that hangs holds that thread no longer.)
// Records a source task's poll thread may have waiting in the host.
constexpr std::int32_t kSourceQueueRecords = 4096;

// How schemaless bytes reach a Java sink: as the connector's converter would have read them
// (Records.Form in the host): 0 bytes, 1 String, 2 parsed JSON.
std::uint8_t formOf(const std::string& converterClass) {
  auto ends = [&](std::string_view tail) {
    return converterClass.size() >= tail.size() && converterClass.compare(converterClass.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends("StringConverter")) return 1;
  if (ends("JsonConverter")) return 2;
  return 0;
}

// A failed call: when the host is gone, the task fails with the JVM's own last words (and is
// restarted on a new host by the worker's restart policy); a Java RetriableException is retried.
Status callFailed(const std::shared_ptr<JvmHost>& host, const std::string& what, const Status& s) {
  if (!host->alive()) return Status::internal(what + ": " + host->endedBecause());
  return Status(s.code(), what + ": " + s.message());  // JvmHost::call: retriable ones are Unavailable
}

// Where a connector's events go; cleared by stop() so a late event touches nothing.
struct EventSink {
  std::mutex mu;
  ConnectorContext* connector = nullptr;
  SourceTaskContext* source = nullptr;
  SinkTaskContext* sink = nullptr;
};

HandleHooks hooksFor(const std::shared_ptr<EventSink>& sink) {
  HandleHooks h;
  h.onEvent = [sink](std::uint8_t kind, const std::string& message) {
    std::lock_guard lock(sink->mu);
    if (sink->connector && kind == 1) sink->connector->requestTaskReconfiguration();
    if (sink->connector && kind == 2) sink->connector->raiseError(Status::internal(message));
    if (sink->sink && kind == 3) sink->sink->requestCommit();
  };
  h.onReady = [sink] {
    std::lock_guard lock(sink->mu);
    if (sink->source) sink->source->wakeup();
  };
  return h;
}

// One connector or task running in the JVM host under a handle of its own: started on the
// supervisor's current host, called, stopped. Calls made here serve the host's OFFSETS_READ for
// the handle (HandleHooks::onOffsetsRead).
class HostHandle {
 public:
  // `label` names it in messages: the class, or "<class> task"; `timeout` bounds its start and calls.
  HostHandle(std::string cls, std::string label, std::shared_ptr<JvmHostSupervisor> supervisor,
             std::chrono::milliseconds timeout)
      : cls_(std::move(cls)), label_(std::move(label)), supervisor_(std::move(supervisor)), timeout_(timeout) {}
  ~HostHandle() {
    if (host_) host_->detach(handle_);
  }
  HostHandle(const HostHandle&) = delete;
  HostHandle& operator=(const HostHandle&) = delete;

  // Whether it runs on a host that is still alive.
  bool running() const { return host_ && host_->alive(); }

  // Starts it (request `type` with the handle, the class, then what `fill` writes), on the
  // current host; one started before (on a host that died) is forgotten first.
  Status start(std::uint8_t type, const std::function<void(Writer&)>& fill, HandleHooks hooks) {
    if (host_) host_->detach(handle_);
    FERRY_ASSIGN_OR_RETURN(host_, supervisor_->host());
    handle_ = nextHandle.fetch_add(1);
    host_->attach(handle_, std::move(hooks));
    auto s = host_->call(type, [&](Writer& w) {
      w.i64(handle_).str(cls_);
      fill(w);
    }, timeout_, handle_);
    if (!s.isOk()) {
      auto failed = callFailed(host_, label_ + " start()", s.status());
      host_->detach(handle_);
      host_.reset();
      return failed;
    }
    return Status::ok();
  }

  Result<std::string> call(std::uint8_t type, const char* what, const std::function<void(Writer&)>& fill) {
    if (!host_) return Status::failedPrecondition(label_ + " " + what + ": not running");
    auto r = host_->call(type, [&](Writer& w) {
      w.i64(handle_);
      fill(w);
    }, timeout_, handle_);
    if (!r.isOk()) return callFailed(host_, label_ + " " + what, r.status());
    return r;
  }

  // Stops it (request `type` with the handle and what `fill` writes) when its host still runs.
  void stop(std::uint8_t type, const std::function<void(Writer&)>& fill, std::chrono::milliseconds timeout) {
    if (!host_) return;
    if (host_->alive()) {
      auto s = host_->call(type, [&](Writer& w) {
        w.i64(handle_);
        fill(w);
      }, timeout, handle_);
      if (!s.isOk()) core::logger("jvm")->warn("{} stop(): {}", label_, s.status().message());
    }
    host_->detach(handle_);
    host_.reset();
  }

 private:
  std::string cls_, label_;
  std::shared_ptr<JvmHostSupervisor> supervisor_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<JvmHost> host_;
  std::int64_t handle_ = 0;
};

// A Java connector of either kind (Base: SourceConnector or SinkConnector, Task: its task type).
template <typename Base, typename Task>
class JavaConnector final : public Base {
 public:
  JavaConnector(JavaConnectorCore core, std::function<std::unique_ptr<Task>()> makeTask)
      : core_(std::move(core)), makeTask_(std::move(makeTask)), handle_(core_.className(), core_.className(), core_.supervisor(), kCallTimeout) {}
  ~JavaConnector() override { stop(); }
  std::string version() const override { return core_.version(); }
  const ConfigDef& configDef() const override { return core_.configDef(); }
  void validate(const StringMap& config, ConfigValidation& v) const override { core_.validate(config, v); }

  Status start(const StringMap& config, ConnectorContext& context) override {
    config_ = config;
    events_ = std::make_shared<EventSink>();
    events_->connector = &context;
    return startOnHost();
  }

  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override {
    // A host that died since start: the connector is started again on the new one.
    if (!handle_.running()) FERRY_RETURN_IF_ERROR(startOnHost());
    FERRY_ASSIGN_OR_RETURN(auto payload, handle_.call(kTaskConfigs, "taskConfigs()", [&](Writer& w) { w.i32(maxTasks); }));
    Reader r(payload);
    FERRY_ASSIGN_OR_RETURN(auto n, r.count("task configs"));
    std::vector<StringMap> out;
    for (std::int32_t i = 0; i < n; ++i) {
      FERRY_ASSIGN_OR_RETURN(auto m, r.map("task config"));
      out.push_back(std::move(m));
    }
    return out;
  }

  void stop() override {
    if (events_) {
      std::lock_guard lock(events_->mu);
      events_->connector = nullptr;
    }
    handle_.stop(kConnectorStop, [](Writer&) {}, kCallTimeout);
  }

  std::unique_ptr<Task> createTask() override { return makeTask_(); }

 private:
  Status startOnHost() {
    return handle_.start(kConnectorStart, [&](Writer& w) { w.map(config_); }, hooksFor(events_));
  }

  JavaConnectorCore core_;
  std::function<std::unique_ptr<Task>()> makeTask_;
  StringMap config_;
  std::shared_ptr<EventSink> events_;
  HostHandle handle_;
};

// TASK_STOP: the host waits `stopMs` for the task's poll thread to end.
void stopTask(HostHandle& handle, std::int64_t stopMs) {
  handle.stop(kTaskStop, [&](Writer& w) { w.i64(stopMs); }, std::chrono::milliseconds(stopMs + 1000));
}

class JavaSourceTask final : public SourceTask {
 public:
  JavaSourceTask(const std::string& cls, std::shared_ptr<JvmHostSupervisor> supervisor, std::int64_t stopMs)
      : core_(cls, cls + " task", std::move(supervisor), kTaskCallTimeout), stopMs_(std::max<std::int64_t>(100, stopMs)) {}
  ~JavaSourceTask() override { stop(); }

  // The host polls on a thread of its own and says when records wait (READY): no worker thread
  // waits on an idle Java task.
  PollMode pollMode() const override { return PollMode::kNotify; }

  Status start(const StringMap& config, SourceTaskContext& context) override {
    context_ = &context;
    events_ = std::make_shared<EventSink>();
    events_->source = &context;
    HandleHooks hooks = hooksFor(events_);
    hooks.onOffsetsRead = [this](std::string_view payload, Writer& answer) { return offsets(payload, answer); };
    return core_.start(kSourceTaskStart, [&](Writer& w) { w.map(config).i32(kSourceQueueRecords); }, std::move(hooks));
  }

  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords, std::chrono::milliseconds) override {
    FERRY_ASSIGN_OR_RETURN(auto payload, core_.call(kSourcePoll, "poll()", [&](Writer& w) {
      w.i32(static_cast<std::int32_t>(std::min<std::size_t>(maxRecords, 1 << 20)));
      writeAcked(w);
    }));
    acked_.clear();
    return readSourceBatch(payload, schemas_, out);
  }

  // Safe, in poll order: passed on with the next call, with where the backbone put it (the
  // RecordMetadata of Kafka's commitRecord).
  void commitRecord(const Record& record) override { acked_.emplace_back(record.queue.value_or(-1), record.offset); }

  Status commit() override {
    auto r = core_.call(kSourceCommit, "commit()", [&](Writer& w) { writeAcked(w); });
    if (!r.isOk()) return r.status();
    acked_.clear();
    return Status::ok();
  }

  void stop() override {
    if (events_) {
      std::lock_guard lock(events_->mu);
      events_->source = nullptr;
    }
    stopTask(core_, stopMs_);
  }

 private:
  // OFFSETS_READ: [i64 handle][i32 n][map partition]*n -> [i32 n][map or null]*n.
  Status offsets(std::string_view payload, Writer& out) {
    Reader r(payload);
    FERRY_ASSIGN_OR_RETURN(auto handle, r.i64());
    (void)handle;
    FERRY_ASSIGN_OR_RETURN(auto n, r.count("partitions"));
    out.i32(n);
    for (std::int32_t i = 0; i < n; ++i) {
      FERRY_ASSIGN_OR_RETURN(auto partition, r.optMap("partition"));
      out.optMap(partition ? context_->committedOffset(*partition) : std::nullopt);
    }
    return Status::ok();
  }

  // [i32 n][i32 queue, i64 offset]*n: the records safe since the last call that passed them on.
  void writeAcked(Writer& w) const {
    w.i32(static_cast<std::int32_t>(acked_.size()));
    for (const auto& [queue, offset] : acked_) w.i32(queue).i64(offset);
  }

  HostHandle core_;
  std::int64_t stopMs_;  // how long the host waits for the task's poll thread to end
  SourceTaskContext* context_ = nullptr;
  std::shared_ptr<EventSink> events_;
  SchemasIn schemas_;
  std::vector<std::pair<std::int32_t, std::int64_t>> acked_;  // (queue, offset) of records safe since the last call
};

class JavaSinkTask final : public SinkTask {
 public:
  JavaSinkTask(const std::string& cls, std::shared_ptr<JvmHostSupervisor> supervisor, JavaTaskDefaults defaults)
      : core_(cls, cls + " task", std::move(supervisor), kTaskCallTimeout),
        stopMs_(std::max<std::int64_t>(100, defaults.taskShutdownTimeoutMs / 2)),
        defaults_(std::move(defaults)) {}
  ~JavaSinkTask() override { stop(); }

  Status start(const StringMap& config, SinkTaskContext& context) override {
    context_ = &context;
    events_ = std::make_shared<EventSink>();
    events_->sink = &context;
    auto converter = [&](const char* key, const std::string& dflt) {
      auto it = config.find(key);
      return formOf(it != config.end() && !it->second.empty() ? it->second : dflt);
    };
    const std::uint8_t keyForm = converter("key.converter", defaults_.keyConverter);
    const std::uint8_t valueForm = converter("value.converter", defaults_.valueConverter);
    return core_.start(kSinkTaskStart, [&](Writer& w) { w.map(config).u8(keyForm).u8(valueForm); }, hooksFor(events_));
  }

  // The task's SinkTaskContext offset()/pause()/resume() come back with the answers to open(),
  // put() and preCommit() (readSinkContextRequests).
  Status open(const std::vector<TopicQueue>& queues) override {
    FERRY_ASSIGN_OR_RETURN(auto payload, partitions(kSinkOpen, "open()", queues));
    Reader r(payload);
    return contextRequests(r);
  }
  Status close(const std::vector<TopicQueue>& queues) override { return partitions(kSinkClose, "close()", queues).status(); }

  Status put(std::vector<Record>& records) override {
    FERRY_ASSIGN_OR_RETURN(auto payload, core_.call(kSinkPut, "put()", [&](Writer& w) { writeSinkBatch(w, records, schemas_); }));
    // The records the task reported to its ErrantRecordReporter: errors.tolerance decides.
    Reader r(payload);
    FERRY_ASSIGN_OR_RETURN(auto n, r.count("reported records"));
    for (std::int32_t i = 0; i < n; ++i) {
      FERRY_ASSIGN_OR_RETURN(auto index, r.i32());
      FERRY_ASSIGN_OR_RETURN(auto why, r.str("why"));
      if (index < 0 || static_cast<std::size_t>(index) >= records.size())
        return Status::invalidArgument("JVM host answer: reported record " + std::to_string(index));
      FERRY_RETURN_IF_ERROR(context_->reportBadRecord(records[static_cast<std::size_t>(index)], Status::invalidArgument(why)));
    }
    return contextRequests(r);
  }

  Status flush() override { return core_.call(kSinkFlush, "flush()", [](Writer&) {}).status(); }

  Result<OffsetMap> preCommit(const OffsetMap& current) override {
    FERRY_ASSIGN_OR_RETURN(auto payload, core_.call(kSinkPreCommit, "preCommit()", [&](Writer& w) {
      w.i32(static_cast<std::int32_t>(current.size()));
      for (const auto& [tq, offset] : current) w.str(tq.topic).i32(tq.queue).i64(offset);
    }));
    Reader r(payload);
    FERRY_ASSIGN_OR_RETURN(auto n, r.count("offsets"));
    OffsetMap safe;
    for (std::int32_t i = 0; i < n; ++i) {
      TopicQueue tq;
      FERRY_ASSIGN_OR_RETURN(tq.topic, r.str("topic"));
      FERRY_ASSIGN_OR_RETURN(tq.queue, r.i32());
      FERRY_ASSIGN_OR_RETURN(auto offset, r.i64());
      // Only what was put may be committed: an offset beyond it would skip records.
      auto it = current.find(tq);
      if (it != current.end()) safe[tq] = std::min(offset, it->second);
    }
    FERRY_RETURN_IF_ERROR(contextRequests(r));
    return safe;
  }

  void stop() override {
    if (events_) {
      std::lock_guard lock(events_->mu);
      events_->sink = nullptr;
    }
    stopTask(core_, stopMs_);
  }

 private:
  Result<std::string> partitions(std::uint8_t type, const char* what, const std::vector<TopicQueue>& queues) {
    return core_.call(type, what, [&](Writer& w) {
      w.i32(static_cast<std::int32_t>(queues.size()));
      for (const auto& q : queues) w.str(q.topic).i32(q.queue);
    });
  }
  Status contextRequests(Reader& r) {
    FERRY_ASSIGN_OR_RETURN(auto requests, readSinkContextRequests(r));
    return applySinkContextRequests(requests, *context_);
  }

  HostHandle core_;
  std::int64_t stopMs_;
  JavaTaskDefaults defaults_;
  SinkTaskContext* context_ = nullptr;
  std::shared_ptr<EventSink> events_;
  SchemasOut schemas_;
};

using JavaSourceConnector = JavaConnector<SourceConnector, SourceTask>;
using JavaSinkConnector = JavaConnector<SinkConnector, SinkTask>;

}  // namespace

Result<JavaPluginScan> scanJavaPlugins(JvmHostSupervisor& host) {
  FERRY_ASSIGN_OR_RETURN(auto payload, host.call(kPlugins, [](Writer&) {}, kCallTimeout));
  return parsePluginScan(payload);
}

Result<JavaPluginScan> parsePluginScan(std::string_view payload) {
  Reader r(payload);
  JavaPluginScan scan;
  FERRY_ASSIGN_OR_RETURN(auto n, r.count("plugins"));
  for (std::int32_t i = 0; i < n; ++i) {
    JavaPluginScan::Plugin p;
    FERRY_ASSIGN_OR_RETURN(p.className, r.str("class name"));
    FERRY_ASSIGN_OR_RETURN(auto kind, r.u8());
    if (kind != 1 && kind != 2) return Status::invalidArgument("JVM host answer: plugin kind " + std::to_string(kind));
    p.source = kind == 1;
    FERRY_ASSIGN_OR_RETURN(auto api, r.u8());
    if (api > 1) return Status::invalidArgument("JVM host answer: plugin API " + std::to_string(api));
    p.openMessaging = api == 1;
    FERRY_ASSIGN_OR_RETURN(p.version, r.str("version"));
    FERRY_ASSIGN_OR_RETURN(p.location, r.str("location"));
    scan.plugins.push_back(std::move(p));
  }
  FERRY_ASSIGN_OR_RETURN(auto m, r.count("problems"));
  for (std::int32_t i = 0; i < m; ++i) {
    FERRY_ASSIGN_OR_RETURN(auto where, r.str("problem location"));
    FERRY_ASSIGN_OR_RETURN(auto why, r.str("problem"));
    scan.problems.emplace_back(std::move(where), std::move(why));
  }
  return scan;
}

Result<ConfigDef> parseConfigDef(std::string_view payload) {
  Reader r(payload);
  ConfigDef def;
  FERRY_ASSIGN_OR_RETURN(auto n, r.count("config keys"));
  for (std::int32_t i = 0; i < n; ++i) {
    ConfigKey k;
    FERRY_ASSIGN_OR_RETURN(k.name, r.str("key name"));
    FERRY_ASSIGN_OR_RETURN(auto type, r.str("key type"));
    k.type = typeOf(type);
    FERRY_ASSIGN_OR_RETURN(bool hasDefault, r.boolean());
    FERRY_ASSIGN_OR_RETURN(auto dflt, r.optStr());
    // Kafka's "default null" is an optional key without a value: no value here either, but not
    // required (an empty default).
    if (hasDefault) k.defaultValue = dflt.value_or("");
    FERRY_ASSIGN_OR_RETURN(auto importance, r.str("importance"));
    k.importance = importanceOf(importance);
    FERRY_ASSIGN_OR_RETURN(k.documentation, r.str("documentation"));
    FERRY_ASSIGN_OR_RETURN(k.group, r.str("group"));
    FERRY_ASSIGN_OR_RETURN(k.displayName, r.str("display name"));
    FERRY_ASSIGN_OR_RETURN(k.recommended, r.strings("recommended values"));
    if (def.find(k.name) != nullptr) return Status::invalidArgument("JVM host answer: key " + k.name + " twice");
    def.define(std::move(k));
  }
  return def;
}

Result<std::map<std::string, std::vector<std::string>>> parseValidation(std::string_view payload) {
  Reader r(payload);
  std::map<std::string, std::vector<std::string>> out;
  FERRY_ASSIGN_OR_RETURN(auto n, r.count("config values"));
  for (std::int32_t i = 0; i < n; ++i) {
    FERRY_ASSIGN_OR_RETURN(auto name, r.str("config value name"));
    FERRY_ASSIGN_OR_RETURN(auto value, r.optStr());
    (void)value;
    FERRY_ASSIGN_OR_RETURN(auto errors, r.strings("error messages"));
    auto& mine = out[std::move(name)];
    mine.insert(mine.end(), errors.begin(), errors.end());
  }
  return out;
}

Result<int> registerJavaPlugins(runtime::PluginRegistry& registry, std::shared_ptr<JvmHostSupervisor> host,
                                const JavaPluginScan& scan, const JavaTaskDefaults& defaults) {
  auto cache = std::make_shared<ConfigDefCache>();
  int added = 0;
  for (const auto& p : scan.plugins) {
    runtime::PluginInfo info;
    info.className = p.className;
    info.kind = p.source ? PluginKind::kSourceConnector : PluginKind::kSinkConnector;
    info.version = p.version;
    info.summary = p.openMessaging ? "OpenMessaging connector (run by the JVM host)" : "Java connector (run by the JVM host)";
    info.origin = p.location;
    const bool source = p.source;
    auto factory = [cls = p.className, version = p.version, host, cache, source, defaults]() -> void* {
      JavaConnectorCore core(cls, version, host, cache);
      if (source)
        return static_cast<SourceConnector*>(new JavaSourceConnector(
            std::move(core), [cls, host, stopMs = defaults.taskShutdownTimeoutMs / 2] {
              return std::unique_ptr<SourceTask>(new JavaSourceTask(cls, host, stopMs));
            }));
      return static_cast<SinkConnector*>(new JavaSinkConnector(
          std::move(core), [cls, host, defaults] { return std::unique_ptr<SinkTask>(new JavaSinkTask(cls, host, defaults)); }));
    };
    auto destroy = [source](void* c) {
      if (source) delete static_cast<SourceConnector*>(c);
      else delete static_cast<SinkConnector*>(c);
    };
    if (auto s = registry.addExternal(std::move(info), factory, destroy); !s.isOk()) {
      core::logger("jvm")->warn("Java connector {} not registered: {}", p.className, s.message());
      continue;
    }
    ++added;
  }
  for (const auto& [where, why] : scan.problems) core::logger("jvm")->warn("plugin.path {}: {}", where, why);
  return added;
}

std::vector<std::string> javaJarsIn(const std::vector<std::string>& pluginPath) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& folder : pluginPath) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
      if (it.depth() > 8) it.disable_recursion_pending();
      if (it->is_regular_file(ec) && it->path().extension() == ".jar") out.push_back(it->path().string());
    }
  }
  return out;
}

}  // namespace ferry::jvm
