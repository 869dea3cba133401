// Task executors (see tasks.h).
#include "runtime/tasks.h"

#include <algorithm>
#include <regex>
#include <chrono>
#include <deque>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "core/backoff.h"
#include "core/clock.h"
#include "core/logging.h"
#include "core/thread.h"
#include "runtime/config_util.h"
#include "runtime/local_files.h"
#include "runtime/log_position_store.h"
#include "runtime/secrets.h"
#include "runtime/transform_chain.h"
#include "transforms/connect_json.h"
#include "transforms/converters.h"

namespace ferry::runtime {
namespace {

using namespace std::chrono_literals;
// How long a poll may wait for data. Only idle tasks wait it out; at thousands of idle tasks per
// worker it sets the wake-ups per second, and it bounds how long a stop waits for a poll.
constexpr std::chrono::milliseconds kSourcePollWait = 500ms;
// A sink that said it is not ready is asked again after this even without its wake (a safety net).
constexpr std::int64_t kOutputReadyRecheckMs = 1000;
// The longest wait before records the backbone refused with a retriable error are sent again.
constexpr std::int64_t kResendDelayMaxMs = 6400;
using store::State;

std::string get(const StringMap& m, const std::string& k) { return configValue(m, k); }
StringMap withPrefix(const StringMap& m, const std::string& prefix) { return configWithPrefix(m, prefix); }

// errors.tolerance, retries and the dead-letter topic of one task.
class ErrorReporter {
 public:
  ErrorReporter(const TaskEnv& env, TaskMetrics& metrics)
      : env_(env), metrics_(metrics), policy_(parseErrorPolicy(env.config)), log_(core::logger("runtime")) {}

  const ErrorPolicy& policy() const { return policy_; }

  // A record failed at `stage`. OK when tolerated (logged, dead-lettered); the error otherwise.
  // `keySchema` / `valueSchema`: the record's schemas where the reported bytes are its data
  // (source side, transforms, put); a dead-letter record carries them as headers
  // __ferry.errors.key.schema / __ferry.errors.value.schema (Kafka Connect's JSON form), so the
  // typed data can be read again. Null where the bytes are the backbone's own (they carry theirs).
  Status report(const std::string& stage, const Status& reason, const std::string& topic, std::int32_t queue,
                std::int64_t offset, const Bytes& key, const Bytes& value, const Headers& headers,
                const SchemaPtr& keySchema = nullptr, const SchemaPtr& valueSchema = nullptr) {
    metrics_.errors.fetch_add(1, std::memory_order_relaxed);
    const std::string where = env_.connector + "-" + std::to_string(env_.taskId);
    if (!policy_.tolerateAll)
      return Status(reason.code(), "record from " + topic + (queue >= 0 ? "-" + std::to_string(queue) : "") +
                                       (offset >= 0 ? "@" + std::to_string(offset) : "") + " failed in " + stage +
                                       " (errors.tolerance=none): " + reason.message());
    if (policy_.logErrors)
      log_->warn("{}: tolerated error in {} for a record of {}: {}{}", where, stage, topic,
                 scrubSecrets(reason.toString(), env_.secrets),
                 policy_.logMessages ? " value=" + std::string(value.view().substr(0, 256)) : std::string());
    if (policy_.deadLetterTopic.empty() || env_.backbone == nullptr) return Status::ok();
    if (!dlq_) {
      auto p = env_.backbone->createProducer({});
      if (!p.isOk()) return p.status().withContext("dead-letter producer");
      dlq_ = std::move(*p);
    }
    backbone::Message m;
    m.topic = policy_.deadLetterTopic;
    m.queue = -1;
    m.key = key;
    m.value = value;
    m.headers = headers;
    if (policy_.contextHeaders) {
      m.headers.add("__connect.errors.topic", topic);
      m.headers.add("__connect.errors.partition", std::to_string(queue));
      m.headers.add("__connect.errors.offset", std::to_string(offset));
      m.headers.add("__connect.errors.connector.name", env_.connector);
      m.headers.add("__connect.errors.task.id", std::to_string(env_.taskId));
      m.headers.add("__connect.errors.stage", stage);
      m.headers.add("__connect.errors.class.name", statusCodeName(reason.code()));
      m.headers.add("__connect.errors.exception.message", scrubSecrets(reason.message(), env_.secrets));
    }
    if (keySchema) m.headers.add("__ferry.errors.key.schema", transforms::connectSchemaJson(*keySchema));
    if (valueSchema) m.headers.add("__ferry.errors.value.schema", transforms::connectSchemaJson(*valueSchema));
    auto* metrics = &metrics_;
    Status s = dlq_->send(std::move(m), [metrics](const Status& st, std::int32_t, std::int64_t) {
      if (st.isOk()) metrics->deadLettered.fetch_add(1, std::memory_order_relaxed);
    });
    if (!s.isOk()) return s.withContext("dead-letter topic " + policy_.deadLetterTopic);
    return Status::ok();
  }

  // Waits for dead-letter sends before offsets are committed (so a skipped record is never lost).
  Status flush(std::chrono::milliseconds timeout) { return dlq_ ? dlq_->flush(timeout) : Status::ok(); }

 private:
  const TaskEnv& env_;
  TaskMetrics& metrics_;
  ErrorPolicy policy_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<backbone::Producer> dlq_;
};

// The calls errors.retry.timeout bounds, and what its 0 (the default) means for each:
//  start       0 retries nothing: a task that cannot start fails at once, so its status says why;
//  poll        0 sets no deadline: retried until it passes or the task stops, as Kafka Connect
//              retries a RetriableException from poll(); a positive timeout is a deadline from the
//              first failure in a row, -1 is for ever;
//  direct put  as poll (the sink of a direct task is part of its pipeline);
//  sink put    until it passes or the task stops whatever the key says (Kafka Connect's put);
//  backbone read  (the sink task's consumer) as sink put: the backbone is the worker's own.
// Every shape goes through the one loop's CallRetriers.
enum class RetriedCall { kStart, kPoll, kDirectPut, kSinkPut, kBackboneRead };

std::int64_t retryTimeoutFor(RetriedCall call, const ErrorPolicy& policy) {
  switch (call) {
    case RetriedCall::kStart: return policy.retryTimeoutMs;
    case RetriedCall::kPoll:
    case RetriedCall::kDirectPut: return policy.retryTimeoutMs == 0 ? -1 : policy.retryTimeoutMs;
    case RetriedCall::kSinkPut:
    case RetriedCall::kBackboneRead: return -1;
  }
  return policy.retryTimeoutMs;
}

// Retries of one kind of call in one task (core::RetryBudget: 100 ms doubling up to
// errors.retry.delay.max.ms): each retry is logged at warn and counted in ferry_task_retries_total;
// a failure past the budget fails the task with a trace naming errors.retry.timeout. The loop
// never waits itself: retryOrFail returns the delay, the loop sleeps it (a stop or a pause cuts
// it short).
class CallRetrier {
 public:
  CallRetrier(const char* call, RetriedCall kind, const TaskEnv& env, const ErrorPolicy& policy, TaskMetrics& metrics)
      : call_(call),
        configuredMs_(policy.retryTimeoutMs),
        budget_(retryTimeoutFor(kind, policy), policy.retryDelayMaxMs),
        env_(env),
        metrics_(metrics) {}

  // After a failed call: the delay (ms) before the caller calls again, else the error to fail the
  // task with.
  Result<std::int64_t> retryOrFail(const Status& s) {
    if (!s.isRetriable()) return s.withContext(call_);
    auto delay = budget_.onFailure();
    if (!delay)
      return s.withContext(std::string(call_) + " (retries exhausted after errors.retry.timeout=" +
                           std::to_string(configuredMs_) + " ms" +
                           (budget_.timeoutMs() == 0 ? ": not retried" : "") + ")");
    metrics_.retries.fetch_add(1, std::memory_order_relaxed);
    core::logger("runtime")->warn("{}-{}: {} failed, retry {} in {} ms ({}): {}", env_.connector, env_.taskId, call_,
                                  budget_.retries(), *delay,
                                  budget_.forever() ? std::string("no deadline")
                                                    : "errors.retry.timeout=" + std::to_string(budget_.timeoutMs()) + " ms",
                                  scrubSecrets(s.toString(), env_.secrets));
    return *delay;
  }
  // The call passed: the next failure starts a new budget.
  void reset() { budget_.reset(); }

 private:
  const char* call_;
  std::int64_t configuredMs_;
  core::RetryBudget budget_;
  const TaskEnv& env_;
  TaskMetrics& metrics_;
};

// The activity slot of the task running on this thread (TaskRunner::activity_), set by the
// driver around each step and by guarded() around each connector call, so a stop that times out
// can say what the task was doing.
thread_local std::atomic<const char*>* tActivity = nullptr;

struct ActivityScope {
  explicit ActivityScope(const char* what) : prev_(tActivity ? tActivity->exchange(what) : nullptr) {}
  ~ActivityScope() {
    if (tActivity) tActivity->store(prev_ ? prev_ : "runtime");
  }
  const char* prev_;
};

template <typename F>
auto guarded(const char* what, F&& f) -> decltype(f()) {
  ActivityScope activity(what);
  try {
    return f();
  } catch (const std::exception& e) {
    return Status::internal(std::string(what) + " threw: " + e.what());
  } catch (...) {
    return Status::internal(std::string(what) + " threw a non-standard exception");
  }
}

void guardedVoid(const char* what, const std::function<void()>& f) {
  guarded(what, [&] {
    f();
    return Status::ok();
  }).isOk();
}

// Both task contexts open local files through the worker's one confinement (local_files.h).
Result<LocalFile> openConfined(const TaskEnv& env, const std::string& path, LocalPath access) {
  if (env.worker == nullptr) return Status::failedPrecondition("no worker config: local files cannot be opened");
  return localFileConfinement(*env.worker).open(path, access);
}

// Positions that became safe, waiting for the next commit. Last one wins per partition.
class PositionBuffer {
 public:
  void add(const Position& p) {
    if (p.partition.empty()) return;
    pending_[p.partition] = p.offset;
  }
  void add(Position&& p) {
    if (p.partition.empty()) return;
    auto it = pending_.find(p.partition);
    if (it == pending_.end())
      pending_.emplace(std::move(p.partition), std::move(p.offset));
    else
      it->second = std::move(p.offset);
  }
  bool empty() const { return pending_.empty(); }
  // Positions whose write failed, back in: a partition added since keeps its newer offset.
  void keepOlder(const std::vector<Position>& older) {
    for (const auto& p : older)
      if (!p.partition.empty()) pending_.emplace(p.partition, p.offset);
  }
  std::vector<Position> list() const {
    std::vector<Position> out;
    out.reserve(pending_.size());
    for (const auto& [part, off] : pending_) out.push_back(Position{part, off});
    return out;
  }
  Status commit(store::PositionStore& store, const std::string& connector) {
    if (pending_.empty()) return Status::ok();
    FERRY_RETURN_IF_ERROR(store.put(connector, list()));
    pending_.clear();
    return Status::ok();
  }

 private:
  std::map<StringMap, StringMap> pending_;
};

// What committing a source record needs, kept from take-in until it is safe.
Record slimOf(const Record& r) {
  Record slim;
  slim.topic = r.topic;
  slim.position = r.position;
  slim.acknowledger = r.acknowledger;
  return slim;
}

// ---------------------------------------------------------------------------------------------
// The three seams. A shape is one Input, one Output and one Committer (see tasks.h); TaskLoop
// drives them and owns everything they share (the env, metrics, errors, the effect lock).

class TaskLoop;

// Where records come from.
class Input {
 public:
  virtual ~Input() = default;
  // Starts the connector side (retried by the loop within errors.retry.timeout for start).
  virtual Status start() = 0;
  // Appends what is there (waiting up to `wait`) to `out`; each record carries what committing it
  // needs (a source position and acknowledger, or a backbone topic/queue/offset).
  virtual Result<std::size_t> poll(std::vector<Record>& out, std::size_t max, std::chrono::milliseconds wait) = 0;
  virtual RetriedCall pollKind() const { return RetriedCall::kPoll; }
  // Notifying inputs are polled without waiting and woken (TaskRunner::wake) when records arrive.
  virtual bool notifies() const { return false; }
  virtual std::chrono::milliseconds idleDelay() const { return kSourcePollWait; }
  // After every poll (the backbone's storage reports).
  virtual void afterPoll() {}
  // A record as read -> what the transforms see (the sink side's converters). False: dropped after
  // a tolerated error (reported already). decodes(): whether decode() changes anything.
  virtual bool decodes() const { return false; }
  virtual Result<bool> decode(Record& record) {
    (void)record;
    return true;
  }
  // At stop, first: no new records (a push source stops its client).
  virtual void stopIntake() {}
  // At stop, after the final commit.
  virtual void close() {}
  // The source task, for commitRecord/commit (null for a backbone input).
  virtual SourceTask* sourceTask() { return nullptr; }
  // A sink task's SinkTaskContext::seek/pause/resume: a backbone input only (a direct task's sink
  // reads no queues).
  virtual Status seek(const OffsetMap& offsets) {
    (void)offsets;
    return Status::failedPrecondition("a direct task's sink reads no backbone queues: nothing to seek");
  }
  virtual Status pause(const std::vector<TopicQueue>& queues, bool paused) {
    (void)queues;
    return Status::failedPrecondition(std::string("a direct task's sink reads no backbone queues: nothing to ") +
                                      (paused ? "pause" : "resume"));
  }
};

// Where records go.
class Output {
 public:
  virtual ~Output() = default;
  virtual Status start() { return Status::ok(); }
  // One record after the transforms, with its committer ticket.
  virtual Status accept(Record&& record, std::uint64_t ticket) = 0;
  // Puts what was accepted since the last put (sink outputs); the batch is kept while a retriable
  // failure is retried. `kind` is the put's retry rule.
  virtual bool hasBatch() const { return false; }
  virtual Status put() { return Status::ok(); }
  virtual RetriedCall putKind() const { return RetriedCall::kSinkPut; }
  // Whether the output can take a new batch now (a sink task's readyForPut()); when not, it wakes
  // the loop once it can.
  virtual bool ready() { return true; }
  // At stop, before the final commit: a producer purges what it holds when the worker has no
  // lease, then waits for its acknowledgements.
  virtual void settle(bool workerLease) { (void)workerLease; }
  // At stop, last (the sink task's stop).
  virtual void close() {}
};

// What makes records taken in safe to forget, and persists it (the at-least-once contract:
// nothing is committed for a record before its output made it safe).
class Committer {
 public:
  virtual ~Committer() = default;
  // A record was taken in (before decoding and transforms); the output refers to it by the ticket.
  // A committer may take the record's position (AckedPositions does: then its output reads the
  // source partition from the committer); nothing else reads a position after this.
  virtual std::uint64_t takeIn(Record& record, std::size_t bytes) = 0;
  // It was dropped (filter, tolerated error): safe once everything before it is.
  virtual void dropped(std::uint64_t ticket) { (void)ticket; }
  // Every step, before the commit check: acknowledgements that arrived (a resend of records the
  // backbone refused with a retriable error may be due; its delay is returned, 0 = none).
  virtual Result<std::int64_t> collect() { return std::int64_t{0}; }
  // Whether to commit now: the timer ran out (`timerDue`), the task asked, or holding more would
  // pass the in-flight bound.
  virtual bool due(bool timerDue, bool requested, bool paused) = 0;
  virtual Status commit() = 0;
  // Whether intake must wait for acknowledgements (the in-flight bound, async outputs).
  virtual bool waitingForRoom() { return false; }
  // Whether acknowledgements arrived that collect() has not taken yet (task thread).
  virtual bool hasSettled() { return false; }
  // After a polled batch was handed to the output.
  virtual Status afterBatch() { return Status::ok(); }
  // At stop: what may still be committed (`healthy`: the loop ended without an error; `lease`:
  // the worker may still commit for this task); then the loop releases every record not safe.
  // nullopt while a commit is in flight: the task's thread is not held while a store answers (the
  // answer wakes the loop, which asks again), so a worker stopping its share of thousands of
  // tasks commits them all concurrently.
  virtual std::optional<Status> finalCommit(bool healthy, bool lease) = 0;
  virtual void releaseAll() = 0;
};

// The one loop (tasks.h). Seams reach the runner's shared parts through it.
class TaskLoop final : public TaskRunner {
 public:
  explicit TaskLoop(TaskEnv env) : TaskRunner(std::move(env)) {}
  ~TaskLoop() override {
    join();
    // A consumer's rebalance callbacks reach the committer and the sink task: closed first. Then
    // the output, whose callbacks (a producer's acknowledgements) reach the committer; then the
    // committer, whose records hold acknowledgers issued by the source task; then the input.
    if (input_) input_->close();
    ownedOutput_.reset();
    committer_.reset();
    input_.reset();
  }

