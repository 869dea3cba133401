// Task executors: one loop runs every task shape.
//
// A task is a composition of three seams driven by one loop (tasks.cc, TaskLoop):
//   input      where records come from: a connector's source task (pull, or push with wake-ups),
//              or a backbone consumer (group "connect-<connector>");
//   output     where they go: the backbone producer (async, acknowledged per record), a
//              transactional producer, or a connector's sink task (put);
//   committer  what makes records taken in safe to forget and persists it: source positions
//              (after the backbone acknowledged, or after the sink flushed), consumer-group offsets
//              (after preCommit), or a backbone transaction holding records and positions.
// The shapes are compositions:
//  source  source task -> transforms -> converters -> backbone producer; positions committed for
//          the acknowledged prefix (poll order) every offset.flush.interval.ms and at stop;
//  exactly-once source  source task -> ... -> transactional producer; records and positions in one
//          transaction per poll batch (transaction.boundary=poll) or interval;
//  sink    backbone consumer -> converters -> transforms -> sink put; every interval: preCommit
//          (flush) -> commit the offsets it returns;
//  direct  source task -> transforms -> sink put; every interval (or when the in-flight bound is
//          hit): sink flush -> then, and only then, source positions are committed.
// The loop - lease check, pause, in-flight bounds, commit timer, the errors.* retry policy (one
// retrier over core::RetryBudget for start, poll and put), shutdown order, metrics - exists once.
// The at-least-once contract lives on the committer: nothing is committed for a record before its
// output made it safe, and a task stopped without its lease commits nothing.
//
// Threading: the loop is a step function (one bounded iteration per call, never waiting itself:
// it returns how long it may sleep). Steps run on the worker's shared task threads (executor.h;
// TaskEnv::executor), never two of one task at once; a connector call that blocks is moved off the
// shared threads by the executor. Without an executor a task has a thread of its own.
// start/setPaused/requestStop/join/cancel and the metrics are called from the worker's control
// thread; steps and the state callback run on the task's current thread.
//
// Stopping: requestStop() asks, join(timeout) waits at most `timeout`. A task that does not end in
// time (its connector blocked in start, poll, put, flush, commit or stop) is *cancelled*: its
// thread is left running and the runner must stay alive until finished() (TaskStopper keeps it),
// but nothing the thread does afterwards takes effect — no record is sent or put, no position or
// offset committed, no status or topic reported. Every such effect runs under effectMu_ after a
// check of the cancelled flag, so once cancel() returned none is under way and none will start.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "backbone/backbone.h"
#include "backbone/shared_producer.h"
#include "core/histogram.h"
#include "ferry/connector.h"
#include "ferry/record.h"
#include "runtime/tap.h"
#include "runtime/connector_config.h"
#include "runtime/executor.h"
#include "runtime/plugins.h"
#include "runtime/schema_registry.h"
#include "runtime/worker_config.h"
#include "store/store.h"

