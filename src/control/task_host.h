// TaskHost: "the tasks that run here" — what both herders do the same way with the tasks placed on
// this worker, whoever placed them (the standalone control loop or the cluster's assignment):
//
//  - builds and starts task runners (one TaskEnv recipe: registry, backbone, the worker's shared
//    producer, the position store, the worker config; the herder adds its status, topic and lease
//    hooks);
//  - restarts failed tasks with the one backoff (core::RestartBackoff: task.restart.backoff.initial.ms
//    doubling up to .max.ms; a run that stayed healthy longer than the maximum resets the count;
//    task.restart.enable=false turns it off), logging each scheduled restart;
//  - stops tasks within task.shutdown.graceful.timeout.ms (its runtime::TaskStopper keeps the
//    abandoned ones);
//  - publishes the same /metrics series per task and per worker in both modes.
//
// The herders keep what differs: where the wanted state lives and how it is reconciled (local
// stores and a control thread; the cluster log and a lease), and which containers hold the runners.
//
// Threading: start(), restartDue() and the metrics appenders may be called from any thread; the
// stopper and the producer are thread-safe. A RestartState belongs to the herder's control thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backbone/backbone.h"
#include "backbone/shared_producer.h"
#include "control/herder.h"
#include "core/backoff.h"
#include "runtime/plugins.h"
#include "runtime/task_stopper.h"
#include "runtime/tasks.h"
#include "runtime/worker_config.h"
#include "store/store.h"

namespace ferry::control {

struct TaskHostOptions {
  const runtime::WorkerConfig* worker = nullptr;  // outlives the host
  const runtime::PluginRegistry* registry = nullptr;
  backbone::Backbone* backbone = nullptr;
  store::PositionStore* positions = nullptr;
};

// What the herder tells a task about itself (runtime::TaskEnv's callbacks).
struct TaskHooks {
  std::function<void(store::State, const std::string&)> onState;
  std::function<void(const std::string&)> onTopic;
  std::function<bool()> mayRun;      // distributed: lease held and the unit still ours
  std::function<bool()> leaseValid;  // distributed: lease held
  std::function<bool()> mayCommit;   // distributed: lease held and the unit not assigned elsewhere
};

// The automatic-restart state of one task slot (a connector's task id, or a cluster unit), kept
// by the herder across the runners it starts for that slot.
struct RestartState {
  RestartState(std::int64_t initialMs, std::int64_t maxMs) : backoff(initialMs, maxMs) {}
  core::RestartBackoff backoff;
  std::int64_t restartAtMs = -1;  // steady ms; -1: no restart scheduled
};

class TaskHost {
 public:
  explicit TaskHost(TaskHostOptions o);
  ~TaskHost();
  TaskHost(const TaskHost&) = delete;
  TaskHost& operator=(const TaskHost&) = delete;

  // Creates task `taskId` of `connector` (config: the task config, provider references
  // unresolved) and starts its thread, paused or not.
  std::unique_ptr<runtime::TaskRunner> start(const std::string& connector, int taskId, runtime::ConnectorShape shape,
                                             const StringMap& config, bool paused, TaskHooks hooks);

  // A fresh restart state for a new task slot.
  RestartState restartState() const;
  // Called on every control pass for a task whose runner has finished after a failure
  // (runner.finished() && runner.failed()). The first call schedules the restart (the count of
  // failures in a row reset first when the run lasted longer than task.restart.backoff.max.ms) and
  // logs it; returns true once the restart is due. Always false with task.restart.enable=false.
  // The herder replaces the runner and calls restarted().
  bool restartDue(RestartState& state, const runtime::TaskRunner& runner, const std::string& connector,
                  int taskId) const;
  static void restarted(RestartState& state) { state.restartAtMs = -1; }
  // The delay before the `failures`-th automatic restart of a connector instance in a row.
  std::int64_t connectorRestartDelayMs(int failures) const;

  // A task's counters for status and heartbeats.
  static TaskCounters countersOf(const runtime::TaskMetrics& m);
  // The task's connection as its status shows it (nullopt before anything was known).
  static std::optional<ConnectionInfo> connectionOf(const runtime::TaskMetrics& m);
  // As a heartbeat carries it (a short JSON object), and back (nullopt: not what connectionText writes).
  static std::string connectionText(const ConnectionInfo& c);
  static std::optional<ConnectionInfo> readConnectionText(const std::string& text);
  // The per-task series src/runtime/README.md lists (ferry_task_*), labelled connector and task.
  static void appendTaskMetrics(std::vector<MetricSample>& out, const std::string& connector, int taskId,
                                const runtime::TaskMetrics& m);
  // ferry_worker_tasks (the `tasks` running here) and the abandoned-task series.
  void appendWorkerMetrics(std::vector<MetricSample>& out, std::size_t tasks) const;

  runtime::TaskStopper& stopper() { return stopper_; }
  const runtime::TaskStopper& stopper() const { return stopper_; }
  const runtime::WorkerConfig& worker() const { return *o_.worker; }
  // The shared producer of the source tasks here (null without a backbone): fenced by the
  // distributed herder when the lease ends.
  backbone::SharedProducer* producers() { return producers_.get(); }
  const runtime::Executor& executor() const { return *executor_; }
  // Herder::topics(), ::topicRecords() and ::isInternalTopic() for both herders.
  Result<std::vector<backbone::TopicInfo>> topics() const;
  Result<std::vector<TopicRecord>> topicRecords(const std::string& topic, std::size_t limit) const;
  bool isInternalTopic(const std::string& topic) const;
  // The taps on this worker's tasks (runtime/tap.h).
  runtime::TapHub& taps() { return taps_; }

 private:
  TaskHostOptions o_;
  runtime::TapHub taps_;  // before the executor: tasks hold its points
  // The shared threads every task's loop runs on (runtime/executor.h; task.threads). Declared
  // first: destroyed last, after every runner is gone.
  std::unique_ptr<runtime::Executor> executor_;
  // One producer for the source records of every task here (see backbone/shared_producer.h).
  std::unique_ptr<backbone::SharedProducer> producers_;
  // The schema topic's cache, shared by the tasks here (null without a backbone or topic).
  std::unique_ptr<runtime::SchemaRegistry> schemas_;
  // Stops tasks within task.shutdown.graceful.timeout.ms and keeps the abandoned ones alive.
  runtime::TaskStopper stopper_;
};

}  // namespace ferry::control