  // For the seams.
  const TaskEnv& taskEnv() const { return env_; }
  TaskMetrics& counters() { return metrics_; }
  ErrorReporter& errors() { return *errors_; }
  const ErrorPolicy& policy() const { return errors_->policy(); }
  std::atomic<bool>& commitRequested() { return commitRequested_; }
  // Whether the loop sleeps after an empty poll (an acknowledgement then wakes it: see running()).
  bool idle() const { return idle_.load(); }
  // A connection report from the task (any thread): a reconnect ends the wait before the next
  // retry of a failed call.
  void reportConnection(const ConnectionHealth& h) {
    if (metrics_.setConnection(h, true, core::nowMs())) {
      reconnected_.store(true, std::memory_order_release);
      wake();
    }
  }
  Input& input() { return *input_; }
  using TaskRunner::cancelledError;
  using TaskRunner::effect;
  using TaskRunner::mayCommit;
  using TaskRunner::noteSkipped;
  using TaskRunner::noteTopic;
  using TaskRunner::stopping;
  // A failure raised outside the loop's own calls (a rebalance callback): the loop fails with it.
  void fail(const Status& s) {
    if (failure_.isOk()) failure_ = s;
  }
  bool failing() const { return !failure_.isOk(); }

 private:
  enum class Phase { kSetUp, kStartOutput, kStartInput, kRunning, kStopping };

  Step step() override;
  // An input that waits in its poll (PollMode::kBlocking, a backbone consumer) gets a thread of
  // its own once the task runs; notifying inputs stay on the shared threads.
  bool wantsOwnThread() const override { return phase_ == Phase::kRunning && !input_->notifies(); }
  Status setUp();
  Step running(std::int64_t now);
  Step putBatch(std::int64_t now);
  Status commitNow();
  // For tasks that do not report their connection: a call failing retriably means the peer is
  // not reachable (reconnecting, the error as the reason), one that passes that it is.
  void inferConnection(const Status& call) {
    if (call.isOk()) {
      metrics_.setConnection(ConnectionHealth{}, false, core::nowMs());
    } else if (call.isRetriable()) {
      metrics_.setConnection({ConnectionHealth::State::kReconnecting, scrubSecrets(call.toString(), env_.secrets)},
                             false, core::nowMs());
    }
  }
  // Ends the task: stops the seams in order and returns the task's result.
  Step finish(Status result);
  Step closing(std::int64_t now);
  Step sleep(std::int64_t until) const { return Step::sleepUntil(std::min({until, nextCommit_, resendBy_})); }

  Phase phase_ = Phase::kSetUp;
  std::unique_ptr<TransformChain> chain_;
  std::unique_ptr<ErrorReporter> errors_;
  std::unique_ptr<Input> input_;
  std::unique_ptr<Committer> committer_;
  std::unique_ptr<Output> ownedOutput_;  // null when the committer is the output too (a transaction)
  Output* output_ = nullptr;
  std::optional<CallRetrier> startRetry_, pollRetry_, putRetry_;
  std::atomic<bool> commitRequested_{false};
  std::atomic<bool> reconnected_{false};  // the task reported its connection back
  std::atomic<bool> idle_{false};         // sleeping after an empty poll of a notifying input
  Status failure_;
  std::int64_t nextCommit_ = INT64_MAX;
  std::int64_t resumeAt_ = 0;  // the next start, poll or put attempt after a retriable failure
  std::int64_t resendBy_ = INT64_MAX;  // records the backbone refused are sent again by then
  std::int64_t interval_ = 1000;
  std::vector<Record> batch_;
  Status result_;            // kStopping: what ended the loop
  bool finalLease_ = false;  // kStopping: whether the worker may still commit for the task
  std::int64_t stopDeadline_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Contexts given to connector tasks.

class SourceContextImpl final : public SourceTaskContext {
 public:
  SourceContextImpl(TaskLoop& loop, bool commitOnRequest) : loop_(loop), commitOnRequest_(commitOnRequest) {}
  const std::string& connectorName() const override { return loop_.taskEnv().connector; }
  void requestCommit() override {
    if (!commitOnRequest_) return;
    loop_.commitRequested().store(true);
    loop_.wake();
  }
  void wakeup() override { loop_.wake(); }
  void reportProgress(const TaskProgress& progress) override {
    loop_.counters().setProgress(progress, core::monotonicMs());
  }
  void reportConnection(const ConnectionHealth& health) override { loop_.reportConnection(health); }
  int taskId() const override { return loop_.taskEnv().taskId; }
  std::optional<StringMap> committedOffset(const StringMap& partition) override {
    const auto& env = loop_.taskEnv();
    if (!env.positions) return std::nullopt;
    auto r = env.positions->get(env.connector, partition);
    if (!r.isOk()) return std::nullopt;
    return *r;
  }
  Result<LocalFile> openLocalFile(const std::string& path, LocalPath access) override {
    return openConfined(loop_.taskEnv(), path, access);
  }

 private:
  TaskLoop& loop_;
  bool commitOnRequest_;
};

class SinkContextImpl final : public SinkTaskContext {
 public:
  explicit SinkContextImpl(TaskLoop& loop) : loop_(loop) {}
  void reportConnection(const ConnectionHealth& health) override { loop_.reportConnection(health); }
  const std::string& connectorName() const override { return loop_.taskEnv().connector; }
  int taskId() const override { return loop_.taskEnv().taskId; }
  void requestCommit() override {
    loop_.commitRequested().store(true);
    loop_.wake();
  }
  void wake() override { loop_.wake(); }
  Status reportBadRecord(const Record& record, const Status& reason) override {
    return loop_.errors().report("TASK_PUT", reason, record.topic, record.queue.value_or(-1), record.offset, record.key,
                                 record.value, record.headers, record.keySchema, record.valueSchema);
  }
  // The task's state is one position of the connector, under a partition no source uses.
  Result<std::optional<StringMap>> loadState() override {
    const auto& env = loop_.taskEnv();
    if (env.positions == nullptr) return std::optional<StringMap>();
    return env.positions->get(env.connector, statePartition());
  }
  Status saveState(const StringMap& state) override {
    const auto& env = loop_.taskEnv();
    if (env.positions == nullptr) return SinkTaskContext::saveState(state);
    if (state.empty()) return Status::invalidArgument("a sink task's state must not be empty");
    return env.positions->put(env.connector, {Position{statePartition(), state}});
  }
  Result<LocalFile> openLocalFile(const std::string& path, LocalPath access) override {
    return openConfined(loop_.taskEnv(), path, access);
  }
  Status seek(const OffsetMap& offsets) override { return loop_.input().seek(offsets); }
  Status pause(const std::vector<TopicQueue>& queues) override { return loop_.input().pause(queues, true); }
  Status resume(const std::vector<TopicQueue>& queues) override { return loop_.input().pause(queues, false); }

 private:
  StringMap statePartition() const { return {{"ferry.sink.task", std::to_string(loop_.taskEnv().taskId)}}; }
  TaskLoop& loop_;
};

// The connector class of `config` and one task of it (a source or a sink, as `make` creates).
template <typename Connector, typename Task, typename Make>
Status createTask(const StringMap& config, PluginPtr<Connector>& connector, std::unique_ptr<Task>& task, Make make) {
  const std::string cls = configValue(config, "connector.class");
  FERRY_ASSIGN_OR_RETURN(connector, make(cls));
  task = connector->createTask();
  if (!task) return Status::internal(cls + " created no task");
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Inputs

// A connector's source task (pull, or push with wake-ups: SourceTask::PollMode).
class SourceTaskInput final : public Input {
 public:
  SourceTaskInput(TaskLoop& loop, const StringMap& config, bool commitOnRequest)
      : loop_(loop), config_(config), context_(loop, commitOnRequest) {}

  Status create(const PluginRegistry& reg) {
    return createTask(config_, connector_, task_, [&](const std::string& cls) { return reg.createSourceConnector(cls); });
  }
  Status start() override {
    FERRY_RETURN_IF_ERROR(task_->start(config_, context_));
    started_ = true;
    notify_ = task_->pollMode() == SourceTask::PollMode::kNotify;
    return Status::ok();
  }
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t max, std::chrono::milliseconds wait) override {
    return task_->poll(out, max, wait);
  }
  bool notifies() const override { return notify_; }
  std::chrono::milliseconds idleDelay() const override {
    return std::clamp(task_->idlePollDelay(), std::chrono::milliseconds(1), kSourcePollWait);
  }
  void stopIntake() override {
    if (started_) guardedVoid("stop", [&] { task_->stop(); });
  }
  SourceTask* sourceTask() override { return task_.get(); }

 private:
  TaskLoop& loop_;
  const StringMap& config_;
  SourceContextImpl context_;
  PluginPtr<SourceConnector> connector_;
  std::unique_ptr<SourceTask> task_;
  bool started_ = false;
  bool notify_ = false;
};

class OffsetCommitter;

// The backbone, read by a sink task's consumer in group "connect-<connector>"; the converters turn
// what it holds into records (decode).
class BackboneInput final : public Input, private backbone::RebalanceListener {
 public:
  BackboneInput(TaskLoop& loop, TaskConverters converters, SchemaRegistry* schemas)
      : loop_(loop), converters_(std::move(converters)), schemas_(schemas) {}
  void attach(OffsetCommitter* committer, SinkTask* task) {
    committer_ = committer;
    task_ = task;
  }
  Status start() override;
  // SinkTaskContext::seek: applied before the next poll.
  Status seek(const OffsetMap& offsets) override {
    for (const auto& [q, offset] : offsets) {
      if (offset < 0) return Status::invalidArgument("cannot seek " + q.toString() + " to offset " + std::to_string(offset));
      seeks_[q] = offset;
    }
    return Status::ok();
  }
  // SinkTaskContext::pause/resume. The backbone consumers have no pause of their own: records of a
  // paused queue that a poll returns are dropped and the queue sought back to the first of them,
  // so they are read again once it is resumed. While every assigned queue is paused the consumer
  // is polled only every idleDelay() (it still serves rebalances).
  Status pause(const std::vector<TopicQueue>& queues, bool paused) override {
    for (const auto& q : queues) {
      if (paused) {
        paused_.insert(q);
      } else {
        paused_.erase(q);
      }
    }
    return Status::ok();
  }
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t max, std::chrono::milliseconds wait) override {
    messages_.clear();
    if (consumer_ && !seeks_.empty()) FERRY_RETURN_IF_ERROR(applySeeks());
    if (consumer_ && !paused_.empty()) {
      bool allPaused = true;
      for (const auto& q : consumer_->assignment()) allPaused = allPaused && paused_.count(q) > 0;
      const std::int64_t now = core::monotonicMs();
      if (allPaused && now - lastPausedPollMs_ < idleDelay().count()) return std::size_t{0};
      lastPausedPollMs_ = now;
    }
    FERRY_ASSIGN_OR_RETURN(auto n, loop_.taskEnv().backbone == nullptr
                                       ? Result<std::size_t>(Status::internal("no backbone"))
                                       : consumer_->poll(messages_, max, wait));
    (void)n;
    if (!paused_.empty()) FERRY_RETURN_IF_ERROR(dropPaused());
    out.reserve(out.size() + messages_.size());
    for (auto& m : messages_) {
      Record& r = out.emplace_back();
      r.topic = std::move(m.topic);
      r.queue = m.queue;
      r.offset = m.offset;
      r.timestampMs = m.timestampMs;
      r.key = std::move(m.key);
      r.value = std::move(m.value);
      r.headers = std::move(m.headers);
    }
    return messages_.size();
  }
  RetriedCall pollKind() const override { return RetriedCall::kBackboneRead; }
  // A consumer that wakes the loop (Consumer::setWaker) is polled without waiting, on the shared
  // threads (and again after idleDelay() without a wake-up: a safety net, and the pace of a
  // rebalance waiting for another member to hand a queue over); one that cannot keeps a thread
  // of its own waiting in poll().
  bool notifies() const override { return notify_; }
  bool decodes() const override { return true; }
  void afterPoll() override {
    if (auto skipped = consumer_->takeSkipped(); !skipped.empty()) loop_.noteSkipped(skipped);
  }
  Result<bool> decode(Record& r) override {
    auto& errors = loop_.errors();
    auto key = r.key.isNull() ? Result<SchemaAndBytes>(SchemaAndBytes())
                              : converters_.key->toRecordWithSchema(r.topic, r.key);
    // The value converter may read and set headers (a CloudEvent's attributes); it is not called
    // when the key failed, so the record is reported with the headers it came with.
    auto value = key.isOk() ? converters_.value->toRecordWithHeaders(r.topic, r.headers, r.value)
                            : Result<SchemaAndBytes>(SchemaAndBytes());
    if (!key.isOk() || !value.isOk()) {
      FERRY_RETURN_IF_ERROR(errors.report(key.isOk() ? "VALUE_CONVERTER" : "KEY_CONVERTER",
                                          key.isOk() ? value.status() : key.status(), r.topic, r.queue.value_or(-1),
                                          r.offset, r.key, r.value, r.headers));
      return false;
    }
    if (!r.headers.empty()) {
      Headers raw = r.headers;
      if (Status hs = convertHeaders(*converters_.header, HeaderDirection::kFromBackbone, r.topic, r.headers);
          !hs.isOk()) {
        FERRY_RETURN_IF_ERROR(
            errors.report("HEADER_CONVERTER", hs, r.topic, r.queue.value_or(-1), r.offset, r.key, r.value, raw));
        return false;
      }
    }
    r.key = std::move(key->data);
    r.keySchema = std::move(key->schema);
    r.value = std::move(value->data);
    r.valueSchema = std::move(value->schema);
    if (schemas_ && !r.headers.empty()) {
      // Schemas that travelled by id (runtime/schema_registry.h).
      for (const bool isKey : {false, true}) {
        if (!(isKey ? converters_.keySchemaById : converters_.valueSchemaById)) continue;
        const std::string header(isKey ? kKeySchemaHeader : kValueSchemaHeader);
        const Header* h = r.headers.last(header);
        if (h == nullptr) continue;
        Status s = schemaById(r, isKey, h->value.view());
        if (!s.isOk()) {
          FERRY_RETURN_IF_ERROR(errors.report(isKey ? "KEY_CONVERTER" : "VALUE_CONVERTER", s, r.topic,
                                              r.queue.value_or(-1), r.offset, r.key, r.value, r.headers));
          return false;
        }
        r.headers.remove(header);
      }
    }
    return true;
  }
  // Puts the schema of `id` on the record's key or value, its data checked against it. The last
  // id of each side is kept here: the records of one table name the same id, so the shared
  // registry is asked once per change, not per record.
  Status schemaById(Record& r, bool isKey, std::string_view id) {
    const std::string what = std::string(isKey ? "key" : "value") + " of topic '" + r.topic + "'";
    LastId& last = lastId_[isKey ? 1 : 0];
    if (!last.schema || last.id != id) {
      auto found = schemas_->schemaOf(id);
      if (!found.isOk()) return found.status().withContext("the " + what + " names its schema by id");
      last = {std::string(id), std::move(*found)};
    }
    const Schema& schema = *last.schema;
    Bytes& data = isKey ? r.key : r.value;
    if (data.isNull()) {
      if (!schema.optional() && !schema.defaultJson())
        return Status::invalidArgument("the " + what + " is null for a required " + schema.describe());
    } else {
      bool defaultsApply = false, json = true;
      Status st = transforms::checkPayloadText(schema, data.view(), defaultsApply, json);
      if (!st.isOk()) return st.withContext("the " + what + " does not match the schema its header names");
    }
    (isKey ? r.keySchema : r.valueSchema) = last.schema;
    return Status::ok();
  }
  void close() override {
    if (!consumer_) return;
    consumer_->close();  // its last rebalance callback may still commit through consumer()
    consumer_.reset();
  }
  backbone::Consumer* consumer() { return consumer_.get(); }

