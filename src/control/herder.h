// The controller ("herder"): the single door through which REST, the CLI and the cluster
// change anything. It validates intent, writes it to the config store, applies it to the worker
// and reports status from the status store.
//
// Threading: every method is thread-safe and returns promptly: it never waits for a task to do
// I/O (starting and stopping tasks happens on the worker's own threads). REST threads call it.
// Errors use the codes REST maps to HTTP: InvalidArgument -> 400, NotFound -> 404,
// AlreadyExists -> 409, FailedPrecondition -> 409, others -> 500.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backbone/backbone.h"
#include "cluster/events.h"
#include "ferry/config.h"
#include "ferry/connector.h"
#include "ferry/record.h"
#include "ferry/result.h"
#include "runtime/plugins.h"
#include "runtime/secrets.h"
#include "runtime/tap.h"
#include "runtime/transform_chain.h"
#include "store/store.h"

namespace ferry::runtime {
class TapHub;
}

namespace ferry::control {

enum class ConnectorType { kSource, kSink, kDirect, kUnknown };
const char* connectorTypeName(ConnectorType t) noexcept;  // "source", "sink", "direct", "unknown"

struct ConnectorInfo {
  std::string name;
  StringMap config;
  std::vector<int> tasks;  // task ids
  ConnectorType type = ConnectorType::kUnknown;
};

// A task's record counters (runtime::TaskMetrics): records taken in, records delivered, record
// errors, and records taken in whose position or offset is not committed yet.
using TaskCounters = cluster::UnitCounters;
inline void addCounters(TaskCounters& sum, const TaskCounters& c) {
  sum.recordsIn += c.recordsIn;
  sum.recordsOut += c.recordsOut;
  sum.errors += c.errors;
  sum.commitLag += c.commitLag;
}

// One record of a backbone topic as GET /topics/{name}/records shows it (bounded like a tap's).
struct TopicRecord {
  runtime::TappedRecord record;
  std::int32_t queue = 0;
  std::int64_t offset = 0;
};

// A task's connection to its outside system (ferry/connector.h, ConnectionHealth) as shown in
// its status.
struct ConnectionInfo {
  std::string state;  // "connected", "reconnecting" or "degraded"
  std::string reason;  // "" when connected
  std::int64_t sinceMs = 0;  // wall clock of the last change of state
  std::uint64_t reconnects = 0;
};

struct TaskStateInfo {
  int id = 0;
  store::State state = store::State::kUnassigned;
  std::string workerId;
  std::string trace;
  // Records the task could not read because the backbone's storage lost them (the state stays
  // RUNNING, as Kafka Connect clients expect; this says what happened). "" when none.
  std::string dataLoss;
  // Long work's progress as the task reported it (SourceTaskContext::reportProgress); only for
  // tasks running on this worker.
  std::optional<TaskProgress> progress;
  double progressRate = 0;  // units per second, recent
  // The task's record counters: of a task running here as they are now; in distributed mode of
  // a task another member runs as that member's last heartbeat carried them (at most a
  // heartbeat interval old). nullopt when not known (the task does not run, or its owner's
  // heartbeats carry none).
  std::optional<TaskCounters> counters;
  // The task's connection: of a task running here as it is now; in distributed mode of a task
  // another member runs as that member's last heartbeat carried it. nullopt when not known.
  std::optional<ConnectionInfo> connection;
};

struct ConnectorStateInfo {
  std::string name;
  store::State state = store::State::kUnassigned;
  std::string workerId;
  std::string trace;
  std::vector<TaskStateInfo> tasks;
  ConnectorType type = ConnectorType::kUnknown;
};

struct TaskInfo {
  int id = 0;
  StringMap config;
};

// The answer of validate: Kafka Connect's ConfigInfos, field by field.
struct ConfigKeyReport {
  ConfigKey definition;              // the declaration (for unknown keys: name only)
  std::optional<std::string> value;  // as given, or the default
  std::vector<std::string> errors;
};
struct ConfigReport {
  std::string className;
  std::vector<std::string> groups;
  std::vector<ConfigKeyReport> keys;
  int errorCount = 0;
  // Keys nobody declared, accepted (worker key config.unknown.keys=accept): key -> message.
  // Not counted in errorCount.
  std::vector<std::pair<std::string, std::string>> warnings;
};

// One source position as REST shows it: {"partition": {...}, "offset": {...}}; for sink
// connectors partition is {"kafka_topic": t, "kafka_partition": q} and offset {"kafka_offset": o}.
using PositionList = std::vector<Position>;

struct MetricSample {
  std::string name;                 // e.g. "ferry_task_records_in_total"
  std::map<std::string, std::string> labels;
  double value = 0;
  std::string help;
  std::string type;                 // "counter", "gauge" or "histogram" (its _bucket, _sum and _count samples)
};

class Herder {
 public:
  virtual ~Herder() = default;

  virtual std::string workerId() const = 0;
  // Empty when the worker serves; otherwise why it cannot (REST /health answers 503).
  virtual std::string healthProblem() const = 0;

  virtual std::vector<std::string> connectors() const = 0;
  virtual Result<ConnectorInfo> connectorInfo(const std::string& name) const = 0;
  virtual Result<StringMap> connectorConfig(const std::string& name) const = 0;