namespace ferry::runtime {

// The converters of one task. Each of key, value and header is the connector's
// `<side>.converter` configured with the connector's `<side>.converter.*` keys, else the worker's
// (configured with the worker's keys); the two are never mixed. Each is configured with
// `converter.type` = key|value|header added, as Kafka Connect does, so it can name its role.
// InvalidArgument/NotFound name the side ("header.converter: ...") when a class is unknown or
// its config is refused.
struct TaskConverters {
  PluginPtr<Converter> key;
  PluginPtr<Converter> value;
  PluginPtr<Converter> header;
  // JsonConverter with schemas.enable=false on that side: its records' schemas travel by id
  // (runtime/schema_registry.h) when the task has a registry.
  bool keySchemaById = false;
  bool valueSchemaById = false;
};
Result<TaskConverters> makeTaskConverters(const PluginRegistry& registry, const WorkerConfig& worker,
                                          const StringMap& connectorConfig);

// Applies a header converter to every header value of a record, in place: towards the backbone
// (Converter::fromRecord; source tasks, after the transforms) or from it (toRecord; sink tasks,
// before the transforms). Null values stay null; names and order are kept; the list is rebuilt
// only when a value changes (an identity converter costs no allocation). The first failure is
// returned with the header's name as context, and `headers` is left unchanged.
enum class HeaderDirection { kToBackbone, kFromBackbone };
Status convertHeaders(Converter& converter, HeaderDirection direction, const std::string& topic, Headers& headers);

// Counters and gauges of one task (read by /metrics while the task runs).
struct TaskMetrics {
  std::atomic<std::uint64_t> recordsIn{0};     // polled from the source / read from the backbone
  std::atomic<std::uint64_t> recordsOut{0};    // acknowledged by the backbone / put to the sink
  std::atomic<std::uint64_t> bytesIn{0};
  std::atomic<std::uint64_t> bytesOut{0};
  std::atomic<std::uint64_t> recordsDropped{0};  // dropped by a transform (filter)
  std::atomic<std::uint64_t> errors{0};          // record errors (tolerated or not) and failed calls
  std::atomic<std::uint64_t> deadLettered{0};
  std::atomic<std::uint64_t> retries{0};
  std::atomic<std::uint64_t> commits{0};
  std::atomic<std::int64_t> inflightRecords{0};  // taken in, not yet safe
  std::atomic<std::int64_t> inflightBytes{0};
  std::atomic<std::int64_t> commitLagRecords{0}; // taken in, position/offset not yet committed
  std::atomic<std::int64_t> lastCommitMs{0};
  // Records a sink could not read because the backbone's storage lost them (damaged or missing
  // on the embedded log's disk); the backbone's own report names the bytes and offsets.
  std::atomic<std::uint64_t> recordsLostInStorage{0};
  // Time from the worker receiving a record (Record::receivedNs) to handing it to the task's
  // output: a sink task's put() returned, or the backbone producer took it.
  core::LatencyHistogram latency;

  // Long work's progress as the task last reported it (SourceTaskContext::reportProgress), with
  // the rate computed from successive reports.
  struct Progress {
    TaskProgress report;
    double ratePerSecond = 0;
  };
  void setProgress(const TaskProgress& p, std::int64_t nowMs);
  std::optional<Progress> progress() const;

  // The task's connection to its outside system (ferry/connector.h, ConnectionHealth): as the
  // task reports it (Source/SinkTaskContext::reportConnection) or, until it reports, as the
  // runtime infers it from its calls.
  struct Connection {
    ConnectionHealth::State state = ConnectionHealth::State::kConnected;
    std::string reason;            // "" when connected
    std::int64_t sinceMs = 0;      // wall clock (ms since the epoch) of the last change of state
    std::uint64_t reconnects = 0;  // times it went from connected (or degraded) to reconnecting
  };
  // A report at wall clock `wallMs`; `fromTask`: the task's own (once a task reported, inferred
  // reports are ignored). True when the connection turned connected from another state. Any
  // thread; a report that changes nothing takes no lock.
  bool setConnection(const ConnectionHealth& h, bool fromTask, std::int64_t wallMs);
  // What to show at `wallMs`: degraded while the connection was lost kReconnectsForDegraded or
  // more times within the last kDegradedWindowMs; nullopt before anything was reported.
  std::optional<Connection> connection(std::int64_t wallMs) const;
  static constexpr std::size_t kReconnectsForDegraded = 3;
  static constexpr std::int64_t kDegradedWindowMs = 60000;

 private:
  mutable std::mutex connectionMu_;
  std::optional<Connection> connection_;    // guarded by connectionMu_
  std::string lastError_;                   // guarded by connectionMu_
  std::vector<std::int64_t> reconnectedAt_;  // guarded by connectionMu_: within the window
  std::atomic<int> connectionState_{-1};    // connection_->state (-1: none), for the quick check
  std::atomic<bool> reportedByTask_{false};