 private:
  Status applySeeks();
  Status dropPaused();
  void onRevoked(const std::vector<TopicQueue>& queues) override;
  void onAssigned(const std::vector<TopicQueue>& queues) override {
    Status s = guarded("open", [&] { return task_->open(queues); });
    if (!s.isOk()) loop_.fail(s);
  }

  TaskLoop& loop_;
  TaskConverters converters_;
  SchemaRegistry* schemas_ = nullptr;  // schemas by id (null: not read)
  struct LastId {
    std::string id;
    SchemaPtr schema;
  };
  LastId lastId_[2];  // [0] value, [1] key: the last id read on that side and its schema
  OffsetCommitter* committer_ = nullptr;
  SinkTask* task_ = nullptr;
  std::unique_ptr<backbone::Consumer> consumer_;
  std::vector<backbone::Message> messages_;
  bool notify_ = false;  // the consumer wakes the loop: polled without waiting
  OffsetMap seeks_;                    // asked by the task, applied before the next poll
  std::set<TopicQueue> paused_;        // asked by the task
  std::int64_t lastPausedPollMs_ = 0;  // the last poll while every assigned queue was paused
};

// ---------------------------------------------------------------------------------------------
// Outputs and committers

// A record after the transforms -> converters -> a backbone message. nullopt when it is dropped
// after a tolerated error (reported already).
class RecordEncoder {
 public:
  RecordEncoder(TaskConverters converters, ErrorReporter& errors, SchemaRegistry* schemas)
      : converters_(std::move(converters)), errors_(errors), schemas_(schemas) {}

  // `partition`: the record's source partition where a committer took its position (null: the
  // record's own).
  Result<std::optional<backbone::Message>> encode(Record& record, const StringMap* partition = nullptr) {
    using Out = std::optional<backbone::Message>;
    backbone::Message m;
    m.topic = record.topic;
    m.queue = record.queue.value_or(-1);
    auto key = record.key.isNull() && !record.keySchema
                   ? Result<Bytes>(Bytes())
                   : converters_.key->fromRecordWithSchema(record.topic, record.keySchema, record.key);
    // The value converter may add headers (a CloudEvent's attributes) to what is written.
    m.headers = record.headers;
    auto value = key.isOk() ? converters_.value->fromRecordWithHeaders(record.topic, m.headers, record.valueSchema,
                                                                       record.value)
                            : Result<Bytes>(Bytes());
    if (!key.isOk() || !value.isOk()) {
      FERRY_RETURN_IF_ERROR(errors_.report(key.isOk() ? "VALUE_CONVERTER" : "KEY_CONVERTER",
                                           key.isOk() ? value.status() : key.status(), record.topic, -1, -1,
                                           record.key, record.value, record.headers, record.keySchema,
                                           record.valueSchema));
      return Out();
    }
    m.key = std::move(*key);
    m.value = std::move(*value);
    if (schemas_) {
      // Schemas the converter does not carry travel by id (runtime/schema_registry.h).
      for (const bool isKey : {false, true}) {
        const SchemaPtr& schema = isKey ? record.keySchema : record.valueSchema;
        if (!schema || !(isKey ? converters_.keySchemaById : converters_.valueSchemaById)) continue;
        Cached& c = isKey ? keyId_ : valueId_;
        if (c.schema != schema) {
          auto id = schemas_->idOf(schema);
          if (!id.isOk()) {
            FERRY_RETURN_IF_ERROR(errors_.report(isKey ? "KEY_CONVERTER" : "VALUE_CONVERTER", id.status(),
                                                 record.topic, -1, -1, record.key, record.value, record.headers,
                                                 record.keySchema, record.valueSchema));
            return Out();
          }
          c = {schema, Bytes(std::move(*id))};
        }
        m.headers.set(std::string(isKey ? kKeySchemaHeader : kValueSchemaHeader), c.id);
      }
    }
    if (!m.headers.empty()) {
      if (Status hs = convertHeaders(*converters_.header, HeaderDirection::kToBackbone, record.topic, m.headers);
          !hs.isOk()) {
        FERRY_RETURN_IF_ERROR(
            errors_.report("HEADER_CONVERTER", hs, record.topic, -1, -1, record.key, record.value, record.headers,
                           record.keySchema, record.valueSchema));
        return Out();
      }
    }
    m.timestampMs = record.timestampMs;
    const StringMap& sourcePartition = partition ? *partition : record.position.partition;
    if (m.queue < 0 && m.key.isNull() && !sourcePartition.empty()) {
      // One source partition (a file, a datagen task) keeps its order: route it to one queue.
      if (sourcePartition != lastPartition_) {
        lastPartition_ = sourcePartition;
        lastHint_.clear();
        for (const auto& [k, v] : lastPartition_) lastHint_.append(k).append(1, '\0').append(v).append(1, '\0');
      }
      m.routingHint = lastHint_;
    }
    if (record.topic.empty()) {
      FERRY_RETURN_IF_ERROR(errors_.report("PRODUCER", Status::invalidArgument("record without a topic"), "", -1, -1,
                                           record.key, record.value, record.headers, record.keySchema,
                                           record.valueSchema));
      return Out();
    }
    return Out(std::move(m));
  }

 private:
  TaskConverters converters_;
  ErrorReporter& errors_;
  SchemaRegistry* schemas_ = nullptr;  // schemas by id (null: not written)
  struct Cached {
    SchemaPtr schema;  // the last schema seen on that side, and its id
    Bytes id;
  };
  Cached keyId_, valueId_;
  StringMap lastPartition_;  // cache of the routing hint of the last partition
  std::string lastHint_;
};

// A commit step refused retriably (a broker busy or gone for a moment): counted as a retry and
// logged; the caller keeps what was not written and writes it with the next commit, as Kafka
// Connect retries a failed offset commit. The task goes on. Not used for a task's final commit,
// whose failure is the stop's answer.
void retryAtNextCommit(TaskLoop& loop, std::string_view what, const Status& s) {
  loop.counters().retries.fetch_add(1, std::memory_order_relaxed);
  core::logger("runtime")->warn("{}-{}: {} failed ({}); trying again at the next commit", loop.taskEnv().connector,
                                loop.taskEnv().taskId, what, s.toString());
}

// Dead-letter sends are answered before the offsets of the records they stand for are committed
// (a skipped record is never lost). Sends still unanswered within offset.flush.timeout.ms, or a
// retriable failure, leave this commit for the next one - the records stay uncommitted, and a stop
// leaves them to be read again - as Kafka Connect does when its producer's flush times out at a
// commit; any other failure is the task's. False: do not commit now.
Result<bool> deadLettersAnswered(TaskLoop& loop) {
  Status s = loop.errors().flush(std::chrono::milliseconds(loop.taskEnv().worker->offsetFlushTimeoutMs));
  if (s.isOk()) return true;
  if (!s.isRetriable()) return s.withContext("dead-letter topic");
  if (loop.stopping())
    core::logger("runtime")->warn("{}-{}: dead-letter sends unanswered at stop ({}); what they cover is not committed "
                                  "(read again on the next start)",
                                  loop.taskEnv().connector, loop.taskEnv().taskId, s.toString());
  else
    retryAtNextCommit(loop, "waiting for dead-letter sends", s);
  return false;
}

// Source positions of records the backbone acknowledged, in poll order: a position becomes
// committable only when its record and every record taken in before it are safe. The producer's
// callbacks settle entries; the loop drains the safe prefix (commitRecord, positions) and commits
// positions every interval, after the backbone synced what they cover.
//
// No lock per record: the queue of pending entries belongs to the loop's thread, and a producer
// callback touches only the entry it settles, through a pointer (each entry lives on the heap, the
// queue holds pointers), writing the error and then publishing the state (the loop reads it with
// acquire). The loop pops an entry only after its state says settled, and resends one only after
// that, so no callback is left pointing at a popped entry. (A lock per record here cost a futex
// wake-up and wait per record against the backbone's acknowledging thread: ~10 % of a JdbcSource
// task thread's samples.) Entries are reused: a popped one goes to a free list (a deque of the
// entries themselves, each larger than a deque block, allocated and freed one per record).
class AckedPositions final : public Committer {
 public:
  struct Pending {
    Record record;  // slim: topic, position, acknowledger; queue and offset once the backbone took it
    std::size_t bytes = 0;
    std::atomic<int> state{0};  // 0 in flight, 1 safe, 2 failed; published by whoever settles it
    Status error;  // written before `state` by whoever settles the entry
    backbone::Message message;  // what was sent, kept for a resend after a retriable failure
    int attempts = 0;
    bool sent = false;
    int settledState() const { return state.load(std::memory_order_acquire); }
  };
  AckedPositions(TaskLoop& loop, SourceTask& task) : loop_(loop), task_(task) { inFlight_->loop = &loop; }
  void setProducer(backbone::Producer* producer) { producer_ = producer; }

  std::uint64_t takeIn(Record& record, std::size_t bytes) override {
    loop_.counters().commitLagRecords.fetch_add(1, std::memory_order_relaxed);
    const std::uint64_t seq = headSeq_ + pending_.size();
    std::unique_ptr<Pending> p;
    if (free_.empty()) {
      p = std::make_unique<Pending>();
    } else {
      p = std::move(free_.back());
      free_.pop_back();
    }
    // Slim (topic, position, acknowledger), the position moved: it is read only from here on.
    p->record.topic = record.topic;
    p->record.position = std::move(record.position);
    p->record.acknowledger = record.acknowledger;
    p->bytes = bytes;
    pending_.push_back(std::move(p));
    return seq;
  }
  // The source partition of the record taken in as `ticket`.
  const StringMap& partitionOf(std::uint64_t ticket) { return at(ticket).record.position.partition; }
  void dropped(std::uint64_t ticket) override { at(ticket).state.store(1, std::memory_order_relaxed); }
  // The output sends `ticket` as `m` (send(ticket) next): in flight until its callback settles it.
  void sending(std::uint64_t ticket, backbone::Message&& m) {
    Pending& p = at(ticket);
    p.sent = true;
    p.attempts = 1;
    p.message = std::move(m);
    auto& metrics = loop_.counters();
    metrics.inflightRecords.fetch_add(1, std::memory_order_relaxed);
    metrics.inflightBytes.fetch_add(static_cast<std::int64_t>(p.bytes), std::memory_order_relaxed);
  }
  // A producer callback (any thread): `p` stays in place until the loop sees it settled.
  void settled(Pending& p, const Status& st) {
    const int state = st.isOk() ? 1 : 2;
    if (!st.isOk()) p.error = st;
    p.state.store(state);  // seq_cst: see waitingForRoom()
    // Wake the loop only when it waits for room or sleeps idle: a wake per acknowledgement of a
    // busy loop is what made the hand-off cost a thread switch per record.
    if (waiting_.load() || loop_.idle()) loop_.wake();
  }
  bool hasSettled() override { return !pending_.empty() && pending_.front()->state.load() != 0; }

