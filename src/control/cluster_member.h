// A worker's membership in a distributed cluster: it bootstraps the cluster state from the latest
// snapshot plus the log after it, tails the log applying every event to its ClusterState,
// heartbeats, keeps its lease, writes snapshots, and tells its owner (the distributed herder)
// whenever the state or the lease changed.
//
// Threads: a tailer (reads and applies the log, checks the lease, calls OnChange) and a
// heartbeater. OnChange runs on the tailer thread; it may call append() but must not block on
// waitApplied(). Every other method is thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "backbone/backbone.h"
#include "cluster/events.h"
#include "cluster/state_machine.h"

namespace ferry::control {

struct ClusterMemberOptions {
  std::string workerId;
  std::string incarnation;  // empty: a fresh random id
  std::string url;          // this worker's REST URL, published in heartbeats
  double capacity = 1.0;
  std::int64_t heartbeatIntervalMs = 500;
  // The lease ends this long before the session timeout would make others drop us.
  std::int64_t leaseMarginMs = 500;
  cluster::ClusterOptions cluster;
  std::int64_t snapshotEveryEvents = 2000;
};

class ClusterMember {
 public:
  // An applied state, immutable and shared: readers hold it as long as they like, for free.
  using StateRef = std::shared_ptr<const cluster::ClusterState>;
  // state: the state just applied; leaseValid: whether this worker may run its units.
  using OnChange = std::function<void(const StateRef& state, bool leaseValid)>;

  ClusterMember(backbone::SharedLog& log, backbone::SharedLog& snapshots, ClusterMemberOptions options,
                OnChange onChange);
  ~ClusterMember();

  // Bootstraps (snapshot + log up to its current end), then starts heartbeating and tailing.
  Status start();
  // Stops the threads; `graceful` first appends a leave (units move at once, no session wait).
  void stop(bool graceful);

  // Appends an event; returns its log offset.
  Result<std::int64_t> append(const cluster::Event& e);
  // Appends every event in order, waiting once for all (backbone::SharedLog::appendAll).
  Result<std::int64_t> appendAll(const std::vector<cluster::Event>& events);
  // Appends without waiting (backbone::SharedLog::appendAsync); a failure is logged. For reports
  // made on the task threads (status events), which must not wait for the broker.
  void post(const cluster::Event& e);
  // Waits until the event at `offset` was applied here (read-your-writes for REST).
  bool waitApplied(std::int64_t offset, std::chrono::milliseconds timeout);
  // The current state (published once per applied batch of events; no copy per reader).
  StateRef state() const;
  // The state once everything appended to the log before this call was applied here (a read
  // that sees writes made through any worker). Falls back to the current state on timeout, and
  // at once while the log is unreachable: without the lease (no heartbeat of ours came back in
  // time) the log's end is not asked for and nothing is waited for, and a query of the end that
  // does not answer is abandoned as soon as the lease ends. stateAgeMs() says how stale it is.
  StateRef syncedState(std::chrono::milliseconds timeout);
  // How long ago the applied state was last known to hold everything in the log: the send time
  // of our last heartbeat seen in the log (everything appended before it is applied), or the
  // moment a read found the applied state at the log's end, whichever is later. -1 before the
  // bootstrap.
  std::int64_t stateAgeMs() const;
  std::int64_t appliedOffset() const { return applied_.load(); }
  bool leaseValid() const;
  // Whether, at the applied log position, this incarnation owns `unit` at `epoch`.
  bool owns(const cluster::Unit& unit, std::int64_t epoch) const;
  const std::string& workerId() const { return o_.workerId; }
  const std::string& incarnation() const { return o_.incarnation; }
  // Measured cost per unit ("<connector>-<task>"), sent with the next heartbeats.
  void setLoads(std::map<std::string, double> loads);
  // Called before every heartbeat to fill in what it says about the units this worker runs (their
  // progress and counters: cluster::Event::progress, ::counters); set before start().
  void setUnitReporter(std::function<void(cluster::Event&)> reporter) { unitReporter_ = std::move(reporter); }
  // Test hook: stop appending heartbeats (the tailer keeps running), as if the broker were cut off.
  void pauseHeartbeats(bool paused) { heartbeatsPaused_ = paused; }
  // How many events were skipped because they did not decode.
  std::int64_t skippedEvents() const { return skipped_.load(); }

 private:
  Status bootstrap();
  void tailLoop();
  void heartbeatLoop();
  void applyEntry(const backbone::SharedLog::Entry& entry);
  void maybeSnapshot();
  Result<std::string> latestSnapshot(std::int64_t snapshotLogEnd);
  static constexpr const char* kSnapshotMagic = "ferry-snapshot";
  static constexpr std::size_t kSnapshotPartBytes = 512 * 1024;
  void publishLocked();  // mu_ held: published_ = a copy of state_
  void syncLoop();       // asks the log for its end on behalf of syncedState()

  backbone::SharedLog& log_;
  backbone::SharedLog& snapshots_;
  ClusterMemberOptions o_;
  OnChange onChange_;

  mutable std::mutex mu_;
  std::condition_variable appliedCv_;
  std::unique_ptr<cluster::ClusterState> state_;  // the tailer's (bootstrap's before it starts)
  StateRef published_;                           // guarded by mu_: state_ as of the last batch
  std::int64_t next_ = 0;                        // tailer thread: next offset to read
  std::int64_t sinceSnapshot_ = 0;               // tailer thread
  std::atomic<std::int64_t> applied_{-1};
  static constexpr std::int64_t kPublishEveryMs = 50;  // the longest a published state lags the log
  std::int64_t pendingConfirmedMs_ = -1;                // tailer: our last heartbeat applied, not yet published
  std::atomic<std::int64_t> confirmedSentMs_{-1};  // monotonic send time of our last heartbeat seen in the log
  std::atomic<bool> stop_{false};
  std::atomic<bool> heartbeatsPaused_{false};
  std::atomic<std::int64_t> skipped_{0};
  std::mutex loadsMu_;
  std::map<std::string, double> loads_;
  std::function<void(cluster::Event&)> unitReporter_;  // set before start()
  // syncedState(): readers ask for the log's end through the syncer thread, so a broker that does
  // not answer holds that thread, never a REST thread beyond the lease (requests coalesce: one
  // query answers every reader that asked before it was sent).
  std::uint64_t syncAsked_ = 0;                // guarded by mu_: generation readers asked for
  std::uint64_t syncAnswered_ = 0;             // guarded by mu_: generation the last query served
  std::int64_t syncEnd_ = -1;                  // guarded by mu_: that query's end offset (-1: failed)
  std::int64_t syncSentMs_ = -1;               // guarded by mu_: when that query was sent (monotonic)
  std::condition_variable syncCv_;             // wakes the syncer
  std::atomic<std::int64_t> syncedAtMs_{-1};   // monotonic: a query sent then found everything applied
  std::thread tailer_;
  std::thread heartbeater_;
  std::thread syncer_;
  bool lastLease_ = false;  // tailer thread
};

}  // namespace ferry::control