  // Creates a connector. AlreadyExists when the name is taken; InvalidArgument carrying the full
  // ConfigReport summary when the config is invalid (nothing is created then).
  virtual Result<ConnectorInfo> createConnector(const std::string& name, const StringMap& config,
                                                std::optional<store::TargetState> initialState) = 0;
  // Create-or-replace. `created` tells which.
  virtual Result<ConnectorInfo> putConnectorConfig(const std::string& name, const StringMap& config,
                                                   bool* created) = 0;
  // Merges `patch` into the config (a nullopt value removes the key) and applies it.
  virtual Result<ConnectorInfo> patchConnectorConfig(
      const std::string& name, const std::map<std::string, std::optional<std::string>>& patch) = 0;
  virtual Status deleteConnector(const std::string& name) = 0;

  virtual Result<ConnectorStateInfo> connectorStatus(const std::string& name) const = 0;
  virtual Result<TaskStateInfo> taskStatus(const std::string& name, int task) const = 0;
  virtual Result<std::vector<TaskInfo>> taskConfigs(const std::string& name) const = 0;

  virtual Status restartConnector(const std::string& name, bool includeTasks, bool onlyFailed) = 0;
  virtual Status restartTask(const std::string& name, int task) = 0;
  virtual Status pauseConnector(const std::string& name) = 0;
  virtual Status resumeConnector(const std::string& name) = 0;
  virtual Status stopConnector(const std::string& name) = 0;

  // Committed positions. alter/reset require the connector to be STOPPED (FailedPrecondition
  // otherwise). For sinks the positions are the consumer group's offsets.
  virtual Result<PositionList> offsets(const std::string& name) const = 0;
  virtual Status alterOffsets(const std::string& name, const PositionList& positions) = 0;
  virtual Status resetOffsets(const std::string& name) = 0;
  // Backbone topics a connector has written to or read from.
  virtual Result<std::vector<std::string>> activeTopics(const std::string& name) const = 0;
  virtual Status resetActiveTopics(const std::string& name) = 0;

  virtual std::vector<runtime::PluginInfo> plugins() const = 0;
  // Declared keys of a plugin (connectors include the framework keys).
  virtual Result<std::vector<ConfigKey>> pluginConfig(const std::string& pluginClass) const = 0;
  // Validates a full connector config for `pluginClass` without creating anything. NotFound when
  // the class is unknown (the message lists the known ones).
  virtual Result<ConfigReport> validateConfig(const std::string& pluginClass, const StringMap& config) const = 0;
  // A transform chain built from `config` (transforms=..., predicates=...) with this worker's
  // plugins, for trying transforms and rules out (POST /rules/test); it touches no connector.
  virtual Result<std::unique_ptr<runtime::TransformChain>> buildTransformChain(const StringMap& config) const = 0;

  // `config` as it may leave the worker (REST answers, ferry ctl): values of keys the config's
  // plugins declare as passwords, and of undeclared keys whose names look secret, replaced by
  // "[hidden]"; provider references stay visible (runtime/secrets.h has the rule). Without a
  // registry only the framework's declarations are known.
  virtual StringMap maskConfig(const StringMap& config) const {
    return runtime::maskConfig(config, runtime::frameworkSecretKeys(config));
  }

  // Snapshot of the worker's metrics (Prometheus rendering is REST's job).
  virtual std::vector<MetricSample> metrics() const = 0;

  // Every connector's record counters summed over its tasks whose counters are known (see
  // TaskStateInfo::counters): in distributed mode over the whole cluster, for charts. A connector
  // with no such task is left out.
  virtual std::map<std::string, TaskCounters> connectorCounters() const = 0;

  // Distributed mode: the cluster as JSON (members, assignment, log position) for GET /cluster.
  // NotFound on a standalone worker.
  virtual Result<std::string> clusterJson() const {
    return Status::notFound("this worker is not part of a cluster (ferry standalone)");
  }

  // Distributed mode: how stale the state that reads answer from may be, in ms: how long ago it
  // was last known to hold everything in the cluster log (REST sends it as X-Ferry-State-Age-Ms).
  // Reads wait to catch up with the log only while the log is reachable; during a backbone outage
  // they answer at once from the applied state, and this says how old it is. nullopt on a
  // standalone worker (its state is its own, never stale).
  virtual std::optional<std::int64_t> stateAgeMs() const { return std::nullopt; }

  // A look at a backbone topic: its newest `limit` records over all its queues (each queue's
  // last `limit` read, the newest `limit` of them by timestamp kept), oldest first; nothing
  // consumed or created. InvalidArgument for a name the backbone refuses, NotFound for a topic
  // that does not exist, FailedPrecondition without a backbone. The worker's own topics are
  // refused (isInternalTopic()).
  virtual Result<std::vector<TopicRecord>> topicRecords(const std::string& topic, std::size_t limit) const {
    (void)topic;
    (void)limit;
    return Status::failedPrecondition("this worker has no backbone to read");
  }
  // The backbone's topics but the worker's own, by name (GET /topics). FailedPrecondition without
  // a backbone.
  virtual Result<std::vector<backbone::TopicInfo>> topics() const {
    return Status::failedPrecondition("this worker has no backbone to read");
  }
  // The worker's own topics (source positions, schemas, the cluster's log, snapshots and
  // offsets): they hold configurations and positions, not data, and are never shown.
  virtual bool isInternalTopic(const std::string& topic) const {
    (void)topic;
    return false;
  }

  // The taps on the tasks running on this worker (runtime/tap.h; POST /connectors/{name}/tap).
  // Null: this herder has none.
  virtual runtime::TapHub* taps() { return nullptr; }
};

}  // namespace ferry::control