  Result<std::int64_t> collect() override {
    if (loop_.cancelled()) return TaskLoop::cancelledError();
    FERRY_RETURN_IF_ERROR(finishCommit());
    if (!loop_.stopping() && resendDue()) FERRY_RETURN_IF_ERROR(resend());
    FERRY_RETURN_IF_ERROR(drainSafe());
    return resendAt_ > 0 ? std::max<std::int64_t>(1, resendAt_ - core::monotonicMs()) : std::int64_t{0};
  }
  ~AckedPositions() override {
    std::lock_guard lock(inFlight_->mu);
    inFlight_->loop = nullptr;  // a store callback after this wakes no one
  }
  bool due(bool timerDue, bool requested, bool paused) override {
    (void)requested;
    (void)paused;
    return timerDue && !committing_;
  }
  // Starts the commit of the positions safe so far; the store writes them without holding the
  // loop's thread (PositionStore::putAsync), and collect() finishes the commit when they are
  // durable: only then the task hears commit(). One commit is in flight at a time.
  Status commit() override {
    if (uncommitted_ == 0 || committing_) return Status::ok();
    FERRY_ASSIGN_OR_RETURN(const bool answered, deadLettersAnswered(loop_));
    if (!answered) return Status::ok();
    // The records behind these positions reach the backbone's disk first, where an acknowledgement
    // did not already mean that (embedded fsync=interval): a position never runs ahead of them.
    if (producer_) FERRY_RETURN_IF_ERROR(producer_->sync().withContext("syncing the backbone before committing positions"));
    auto allowed = loop_.effect();
    if (!allowed) return TaskLoop::cancelledError();
    committing_ = uncommitted_;
    uncommitted_ = 0;
    {
      std::lock_guard lock(inFlight_->mu);
      inFlight_->done = false;
    }
    std::vector<Position> list = positions_.list();
    positions_ = PositionBuffer();
    writing_ = list;
    loop_.taskEnv().positions->putAsync(loop_.taskEnv().connector, std::move(list), [state = inFlight_](Status st) {
      std::lock_guard lock(state->mu);
      state->result = std::move(st);
      state->done = true;
      if (state->loop != nullptr) state->loop->wake();
    });
    return finishCommit();
  }
  bool waitingForRoom() override {
    const auto& w = *loop_.taskEnv().worker;
    auto& metrics = loop_.counters();
    const bool full = metrics.inflightRecords.load() >= w.taskMaxInflightRecords ||
                      metrics.inflightBytes.load() >= w.taskMaxInflightBytes;
    if (!full) {
      waiting_.store(false, std::memory_order_relaxed);
      return false;
    }
    // An acknowledgement may have landed before the flag was up (and woke no one): then the loop
    // must not sleep on it. Both sides are seq_cst (the flag's store here and the state's load;
    // the state's store in settled() and the flag's load), so one of them sees the other.
    waiting_.store(true);
    if (!pending_.empty() && pending_.front()->state.load() != 0) loop_.wake();
    return true;
  }
  std::optional<Status> finalCommit(bool healthy, bool lease) override {
    (void)healthy;  // what the backbone acknowledged is safe whatever made the task end
    if (!final_) {
      final_.emplace(drainSafe());
      // Positions only with the lease: a purged record's fate is unknown, and the safe prefix ends
      // before it anyway, but without the lease the position topic may be unreachable and the task
      // may already run elsewhere. The next owner reads everything after the last commit again.
      // Read again: the lease may have ended in the output's flush.
      finalWithLease_ = lease && loop_.mayCommit();
      if (!finalWithLease_ && uncommitted_ > 0)
        core::logger("runtime")->warn("{}-{}: stopped without the cluster lease: {} record(s) safe since the last "
                                      "commit were not committed (the next owner reads them again)",
                                      loop_.taskEnv().connector, loop_.taskEnv().taskId, uncommitted_);
    }
    if (!finalWithLease_) return *final_;
    // A commit under way is finished first; then what became safe since is committed.
    if (Status s = finishCommit(); !s.isOk()) return s;
    if (Status s = commit(); !s.isOk()) return s;
    if (committing_ > 0) return std::nullopt;
    return *final_;
  }
  void releaseAll() override {
    for (auto& p : pending_)
      if (p->record.acknowledger) p->record.acknowledger->release(false);
  }

 private:
  // Completes the commit in flight once the store has answered: its failure fails the task; else
  // the task hears commit(). OK and nothing done while the answer is still out.
  Status finishCommit() {
    if (committing_ == 0) return Status::ok();
    Status result;
    {
      std::lock_guard lock(inFlight_->mu);
      if (!inFlight_->done) return Status::ok();
      result = inFlight_->result;
    }
    const std::int64_t n = std::exchange(committing_, 0);
    if (result.isRetriable() && !final_) {
      // The positions go back in; the task hears commit() only once they are written. A worker
      // that lost its lease ends its tasks elsewhere (leaseValid), not here.
      positions_.keepOlder(writing_);
      uncommitted_ += n;
      retryAtNextCommit(loop_, "writing source positions", result);
      return Status::ok();
    }
    FERRY_RETURN_IF_ERROR(result.withContext("committing positions"));
    FERRY_RETURN_IF_ERROR(guarded("commit", [&] { return task_.commit(); }));
    auto& metrics = loop_.counters();
    metrics.commitLagRecords.fetch_sub(n, std::memory_order_relaxed);
    metrics.commits.fetch_add(1, std::memory_order_relaxed);
    metrics.lastCommitMs.store(core::nowMs(), std::memory_order_relaxed);
    return Status::ok();
  }

  Pending& at(std::uint64_t ticket) { return *pending_[ticket - headSeq_]; }

  bool resendDue() {
    if (resendAt_ > 0) return core::monotonicMs() >= resendAt_;
    int attempts = 0;
    bool any = false;
    for (const auto& p : pending_)
      if (p->settledState() == 2 && p->error.isRetriable()) {
        any = true;
        attempts = std::max(attempts, p->attempts);
      }
    if (!any) return false;
    // 100 ms doubling per attempt of the most-tried record, at most 6.4 s (or the retry delay max).
    resendAt_ = core::monotonicMs() +
                core::backoffDelay(core::RetryBudget::kInitialDelayMs,
                                   std::min<std::int64_t>(kResendDelayMaxMs, loop_.policy().retryDelayMaxMs),
                                   std::max(0, attempts - 1));
    return false;
  }

  // A send that failed with a retriable error (a timeout, a busy broker) is sent again, with
  // backoff, until it succeeds or the task stops: the backbone is where records must get to, as
  // a Kafka producer retries until delivery.timeout.
  Status resend() {
    resendAt_ = 0;
    std::vector<std::uint64_t> again;
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      Pending& p = *pending_[i];
      if (p.settledState() != 2 || !p.error.isRetriable()) continue;
      p.state.store(0, std::memory_order_relaxed);
      ++p.attempts;
      again.push_back(headSeq_ + i);
    }
    if (again.empty()) return Status::ok();
    loop_.counters().retries.fetch_add(again.size(), std::memory_order_relaxed);
    core::logger("runtime")->warn("{}-{}: resending {} record(s) after a retriable backbone error",
                                  loop_.taskEnv().connector, loop_.taskEnv().taskId, again.size());
    auto allowed = loop_.effect();
    if (!allowed) return TaskLoop::cancelledError();
    for (const std::uint64_t seq : again) send(seq);
    return Status::ok();
  }

 public:
  // Sends the message kept for `ticket` (sending()); its callback settles it.
  void send(std::uint64_t ticket) {
    Pending& p = at(ticket);
    Status s = producer_->sendFrom(p.message, [this, &p](const Status& st, std::int32_t queue, std::int64_t offset) {
      // Where the backbone put it, for commitRecord (written before settled() publishes the state).
      p.record.queue = queue;
      p.record.offset = offset;
      settled(p, st);
    });
    if (!s.isOk()) {
      p.error = s;
      p.state.store(2, std::memory_order_relaxed);
    }
  }

 private:
  // Moves the safe prefix into the position buffer (poll order), telling the task.
  Status drainSafe() {
    auto& metrics = loop_.counters();
    // The safe prefix ends at the first record in flight or waiting for a resend.
    while (!pending_.empty()) {
      Pending& p = *pending_.front();
      const int state = p.settledState();
      if (state == 0 || (state == 2 && p.error.isRetriable())) break;
      struct PopFront {  // whatever happens below, the entry is done with, and kept for reuse
        AckedPositions& self;
        ~PopFront() {
          std::unique_ptr<Pending> done = std::move(self.pending_.front());
          self.pending_.pop_front();
          ++self.headSeq_;
          if (self.free_.size() >= kFreeEntries) return;
          done->record = Record();
          done->message = backbone::Message();
          done->error = Status();
          done->state.store(0, std::memory_order_relaxed);
          done->attempts = 0;
          done->sent = false;
          self.free_.push_back(std::move(done));
        }
      } pop{*this};
      if (p.sent) {
        metrics.inflightRecords.fetch_sub(1, std::memory_order_relaxed);
        metrics.inflightBytes.fetch_sub(static_cast<std::int64_t>(p.bytes), std::memory_order_relaxed);
      }
      if (state == 2) {
        Status tolerated = loop_.errors().report("PRODUCER", p.error, p.record.topic, -1, -1, p.message.key,
                                                 p.message.value, p.message.headers);
        if (!tolerated.isOk()) return tolerated;
      } else if (p.sent) {
        metrics.recordsOut.fetch_add(1, std::memory_order_relaxed);
        metrics.bytesOut.fetch_add(p.bytes, std::memory_order_relaxed);
      }
      guardedVoid("commitRecord", [&] { task_.commitRecord(p.record); });
      positions_.add(std::move(p.record.position));
      ++uncommitted_;
    }
    return Status::ok();
  }

  TaskLoop& loop_;
  SourceTask& task_;
  backbone::Producer* producer_ = nullptr;
  static constexpr std::size_t kFreeEntries = 4096;
  std::deque<std::unique_ptr<Pending>> pending_;  // the loop's; poll order (callbacks settle entries in place)
  std::vector<std::unique_ptr<Pending>> free_;    // the loop's: popped entries, reused
  std::uint64_t headSeq_ = 0;                     // the loop's: ticket of pending_.front()
  std::atomic<bool> waiting_{false};  // the loop waits for room: acknowledgements wake it
  std::int64_t resendAt_ = 0;     // loop: when records refused with a retriable error are sent again
  PositionBuffer positions_;      // loop
  std::vector<Position> writing_;  // loop: the positions of the commit in flight
  std::int64_t uncommitted_ = 0;  // loop: records safe since the last commit
  std::int64_t committing_ = 0;   // loop: records of the commit in flight (0: none)
  std::optional<Status> final_;   // loop: finalCommit() began (what draining returned)
  bool finalWithLease_ = false;
  // The commit in flight, shared with the store's callback (which may outlive this committer).
  struct InFlight {
    std::mutex mu;
    bool done = true;
    Status result;
    TaskLoop* loop = nullptr;
  };
  std::shared_ptr<InFlight> inFlight_ = std::make_shared<InFlight>();
};

// The backbone producer (the worker's shared one, or the task's own): async sends, each settled
// in AckedPositions by its acknowledgement.
class ProducerOutput final : public Output {
 public:
  ProducerOutput(TaskLoop& loop, RecordEncoder encoder, AckedPositions& committer)
      : loop_(loop), encoder_(std::move(encoder)), committer_(committer) {}
  ~ProducerOutput() override {
    // The producer's callbacks refer to the committer: make sure none is outstanding.
    if (producer_) producer_->flush(std::chrono::milliseconds(loop_.taskEnv().worker->offsetFlushTimeoutMs)).isOk();
  }
  Status start() override {
    const auto& env = loop_.taskEnv();
    FERRY_ASSIGN_OR_RETURN(producer_, env.producers ? env.producers->view() : env.backbone->createProducer({}));
    committer_.setProducer(producer_.get());
    return Status::ok();
  }
  Status accept(Record&& record, std::uint64_t ticket) override {
    FERRY_ASSIGN_OR_RETURN(auto m, encoder_.encode(record, &committer_.partitionOf(ticket)));
    if (!m) {
      committer_.dropped(ticket);
      return Status::ok();
    }
    loop_.noteTopic(record.topic);
    auto allowed = loop_.effect();  // a cancelled task sends nothing
    if (!allowed) {
      if (record.acknowledger) record.acknowledger->release(false);
      return TaskLoop::cancelledError();
    }
    committer_.sending(ticket, std::move(*m));
    loop_.counters().latency.observeNs(core::monotonicNs() - record.receivedNs);  // handed over now
    committer_.send(ticket);
    return Status::ok();
  }
  void settle(bool workerLease) override {
    if (!producer_) return;
    // Without the worker's lease what the client still holds is dropped (the herder fenced the
    // worker's shared producer already; this covers a producer of the task's own). The flush then
    // only waits for the purged messages' callbacks. (A task assigned elsewhere while the worker
    // holds a lease again - thawed, rejoined - had its records purged when the lease ended; its
    // neighbours' records are left alone.)
    if (!workerLease) (void)producer_->purge();
    Status flushed = producer_->flush(std::chrono::milliseconds(loop_.taskEnv().worker->offsetFlushTimeoutMs));
    if (!flushed.isOk())
      core::logger("runtime")->warn("{}-{}: records still unacknowledged at stop: {}", loop_.taskEnv().connector,
                                    loop_.taskEnv().taskId, flushed.toString());
  }

 private:
  TaskLoop& loop_;
  RecordEncoder encoder_;
  AckedPositions& committer_;
  std::unique_ptr<backbone::Producer> producer_;
};

// Records held since the last commit (direct and exactly-once shapes): all become safe together,
// when the sink flushed or the transaction committed.
struct HeldRecords {
  std::vector<Record> records;  // slim: topic, position, acknowledger
  std::int64_t bytes = 0;
  std::uint64_t add(const Record& r, std::size_t b) {
    records.push_back(slimOf(r));
    bytes += static_cast<std::int64_t>(b);
    return records.size() - 1;
  }
  bool full(const WorkerConfig& w) const {
    return static_cast<std::int64_t>(records.size()) >= w.taskMaxInflightRecords || bytes >= w.taskMaxInflightBytes;
  }
  void releaseAll() {
    for (auto& r : records)
      if (r.acknowledger) r.acknowledger->release(false);
    records.clear();
    bytes = 0;
  }
};

// exactly.once.source.support=enabled (kafka backbone): records and the positions they reach are
// written in one backbone transaction, committed after every non-empty poll batch
// (transaction.boundary=poll) or every transaction.boundary.interval.ms (interval). Before the
// task starts, its producer (transactional.id ferry-<connector>-<task>) fences any zombie of the
// task, aborting what that left open, and the positions are read again, read_committed: the task
// resumes exactly after its last committed transaction. A failed commit aborts the transaction
// and fails the task; its restart resumes from the committed positions, so nothing is written
// twice as seen by read_committed readers. The output and the committer are one object: the
// transaction is both.
class Transaction final : public Output, public Committer {
 public:
  Transaction(TaskLoop& loop, RecordEncoder encoder, SourceTask& task) : loop_(loop), encoder_(std::move(encoder)), task_(task) {}
  ~Transaction() override { producer_.reset(); }  // aborts a transaction still open

