// Events of the cluster log: what workers append, what every worker applies in log order.
//
// Encoded as one JSON object per log record ({"type": ..., fields}); decode() refuses anything
// else with a message naming the field, so a foreign or corrupt record is skipped, not applied
// half-understood.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"

namespace ferry::cluster {

enum class EventType {
  kHeartbeat,        // worker, incarnation, url, capacity, sentMs, loads
  kLeave,            // worker, incarnation: a graceful leave, after the worker stopped its units
  kConnectorPut,     // connector, config, target
  kConnectorDelete,  // connector
  kTargetState,      // connector, target
  kTaskConfigs,      // connector, generation, taskConfigs: made by the connector's owner
  kReleased,         // worker, incarnation, connector, task, epoch: a handoff's old owner is done
  kRestart,          // connector, task (-1: the connector instance): run it again (epoch + 1)
  kStatus,           // worker, incarnation, connector, task, epoch, state, trace: what a unit's owner reports
};
const char* eventTypeName(EventType t) noexcept;

// What a worker says about a task it runs, in its heartbeats: the task's counters as
// runtime::TaskMetrics has them (the commit lag is a gauge, the others only grow while the task runs).
struct UnitCounters {
  std::int64_t recordsIn = 0;
  std::int64_t recordsOut = 0;
  std::int64_t errors = 0;
  std::int64_t commitLag = 0;
  bool operator==(const UnitCounters&) const = default;
};

struct Event {
  EventType type = EventType::kHeartbeat;
  std::string worker;
  std::string incarnation;
  std::string url;
  double capacity = 1.0;
  std::int64_t sentMs = 0;                  // heartbeat: the sender's monotonic clock, for its lease
  std::map<std::string, double> loads;      // heartbeat: measured cost per unit it runs ("c-0")
  // heartbeat: the progress of long work in the units it runs ("c-0" -> {"phase","done",
  // "estimated","unit","rate"} as JSON text), so that every worker's status shows it.
  std::map<std::string, std::string> progress;
  // heartbeat: the record counters of the units it runs ("c-0" -> records in, out, errors, commit
  // lag), so that every worker's status and charts cover the whole cluster, not only its own tasks.
  std::map<std::string, UnitCounters> counters;
  // heartbeat: the connection of the units it runs ("c-0" -> {"state","reason","since",
  // "reconnects"} as JSON text), so that every worker's status and the cluster view show it.
  std::map<std::string, std::string> connections;
  std::string connector;
  StringMap config;
  std::string target;                       // STARTED, PAUSED, STOPPED
  std::int64_t generation = 0;
  std::vector<StringMap> taskConfigs;
  int task = -1;
  std::int64_t epoch = 0;
  std::string state;  // status: RUNNING, PAUSED, FAILED, ... (Kafka Connect's names)
  std::string trace;  // status: the error of a FAILED unit
};

std::string encode(const Event& e);
Result<Event> decode(std::string_view bytes);

}  // namespace ferry::cluster