  mutable std::mutex progressMu_;
  std::optional<Progress> progress_;   // guarded by progressMu_
  std::int64_t progressAtMs_ = 0;      // guarded by progressMu_: when `done` was last sampled
  std::int64_t progressDoneAt_ = 0;    // guarded by progressMu_: `done` then
};

struct TaskEnv {
  const PluginRegistry* registry = nullptr;
  // The worker's shared task threads: the task's steps run there. Null: a thread of its own.
  Executor* executor = nullptr;
  backbone::Backbone* backbone = nullptr;  // null only for direct tasks in tests
  // The worker's schema topic (null: schemas do not travel by id).
  SchemaRegistry* schemas = nullptr;
  // The worker's shared producer for source records (null: the task creates its own).
  backbone::SharedProducer* producers = nullptr;
  store::PositionStore* positions = nullptr;
  const WorkerConfig* worker = nullptr;
  std::string connector;
  int taskId = 0;
  ConnectorShape shape = ConnectorShape::kSource;
  StringMap config;  // the task config: connector config merged with the connector's task config
  // Filled by TaskRunner::create(): the secret values of the resolved config (runtime/secrets.h),
  // scrubbed from the task's traces, error logs and dead-letter headers.
  std::vector<std::string> secrets;
  // Called on the task thread whenever its state changes (RUNNING, PAUSED, FAILED + trace).
  std::function<void(store::State, const std::string&)> onState;
  // Called on the task thread the first time the task writes to / reads from a topic.
  std::function<void(const std::string&)> onTopic;
  // Distributed mode: whether this worker still holds its lease and the task. Checked before
  // every poll, put and commit, so a worker frozen past its lease (SIGSTOP, a long pause) does not
  // touch its old task again while it waits to be told to stop it. Null: always.
  std::function<bool()> mayRun;
  // Distributed mode: whether this worker holds its cluster lease (mayRun without the ownership
  // part; a clock read, cheap enough to check per record). When mayRun() turns false while this
  // holds, the task was withdrawn on purpose (its connector stopped, deleted, reconfigured or
  // moved): the task ends at info level, not as a failure. Null: no lease (standalone).
  std::function<bool()> leaseValid;
  // Distributed mode: whether a stopping task may still flush and commit: the worker holds its
  // lease and the task is not assigned elsewhere (to another worker, or to a newer epoch; a task
  // of a stopped or deleted connector is assigned nowhere and may). A task stopped when it may
  // not — the worker was cut off or frozen, another worker may run the task by now — sends
  // nothing more: no final flush, no position, offset or transaction commit; what it polled is
  // read again by the next owner. Null: always.
  std::function<bool()> mayCommit;
  // The connector's tapping point (tap.h): each record handed on is offered to it. Null: none.
  std::shared_ptr<TapPoint> tap;
};

class TaskRunner {
 public:
  static std::unique_ptr<TaskRunner> create(TaskEnv env);
  virtual ~TaskRunner();
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  void start();
  void setPaused(bool paused);
  // Asks the thread to stop (commit what is safe, stop the task); returns at once.
  void requestStop();
  // Waits for the thread (asks it to stop first). Blocks as long as the task does.
  void join();
  // Asks the thread to stop and waits at most `timeout` for it; true when it ended (and was
  // joined), false when it is still running (then cancel() it and keep the runner alive).
  bool join(std::chrono::milliseconds timeout);
  // Cancels the task (see above) and asks it to stop; returns at once unless an effect is under
  // way, which it waits for up to `effectWait` (effects are runtime code with their own bounds).
  // False when that wait timed out. The thread's own end is not waited for.
  bool cancel(std::chrono::milliseconds effectWait = std::chrono::milliseconds(1000));
  bool cancelled() const noexcept { return cancelled_.load(); }
  // What the task thread is doing: the connector call under way ("start", "poll", "put", "flush",
  // "preCommit", "commit", "commitRecord", "stop", ...) or "runtime" between calls.
  std::string activity() const { return activity_.load(); }
  bool finished() const noexcept { return finished_.load(); }
  bool failed() const noexcept { return failed_.load(); }
  std::int64_t startedAtMs() const noexcept { return startedAtMs_; }
  const TaskMetrics& metrics() const noexcept { return metrics_; }
  // A sentence for the task's status when the backbone lost records this task should have read
  // ("" when none). Any thread.
  std::string dataLossNote() const;
  const TaskEnv& env() const noexcept { return env_; }
  // Asks for the task's next step now (records arrived, an acknowledgement freed room, a commit
  // was requested). Any thread; cheap; a wake during a step is not lost.
  void wake();