  Status prepare(bool intervalBoundary, std::int64_t intervalMs) {
    const auto& env = loop_.taskEnv();
    store_ = dynamic_cast<LogPositionStore*>(env.positions);
    if (store_ == nullptr || env.backbone == nullptr)
      return Status::failedPrecondition("exactly-once sources keep positions in offset.storage.topic (worker store missing)");
    intervalBoundary_ = intervalBoundary;
    intervalMs_ = intervalMs;
    commitTimeout_ = std::chrono::milliseconds(std::max<std::int64_t>(30000, env.worker->offsetFlushTimeoutMs));
    const std::string txnId = "ferry-" + env.connector + "-" + std::to_string(env.taskId);
    const std::int64_t t0 = core::monotonicMs();
    FERRY_ASSIGN_OR_RETURN(producer_, env.backbone->createTransactionalProducer(txnId, {}));
    const std::int64_t t1 = core::monotonicMs();
    FERRY_RETURN_IF_ERROR(store_->reload());  // after the fencing: the last committed positions
    core::logger("runtime")->info("{}-{}: exactly-once start: zombies fenced in {} ms, positions read in {} ms",
                                  env.connector, env.taskId, t1 - t0, core::monotonicMs() - t1);
    return Status::ok();
  }

  // Output
  Status accept(Record&& record, std::uint64_t ticket) override {
    (void)ticket;
    FERRY_ASSIGN_OR_RETURN(auto m, encoder_.encode(record));
    if (!m) return Status::ok();
    loop_.noteTopic(record.topic);
    auto allowed = loop_.effect();  // a cancelled task sends nothing
    if (!allowed) return TaskLoop::cancelledError();
    FERRY_RETURN_IF_ERROR(begin());
    FERRY_RETURN_IF_ERROR(producer_->send(std::move(*m), nullptr).withContext("sending to the backbone"));
    ++sentInTxn_;
    sentBytes_ += lastBytes_;
    auto& metrics = loop_.counters();
    metrics.latency.observeNs(core::monotonicNs() - record.receivedNs);
    metrics.inflightRecords.fetch_add(1, std::memory_order_relaxed);
    metrics.inflightBytes.fetch_add(static_cast<std::int64_t>(lastBytes_), std::memory_order_relaxed);
    return Status::ok();
  }

  // Committer
  std::uint64_t takeIn(Record& record, std::size_t bytes) override {
    loop_.counters().commitLagRecords.fetch_add(1, std::memory_order_relaxed);
    lastBytes_ = bytes;
    // The interval runs from the first record held (a dropped one too: its position goes into the
    // transaction, which commit() opens if no record was sent).
    if (held_.records.empty()) txnDeadline_ = core::monotonicMs() + intervalMs_;
    return held_.add(record, bytes);
  }
  bool due(bool timerDue, bool requested, bool paused) override {
    (void)timerDue;
    (void)requested;
    if (held_.records.empty()) return false;
    const bool intervalDue = intervalBoundary_ && core::monotonicMs() >= txnDeadline_;
    return intervalDue || held_.full(*loop_.taskEnv().worker) || paused;
  }
  Status afterBatch() override {
    return !intervalBoundary_ && !held_.records.empty() ? commit() : Status::ok();
  }
  // Positions of the held records into the transaction, then commit; only then the task hears
  // that its records are safe.
  Status commit() override {
    if (held_.records.empty()) return Status::ok();
    FERRY_ASSIGN_OR_RETURN(const bool answered, deadLettersAnswered(loop_));
    if (!answered) return Status::ok();
    FERRY_RETURN_IF_ERROR(begin());
    PositionBuffer buffer;
    for (const auto& r : held_.records) buffer.add(r.position);
    std::vector<Position> positions = buffer.list();
    {
      auto allowed = loop_.effect();  // a cancelled task commits nothing: its transaction is aborted
      if (!allowed) return TaskLoop::cancelledError();
      for (auto& m : store_->encode(loop_.taskEnv().connector, positions))
        FERRY_RETURN_IF_ERROR(producer_->send(std::move(m), nullptr).withContext("writing positions"));
      Status committed = producer_->commitTransaction(commitTimeout_);
      inTxn_ = false;
      if (!committed.isOk()) return committed.withContext("exactly-once source: the transaction was not committed");
      store_->applyCommitted(loop_.taskEnv().connector, positions);
    }
    for (auto& r : held_.records) guardedVoid("commitRecord", [&] { task_.commitRecord(r); });
    FERRY_RETURN_IF_ERROR(guarded("commit", [&] { return task_.commit(); }));
    auto& metrics = loop_.counters();
    metrics.recordsOut.fetch_add(sentInTxn_, std::memory_order_relaxed);
    metrics.bytesOut.fetch_add(sentBytes_, std::memory_order_relaxed);
    metrics.inflightRecords.fetch_sub(static_cast<std::int64_t>(sentInTxn_), std::memory_order_relaxed);
    metrics.inflightBytes.fetch_sub(static_cast<std::int64_t>(sentBytes_), std::memory_order_relaxed);
    metrics.commitLagRecords.fetch_sub(static_cast<std::int64_t>(held_.records.size()), std::memory_order_relaxed);
    metrics.commits.fetch_add(1, std::memory_order_relaxed);
    metrics.lastCommitMs.store(core::nowMs(), std::memory_order_relaxed);
    held_.records.clear();
    held_.bytes = 0;
    sentInTxn_ = 0;
    sentBytes_ = 0;
    return Status::ok();
  }
  std::optional<Status> finalCommit(bool healthy, bool lease) override {
    Status committed = healthy && lease ? commit() : Status::ok();
    if (!lease) {
      // No lease: nothing more is sent, not even an abort to a broker that may be gone (the
      // successor's fencing aborts the open transaction, or its transaction.timeout.ms does).
      (void)producer_->purge();
      inTxn_ = false;
    } else if (inTxn_) {
      (void)producer_->abortTransaction(commitTimeout_);
      inTxn_ = false;
    }
    return committed;
  }
  void releaseAll() override { held_.releaseAll(); }

 private:
  Status begin() {
    if (inTxn_) return Status::ok();
    FERRY_RETURN_IF_ERROR(producer_->beginTransaction());
    inTxn_ = true;
    return Status::ok();
  }

  TaskLoop& loop_;
  RecordEncoder encoder_;
  SourceTask& task_;
  LogPositionStore* store_ = nullptr;
  std::unique_ptr<backbone::TransactionalProducer> producer_;
  bool intervalBoundary_ = false;
  std::int64_t intervalMs_ = 1000;
  std::chrono::milliseconds commitTimeout_{30000};
  bool inTxn_ = false;
  std::int64_t txnDeadline_ = 0;
  HeldRecords held_;
  std::uint64_t sentInTxn_ = 0;
  std::size_t sentBytes_ = 0;
  std::size_t lastBytes_ = 0;  // of the record last taken in
};

// A connector's sink task: put() per polled batch, retried by the loop (the batch is kept).
class SinkTaskOutput final : public Output {
 public:
  SinkTaskOutput(TaskLoop& loop, StringMap config, RetriedCall putKind)
      : loop_(loop), config_(std::move(config)), putKind_(putKind), context_(loop) {}
  Status create(const PluginRegistry& reg) {
    return createTask(config_, connector_, task_, [&](const std::string& cls) { return reg.createSinkConnector(cls); });
  }
  Status start() override {
    FERRY_RETURN_IF_ERROR(task_->start(config_, context_));
    started_ = true;
    return Status::ok();
  }
  Status accept(Record&& record, std::uint64_t ticket) override {
    (void)ticket;
    record.acknowledger.reset();  // the runtime acknowledges after the sink flushed
    if (!record.topic.empty()) loop_.noteTopic(record.topic);
    batchBytes_ += record.sizeBytes();
    received_.push_back(record.receivedNs);  // kept aside: put() may change the records
    batch_.push_back(std::move(record));
    return Status::ok();
  }
  bool hasBatch() const override { return !batch_.empty(); }
  RetriedCall putKind() const override { return putKind_; }
  bool ready() override {
    bool ready = true;
    guardedVoid("readyForPut", [&] { ready = task_->readyForPut(); });
    return ready;
  }
  Status put() override {
    const std::size_t n = batch_.size();
    FERRY_RETURN_IF_ERROR(task_->put(batch_));
    auto& metrics = loop_.counters();
    metrics.recordsOut.fetch_add(n, std::memory_order_relaxed);
    metrics.bytesOut.fetch_add(batchBytes_, std::memory_order_relaxed);
    const std::int64_t now = core::monotonicNs();
    for (std::int64_t rx : received_) metrics.latency.observeNs(now - rx);
    received_.clear();
    batch_.clear();
    batchBytes_ = 0;
    return Status::ok();
  }
  void close() override {
    if (started_) guardedVoid("stop", [&] { task_->stop(); });
  }
  SinkTask& task() { return *task_; }

 private:
  TaskLoop& loop_;
  StringMap config_;
  RetriedCall putKind_;
  SinkContextImpl context_;
  PluginPtr<SinkConnector> connector_;
  std::unique_ptr<SinkTask> task_;
  bool started_ = false;
  std::vector<Record> batch_;
  std::vector<std::int64_t> received_;  // Record::receivedNs of batch_
  std::size_t batchBytes_ = 0;
};

// A sink's asynchronous flush (SinkTask::flushAsync) as a committer waits for it: started on the
// task's thread, answered from any thread (the answer kept and the loop woken), collected on the
// task's thread. An answer after the committer is gone (a task abandoned at its stop timeout)
// wakes no one. At most one is outstanding (the committers start the next after collecting).
class AsyncFlush {
 public:
  explicit AsyncFlush(TaskLoop& loop) : answer_(std::make_shared<Answer>()) {
    answer_->wake = [&loop] { loop.wake(); };
  }
  ~AsyncFlush() {
    std::lock_guard lock(answer_->mu);
    answer_->wake = nullptr;
  }
  AsyncFlush(const AsyncFlush&) = delete;
  AsyncFlush& operator=(const AsyncFlush&) = delete;
  // Starts one: false when the sink flushes synchronously only. An exception from the sink is
  // the error.
  Result<bool> start(SinkTask& sink) {
    std::weak_ptr<Answer> weak = answer_;
    bool started = false;
    Status threw = guarded("flush", [&] {
      started = sink.flushAsync([weak](Status s) {
        auto a = weak.lock();
        if (!a) return;
        std::function<void()> wake;
        {
          std::lock_guard lock(a->mu);
          a->result = std::move(s);
          wake = a->wake;
        }
        a->cv.notify_all();
        if (wake) wake();
      });
      return Status::ok();
    });
    FERRY_RETURN_IF_ERROR(threw.withContext("sink flush"));
    return started;
  }
  // The answer, once it came (nullopt before).
  std::optional<Status> take() {
    std::lock_guard lock(answer_->mu);
    return std::exchange(answer_->result, std::nullopt);
  }
  // The answer, waiting for it up to `timeout` (nullopt when it did not come).
  std::optional<Status> waitFor(std::chrono::milliseconds timeout) {
    std::unique_lock lock(answer_->mu);
    answer_->cv.wait_for(lock, timeout, [&] { return answer_->result.has_value(); });
    return std::exchange(answer_->result, std::nullopt);
  }

 private:
  struct Answer {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Status> result;  // not yet collected
    std::function<void()> wake;    // cleared when the committer goes
  };
  std::shared_ptr<Answer> answer_;
};

// Direct: the sink is flushed, then (only then) the source hears its records are safe and their
// positions are committed. Every interval, when the task asks, or when the held records reach the
// in-flight bound. A sink that flushes asynchronously (SinkTask::flushAsync) is flushed while the
// task goes on taking records in: the records held when the flush started become safe when it
// answers (collect(), on the task's thread), the ones taken in meanwhile wait for the next flush.
// A sink that cannot is flushed with flush(), and intake waits for it.
class FlushedPositions final : public Committer {
 public:
  FlushedPositions(TaskLoop& loop, SourceTask& source, SinkTask& sink)
      : loop_(loop), source_(source), sink_(sink), flush_(loop) {}
  std::uint64_t takeIn(Record& record, std::size_t bytes) override {
    loop_.counters().commitLagRecords.fetch_add(1, std::memory_order_relaxed);
    const auto t = held_.add(record, bytes);
    publishInflight();
    return t;
  }
  bool due(bool timerDue, bool requested, bool paused) override {
    (void)paused;
    if (flushing_) {  // one flush at a time; collect() finishes it
      requestedMeanwhile_ = requestedMeanwhile_ || requested;  // the next one starts as soon as it can
      return false;
    }
    const bool asked = std::exchange(requestedMeanwhile_, false) || requested;
    return timerDue || asked || held_.full(*loop_.taskEnv().worker);
  }
  // Intake waits while both the held records and those being flushed are at the bound.
  bool waitingForRoom() override { return flushing_ && held_.full(*loop_.taskEnv().worker); }
  Result<std::int64_t> collect() override {
    if (!flushing_) return std::int64_t{0};
    std::optional<Status> result = flush_.take();
    if (!result) return std::int64_t{0};
    flushing_ = false;
    if (result->isRetriable()) {
      // The sink kept sends to try again (a busy broker, a lost connection): flush() does, and
      // covers what was put since too.
      core::logger("runtime")->info("{}-{}: the sink's asynchronous flush answered '{}'; flushing again with flush()",
                                    loop_.taskEnv().connector, loop_.taskEnv().taskId, result->toString());
      *result = guarded("flush", [&] { return sink_.flush(); });
      loop_.counters().retries.fetch_add(1, std::memory_order_relaxed);
    }
    FERRY_RETURN_IF_ERROR(result->withContext("sink flush"));
    if (loop_.cancelled()) return TaskLoop::cancelledError();  // the flush answered after the stop timed out
    FERRY_RETURN_IF_ERROR(complete(inFlush_));
    return std::int64_t{0};
  }
  Status commit() override {
    if (flushing_) return Status::ok();
    if (held_.records.empty()) return positions_.empty() ? Status::ok() : complete(held_);  // an earlier write failed
    if (loop_.cancelled()) return TaskLoop::cancelledError();
    FERRY_ASSIGN_OR_RETURN(const bool answered, deadLettersAnswered(loop_));
    if (!answered) return Status::ok();
    if (async_) {
      inFlush_ = std::move(held_);
      held_ = HeldRecords{};
      FERRY_ASSIGN_OR_RETURN(const bool started, flush_.start(sink_));
      if (started) {
        flushing_ = true;
        return Status::ok();
      }
      async_ = false;  // the sink flushes synchronously only: from now on, flush()
      held_ = std::move(inFlush_);
      inFlush_ = HeldRecords{};
    }
    FERRY_RETURN_IF_ERROR(guarded("flush", [&] { return sink_.flush(); }).withContext("sink flush"));
    if (loop_.cancelled()) return TaskLoop::cancelledError();  // the flush returned after the stop timed out
    return complete(held_);
  }
  // An asynchronous flush under way is waited for first (nullopt meanwhile: the loop asks again
  // when it answers). Without the lease the sink is not flushed and no position committed: the
  // next owner reads again what this one polled since its last commit; nor is an answer waited
  // for (a broker that went away may never give it, and the worker must stop within its margin).
  std::optional<Status> finalCommit(bool healthy, bool lease) override {
    if (!(healthy && lease)) return Status::ok();
    final_ = true;  // a failed position write is now the stop's answer, not retried
    if (flushing_) {
      auto c = collect();
      if (!c.isOk()) return c.status();
      if (flushing_) return std::nullopt;
    }
    Status s = commit();
    if (s.isOk() && flushing_) return std::nullopt;  // started one: its answer completes the stop
    return s;
  }
  void releaseAll() override {
    inFlush_.releaseAll();
    held_.releaseAll();
  }

