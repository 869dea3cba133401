// The cluster's deterministic state machine: every worker applies the same log events in the same
// order and so agrees, at every log position, on membership, connector configs and who runs what.
//
// Time is the log's: each event carries the broker's append timestamp. A member whose last
// heartbeat is older than the session timeout at some position is gone at that position for
// every worker. Units (connector instances and tasks) are assigned by the cluster's strategy
// whenever membership or the set of units changes. A unit whose live owner must give it up gets a
// pending `next` owner: the owner stops it, flushes, commits and appends `released`; only when
// that is applied does `next` become the owner (epoch + 1). A unit whose owner is gone moves at
// once. So at most one live owner holds a unit at any position (see README.md for the lease that
// makes this true in real time).
//
// Thread-safety: none (one thread applies the log; others read snapshots of it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cluster/assignment.h"
#include "cluster/events.h"
#include "ferry/result.h"

namespace ferry::cluster {

struct Member {
  std::string incarnation;
  std::string url;
  double capacity = 1.0;
  std::int64_t lastSeenLogMs = 0;
  std::int64_t joinedAt = 0;  // log offset of the heartbeat that made it a member
  std::map<std::string, double> loads;
  std::map<std::string, std::string> progress;  // its last heartbeat's (not in snapshots)
  std::map<std::string, UnitCounters> counters;  // its last heartbeat's (not in snapshots)
  std::map<std::string, std::string> connections;  // its last heartbeat's (not in snapshots)
};

struct ConnectorInfo {
  StringMap config;
  std::string target = "STARTED";
  std::int64_t generation = 0;         // + 1 on every config change
  std::vector<StringMap> tasks;        // task configs as last produced
  std::int64_t tasksGeneration = 0;    // the config generation they were produced from
};

struct Ownership {
  std::string owner;
  std::string incarnation;  // of the owner when it got the unit
  std::int64_t epoch = 0;   // + 1 whenever the unit changes owner or must restart
  std::string next;         // pending handoff target ("" when none)
};

// What a unit's owner last reported (only reports from the current owner and epoch count).
struct UnitStatus {
  std::string state;  // RUNNING, PAUSED, FAILED, ...
  std::string trace;
  std::string worker;
  std::int64_t epoch = 0;
};

struct ClusterOptions {
  std::int64_t sessionTimeoutMs = 3000;
  std::string strategy = "sticky-balanced";
};

class ClusterState {
 public:
  static Result<ClusterState> create(ClusterOptions options);

  // Applies the event stored at log `offset` with the broker's timestamp `logTimeMs`.
  void apply(std::int64_t offset, std::int64_t logTimeMs, const Event& event);

  std::int64_t offset() const { return offset_; }  // of the last applied event (-1: none)
  std::int64_t logTimeMs() const { return logTimeMs_; }
  const ClusterOptions& options() const { return options_; }
  const std::map<std::string, Member>& members() const { return members_; }
  const std::map<std::string, ConnectorInfo>& connectors() const { return *connectors_; }
  const std::map<Unit, Ownership>& assignment() const { return assignment_; }
  const std::map<Unit, UnitStatus>& statuses() const { return statuses_; }
  // Units owned by this incarnation of `worker` (including those it must hand off: it runs them
  // until it released them).
  std::map<Unit, Ownership> unitsOf(const std::string& worker, const std::string& incarnation) const;
  // How many units changed owner in total (a measure of churn).
  std::int64_t moves() const { return moves_; }

  // Snapshots: the whole state as JSON, and back. fromSnapshot(toSnapshot()) applies later
  // events exactly as the original would.
  std::string toSnapshot() const;
  static Result<ClusterState> fromSnapshot(std::string_view json);

 private:
  ClusterState(ClusterOptions o, std::unique_ptr<AssignmentStrategy> s)
      : options_(std::move(o)), strategy_(std::move(s)) {}
  bool live(const Ownership& o) const;
  void expire();
  void reassign();
  void bump(const Unit& u);

  ClusterOptions options_;
  std::shared_ptr<const AssignmentStrategy> strategy_;
  std::int64_t offset_ = -1;
  std::int64_t logTimeMs_ = 0;
  std::int64_t moves_ = 0;
  std::map<std::string, Member> members_;
  // Shared between copies until one of them changes a connector (rare next to statuses and
  // heartbeats): copying a state - once per published batch - does not copy every task config.
  std::shared_ptr<std::map<std::string, ConnectorInfo>> connectors_ =
      std::make_shared<std::map<std::string, ConnectorInfo>>();
  std::map<std::string, ConnectorInfo>& mutableConnectors();
  std::map<Unit, Ownership> assignment_;
  std::map<Unit, UnitStatus> statuses_;
  bool dirty_ = false;
};

}  // namespace ferry::cluster
