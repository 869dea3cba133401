// ferry connector SDK — connectors and tasks.
//
// A connector is a configured instance of a connector class: it validates its config and splits
// it into task configs. Tasks do the work: a SourceTask polls records from an outside system, a
// SinkTask puts records into one. The runtime wires them to the backbone (or to each other, in a
// direct task) and owns delivery guarantees, retries, transforms and position commits.
//
// Threading contract: each connector instance and each task instance is called from one runtime
// thread at a time (its owner). Library callbacks inside a connector must hand work to that
// thread (see push_source.h) rather than call back into the runtime themselves, except for the
// documented thread-safe calls on the contexts below.
//
// Errors: every call returns Status/Result. A retriable Status makes the runtime retry with
// backoff (errors.retry.timeout); any other error fails the task (it restarts with backoff when
// the worker is configured to). Exceptions must not escape a connector: the runtime catches them
// at the boundary and treats them as Internal errors.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/config.h"
#include "ferry/record.h"
#include "ferry/result.h"
#include "ferry/status.h"

namespace ferry {

// A local file opened for a task by the runtime (SourceTaskContext/SinkTaskContext::
// openLocalFile). The caller owns `fd` and close()s it.
struct LocalFile {
  int fd = -1;
  std::string path;      // the resolved path that was opened (no symbolic links, no "..")
  bool created = false;  // LocalPath::kWrite: the file did not exist and was created (mode 0644)
};

// Given to a connector at start. Thread-safe.
class ConnectorContext {
 public:
  virtual ~ConnectorContext() = default;
  virtual const std::string& connectorName() const = 0;
  // Ask the runtime to call taskConfigs() again (e.g. the outside system gained partitions).
  virtual void requestTaskReconfiguration() = 0;
  // Report an unrecoverable error from a background thread; the connector becomes FAILED.
  virtual void raiseError(const Status& error) = 0;
};

class Connector {
 public:
  virtual ~Connector() = default;
  virtual std::string version() const = 0;
  // The connector's own keys (framework keys such as tasks.max are declared by the runtime).
  virtual const ConfigDef& configDef() const = 0;
  // Cross-field checks beyond the ConfigDef; per-key messages are added to `validation`.
  virtual void validate(const StringMap& config, ConfigValidation& validation) const {
    (void)config;
    (void)validation;
  }
  virtual Status start(const StringMap& config, ConnectorContext& context) = 0;
  // At most maxTasks configs, one per task to run. Called after start().
  virtual Result<std::vector<StringMap>> taskConfigs(int maxTasks) = 0;
  virtual void stop() = 0;
};

// ---------------------------------------------------------------------------------------------
// Source side

// How far long work has come (a table's first load, a snapshot): `done` of `estimated` units
// (-1: not known), in `unit`. Reported with SourceTaskContext::reportProgress.
struct TaskProgress {
  std::string phase;             // what is being done: "initial load of 3 tables", "streaming"
  std::int64_t done = 0;
  std::int64_t estimated = -1;
  std::string unit = "records";
};

// The state of a task's connection to the outside system it reads or writes (a broker, a
// database, a server), as the task reports it with reportConnection(). The runtime shows it in
// the task's status ("connection": state, since, reconnects, error), /metrics
// (ferry_task_connected, ferry_task_connection_degraded, ferry_task_reconnects_total), the
// cluster view and `ferry ctl status`; the task's state stays RUNNING (Kafka Connect's values).
// A task that reports nothing gets what the runtime infers from its calls: a poll, put or start
// failing retriably makes it reconnecting (the error as the reason), one that passes connected.
// Three or more reconnects within a minute show as degraded, whatever reports them.
struct ConnectionHealth {
  enum class State {
    kConnected,     // talking to the peer
    kReconnecting,  // lost or not yet made: the reason says why (the last error)
    kDegraded,      // connected but not working well: a stalled peer, input it cannot take, ...
  };
  State state = State::kConnected;
  std::string reason;
};

// Given to a source task at start. committedOffset() is the resume point; call it from the task
// thread (it may read from a store).
class SourceTaskContext {
 public:
  virtual ~SourceTaskContext() = default;
  virtual const std::string& connectorName() const = 0;
  virtual int taskId() const = 0;
  // The last committed offset for `partition`, or nullopt if none was committed.
  virtual std::optional<StringMap> committedOffset(const StringMap& partition) = 0;
  // Asks the runtime to flush and commit soon (before offset.flush.interval.ms), e.g. because
  // the source's peer stops sending until records are acknowledged. Thread-safe; may be a no-op.
  virtual void requestCommit() {}
  // Wakes the runtime to poll this task now: records arrived (from a client's callback thread,
  // say). For tasks whose pollMode() is kNotify. Thread-safe, cheap and idempotent; call it at
  // least whenever the task's buffer turns from empty to non-empty. The default does nothing.
  virtual void wakeup() {}
  // Opens the local file `path` for a task, confined to the worker's allowed folders
  // (file.allowed.dirs): `..` and symbolic links are resolved first, the result must lie inside
  // an allowed folder and outside plugin.path and the worker's own store, and no component may
  // be a symbolic link when the file is opened (a link swapped in after the check is refused).
  // kRead opens read-only; kWrite opens read-write for appending and creates a missing file (its
  // folder must exist). The descriptor is O_CLOEXEC and O_NONBLOCK (clear it after checking the
  // file's type). NotFound when the file (or a folder on its way) does not exist;
  // InvalidArgument when the path is refused. The default refuses every path.
  virtual Result<LocalFile> openLocalFile(const std::string& path, LocalPath access) {
    (void)access;
    return Status::failedPrecondition("this runtime opens no local files (" + path + ")");
  }
  // Says how far long work has come. The runtime shows the last report in the task's status
  // ("progress", with a rate it computes), /metrics (ferry_task_progress_done, _estimated,
  // _rate) and `ferry ctl status`. Cheap; call it as often as convenient (every batch, say).
  // The default does nothing.
  virtual void reportProgress(const TaskProgress& progress) { (void)progress; }
  // Says how the task's connection is (see ConnectionHealth). Any thread; cheap when nothing
  // changed. A report of kConnected after another state also ends the runtime's wait before
  // retrying a failed poll: a client that reconnected by itself is polled at once, not after
  // the back-off. The default does nothing.
  virtual void reportConnection(const ConnectionHealth& health) { (void)health; }
};

class SourceTask {
 public:
  // How the runtime waits for a task's records.
  //  kBlocking  poll() itself waits up to maxWait for records (the default, and the only mode a
  //             task that blocks in its client library can have). The worker runs tasks on a few
  //             shared threads; a call that blocks is moved off them, so an idle blocking task
  //             costs a thread while it waits.
  //  kNotify    poll() never blocks: it is called with maxWait 0 and returns what it has. After a
  //             poll that returned nothing the runtime polls again when the task calls
  //             SourceTaskContext::wakeup(), or after idlePollDelay() at the latest. An idle task
  //             then costs no thread and no wake-up.
  enum class PollMode { kBlocking, kNotify };