 private:
  // The sink made `h` durable: the source hears it, and its positions are committed.
  Status complete(HeldRecords& h) {
    for (auto& r : h.records) {
      guardedVoid("commitRecord", [&] { source_.commitRecord(r); });
      positions_.add(r.position);
    }
    const auto& env = loop_.taskEnv();
    bool written = true;
    if (env.positions) {
      auto allowed = loop_.effect();
      if (!allowed) return TaskLoop::cancelledError();
      Status s = positions_.commit(*env.positions, env.connector);
      if (s.isRetriable() && !final_) {
        // Kept (positions_ still holds them); the source hears commit() once they are written.
        written = false;
        retryAtNextCommit(loop_, "writing source positions", s);
      } else {
        FERRY_RETURN_IF_ERROR(s.withContext("committing positions"));
      }
    }
    if (written) FERRY_RETURN_IF_ERROR(guarded("commit", [&] { return source_.commit(); }));
    auto& metrics = loop_.counters();
    metrics.commitLagRecords.fetch_sub(static_cast<std::int64_t>(h.records.size()), std::memory_order_relaxed);
    h.records.clear();
    h.bytes = 0;
    publishInflight();
    metrics.commits.fetch_add(1, std::memory_order_relaxed);
    metrics.lastCommitMs.store(core::nowMs(), std::memory_order_relaxed);
    return Status::ok();
  }
  void publishInflight() {
    auto& metrics = loop_.counters();
    metrics.inflightRecords.store(static_cast<std::int64_t>(held_.records.size() + inFlush_.records.size()),
                                  std::memory_order_relaxed);
    metrics.inflightBytes.store(held_.bytes + inFlush_.bytes, std::memory_order_relaxed);
  }

  TaskLoop& loop_;
  SourceTask& source_;
  SinkTask& sink_;
  HeldRecords held_;     // taken in since the last flush started
  HeldRecords inFlush_;  // covered by the asynchronous flush under way
  PositionBuffer positions_;  // flushed, not yet written to the position store (a retriable failure)
  bool requestedMeanwhile_ = false;  // the source asked for a commit while a flush was under way
  bool final_ = false;               // finalCommit() began
  bool async_ = true;    // until the sink says it cannot flush asynchronously
  bool flushing_ = false;
  AsyncFlush flush_;
};

// Sink: the sink is flushed and the offsets it made safe are committed to the consumer group. A
// sink that flushes asynchronously (SinkTask::flushAsync) is flushed while the task goes on
// taking records in, as a direct task's: the offsets current when the flush started are committed
// when it answers (collect(), on the task's thread). One that cannot: preCommit (the default
// flushes and returns the offsets given), and intake waits for it.
class OffsetCommitter final : public Committer {
 public:
  OffsetCommitter(TaskLoop& loop, BackboneInput& input, SinkTask& task)
      : loop_(loop), input_(input), task_(task), flush_(loop) {}
  std::uint64_t takeIn(Record& r, std::size_t bytes) override {
    (void)bytes;
    current_[TopicQueue{r.topic, r.queue.value_or(-1)}] = r.offset + 1;
    ++uncommitted_;
    loop_.counters().commitLagRecords.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  bool due(bool timerDue, bool requested, bool paused) override {
    (void)paused;
    if (flushing_) {  // one flush at a time; collect() finishes it and starts the next if asked
      requestedMeanwhile_ = requestedMeanwhile_ || requested;
      return false;
    }
    return timerDue || std::exchange(requestedMeanwhile_, false) || requested;
  }
  Result<std::int64_t> collect() override {
    if (!flushing_) return std::int64_t{0};
    std::optional<Status> result = flush_.take();
    if (!result) return std::int64_t{0};
    FERRY_RETURN_IF_ERROR(finishFlush(std::move(*result)));
    return std::int64_t{0};
  }
  Status commit() override {
    if (flushing_) return Status::ok();
    if (async_ && uncommitted_ > 0 && input_.consumer() != nullptr) {
      if (loop_.cancelled()) return TaskLoop::cancelledError();
      FERRY_ASSIGN_OR_RETURN(const bool answered, deadLettersAnswered(loop_));
      if (!answered) return Status::ok();
      FERRY_ASSIGN_OR_RETURN(const bool started, flush_.start(task_));
      if (started) {
        flushing_ = true;
        inFlush_ = current_;
        inFlushCount_ = uncommitted_;
        return Status::ok();
      }
      async_ = false;  // the sink flushes synchronously only: preCommit from now on
    }
    return commitOffsets(current_, true);
  }
  // A flush under way is waited for first (nullopt meanwhile: the loop asks again when it
  // answers). A failed task commits nothing more: offsets past the failing record were taken in
  // but not put (or put but not flushed); the restarted task must read them again. Nor without
  // the lease (and no answer is waited for then: the worker must stop within its margin).
  std::optional<Status> finalCommit(bool healthy, bool lease) override {
    if (!(healthy && lease && !loop_.failing())) return Status::ok();
    if (flushing_) {
      auto c = collect();
      if (!c.isOk()) return c.status();
      if (flushing_) return std::nullopt;
    }
    return commitOffsets(current_);
  }
  void releaseAll() override {}

  // The task sought `q` to `offset` (SinkTaskContext::seek): the next commit commits it, not
  // what was read before (a flush under way included).
  void sought(const TopicQueue& q, std::int64_t offset) {
    current_[q] = offset;
    if (auto it = inFlush_.find(q); it != inFlush_.end()) it->second = std::min(it->second, offset);
    sought_ = true;
  }

  // preCommit (flushes the sink) and commits what it returns to the backbone group. With
  // `retryLater` a sink that cannot flush for now (a retriable error: its outside system away for
  // a moment) or a commit the backbone refuses retriably is logged and made again at the next
  // commit (the offsets stay uncommitted), as Kafka Connect's sink tasks do; the task goes on.
  // The final commit at the stop returns the failure.
  Status commitOffsets(const OffsetMap& offsets, bool retryLater = false) {
    if (offsets.empty() || (uncommitted_ == 0 && !sought_) || input_.consumer() == nullptr) return Status::ok();
    if (loop_.cancelled()) return TaskLoop::cancelledError();
    FERRY_ASSIGN_OR_RETURN(const bool answered, deadLettersAnswered(loop_));
    if (!answered) return Status::ok();
    auto safe = guarded("preCommit", [&]() -> Result<OffsetMap> { return task_.preCommit(offsets); });
    if (!safe.isOk() && retryLater && safe.status().isRetriable()) {
      retryAtNextCommit(loop_, "flushing the sink", safe.status());  // the offsets stay uncommitted
      return Status::ok();
    }
    if (!safe.isOk()) return safe.status().withContext("flush");
    return commitSafe(*safe, uncommitted_, retryLater);
  }
  // Queues taken away in a rebalance: commit what was read from them, then tell the task. A
  // flush under way is waited for first (the sink has at most one; bounded by
  // offset.flush.timeout.ms), so that the synchronous one below may follow it.
  void revoked(const std::vector<TopicQueue>& queues) {
    if (flushing_) {
      std::optional<Status> result =
          flush_.waitFor(std::chrono::milliseconds(loop_.taskEnv().worker->offsetFlushTimeoutMs));
      if (!result) {
        loop_.fail(Status::timeout("a rebalance waited for the sink's flush longer than offset.flush.timeout.ms"));
      } else if (Status s = finishFlush(std::move(*result)); !s.isOk()) {
        loop_.fail(s);
      }
    }
    if (loop_.failing() || !loop_.mayCommit()) {  // failing, or no lease: commit nothing, just tell the task
      for (const auto& q : queues) current_.erase(q);
      guarded("close", [&] { return task_.close(queues); }).isOk();
      return;
    }
    OffsetMap revoked;
    for (const auto& q : queues)
      if (auto it = current_.find(q); it != current_.end()) revoked.insert(*it);
    if (!revoked.empty()) {
      // Not committed retriably: the queues' next owner reads those records again (duplicates only).
      Status s = commitOffsets(revoked, true);
      if (!s.isOk()) loop_.fail(s);
    }
    for (const auto& q : queues) current_.erase(q);
    Status s = guarded("close", [&] { return task_.close(queues); });
    if (!s.isOk()) loop_.fail(s);
  }

 private:
  // The asynchronous flush answered: what it covered is committed (a retriable answer: flushed
  // again with preCommit, which covers what was put since too).
  Status finishFlush(Status result) {
    flushing_ = false;
    if (result.isRetriable()) {
      core::logger("runtime")->info("{}-{}: the sink's asynchronous flush answered '{}'; flushing again with preCommit",
                                    loop_.taskEnv().connector, loop_.taskEnv().taskId, result.toString());
      loop_.counters().retries.fetch_add(1, std::memory_order_relaxed);
      return commitOffsets(current_, true);
    }
    FERRY_RETURN_IF_ERROR(result.withContext("sink flush"));
    if (loop_.cancelled()) return TaskLoop::cancelledError();
    // Queues revoked meanwhile were committed (and forgotten) by revoked().
    OffsetMap covered;
    for (const auto& [q, o] : inFlush_)
      if (current_.count(q) != 0) covered.emplace(q, o);
    const std::int64_t count = std::min(inFlushCount_, uncommitted_);
    inFlush_.clear();
    inFlushCount_ = 0;
    return commitSafe(covered, count, true);
  }

  // Commits `safe` (offsets the sink made safe, covering `count` records taken in).
  Status commitSafe(const OffsetMap& safe, std::int64_t count, bool retryLater) {
    if (!safe.empty()) {
      auto allowed = loop_.effect();  // a flush that returns after the task was cancelled commits nothing
      if (!allowed) return TaskLoop::cancelledError();
      Status c = input_.consumer()->commit(safe);
      if (retryLater && c.isRetriable()) {
        retryAtNextCommit(loop_, "committing offsets", c);  // they stay uncommitted
        return Status::ok();
      }
      FERRY_RETURN_IF_ERROR(c.withContext("committing offsets"));
    }
    auto& metrics = loop_.counters();
    metrics.commitLagRecords.fetch_sub(count, std::memory_order_relaxed);
    uncommitted_ -= count;
    sought_ = false;
    metrics.commits.fetch_add(1, std::memory_order_relaxed);
    metrics.lastCommitMs.store(core::nowMs(), std::memory_order_relaxed);
    return Status::ok();
  }

  TaskLoop& loop_;
  BackboneInput& input_;
  SinkTask& task_;
  OffsetMap current_;  // next offsets after every record taken in
  std::int64_t uncommitted_ = 0;
  OffsetMap inFlush_;              // current_ when the asynchronous flush under way started
  std::int64_t inFlushCount_ = 0;  // uncommitted_ then
  bool requestedMeanwhile_ = false;
  bool async_ = true;  // until the sink says it cannot flush asynchronously
  bool flushing_ = false;
  bool sought_ = false;  // a seek to commit even without records taken in since
  AsyncFlush flush_;
};

Status BackboneInput::start() {
  const auto& env = loop_.taskEnv();
  FERRY_ASSIGN_OR_RETURN(consumer_, env.backbone->createConsumer("connect-" + env.connector,
                                                                  env.connector + "-" + std::to_string(env.taskId), {}));
  notify_ = consumer_->setWaker([this] { loop_.wake(); });
  auto topics = configList(env.config, "topics");
  if (topics.empty() && !configValue(env.config, "topics.regex").empty()) {
    // Kafka Connect's topics.regex: the topics that exist now and match (validated at create).
    // A topic made later is picked up when the task restarts.
    FERRY_ASSIGN_OR_RETURN(auto all, env.backbone->admin().listTopics());
    try {
      const std::regex re(configValue(env.config, "topics.regex"));
      for (const auto& t : all)
        if (std::regex_match(t.name, re)) topics.push_back(t.name);
    } catch (const std::regex_error& e) {
      return Status::invalidArgument(std::string("topics.regex: ") + e.what());
    }
  }
  for (const auto& t : topics) {
    FERRY_RETURN_IF_ERROR(env.backbone->admin().ensureTopic(t, env.worker->defaultQueues));
    loop_.noteTopic(t);
  }
  return consumer_->subscribe(topics, this);
}

void BackboneInput::onRevoked(const std::vector<TopicQueue>& queues) {
  for (const auto& q : queues) {  // as Kafka: a queue assigned again starts unpaused
    paused_.erase(q);
    seeks_.erase(q);
  }
  committer_->revoked(queues);
}

Status BackboneInput::applySeeks() {
  const auto assigned = consumer_->assignment();
  OffsetMap seeks;
  seeks.swap(seeks_);
  for (const auto& [q, offset] : seeks) {
    if (std::find(assigned.begin(), assigned.end(), q) == assigned.end()) continue;  // not (or no longer) ours
    FERRY_RETURN_IF_ERROR(consumer_->seek(q, offset).withContext("seeking " + q.toString() + " as the sink task asked"));
    committer_->sought(q, offset);
  }
  return Status::ok();
}

Status BackboneInput::dropPaused() {
  OffsetMap first;  // per paused queue, the first record dropped (in poll order): read again once resumed
  std::erase_if(messages_, [&](const backbone::Message& m) {
    TopicQueue q{m.topic, m.queue};
    if (paused_.count(q) == 0) return false;
    first.emplace(std::move(q), m.offset);
    return true;
  });
  for (const auto& [q, offset] : first)
    FERRY_RETURN_IF_ERROR(consumer_->seek(q, offset).withContext("holding back paused " + q.toString()));
  return Status::ok();
}

// A task that cannot run as configured: it fails at once with the reason.
class FailingRunner final : public TaskRunner {
 public:
  FailingRunner(TaskEnv env, Status why) : TaskRunner(std::move(env)), why_(std::move(why)) {}
  ~FailingRunner() override { join(); }

