// The distributed herder: one worker of a cluster whose state lives in the cluster log
// (src/cluster/README.md). REST writes become log events (any worker takes any write, at any
// time: no leader, no 409 during rebalances), answered once the event was applied here; reads
// come from the applied state, so every worker shows every connector and task with its owner.
// The worker runs exactly the units the state assigns to it while its lease holds: connector
// instances (which publish task configs) and tasks; a unit it must hand off is stopped, flushed
// and committed, then released.
//
// Threading: every Herder method is thread-safe; a control thread starts and stops units.
#pragma once

#include <memory>

#include "backbone/backbone.h"
#include "control/cluster_member.h"
#include "control/herder.h"
#include "runtime/plugins.h"
#include "runtime/worker_config.h"
#include "store/store.h"

namespace ferry::control {

struct DistributedOptions {
  runtime::WorkerConfig worker;
  const runtime::PluginRegistry* registry = nullptr;
  backbone::Backbone* backbone = nullptr;
  store::PositionStore* positions = nullptr;  // source positions, in a backbone topic
  backbone::SharedLog* log = nullptr;
  backbone::SharedLog* snapshots = nullptr;
  ClusterMemberOptions member;
};

class DistributedHerder : public Herder {
 public:
  // Joins the cluster (bootstrap, heartbeats) and starts the control thread.
  virtual Status start() = 0;
  // Stops every unit (committing) within task.shutdown.graceful.timeout.ms (a task still running
  // then is abandoned: cancelled), then leaves the cluster (its units move at once).
  virtual void stop() = 0;
  // Abandoned tasks whose threads still run. Non-zero after stop(): leave the process without
  // destructors (they may use what the herder, the registry and the backbone own).
  virtual std::size_t abandonedTasksRunning() const = 0;
};

std::unique_ptr<DistributedHerder> makeDistributedHerder(DistributedOptions options);

}  // namespace ferry::control