  virtual ~SourceTask() = default;
  virtual std::string version() const { return "0"; }
  // Read once, after start() succeeded.
  virtual PollMode pollMode() const { return PollMode::kBlocking; }
  // kNotify: the longest an idle task is left unpolled (asked after each poll that returned
  // nothing; a time-driven task returns how long until its next record is due).
  virtual std::chrono::milliseconds idlePollDelay() const { return std::chrono::milliseconds(500); }
  virtual Status start(const StringMap& config, SourceTaskContext& context) = 0;
  // Appends up to `maxRecords` records to `out` (which arrives empty) and returns how many. Wait
  // at most `maxWait` when nothing is available; returning 0 is normal. Each record's
  // `position` says where to resume after it.
  virtual Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                                   std::chrono::milliseconds maxWait) = 0;
  // `record` is safe in the backbone (or flushed by the sink of a direct task). Called on the
  // task thread in poll order. The default acknowledges record.acknowledger if set.
  virtual void commitRecord(const Record& record) {
    if (record.acknowledger) record.acknowledger->ack();
  }
  // Positions up to the last committed record are stored.
  virtual Status commit() { return Status::ok(); }
  virtual void stop() = 0;
};

class SourceConnector : public Connector {
 public:
  virtual std::unique_ptr<SourceTask> createTask() = 0;
};

// ---------------------------------------------------------------------------------------------
// Sink side

