// The standalone herder: one worker that owns every connector, with configs, positions and
// status kept in local stores.
//
// REST calls validate, write the config store and queue the connector for the control thread,
// which reconciles what runs with what is wanted (start/stop connectors and tasks, pause,
// restarts, automatic restart of failed tasks with exponential backoff). So REST never waits for
// task I/O, and every change to running things happens on one thread.
//
// Threading: every Herder method is thread-safe. start() once, stop() once (stop() commits what
// is safe and stops every task).
#pragma once

#include <memory>

#include "backbone/backbone.h"
#include "control/herder.h"
#include "runtime/plugins.h"
#include "runtime/worker_config.h"
#include "store/store.h"

namespace ferry::control {

struct StandaloneOptions {
  runtime::WorkerConfig worker;
  const runtime::PluginRegistry* registry = nullptr;
  backbone::Backbone* backbone = nullptr;
  store::ConfigStore* configs = nullptr;
  store::PositionStore* positions = nullptr;
  store::StatusStore* statuses = nullptr;
};

class StandaloneHerder : public Herder {
 public:
  // Loads the stored connectors and starts the control thread, which brings each back in its
  // target state.
  virtual Status start() = 0;
  // Stops every task (committing positions/offsets that are safe) and the control thread, within
  // task.shutdown.graceful.timeout.ms; a task still running then is abandoned.
  virtual void stop() = 0;
  // Abandoned tasks whose threads still run. Non-zero after stop(): leave the process without
  // destructors (they may use what the herder, the registry and the backbone own).
  virtual std::size_t abandonedTasksRunning() const = 0;
};

std::unique_ptr<StandaloneHerder> makeStandaloneHerder(StandaloneOptions options);

}  // namespace ferry::control
