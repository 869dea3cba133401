// Assignment strategies of a distributed cluster: which worker owns each unit (a connector
// instance or one of its tasks), given the live workers and the current owners.
//
// Every strategy is a pure, deterministic function of its inputs (sorted containers, no clocks,
// no randomness): all workers compute the same answer from the same log position. Chosen per
// cluster (`cluster.assignment.strategy`): sticky-balanced (default), consistent-hashing,
// load-weighted.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ferry/result.h"

namespace ferry::cluster {

// A unit of work: a connector instance (task == -1) or task `task` of `connector`.
struct Unit {
  std::string connector;
  int task = -1;
  friend auto operator<=>(const Unit&, const Unit&) = default;
  std::string toString() const;  // "<connector>" or "<connector>-<task>"
};

struct WorkerInfo {
  std::string id;
  double capacity = 1.0;  // load-weighted: relative capacity (> 0)
};

struct AssignmentInput {
  std::vector<WorkerInfo> workers;         // live workers, sorted by id, non-empty
  std::map<Unit, double> units;            // every unit with its cost (>= 0; 1 when unknown)
  std::map<Unit, std::string> current;     // current owner of units whose owner is live
};

class AssignmentStrategy {
 public:
  virtual ~AssignmentStrategy() = default;
  virtual std::string name() const = 0;
  // An owner (one of input.workers) for every unit of input.units.
  virtual std::map<Unit, std::string> assign(const AssignmentInput& input) const = 0;
};

// sticky-balanced: a unit keeps its live owner unless that owner holds more than its share
// (ceil(units / workers)); orphans and excess go to the least loaded workers; then single moves
// from the most to the least loaded worker until counts differ by at most one. A join or leave
// moves only units that must move.
std::unique_ptr<AssignmentStrategy> makeStickyBalanced();
// consistent-hashing: each worker owns `virtualNodes` points of a 64-bit ring (FNV-1a of
// "<worker>#<i>"); a unit goes to the first point at or after the hash of its name. Ignores the
// current owners: a join takes over about 1/n of the units from every worker; a leave moves
// only the leaver's units.
std::unique_ptr<AssignmentStrategy> makeConsistentHashing(int virtualNodes = 64);
// load-weighted: as sticky-balanced, but balances the sum of unit costs relative to worker
// capacity: a unit stays unless its owner is above (1 + tolerance) x its fair share; orphans and
// excess go, heaviest first, to the worker with the lowest load/capacity after taking it.
std::unique_ptr<AssignmentStrategy> makeLoadWeighted(double tolerance = 0.1);

// By name; InvalidArgument listing the names for anything else.
Result<std::unique_ptr<AssignmentStrategy>> makeStrategy(const std::string& name);

}  // namespace ferry::cluster