 private:
  Step step() override { return Step::done(why_); }
  Status why_;
};

// ---------------------------------------------------------------------------------------------
// The loop

Status TaskLoop::setUp() {
  const auto& reg = *env_.registry;
  const auto& w = *env_.worker;
  interval_ = w.offsetFlushIntervalMs;
  FERRY_ASSIGN_OR_RETURN(chain_, TransformChain::build(reg, env_.config));
  errors_ = std::make_unique<ErrorReporter>(env_, metrics_);
  startRetry_.emplace("start", RetriedCall::kStart, env_, policy(), metrics_);
  switch (env_.shape) {
    case ConnectorShape::kSource: {
      auto in = std::make_unique<SourceTaskInput>(*this, env_.config, /*commitOnRequest=*/false);
      FERRY_RETURN_IF_ERROR(in->create(reg));
      FERRY_ASSIGN_OR_RETURN(auto converters, makeTaskConverters(reg, w, env_.config));
      SourceTask& task = *in->sourceTask();
      input_ = std::move(in);
      if (w.exactlyOnceSource) {
        auto txn = std::make_unique<Transaction>(*this, RecordEncoder(std::move(converters), *errors_, env_.schemas), task);
        const std::string iv = configValue(env_.config, "transaction.boundary.interval.ms");
        const std::int64_t ivMs = iv.empty() || std::stoll(iv) < 0 ? w.offsetFlushIntervalMs : std::stoll(iv);
        FERRY_RETURN_IF_ERROR(txn->prepare(configValue(env_.config, "transaction.boundary") == "interval", ivMs));
        output_ = txn.get();
        committer_.reset(txn.release());
      } else {
        auto acked = std::make_unique<AckedPositions>(*this, task);
        ownedOutput_ = std::make_unique<ProducerOutput>(*this, RecordEncoder(std::move(converters), *errors_, env_.schemas), *acked);
        output_ = ownedOutput_.get();
        committer_ = std::move(acked);
      }
      break;
    }
    case ConnectorShape::kSink: {
      FERRY_ASSIGN_OR_RETURN(auto converters, makeTaskConverters(reg, w, env_.config));
      auto in = std::make_unique<BackboneInput>(*this, std::move(converters), env_.schemas);
      auto out = std::make_unique<SinkTaskOutput>(*this, env_.config, RetriedCall::kSinkPut);
      FERRY_RETURN_IF_ERROR(out->create(reg));
      auto offsets = std::make_unique<OffsetCommitter>(*this, *in, out->task());
      in->attach(offsets.get(), &out->task());
      input_ = std::move(in);
      output_ = out.get();
      ownedOutput_ = std::move(out);
      committer_ = std::move(offsets);
      break;
    }
    case ConnectorShape::kDirect: {
      auto in = std::make_unique<SourceTaskInput>(*this, env_.config, /*commitOnRequest=*/true);
      FERRY_RETURN_IF_ERROR(in->create(reg));
      auto out = std::make_unique<SinkTaskOutput>(*this, sinkSideConfig(env_.config), RetriedCall::kDirectPut);
      FERRY_RETURN_IF_ERROR(out->create(reg));
      committer_ = std::make_unique<FlushedPositions>(*this, *in->sourceTask(), out->task());
      input_ = std::move(in);
      output_ = out.get();
      ownedOutput_ = std::move(out);
      break;
    }
  }
  pollRetry_.emplace("poll", input_->pollKind(), env_, policy(), metrics_);
  putRetry_.emplace("put", output_->putKind(), env_, policy(), metrics_);
  batch_.reserve(static_cast<std::size_t>(w.taskPollBatch));
  return Status::ok();
}

TaskRunner::Step TaskLoop::step() {
  const std::int64_t now = core::monotonicMs();
  switch (phase_) {
    case Phase::kSetUp: {
      Status s = setUp();
      if (!s.isOk()) return Step::done(s);
      phase_ = Phase::kStartOutput;
      return Step::again();
    }
    case Phase::kStartOutput:
    case Phase::kStartInput: {
      // The output starts first (a direct task's sink is ready before its source produces; a
      // sink task is started before its consumer joins the group).
      if (now < resumeAt_ && !stopping()) return Step::sleepUntil(resumeAt_);
      const bool output = phase_ == Phase::kStartOutput;
      Status s = guarded("start", [&] { return output ? output_->start() : input_->start(); });
      if (s.isOk()) {
        startRetry_->reset();
        if (output) {
          phase_ = Phase::kStartInput;
        } else {
          phase_ = Phase::kRunning;
          nextCommit_ = core::monotonicMs() + interval_;
        }
        return Step::again();
      }
      // Retriable failures are retried within errors.retry.timeout (0, the default: not at all,
      // so the status says why at once; the worker's automatic restart takes over from there).
      if (!s.isRetriable() || stopping() || policy().retryTimeoutMs == 0) return finish(s);
      inferConnection(s);
      auto delay = startRetry_->retryOrFail(s);
      if (!delay.isOk()) return finish(delay.status());
      resumeAt_ = now + *delay;
      return Step::sleepUntil(resumeAt_);
    }
    case Phase::kRunning: return running(now);
    case Phase::kStopping: return closing(now);
  }
  return Step::done(Status::internal("unknown task phase"));
}

Status TaskLoop::commitNow() {
  ActivityScope activity("commit");
  FERRY_RETURN_IF_ERROR(committer_->commit());
  nextCommit_ = core::monotonicMs() + interval_;
  return Status::ok();
}

TaskRunner::Step TaskLoop::running(std::int64_t now) {
  idle_.store(false, std::memory_order_relaxed);
  if (stopping()) {
    // A batch still waiting for its put is put once more: what was taken in is either put (and
    // then committed below) or the task fails and commits nothing of it.
    if (output_->hasBatch()) {
      Status s = guarded("put", [&] { return output_->put(); });
      if (!s.isOk()) return finish(s.withContext("put (stopping)"));
    }
    return finish(Status::ok());
  }
  if (!leaseHeld()) return Step::sleepUntil(now + 50);  // distributed mode: not while the lease is in doubt
  if (failing()) return finish(failure_);
  if (reconnected_.exchange(false, std::memory_order_acq_rel)) {
    // The task's client is connected again: a failed call is retried now, not after its back-off,
    // and a flush that failed meanwhile (a sink's) is tried again now, not at the next interval.
    if (resumeAt_ > now) resumeAt_ = now;
    pollRetry_->reset();
    putRetry_->reset();
    commitRequested_.store(true);
  }
  // A batch waiting for its put's retry comes first: nothing may be committed while records taken
  // in are not put (a commit now would flush the sink and store positions past them).
  if (output_->hasBatch()) return putBatch(now);
  auto collected = [&] {
    ActivityScope activity("collect acknowledgements");
    return committer_->collect();
  }();
  if (!collected.isOk()) return finish(collected.status());
  resendBy_ = *collected > 0 ? now + *collected : INT64_MAX;
  const bool timerDue = now >= nextCommit_;
  if (committer_->due(timerDue, commitRequested_.exchange(false), paused())) {
    if (Status s = commitNow(); !s.isOk()) return finish(s);
  } else if (timerDue) {
    nextCommit_ = now + interval_;
  }
  if (paused()) {
    reportState(State::kPaused);
    return sleep(now + 100);
  }
  reportState(State::kRunning);
  if (committer_->waitingForRoom()) return sleep(now + 50);
  if (now < resumeAt_) return sleep(resumeAt_);
  // The sink cannot take a batch without waiting: no intake until it wakes the loop.
  if (!output_->ready()) return sleep(now + kOutputReadyRecheckMs);

  const auto& w = *env_.worker;
  batch_.clear();
  const bool notify = input_->notifies();
  auto polled = guarded("poll", [&]() -> Result<std::size_t> {
    return input_->poll(batch_, static_cast<std::size_t>(w.taskPollBatch),
                        notify ? std::chrono::milliseconds(0) : kSourcePollWait);
  });
  if (!polled.isOk()) {
    inferConnection(polled.status());
    auto delay = pollRetry_->retryOrFail(polled.status());
    if (!delay.isOk()) return finish(delay.status());
    resumeAt_ = core::monotonicMs() + *delay;
    return sleep(resumeAt_);
  }
  pollRetry_->reset();
  inferConnection(Status::ok());
  input_->afterPoll();
  if (failing()) return finish(failure_);
  if (batch_.empty()) {
    // A notifying input is asked again when it wakes the task, or after its idle delay. While it
    // sleeps, an acknowledgement wakes it (AckedPositions::settled): what waits for its records to
    // be safe (a webhook's answer, a broker's PUBACK) does not wait for the idle delay too. One
    // that landed before the flag was up is seen here (both sides seq_cst).
    if (notify) {
      idle_.store(true);
      if (committer_->hasSettled()) {
        idle_.store(false);
        return Step::again();
      }
      return sleep(core::monotonicMs() + input_->idleDelay().count());
    }
    return Step::again();
  }
  if (!leaseHeld()) return finish(leaseLost(batch_));
  ActivityScope takeIn("take in (decode, transforms, output)");
  const bool decodes = input_->decodes();
  const std::int64_t polledAt = core::monotonicNs();  // for records whose input did not stamp them
  for (std::size_t i = 0; i < batch_.size(); ++i) {
    // The lease read per record (a clock read): a worker frozen in the middle of a batch
    // (SIGSTOP) must not hand the rest of it on once it thaws.
    if (!workerLeaseHeld()) {
      batch_.erase(batch_.begin(), batch_.begin() + static_cast<std::ptrdiff_t>(i));
      return finish(leaseLost(batch_));
    }
    Record& r = batch_[i];
    const std::size_t bytes = r.sizeBytes();
    metrics_.recordsIn.fetch_add(1, std::memory_order_relaxed);
    metrics_.bytesIn.fetch_add(bytes, std::memory_order_relaxed);
    if (r.timestampMs == 0) r.timestampMs = core::nowMs();
    if (r.receivedNs == 0) r.receivedNs = polledAt;
    const std::uint64_t ticket = committer_->takeIn(r, bytes);
    // A failing transform reports the bytes as read (what a dead-letter topic must hold), as
    // Kafka Connect does: kept before decoding (shared buffers, no copy).
    const Bytes readKey = decodes ? r.key : Bytes();
    const Bytes readValue = decodes ? r.value : Bytes();
    auto decoded = input_->decode(r);
    if (!decoded.isOk()) return finish(decoded.status());
    if (!*decoded) {
      committer_->dropped(ticket);
      continue;
    }
    if (!chain_->empty()) {
      auto kept = chain_->apply(r);
      if (!kept.isOk()) {
        Status reported = errors_->report("TRANSFORMATION", kept.status(), r.topic, r.queue.value_or(-1), r.offset,
                                          decodes ? readKey : r.key, decodes ? readValue : r.value, r.headers,
                                          decodes ? nullptr : r.keySchema, decodes ? nullptr : r.valueSchema);
        if (!reported.isOk()) return finish(reported);
        committer_->dropped(ticket);
        continue;
      }
      if (!*kept) {
        metrics_.recordsDropped.fetch_add(1, std::memory_order_relaxed);
        committer_->dropped(ticket);
        continue;
      }
    }
    if (env_.tap) env_.tap->offer(env_.taskId, r);  // one relaxed load unless a tap is open
    if (Status s = output_->accept(std::move(r), ticket); !s.isOk()) return finish(s);
  }
  batch_.clear();
  if (output_->hasBatch()) {
    Step put = putBatch(core::monotonicMs());
    if (put.kind != Step::Kind::kAgain) return put;
  }
  if (Status s = committer_->afterBatch(); !s.isOk()) return finish(s);
  return Step::again();
}

// put() with retries: retriable errors are retried as the output's rule says (a sink task: until
// they pass or the task stops, Kafka Connect's RetriableException semantics; a direct task: within
// errors.retry.timeout); other errors fail the task.
TaskRunner::Step TaskLoop::putBatch(std::int64_t now) {
  // Not woken by the commit timer: no commit may run before this put passed.
  if (now < resumeAt_) return Step::sleepUntil(resumeAt_);
  Status s = guarded("put", [&] { return output_->put(); });
  inferConnection(s);
  if (s.isOk()) {
    putRetry_->reset();
    return Step::again();
  }
  auto delay = putRetry_->retryOrFail(s);
  if (!delay.isOk()) return finish(delay.status());
  resumeAt_ = core::monotonicMs() + *delay;
  return Step::sleepUntil(resumeAt_);
}

TaskRunner::Step TaskLoop::finish(Status result) {
  if (!result.isOk()) fail(result);
  result_ = std::move(result);
  if (!(input_ && committer_ && output_)) return Step::done(result_);
  // Read once: a worker without its lease (cut off, or frozen while another worker took the
  // task) sends nothing more for it, and never waits for a broker that may be gone.
  finalLease_ = mayCommit();
  // Stop the intake first: a push source stops its client, so nothing new arrives.
  input_->stopIntake();
  output_->settle(workerLeaseHeld());
  phase_ = Phase::kStopping;
  stopDeadline_ = core::monotonicMs() + env_.worker->offsetFlushTimeoutMs;
  return closing(core::monotonicMs());
}

// The final commit, a step at a time while the store answers; then the seams close.
TaskRunner::Step TaskLoop::closing(std::int64_t now) {
  std::optional<Status> closing = committer_->finalCommit(result_.isOk(), finalLease_);
  if (!closing) {
    if (now < stopDeadline_) return Step::sleepUntil(stopDeadline_);
    closing = Status::timeout(
        "committing at stop: the sink's flush or the store did not answer within offset.flush.timeout.ms");
  }
  committer_->releaseAll();
  input_->close();
  output_->close();
  return Step::done(result_.isOk() ? *closing : result_);
}

}  // namespace

Result<TaskConverters> makeTaskConverters(const PluginRegistry& registry, const WorkerConfig& worker,
                                          const StringMap& connectorConfig) {
  TaskConverters c;
  struct Side {
    const char* role;
    const std::string& workerClass;
    const StringMap& workerConfig;
    PluginPtr<Converter>& out;
  };
  for (const Side& side : {Side{"key", worker.keyConverter, worker.keyConverterConfig, c.key},
                           Side{"value", worker.valueConverter, worker.valueConverterConfig, c.value},
                           Side{"header", worker.headerConverter, worker.headerConverterConfig, c.header}}) {
    const std::string key = std::string(side.role) + ".converter";
    std::string cls = get(connectorConfig, key);
    StringMap cfg;
    if (cls.empty()) {
      cls = side.workerClass;
      cfg = side.workerConfig;
    } else {
      cfg = withPrefix(connectorConfig, key + ".");
    }
    cfg["converter.type"] = side.role;  // Kafka Connect's convention; the runtime's word wins
    auto conv = registry.createConverter(cls);
    if (!conv.isOk()) return conv.status().withContext(key);
    FERRY_RETURN_IF_ERROR((*conv)->configure(cfg, std::string_view(side.role) == "key").withContext(key));
    if (auto* json = dynamic_cast<transforms::JsonConverter*>(conv->get()); json && !json->schemasEnabled()) {
      if (std::string_view(side.role) == "key") c.keySchemaById = true;
      if (std::string_view(side.role) == "value") c.valueSchemaById = true;
    }
    side.out = std::move(*conv);
  }
  return c;
}

Status convertHeaders(Converter& converter, HeaderDirection direction, const std::string& topic, Headers& headers) {
  // Copy-on-first-change: identity converters return the same buffer, so nothing is rebuilt.
  std::optional<Headers> changed;
  const auto& items = headers.items();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Header& h = items[i];
    auto out = direction == HeaderDirection::kToBackbone ? converter.fromRecord(topic, h.value)
                                                          : converter.toRecord(topic, h.value);
    if (!out.isOk()) return out.status().withContext("header '" + h.key + "'");
    if (!changed && out->buffer() == h.value.buffer()) continue;
    if (!changed) {
      changed.emplace();
      for (std::size_t j = 0; j < i; ++j) changed->add(items[j].key, items[j].value);
    }
    changed->add(h.key, std::move(*out));
  }
  if (changed) headers = std::move(*changed);
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<TaskRunner> TaskRunner::create(TaskEnv env) {
  // The stored task config holds provider references; the task resolves them here, on the worker
  // that runs it, and keeps the resolved secrets out of what it reports.
  const StringMap raw = env.config;
  if (env.worker != nullptr && env.worker->configProviders) {
    auto resolved = env.worker->configProviders->resolve(env.config);
    if (!resolved.isOk()) return std::unique_ptr<TaskRunner>(new FailingRunner(std::move(env), resolved.status()));
    env.config = std::move(*resolved);
  }
  if (env.registry != nullptr) {
    const SecretKeys keys = secretKeysOf(*env.registry, env.config);
    env.secrets = secretValues(env.config, keys);
    for (auto& v : secretValues(raw, keys)) env.secrets.push_back(std::move(v));
    std::sort(env.secrets.begin(), env.secrets.end(), [](const auto& a, const auto& b) {
      return a.size() != b.size() ? a.size() > b.size() : a < b;
    });
  }
  switch (env.shape) {
    case ConnectorShape::kSource:
      if (env.worker != nullptr && env.worker->exactlyOnceSource)
        return std::unique_ptr<TaskRunner>(new TaskLoop(std::move(env)));
      if (configValue(env.config, "exactly.once.support") == "required")
        return std::unique_ptr<TaskRunner>(new FailingRunner(std::move(env), Status::failedPrecondition(
            "exactly.once.support=required, but the worker has exactly.once.source.support=disabled")));
      return std::unique_ptr<TaskRunner>(new TaskLoop(std::move(env)));
    case ConnectorShape::kSink:
    case ConnectorShape::kDirect: return std::unique_ptr<TaskRunner>(new TaskLoop(std::move(env)));
  }
  return nullptr;
}

Status TaskRunner::leaseLost(std::vector<Record>& batch) {
  for (auto& r : batch)
    if (r.acknowledger) r.acknowledger->release(false);
  const std::size_t n = batch.size();
  batch.clear();
  return leaseEnded("while polling; " + std::to_string(n) +
                    " polled record(s) were not sent and will be read again from the committed positions");
}

Status TaskRunner::leaseEnded(const std::string& what) {
  // The worker still holds its lease: the task was taken from it on purpose - its connector was
  // stopped, deleted, reconfigured or moved. A normal end, not a failure.
  if (env_.leaseValid ? env_.leaseValid() : stopping()) {
    withdrawn_.store(true);
    return Status::cancelled("the task is no longer assigned to this worker (its connector was stopped, deleted, "
                             "reconfigured or moved) " + what);
  }
  return Status::unavailable("this worker lost its lease (or the task) " + what);
}

TaskRunner::~TaskRunner() {
  // Subclasses join in their destructors (their members are gone by the time this runs).
  join();
}

void TaskRunner::joinThread() {
  std::thread t;
  {
    std::lock_guard lock(waitMu_);
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();  // the thread has left its loop: this returns at once
}

void TaskRunner::start() {
  startedAtMs_ = core::monotonicMs();
  started_.store(true);
  if (env_.executor != nullptr) {
    // Under waitMu_: a first step that moves to its own thread waits for the handle to be set.
    std::lock_guard lock(waitMu_);
    job_ = env_.executor->submit([this] { return runStep(); }, env_.connector + "-" + std::to_string(env_.taskId),
                                 &activity_);
    return;
  }
  std::lock_guard lock(waitMu_);
  startOwnThread();
}

void TaskRunner::startOwnThread() {
  thread_ = core::namedThread("task-own", [this] { drive(); });  // a task on a thread of its own
}

TaskRunner::Step TaskRunner::safeStep() {
  try {
    return step();
  } catch (const std::exception& e) {
    return Step::done(Status::internal(std::string("task threw: ") + e.what()));
  } catch (...) {
    return Step::done(Status::internal("task threw a non-standard exception"));
  }
}

StepResult TaskRunner::runStep() {
  tActivity = &activity_;
  Step next = safeStep();
  tActivity = nullptr;
  switch (next.kind) {
    case Step::Kind::kDone:
      finish(std::move(next.result));
      markFinished();  // the runner may be gone from here on
      return StepResult::done();
    case Step::Kind::kAgain:
    case Step::Kind::kSleep: break;
  }
  if (wantsOwnThread()) {
    // From here on the task's own thread runs the steps; this job ends (wakes go to the thread).
    std::lock_guard lock(waitMu_);
    job_.reset();
    woken_ = true;  // its first step runs at once
    startOwnThread();
    return StepResult::done();
  }
  if (next.kind == Step::Kind::kAgain) return StepResult::again();
  // A stop asked during the step is not lost: the executor runs a woken job again.
  return StepResult::sleepUntil(std::chrono::steady_clock::time_point(std::chrono::milliseconds(next.untilMs)));
}

void TaskRunner::drive() {
  tActivity = &activity_;
  while (true) {
    Step next = safeStep();
    if (next.kind == Step::Kind::kDone) {
      finish(std::move(next.result));
      break;
    }
    // requestStop() and setPaused() wake the loop like any other wake().
    std::unique_lock lock(waitMu_);
    if (next.kind == Step::Kind::kSleep && !woken_) {
      const auto now = core::monotonicMs();
      if (next.untilMs > now)
        waitCv_.wait_for(lock, std::chrono::milliseconds(next.untilMs - now), [&] { return woken_; });
    }
    woken_ = false;
  }
  tActivity = nullptr;
  markFinished();
}

void TaskRunner::markFinished() {
  {
    std::lock_guard lock(doneMu_);
    finished_.store(true);
  }
  doneCv_.notify_all();
}

bool TaskRunner::waitFinished(std::chrono::milliseconds timeout) {
  std::unique_lock lock(doneMu_);
  if (timeout.count() < 0) {
    doneCv_.wait(lock, [&] { return finished_.load(); });
    return true;
  }
  return doneCv_.wait_for(lock, timeout, [&] { return finished_.load(); });
}

void TaskRunner::finish(Status s) {
  if (cancelled()) {
    // Abandoned after a stop timeout: whatever it returned has no effect (the worker may even
    // run a new instance of it by now).
    core::logger("runtime")->warn("abandoned task {}-{} returned at last ({}); its result is discarded",
                                  env_.connector, env_.taskId, s.isOk() ? "OK" : scrubSecrets(s.toString(), env_.secrets));
  } else if (!s.isOk() && withdrawn_.load()) {
    // Stopped, deleted, reconfigured or moved while the task was running: logged, not reported
    // as a failure (the status belongs to whoever runs the task now). Marked failed so that a
    // herder still holding the unit restarts it.
    core::logger("runtime")->info("task {}-{} ended: {}", env_.connector, env_.taskId,
                                  scrubSecrets(s.message(), env_.secrets));
    if (!stopping()) failed_.store(true);
  } else if (!s.isOk() && !(stopping() && s.code() == StatusCode::kCancelled)) {
    const std::string why = scrubSecrets(s.toString(), env_.secrets);
    core::logger("runtime")->error("task {}-{} failed: {}", env_.connector, env_.taskId, why);
    failed_.store(true);
    reportState(State::kFailed, why);
  }
}

void TaskRunner::wake() {
  {
    std::lock_guard lock(waitMu_);
    if (job_) {
      Executor::wake(job_);
      return;
    }
    woken_ = true;
  }
  waitCv_.notify_one();
}

void TaskRunner::setPaused(bool p) {
  paused_.store(p);
  wake();
}

void TaskRunner::requestStop() {
  stop_.store(true);
  wake();
}

void TaskRunner::join() {
  if (!started_.load()) return;
  requestStop();
  waitFinished(std::chrono::milliseconds(-1));
  joinThread();
}

bool TaskRunner::join(std::chrono::milliseconds timeout) {
  if (!started_.load()) return true;
  requestStop();
  if (!waitFinished(std::max(timeout, std::chrono::milliseconds(0)))) return false;
  joinThread();
  return true;
}

bool TaskRunner::cancel(std::chrono::milliseconds effectWait) {
  cancelled_.store(true);
  requestStop();
  // An effect that checked the flag before it was set may still be under way: wait for it, so
  // none is once this returns.
  std::unique_lock lock(effectMu_, std::defer_lock);
  return lock.try_lock_for(effectWait);
}

void TaskRunner::reportState(State s, const std::string& trace) {
  if (s == lastState_ && s != State::kFailed) return;
  auto allowed = effect();  // a cancelled task reports nothing
  if (!allowed) return;
  lastState_ = s;
  if (env_.onState) env_.onState(s, trace);
}

void TaskRunner::noteSkipped(const std::vector<backbone::StorageIssue>& skipped) {
  std::uint64_t lost = 0;
  std::string ranges;
  for (const auto& i : skipped) {
    if (i.firstOffset < 0 || i.lastOffset < i.firstOffset) continue;
    const auto n = static_cast<std::uint64_t>(i.lastOffset - i.firstOffset + 1);
    lost += n;
    core::logger("runtime")->error("task {}-{}: {} record(s) of {}-{} (offsets {}..{}) cannot be read, the backbone "
                                   "lost them ({}: {}); continuing after them",
                                   env_.connector, env_.taskId, n, i.topic, i.queue, i.firstOffset, i.lastOffset,
                                   i.kind, i.detail);
    if (!ranges.empty()) ranges += ", ";
    ranges += i.topic + "-" + std::to_string(i.queue) + " " + std::to_string(i.firstOffset) + ".." +
              std::to_string(i.lastOffset) + " (" + i.kind + ")";
  }
  if (lost == 0) return;
  const std::uint64_t total = metrics_.recordsLostInStorage.fetch_add(lost, std::memory_order_relaxed) + lost;
  std::lock_guard lock(noteMu_);
  dataLossNote_ = std::to_string(total) + " record(s) could not be read because the backbone's storage lost them; "
                  "latest: " + ranges + " (see the worker log)";
}

std::string TaskRunner::dataLossNote() const {
  std::lock_guard lock(noteMu_);
  return dataLossNote_;
}

void TaskRunner::noteTopic(const std::string& topic) {
  if (topics_.count(topic)) return;
  auto allowed = effect();
  if (!allowed) return;
  topics_.insert(topic);
  if (env_.onTopic) env_.onTopic(topic);
}

void TaskMetrics::setProgress(const TaskProgress& p, std::int64_t nowMs) {
  std::lock_guard lock(progressMu_);
  if (!progress_ || p.done < progressDoneAt_) {  // the first report, or new work began
    progress_ = Progress{p, 0};
    progressAtMs_ = nowMs;
    progressDoneAt_ = p.done;
    return;
  }
  progress_->report = p;
  // The rate over at least a second, smoothed so one slow batch does not swing it.
  const std::int64_t elapsed = nowMs - progressAtMs_;
  if (elapsed >= 1000) {
    const double rate = static_cast<double>(p.done - progressDoneAt_) * 1000.0 / static_cast<double>(elapsed);
    progress_->ratePerSecond = progress_->ratePerSecond == 0 ? rate : 0.5 * progress_->ratePerSecond + 0.5 * rate;
    progressAtMs_ = nowMs;
    progressDoneAt_ = p.done;
  }
}

std::optional<TaskMetrics::Progress> TaskMetrics::progress() const {
  std::lock_guard lock(progressMu_);
  return progress_;
}

bool TaskMetrics::setConnection(const ConnectionHealth& h, bool fromTask, std::int64_t wallMs) {
  if (fromTask) {
    reportedByTask_.store(true, std::memory_order_relaxed);
  } else if (reportedByTask_.load(std::memory_order_relaxed)) {
    return false;
  }
  const int state = static_cast<int>(h.state);
  // The common case, a call that passed while connected: nothing to do.
  if (h.state == ConnectionHealth::State::kConnected && connectionState_.load(std::memory_order_acquire) == state)
    return false;
  std::lock_guard lock(connectionMu_);
  const bool had = connection_.has_value();
  const auto before = had ? connection_->state : ConnectionHealth::State::kConnected;
  if (!had) connection_ = Connection{};
  Connection& c = *connection_;
  if (had && before == h.state && c.reason == h.reason) return false;
  if (h.state == ConnectionHealth::State::kReconnecting && before != ConnectionHealth::State::kReconnecting) {
    ++c.reconnects;
    std::erase_if(reconnectedAt_, [&](std::int64_t t) { return wallMs - t >= kDegradedWindowMs; });
    reconnectedAt_.push_back(wallMs);
  }
  if (!had || before != h.state) c.sinceMs = wallMs;
  c.state = h.state;
  c.reason = h.state == ConnectionHealth::State::kConnected ? std::string() : h.reason;
  if (!c.reason.empty()) lastError_ = c.reason;
  connectionState_.store(state, std::memory_order_release);
  return had && before != ConnectionHealth::State::kConnected && h.state == ConnectionHealth::State::kConnected;
}

std::optional<TaskMetrics::Connection> TaskMetrics::connection(std::int64_t wallMs) const {
  std::lock_guard lock(connectionMu_);
  if (!connection_) return std::nullopt;
  Connection c = *connection_;
  std::size_t recent = 0;
  for (std::int64_t t : reconnectedAt_)
    if (wallMs - t < kDegradedWindowMs) ++recent;
  if (recent >= kReconnectsForDegraded && c.state == ConnectionHealth::State::kConnected) {
    c.state = ConnectionHealth::State::kDegraded;
    c.reason = "the connection was lost " + std::to_string(recent) + " times in the last minute; last error: " +
               lastError_;
  }
  return c;
}

}  // namespace ferry::runtime