 protected:
  explicit TaskRunner(TaskEnv env) : env_(std::move(env)) {}
  // One bounded piece of the task's life. kDone carries the task's result: OK when it was asked
  // to stop, an error when it failed. kSleep: call again at untilMs (core::monotonicMs()) at the
  // latest, or at wake(), requestStop() or setPaused().
  struct Step {
    enum class Kind { kAgain, kSleep, kDone };
    Kind kind = Kind::kAgain;
    std::int64_t untilMs = 0;
    Status result;
    static Step again() { return {}; }
    static Step sleepUntil(std::int64_t untilMs) { return {Kind::kSleep, untilMs, {}}; }
    static Step done(Status result) { return {Kind::kDone, 0, std::move(result)}; }
  };
  virtual Step step() = 0;
  // Checked after every step run on the executor: true moves the task to a thread of its own for
  // good (a task whose input blocks in every poll would otherwise hold a shared thread, and make
  // the executor start a new one, at every step).
  virtual bool wantsOwnThread() const { return false; }

  bool stopping() const noexcept { return stop_.load(std::memory_order_relaxed); }
  bool paused() const noexcept { return paused_.load(std::memory_order_relaxed); }
  // False once cancelled, or in distributed mode when the lease or the task was lost.
  bool leaseHeld() const { return !cancelled() && (!env_.mayRun || env_.mayRun()); }
  // Whether the worker holds its lease (ownership of the task aside; TaskEnv::leaseValid).
  bool workerLeaseHeld() const { return !env_.leaseValid || env_.leaseValid(); }
  // Whether a stopping task may still flush and commit (TaskEnv::mayCommit).
  bool mayCommit() const { return !env_.mayCommit || env_.mayCommit(); }
  // Holds effectMu_ for one effect of the task (sending, committing, reporting); false (holding
  // nothing) once the task is cancelled. Never nest two.
  class Effect {
   public:
    explicit Effect(TaskRunner& r) : lock_(r.effectMu_), allowed_(!r.cancelled()) {
      if (!allowed_) lock_.unlock();
    }
    explicit operator bool() const noexcept { return allowed_; }

   private:
    std::unique_lock<std::timed_mutex> lock_;
    bool allowed_;
  };
  Effect effect() { return Effect(*this); }
  static Status cancelledError() { return Status::cancelled("the task was cancelled (abandoned after a stop timeout)"); }
  // A poll that was under way when the lease ended (the process was frozen inside it): its
  // records are not sent; the task fails so that, if it is still ours, it restarts from its
  // committed positions instead of skipping them.
  Status leaseLost(std::vector<Record>& batch);
  // Why the task cannot go on once mayRun() turned false, `what` saying where it was: withdrawn on
  // purpose while this worker holds its lease (kCancelled, logged at info when the task ends), or
  // the lease lost (kUnavailable, a failure).
  Status leaseEnded(const std::string& what);
  void reportState(store::State s, const std::string& trace = {});
  // Logs and counts ranges the consumer stepped over (Consumer::takeSkipped) and keeps a note
  // for the task's status.
  void noteSkipped(const std::vector<backbone::StorageIssue>& skipped);
  void noteTopic(const std::string& topic);

  TaskEnv env_;
  TaskMetrics metrics_;

 private:
  std::thread thread_;  // guarded by waitMu_: the task's own thread, if it has one
  std::atomic<bool> started_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::atomic<bool> finished_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> withdrawn_{false};  // set by leaseEnded(): the task was taken away, not failed
  std::atomic<const char*> activity_{"runtime"};  // set by the task thread around connector calls
  std::timed_mutex effectMu_;                      // held by the task thread during one effect
  std::mutex doneMu_;
  std::condition_variable doneCv_;  // notified when finished_ becomes true
  std::int64_t startedAtMs_ = 0;
  // Without an executor: runs steps until one returns kDone, then records the result (the
  // task's own thread). With one: runStep() is the job's step.
  void drive();
  void startOwnThread();  // drive() on a new thread named task-own (callers hold waitMu_)
  StepResult runStep();
  Step safeStep();
  void finish(Status s);
  void markFinished();
  // Waits (up to `timeout`, or for ever when negative) until the task has finished.
  bool waitFinished(std::chrono::milliseconds timeout);
  void joinThread();
  Executor::JobPtr job_;  // guarded by waitMu_ (set once by start())
  mutable std::mutex waitMu_;
  std::condition_variable waitCv_;
  bool woken_ = false;  // guarded by waitMu_
  std::set<std::string> topics_;  // task thread only
  mutable std::mutex noteMu_;
  std::string dataLossNote_;  // guarded by noteMu_
  store::State lastState_ = store::State::kUnassigned;  // task thread only
};

}  // namespace ferry::runtime