// Given to a sink task at start. Calls are made from the task thread.
class SinkTaskContext {
 public:
  virtual ~SinkTaskContext() = default;
  virtual const std::string& connectorName() const = 0;
  virtual int taskId() const = 0;
  // Ask the runtime to flush and commit soon rather than at the next interval.
  virtual void requestCommit() = 0;
  // Ask the runtime to run the task's loop soon (from any thread): after readyForPut() said no,
  // once the task can take a batch again.
  virtual void wake() {}
  // As SourceTaskContext::reportConnection (a sink waiting for its peer: a report of kConnected
  // ends the wait before retrying a failed put).
  virtual void reportConnection(const ConnectionHealth& health) { (void)health; }
  // Reports a record the task could not write; follows errors.tolerance and the dead-letter
  // topic. Returns an error when the tolerance forbids skipping it (the task should fail).
  virtual Status reportBadRecord(const Record& record, const Status& reason) = 0;
  // A small state this task keeps about the outside system across restarts (FileStreamSink: how
  // much of its file it wrote and flushed), stored by the runtime with the connector's source
  // positions and removed with the connector. nullopt when none was saved.
  virtual Result<std::optional<StringMap>> loadState() { return std::optional<StringMap>(); }
  // Replaces the saved state; durable when it returns OK. FailedPrecondition when the runtime
  // keeps no state for sink tasks (a task must then act as if nothing had been saved).
  virtual Status saveState(const StringMap& state) {
    (void)state;
    return Status::failedPrecondition("this runtime keeps no state for sink tasks");
  }
  // As SourceTaskContext::openLocalFile.
  virtual Result<LocalFile> openLocalFile(const std::string& path, LocalPath access) {
    (void)access;
    return Status::failedPrecondition("this runtime opens no local files (" + path + ")");
  }
  // Kafka Connect's SinkTaskContext.offset(): the next records of these queues are read from these
  // offsets (a rewind, or a skip ahead), from the next records taken in on; a commit after it
  // commits no further than the offset. Queues not assigned to the task are ignored.
  virtual Status seek(const OffsetMap& offsets) {
    (void)offsets;
    return Status::failedPrecondition("this task reads no backbone queues: nothing to seek");
  }
  // Kafka Connect's pause()/resume(): no records of a paused queue reach put() until it is
  // resumed (or revoked). Queues not assigned to the task are ignored.
  virtual Status pause(const std::vector<TopicQueue>& queues) {
    (void)queues;
    return Status::failedPrecondition("this task reads no backbone queues: nothing to pause");
  }
  virtual Status resume(const std::vector<TopicQueue>& queues) {
    (void)queues;
    return Status::failedPrecondition("this task reads no backbone queues: nothing to resume");
  }
};

class SinkTask {
 public:
  virtual ~SinkTask() = default;
  virtual std::string version() const { return "0"; }
  virtual Status start(const StringMap& config, SinkTaskContext& context) = 0;
  // Queues (TopicQueue) now assigned to / taken from this task. Defaults do nothing.
  virtual Status open(const std::vector<TopicQueue>& queues) { (void)queues; return Status::ok(); }
  virtual Status close(const std::vector<TopicQueue>& queues) { (void)queues; return Status::ok(); }
  // Writes (or buffers) `records`. May modify them. A retriable error makes the runtime retry
  // the same batch after a backoff.
  virtual Status put(std::vector<Record>& records) = 0;
  // Optional back-pressure without holding a thread: whether put() can take another batch now
  // without waiting for the outside system. The runtime asks before every put() of new records;
  // when it says no, the runtime takes no more records in for this task (and serves other tasks
  // with the thread) until the task calls SinkTaskContext::wake(), then asks again. A task that
  // answers false must call wake() once it can take a batch (the runtime also asks again after
  // a second, a safety net, not a schedule). The default: always ready (a put() that must wait
  // blocks, as in Kafka Connect).
  virtual bool readyForPut() { return true; }
  // Makes everything put so far durable in the outside system.
  virtual Status flush() = 0;
  // Optional: starts making everything put so far durable and returns at once, so the task goes
  // on taking records in while the outside system answers (direct tasks, and sink tasks: their
  // consumer offsets current when it started are committed when it answers, and preCommit() is
  // not called then; a task that needs preCommit's say over its offsets returns false). Returns false when
  // the task does not support it (the default; the runtime then calls flush()). When it returns
  // true, `done` is called exactly once, from any thread (possibly before flushAsync returns),
  // with what flush() would have returned for those records. put() may be called meanwhile; what
  // it puts is not covered. The runtime has at most one flushAsync outstanding and does not call
  // flush() before its `done`; stop() comes after `done` too, except when the task stops without
  // committing (it failed, or its worker lost the lease): then stop() may come first, and the sink
  // must still call `done` once (or drop it) without touching the task afterwards.
  virtual bool flushAsync(std::function<void(Status)> done) {
    (void)done;
    return false;
  }
  // Returns the offsets that are safe to commit, given `current` (the next offsets after every
  // record put). The default flushes and returns `current`.
  virtual Result<OffsetMap> preCommit(const OffsetMap& current) {
    Status s = flush();
    if (!s.isOk()) return s;
    return current;
  }
  virtual void stop() = 0;
};

class SinkConnector : public Connector {
 public:
  virtual std::unique_ptr<SinkTask> createTask() = 0;
};

}  // namespace ferry
