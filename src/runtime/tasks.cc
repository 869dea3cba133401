// Task executors (see tasks.h).
#include "runtime/tasks.h"

#include <algorithm>
#include <regex>
#include <chrono>
#include <deque>
#include <exception>
#include <map>
#include <optional>

#include "core/backoff.h"
#include "core/clock.h"
#include "core/logging.h"
#include "runtime/config_util.h"
#include "runtime/local_files.h"
#include "runtime/log_position_store.h"
#include "runtime/secrets.h"
#include "runtime/transform_chain.h"

namespace ferry::runtime {
namespace {

using namespace std::chrono_literals;
// How long a poll may wait for data. Only idle tasks wait it out; at thousands of idle tasks per
// worker it sets the wake-ups per second, and it bounds how long a stop waits for a poll.
constexpr std::chrono::milliseconds kSourcePollWait = 500ms;
// The longest wait before records the backbone refused with a retriable error are sent again.
constexpr std::int64_t kResendDelayMaxMs = 6400;
using store::State;

std::string get(const StringMap& m, const std::string& k) { return configValue(m, k); }
StringMap withPrefix(const StringMap& m, const std::string& prefix) { return configWithPrefix(m, prefix); }
std::vector<std::string> listOf(const StringMap& m, const std::string& key) { return configList(m, key); }

// errors.tolerance, retries and the dead-letter topic of one task.
class ErrorReporter {
 public:
  ErrorReporter(const TaskEnv& env, TaskMetrics& metrics)
      : env_(env), metrics_(metrics), policy_(parseErrorPolicy(env.config)), log_(core::logger("runtime")) {}

  const ErrorPolicy& policy() const { return policy_; }

  // A record failed at `stage`. OK when tolerated (logged, dead-lettered); the error otherwise.
  Status report(const std::string& stage, const Status& reason, const std::string& topic, std::int32_t queue,
                std::int64_t offset, const Bytes& key, const Bytes& value, const Headers& headers) {
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
//  sink put    until it passes or the task stops whatever the key says (Kafka Connect's put).
// Every shape (source, exactly-once source, sink, direct) uses these through CallRetrier.
enum class RetriedCall { kStart, kPoll, kDirectPut, kSinkPut };

std::int64_t retryTimeoutFor(RetriedCall call, const ErrorPolicy& policy) {
  switch (call) {
    case RetriedCall::kStart: return policy.retryTimeoutMs;
    case RetriedCall::kPoll:
    case RetriedCall::kDirectPut: return policy.retryTimeoutMs == 0 ? -1 : policy.retryTimeoutMs;
    case RetriedCall::kSinkPut: return -1;
  }
  return policy.retryTimeoutMs;
}

// Retries of one kind of call in one task (core::RetryBudget: 100 ms doubling up to
// errors.retry.delay.max.ms): each retry is logged at warn and counted in ferry_task_retries_total;
// a failure past the budget fails the task with a trace naming errors.retry.timeout.
class CallRetrier {
 public:
  CallRetrier(const char* call, RetriedCall kind, const TaskEnv& env, const ErrorPolicy& policy, TaskMetrics& metrics,
              std::function<void(std::int64_t)> wait)
      : call_(call),
        configuredMs_(policy.retryTimeoutMs),
        budget_(retryTimeoutFor(kind, policy), policy.retryDelayMaxMs),
        env_(env),
        metrics_(metrics),
        wait_(std::move(wait)) {}

  // After a failed call: OK when the caller should call again (the delay has been waited, or cut
  // short by a stop or a pause), else the error to fail the task with.
  Status retryOrFail(const Status& s) {
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
    wait_(*delay);
    return Status::ok();
  }
  // The call passed: the next failure starts a new budget.
  void reset() { budget_.reset(); }

 private:
  const char* call_;
  std::int64_t configuredMs_;
  core::RetryBudget budget_;
  const TaskEnv& env_;
  TaskMetrics& metrics_;
  std::function<void(std::int64_t)> wait_;
};

// The activity slot of the task running on this thread (TaskRunner::activity_), set by guarded()
// around each connector call so a stop that times out can say what the task was doing.
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

// Both task contexts open local files through the worker's one confinement (local_files.h).
Result<LocalFile> openConfined(const TaskEnv& env, const std::string& path, LocalPath access) {
  if (env.worker == nullptr) return Status::failedPrecondition("no worker config: local files cannot be opened");
  return localFileConfinement(*env.worker).open(path, access);
}

// ---------------------------------------------------------------------------------------------
// Source side, shared by the source and the direct runner.

class SourceContextImpl final : public SourceTaskContext {
 public:
  explicit SourceContextImpl(const TaskEnv& env, std::atomic<bool>* commitRequested = nullptr)
      : env_(env), commitRequested_(commitRequested) {}
  const std::string& connectorName() const override { return env_.connector; }
  void requestCommit() override {
    if (commitRequested_ != nullptr) commitRequested_->store(true);
  }
  int taskId() const override { return env_.taskId; }
  std::optional<StringMap> committedOffset(const StringMap& partition) override {
    if (!env_.positions) return std::nullopt;
    auto r = env_.positions->get(env_.connector, partition);
    if (!r.isOk()) return std::nullopt;
    return *r;
  }
  Result<LocalFile> openLocalFile(const std::string& path, LocalPath access) override {
    return openConfined(env_, path, access);
  }

 private:
  const TaskEnv& env_;
  std::atomic<bool>* commitRequested_;
};

// Positions that became safe, waiting for the next commit. Last one wins per partition.
class PositionBuffer {
 public:
  void add(const Position& p) {
    if (p.partition.empty()) return;
    pending_[p.partition] = p.offset;
  }
  bool empty() const { return pending_.empty(); }
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

// Retries a retriable start() failure within errors.retry.timeout (0 = not at all, -1 = forever);
// after that the task FAILS, so status shows why, and the worker's automatic restart takes over.
// Other errors, and a failure while the task is asked to stop, end the task as they are.
Status startWithRetry(const TaskEnv& env, const ErrorPolicy& policy, TaskMetrics& metrics,
                      const std::function<Status()>& start, const std::function<bool()>& stopping,
                      const std::function<void(std::int64_t)>& wait) {
  CallRetrier retrier("start", RetriedCall::kStart, env, policy, metrics, wait);
  while (true) {
    Status s = guarded("start", start);
    // With the default 0 the error is the task's trace as the connector wrote it.
    if (s.isOk() || !s.isRetriable() || stopping() || policy.retryTimeoutMs == 0) return s;
    FERRY_RETURN_IF_ERROR(retrier.retryOrFail(s));
  }
}

// Counts a polled record in and stamps it; returns its size.
std::size_t countIn(TaskMetrics& metrics, Record& record) {
  metrics.recordsIn.fetch_add(1, std::memory_order_relaxed);
  const std::size_t bytes = record.sizeBytes();
  metrics.bytesIn.fetch_add(bytes, std::memory_order_relaxed);
  if (record.timestampMs == 0) record.timestampMs = core::nowMs();
  return bytes;
}

// A polled source record -> transforms -> converters -> a backbone message. nullopt when the
// record is dropped: by a filter, or after a tolerated error (reported already).
class SourceEncoder {
 public:
  SourceEncoder(TransformChain& chain, TaskConverters& converters, ErrorReporter& errors,
                TaskMetrics& metrics)
      : chain_(chain), converters_(converters), errors_(errors), metrics_(metrics) {}

  Result<std::optional<backbone::Message>> encode(Record& record) {
    using Out = std::optional<backbone::Message>;
    auto kept = chain_.empty() ? Result<bool>(true) : chain_.apply(record);
    if (!kept.isOk()) {
      FERRY_RETURN_IF_ERROR(errors_.report("TRANSFORMATION", kept.status(), record.topic, -1, -1, record.key,
                                           record.value, record.headers));
      return Out();
    }
    if (!*kept) {
      metrics_.recordsDropped.fetch_add(1, std::memory_order_relaxed);
      return Out();
    }
    backbone::Message m;
    m.topic = record.topic;
    m.queue = record.queue.value_or(-1);
    auto key = record.key.isNull() ? Result<Bytes>(Bytes()) : converters_.key->fromRecord(record.topic, record.key);
    auto value = converters_.value->fromRecord(record.topic, record.value);
    if (!key.isOk() || !value.isOk()) {
      FERRY_RETURN_IF_ERROR(errors_.report(key.isOk() ? "VALUE_CONVERTER" : "KEY_CONVERTER",
                                           key.isOk() ? value.status() : key.status(), record.topic, -1, -1,
                                           record.key, record.value, record.headers));
      return Out();
    }
    m.key = std::move(*key);
    m.value = std::move(*value);
    m.headers = record.headers;
    if (!m.headers.empty()) {
      if (Status hs = convertHeaders(*converters_.header, HeaderDirection::kToBackbone, record.topic, m.headers);
          !hs.isOk()) {
        FERRY_RETURN_IF_ERROR(
            errors_.report("HEADER_CONVERTER", hs, record.topic, -1, -1, record.key, record.value, record.headers));
        return Out();
      }
    }
    m.timestampMs = record.timestampMs;
    if (m.queue < 0 && m.key.isNull() && !record.position.partition.empty()) {
      // One source partition (a file, a datagen task) keeps its order: route it to one queue.
      if (record.position.partition != lastPartition_) {
        lastPartition_ = record.position.partition;
        lastHint_.clear();
        for (const auto& [k, v] : lastPartition_) lastHint_.append(k).append(1, '\0').append(v).append(1, '\0');
      }
      m.routingHint = lastHint_;
    }
    if (record.topic.empty()) {
      FERRY_RETURN_IF_ERROR(errors_.report("PRODUCER", Status::invalidArgument("record without a topic"), "", -1, -1,
                                           record.key, record.value, record.headers));
      return Out();
    }
    return Out(std::move(m));
  }

 private:
  TransformChain& chain_;
  TaskConverters& converters_;
  ErrorReporter& errors_;
  TaskMetrics& metrics_;
  StringMap lastPartition_;  // cache of the routing hint of the last partition
  std::string lastHint_;
};

// ---------------------------------------------------------------------------------------------

class SourceRunner final : public TaskRunner {
 public:
  explicit SourceRunner(TaskEnv env) : TaskRunner(std::move(env)) {}

 private:
  struct Pending {
    Record record;  // after transforms; empty (position only) when dropped
    std::size_t bytes = 0;
    int state = 0;  // 0 in flight, 1 safe, 2 failed
    Status error;
    backbone::Message message;  // what was sent, kept for a resend after a retriable failure
    int attempts = 0;
  };

  Status run() override {
    const auto& reg = *env_.registry;
    const std::string cls = get(env_.config, "connector.class");
    FERRY_ASSIGN_OR_RETURN(connector_, reg.createSourceConnector(cls));
    task_ = connector_->createTask();
    if (!task_) return Status::internal(cls + " created no task");
    FERRY_ASSIGN_OR_RETURN(chain_, TransformChain::build(reg, env_.config));
    FERRY_ASSIGN_OR_RETURN(converters_, makeTaskConverters(reg, *env_.worker, env_.config));
    FERRY_ASSIGN_OR_RETURN(producer_, env_.producers ? env_.producers->view() : env_.backbone->createProducer({}));
    errors_ = std::make_unique<ErrorReporter>(env_, metrics_);
    encoder_ = std::make_unique<SourceEncoder>(*chain_, converters_, *errors_, metrics_);
    SourceContextImpl context(env_);
    FERRY_RETURN_IF_ERROR(startWithRetry(
        env_, errors_->policy(), metrics_, [&] { return task_->start(env_.config, context); }, [&] { return stopping(); },
        [&](std::int64_t ms) { idleWait(ms); }));
    started_ = true;
    Status result = loop();
    Status closing = shutdown();
    return result.isOk() ? closing : result;
  }

  Status loop() {
    const auto& w = *env_.worker;
    std::int64_t nextCommit = core::monotonicMs() + w.offsetFlushIntervalMs;
    std::vector<Record> batch;
    batch.reserve(static_cast<std::size_t>(w.taskPollBatch));
    CallRetrier pollRetry("poll", RetriedCall::kPoll, env_, errors_->policy(), metrics_,
                          [&](std::int64_t ms) { idleWait(ms); });
    while (!stopping()) {
      if (!leaseHeld()) {  // distributed mode: not while this worker's lease is in doubt
        idleWait(50);
        continue;
      }
      FERRY_RETURN_IF_ERROR(drainSafe());
      if (core::monotonicMs() >= nextCommit) {
        FERRY_RETURN_IF_ERROR(commitPositions());
        nextCommit = core::monotonicMs() + w.offsetFlushIntervalMs;
      }
      if (paused()) {
        reportState(State::kPaused);
        idleWait(100);
        continue;
      }
      reportState(State::kRunning);
      if (metrics_.inflightRecords.load() >= w.taskMaxInflightRecords ||
          metrics_.inflightBytes.load() >= w.taskMaxInflightBytes) {
        std::unique_lock lock(mu_);
        safeCv_.wait_for(lock, 50ms, [&] { return !pending_.empty() && pending_.front().state != 0; });
        continue;
      }
      batch.clear();
      auto polled = guarded("poll", [&]() -> Result<std::size_t> {
        return task_->poll(batch, static_cast<std::size_t>(w.taskPollBatch), kSourcePollWait);
      });
      if (!polled.isOk()) {
        FERRY_RETURN_IF_ERROR(pollRetry.retryOrFail(polled.status()));
        continue;
      }
      pollRetry.reset();
      if (!leaseHeld()) return leaseLost(batch);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        // The lease read per record (a clock read): a worker frozen in the middle of a batch
        // (SIGSTOP) must not hand the rest of it to the backbone once it thaws.
        if (!workerLeaseHeld()) {
          batch.erase(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(i));
          return leaseLost(batch);
        }
        FERRY_RETURN_IF_ERROR(dispatch(std::move(batch[i])));
      }
    }
    return Status::ok();
  }

  // Transforms, converts and sends one polled record; tracks it in poll order.
  Status dispatch(Record record) {
    const std::size_t bytes = countIn(metrics_, record);
    FERRY_ASSIGN_OR_RETURN(auto m, encoder_->encode(record));
    if (!m) return trackDone(std::move(record), /*dropped=*/true);
    noteTopic(record.topic);
    auto allowed = effect();  // a cancelled task sends nothing
    if (!allowed) {
      if (record.acknowledger) record.acknowledger->release(false);
      return cancelledError();
    }
    std::uint64_t seq;
    {
      std::lock_guard lock(mu_);
      seq = headSeq_ + pending_.size();
      pending_.push_back(Pending{std::move(record), bytes, 0, {}, *m, 1});
    }
    metrics_.inflightRecords.fetch_add(1, std::memory_order_relaxed);
    metrics_.inflightBytes.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
    metrics_.commitLagRecords.fetch_add(1, std::memory_order_relaxed);
    sendTracked(std::move(*m), seq);
    return Status::ok();
  }

  // Sends `m` for the pending entry `seq`; its callback marks the entry safe or failed.
  void sendTracked(backbone::Message m, std::uint64_t seq) {
    Status s = producer_->send(std::move(m), [this, seq](const Status& st, std::int32_t, std::int64_t) {
      {
        std::lock_guard lock(mu_);
        Pending& p = pending_[seq - headSeq_];
        p.state = st.isOk() ? 1 : 2;
        p.error = st;
      }
      safeCv_.notify_one();
    });
    if (!s.isOk()) {
      std::lock_guard lock(mu_);
      Pending& p = pending_[seq - headSeq_];
      p.state = 2;
      p.error = s;
    }
  }

  // A send that failed with a retriable error (a timeout, a busy broker) is sent again, with
  // backoff, until it succeeds or the task stops: the backbone is where records must get to, as
  // a Kafka producer retries until delivery.timeout. Returns true when something was resent.
  bool resendRetriable() {
    std::vector<std::pair<std::uint64_t, backbone::Message>> again;
    int attempts = 0;
    {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < pending_.size(); ++i) {
        Pending& p = pending_[i];
        if (p.state != 2 || !p.error.isRetriable()) continue;
        p.state = 0;
        attempts = std::max(attempts, p.attempts++);
        again.emplace_back(headSeq_ + i, p.message);
      }
    }
    if (again.empty()) return false;
    metrics_.retries.fetch_add(again.size(), std::memory_order_relaxed);
    core::logger("runtime")->warn("{}-{}: resending {} record(s) after a retriable backbone error", env_.connector,
                                  env_.taskId, again.size());
    // 100 ms doubling per attempt of the most-tried record, at most 6.4 s (or the retry delay max).
    idleWait(core::backoffDelay(core::RetryBudget::kInitialDelayMs,
                                std::min<std::int64_t>(kResendDelayMaxMs, errors_->policy().retryDelayMaxMs), attempts));
    auto allowed = effect();
    if (!allowed) return false;
    for (auto& [seq, m] : again) sendTracked(std::move(m), seq);
    return true;
  }

  Status trackDone(Record record, bool dropped) {
    // Keep only what commitRecord and the position commit need.
    Record slim;
    slim.topic = std::move(record.topic);
    slim.position = std::move(record.position);
    slim.acknowledger = std::move(record.acknowledger);
    (void)dropped;
    std::lock_guard lock(mu_);
    pending_.push_back(Pending{std::move(slim), 0, 1, {}, {}, 0});
    metrics_.commitLagRecords.fetch_add(1, std::memory_order_relaxed);
    return Status::ok();
  }

  // Moves the safe prefix of pending_ into the position buffer (poll order), telling the task.
  Status drainSafe() {
    if (cancelled()) return cancelledError();
    if (!stopping()) {
      bool failedRetriable = false;
      {
        std::lock_guard lock(mu_);
        for (const auto& p : pending_)
          if (p.state == 2 && p.error.isRetriable()) {
            failedRetriable = true;
            break;
          }
      }
      if (failedRetriable) resendRetriable();
    }
    std::deque<Pending> safe;
    {
      std::lock_guard lock(mu_);
      // The safe prefix ends at the first record in flight or waiting for a resend.
      while (!pending_.empty() && (pending_.front().state == 1 ||
                                   (pending_.front().state == 2 && !pending_.front().error.isRetriable()))) {
        safe.push_back(std::move(pending_.front()));
        pending_.pop_front();
        ++headSeq_;
      }
    }
    for (auto& p : safe) {
      if (p.bytes > 0) {
        metrics_.inflightRecords.fetch_sub(1, std::memory_order_relaxed);
        metrics_.inflightBytes.fetch_sub(static_cast<std::int64_t>(p.bytes), std::memory_order_relaxed);
      }
      if (p.state == 2) {
        Status tolerated = errors_->report("PRODUCER", p.error, p.record.topic, -1, -1, p.record.key, p.record.value,
                                           p.record.headers);
        if (!tolerated.isOk()) return tolerated;
      } else if (p.bytes > 0) {
        metrics_.recordsOut.fetch_add(1, std::memory_order_relaxed);
        metrics_.bytesOut.fetch_add(p.bytes, std::memory_order_relaxed);
      }
      guarded("commitRecord", [&] {
        task_->commitRecord(p.record);
        return Status::ok();
      }).isOk();
      positions_.add(p.record.position);
      ++uncommitted_;
    }
    return Status::ok();
  }

  Status commitPositions() {
    if (uncommitted_ == 0) return Status::ok();
    FERRY_RETURN_IF_ERROR(errors_->flush(std::chrono::milliseconds(env_.worker->offsetFlushTimeoutMs)));
    // The records behind these positions reach the backbone's disk first, where an acknowledgement
    // did not already mean that (embedded fsync=interval): a position never runs ahead of them.
    if (producer_) FERRY_RETURN_IF_ERROR(producer_->sync().withContext("syncing the backbone before committing positions"));
    {
      auto allowed = effect();
      if (!allowed) return cancelledError();
      FERRY_RETURN_IF_ERROR(positions_.commit(*env_.positions, env_.connector).withContext("committing positions"));
    }
    FERRY_RETURN_IF_ERROR(guarded("commit", [&] { return task_->commit(); }));
    metrics_.commitLagRecords.fetch_sub(uncommitted_, std::memory_order_relaxed);
    uncommitted_ = 0;
    metrics_.commits.fetch_add(1, std::memory_order_relaxed);
    metrics_.lastCommitMs.store(core::nowMs(), std::memory_order_relaxed);
    return Status::ok();
  }

  Status shutdown() {
    if (!started_) return Status::ok();
    // Read once: a worker without its lease (cut off, or frozen while another worker took the
    // task) sends nothing more for it, and never waits for a broker that may be gone.
    const bool lease = mayCommit();
    const bool workerLease = workerLeaseHeld();
    // Stop the task first: a push source stops its client, so nothing new arrives.
    guarded("stop", [&] {
      task_->stop();
      return Status::ok();
    }).isOk();
    // Without the worker's lease what the client still holds is dropped (the herder fenced the
    // worker's shared producer already; this covers a producer of the task's own). The flush then
    // only waits for the purged messages' callbacks, which refer to this runner. (A task assigned
    // elsewhere while the worker holds a lease again - thawed, rejoined - had its records purged
    // when the lease ended; its neighbours' records are left alone.)
    if (!workerLease && producer_) (void)producer_->purge();
    Status flushed = producer_ ? producer_->flush(std::chrono::milliseconds(env_.worker->offsetFlushTimeoutMs))
                               : Status::ok();
    Status drained = drainSafe();
    // Positions only with the lease: a purged record's fate is unknown, and the safe prefix ends
    // before it anyway, but without the lease the position topic may be unreachable and the task
    // may already run elsewhere. The next owner reads everything after the last commit again.
    // Read again: the lease may have ended during the flush (the broker went away meanwhile).
    const bool commit = lease && mayCommit();
    Status committed = commit ? commitPositions() : Status::ok();
    if (!commit && uncommitted_ > 0)
      core::logger("runtime")->warn("{}-{}: stopped without the cluster lease: {} record(s) safe since the last "
                                    "commit were not committed (the next owner reads them again)",
                                    env_.connector, env_.taskId, uncommitted_);
    {
      std::lock_guard lock(mu_);
      for (auto& p : pending_)
        if (p.record.acknowledger) p.record.acknowledger->release(false);
    }
    if (!flushed.isOk())
      core::logger("runtime")->warn("{}-{}: records still unacknowledged at stop: {}", env_.connector, env_.taskId,
                                    flushed.toString());
    return drained.isOk() ? committed : drained;
  }

  PluginPtr<SourceConnector> connector_;
  std::unique_ptr<SourceTask> task_;
  std::unique_ptr<TransformChain> chain_;
  TaskConverters converters_;
  std::unique_ptr<backbone::Producer> producer_;
  std::unique_ptr<ErrorReporter> errors_;
  bool started_ = false;

  std::mutex mu_;
  std::condition_variable safeCv_;
  std::deque<Pending> pending_;  // guarded by mu_; poll order
  std::uint64_t headSeq_ = 0;    // guarded by mu_: sequence number of pending_.front()
  PositionBuffer positions_;     // task thread
  std::int64_t uncommitted_ = 0;  // task thread: records safe since the last commit
  std::unique_ptr<SourceEncoder> encoder_;

 public:
  ~SourceRunner() override {
    // The producer's callbacks refer to this object: make sure none is outstanding.
    join();
    if (producer_) producer_->flush(std::chrono::milliseconds(env_.worker->offsetFlushTimeoutMs)).isOk();
    producer_.reset();
  }
};

// ---------------------------------------------------------------------------------------------
// Exactly-once source (worker exactly.once.source.support=enabled, kafka backbone).
//
// poll -> transforms -> converters -> a transactional backbone producer. The records of a
// transaction and the positions they reach are written in one backbone transaction (the positions
// to offset.storage.topic), committed after every non-empty poll batch (transaction.boundary=poll)
// or every transaction.boundary.interval.ms (interval). Before the task starts, its producer
// (transactional.id ferry-<connector>-<task>) fences any zombie of the task, aborting what that
// left open, and the positions are read again, read_committed: the task resumes exactly after its
// last committed transaction. A failed commit aborts the transaction and fails the task; its
// automatic restart resumes from the committed positions, so nothing is written twice as seen by
// read_committed readers.

class TransactionalSourceRunner final : public TaskRunner {
 public:
  explicit TransactionalSourceRunner(TaskEnv env) : TaskRunner(std::move(env)) {}
  ~TransactionalSourceRunner() override {
    join();
    producer_.reset();  // aborts a transaction still open
  }

 private:
  Status run() override {
    const auto& reg = *env_.registry;
    const auto& w = *env_.worker;
    store_ = dynamic_cast<LogPositionStore*>(env_.positions);
    if (store_ == nullptr || env_.backbone == nullptr)
      return Status::failedPrecondition("exactly-once sources keep positions in offset.storage.topic (worker store missing)");
    const std::string cls = get(env_.config, "connector.class");
    FERRY_ASSIGN_OR_RETURN(connector_, reg.createSourceConnector(cls));
    task_ = connector_->createTask();
    if (!task_) return Status::internal(cls + " created no task");
    FERRY_ASSIGN_OR_RETURN(chain_, TransformChain::build(reg, env_.config));
    FERRY_ASSIGN_OR_RETURN(converters_, makeTaskConverters(reg, w, env_.config));
    intervalBoundary_ = get(env_.config, "transaction.boundary") == "interval";
    const std::string iv = get(env_.config, "transaction.boundary.interval.ms");
    intervalMs_ = iv.empty() || std::stoll(iv) < 0 ? w.offsetFlushIntervalMs : std::stoll(iv);
    commitTimeout_ = std::chrono::milliseconds(std::max<std::int64_t>(30000, w.offsetFlushTimeoutMs));
    const std::string txnId = "ferry-" + env_.connector + "-" + std::to_string(env_.taskId);
    const std::int64_t t0 = core::monotonicMs();
    FERRY_ASSIGN_OR_RETURN(producer_, env_.backbone->createTransactionalProducer(txnId, {}));
    const std::int64_t t1 = core::monotonicMs();
    FERRY_RETURN_IF_ERROR(store_->reload());  // after the fencing: the last committed positions
    core::logger("runtime")->info("{}-{}: exactly-once start: zombies fenced in {} ms, positions read in {} ms",
                                  env_.connector, env_.taskId, t1 - t0, core::monotonicMs() - t1);
    errors_ = std::make_unique<ErrorReporter>(env_, metrics_);
    encoder_ = std::make_unique<SourceEncoder>(*chain_, converters_, *errors_, metrics_);
    SourceContextImpl context(env_);
    FERRY_RETURN_IF_ERROR(startWithRetry(
        env_, errors_->policy(), metrics_, [&] { return task_->start(env_.config, context); }, [&] { return stopping(); },
        [&](std::int64_t ms) { idleWait(ms); }));
    started_ = true;
    Status result = loop();
    Status closing = shutdown(result.isOk());
    return result.isOk() ? closing : result;
  }

  Status loop() {
    const auto& w = *env_.worker;
    std::vector<Record> batch;
    batch.reserve(static_cast<std::size_t>(w.taskPollBatch));
    CallRetrier pollRetry("poll", RetriedCall::kPoll, env_, errors_->policy(), metrics_,
                          [&](std::int64_t ms) { idleWait(ms); });
    while (!stopping()) {
      if (!leaseHeld()) {  // distributed mode: not while this worker's lease is in doubt
        idleWait(50);
        continue;
      }
      const bool due = intervalBoundary_ && core::monotonicMs() >= txnDeadline_;
      const bool full = static_cast<std::int64_t>(held_.size()) >= w.taskMaxInflightRecords ||
                        heldBytes_ >= static_cast<std::size_t>(w.taskMaxInflightBytes);
      if (!held_.empty() && (due || full || paused())) FERRY_RETURN_IF_ERROR(commitTransaction());
      if (paused()) {
        reportState(State::kPaused);
        idleWait(100);
        continue;
      }
      reportState(State::kRunning);
      batch.clear();
      auto polled = guarded("poll", [&]() -> Result<std::size_t> {
        return task_->poll(batch, static_cast<std::size_t>(w.taskPollBatch), kSourcePollWait);
      });
      if (!polled.isOk()) {
        FERRY_RETURN_IF_ERROR(pollRetry.retryOrFail(polled.status()));
        continue;
      }
      pollRetry.reset();
      if (!leaseHeld()) return leaseLost(batch);
      for (auto& r : batch) FERRY_RETURN_IF_ERROR(dispatch(std::move(r)));
      if (!intervalBoundary_ && !held_.empty()) FERRY_RETURN_IF_ERROR(commitTransaction());
    }
    return Status::ok();
  }

  Status begin() {
    if (inTxn_) return Status::ok();
    FERRY_RETURN_IF_ERROR(producer_->beginTransaction());
    inTxn_ = true;
    txnDeadline_ = core::monotonicMs() + intervalMs_;
    return Status::ok();
  }

  Status dispatch(Record record) {
    const std::size_t bytes = countIn(metrics_, record);
    FERRY_ASSIGN_OR_RETURN(auto m, encoder_->encode(record));
    if (m) noteTopic(record.topic);
    auto allowed = effect();  // a cancelled task sends nothing
    if (!allowed) {
      if (record.acknowledger) record.acknowledger->release(false);
      return cancelledError();
    }
    FERRY_RETURN_IF_ERROR(begin());
    if (m) {
      FERRY_RETURN_IF_ERROR(producer_->send(std::move(*m), nullptr).withContext("sending to the backbone"));
      ++sentInTxn_;
      heldBytes_ += bytes;
      metrics_.inflightRecords.fetch_add(1, std::memory_order_relaxed);
      metrics_.inflightBytes.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
    }
    metrics_.commitLagRecords.fetch_add(1, std::memory_order_relaxed);
    Record slim;  // what commitRecord and the positions need
    slim.topic = std::move(record.topic);
    slim.position = std::move(record.position);
    slim.acknowledger = std::move(record.acknowledger);
    held_.push_back(std::move(slim));
    return Status::ok();
  }

  // Positions of the held records into the transaction, then commit; only then the task hears
  // that its records are safe.
  Status commitTransaction() {
    if (held_.empty()) return Status::ok();
    FERRY_RETURN_IF_ERROR(errors_->flush(std::chrono::milliseconds(env_.worker->offsetFlushTimeoutMs)));
    FERRY_RETURN_IF_ERROR(begin());
    PositionBuffer buffer;
    for (const auto& r : held_) buffer.add(r.position);
    std::vector<Position> positions = buffer.list();
    {
      auto allowed = effect();  // a cancelled task commits nothing: its transaction is aborted
      if (!allowed) return cancelledError();
      for (auto& m : store_->encode(env_.connector, positions))
        FERRY_RETURN_IF_ERROR(producer_->send(std::move(m), nullptr).withContext("writing positions"));
      Status committed = producer_->commitTransaction(commitTimeout_);
      inTxn_ = false;
      if (!committed.isOk()) return committed.withContext("exactly-once source: the transaction was not committed");
      store_->applyCommitted(env_.connector, positions);
    }
    for (auto& r : held_)
      guarded("commitRecord", [&] {
        task_->commitRecord(r);
        return Status::ok();
      }).isOk();
    FERRY_RETURN_IF_ERROR(guarded("commit", [&] { return task_->commit(); }));
    metrics_.recordsOut.fetch_add(sentInTxn_, std::memory_order_relaxed);
    metrics_.bytesOut.fetch_add(heldBytes_, std::memory_order_relaxed);
    metrics_.inflightRecords.fetch_sub(static_cast<std::int64_t>(sentInTxn_), std::memory_order_relaxed);
    metrics_.inflightBytes.fetch_sub(static_cast<std::int64_t>(heldBytes_), std::memory_order_relaxed);
    metrics_.commitLagRecords.fetch_sub(static_cast<std::int64_t>(held_.size()), std::memory_order_relaxed);
    metrics_.commits.fetch_add(1, std::memory_order_relaxed);
    metrics_.lastCommitMs.store(core::nowMs(), std::memory_order_relaxed);
    held_.clear();
    sentInTxn_ = 0;
    heldBytes_ = 0;
    return Status::ok();
  }

  Status shutdown(bool healthy) {
    if (!started_) return Status::ok();
    const bool lease = mayCommit();
    guarded("stop", [&] {
      task_->stop();
      return Status::ok();
    }).isOk();
    Status committed = healthy && lease ? commitTransaction() : Status::ok();
    if (!lease) {
      // No lease: nothing more is sent, not even an abort to a broker that may be gone (the
      // successor's fencing aborts the open transaction, or its transaction.timeout.ms does).
      (void)producer_->purge();
      inTxn_ = false;
    } else if (inTxn_) {
      (void)producer_->abortTransaction(commitTimeout_);
      inTxn_ = false;
    }
    for (auto& r : held_)
      if (r.acknowledger) r.acknowledger->release(false);
    held_.clear();
    return committed;
  }

  LogPositionStore* store_ = nullptr;
  PluginPtr<SourceConnector> connector_;
  std::unique_ptr<SourceTask> task_;
  std::unique_ptr<TransformChain> chain_;
  TaskConverters converters_;
  std::unique_ptr<backbone::TransactionalProducer> producer_;
  std::unique_ptr<ErrorReporter> errors_;
  std::unique_ptr<SourceEncoder> encoder_;
  bool started_ = false;
  bool intervalBoundary_ = false;
  std::int64_t intervalMs_ = 1000;
  std::chrono::milliseconds commitTimeout_{30000};
  bool inTxn_ = false;
  std::int64_t txnDeadline_ = 0;
  std::vector<Record> held_;  // polled since the last commit (topic, position, acknowledger)
  std::uint64_t sentInTxn_ = 0;
  std::size_t heldBytes_ = 0;
};

// A task that cannot run as configured: it fails at once with the reason.
class FailingRunner final : public TaskRunner {
 public:
  FailingRunner(TaskEnv env, Status why) : TaskRunner(std::move(env)), why_(std::move(why)) {}
  ~FailingRunner() override { join(); }

 private:
  Status run() override { return why_; }
  Status why_;
};

// ---------------------------------------------------------------------------------------------
// Sink side

class SinkContextImpl final : public SinkTaskContext {
 public:
  SinkContextImpl(const TaskEnv& env, ErrorReporter& errors, std::atomic<bool>& commitRequested)
      : env_(env), errors_(errors), commitRequested_(commitRequested) {}
  const std::string& connectorName() const override { return env_.connector; }
  int taskId() const override { return env_.taskId; }
  void requestCommit() override { commitRequested_.store(true); }
  Status reportBadRecord(const Record& record, const Status& reason) override {
    return errors_.report("TASK_PUT", reason, record.topic, record.queue.value_or(-1), record.offset, record.key,
                          record.value, record.headers);
  }
  // The task's state is one position of the connector, under a partition no source uses.
  Result<std::optional<StringMap>> loadState() override {
    if (env_.positions == nullptr) return std::optional<StringMap>();
    return env_.positions->get(env_.connector, statePartition());
  }
  Status saveState(const StringMap& state) override {
    if (env_.positions == nullptr) return SinkTaskContext::saveState(state);
    if (state.empty()) return Status::invalidArgument("a sink task's state must not be empty");
    return env_.positions->put(env_.connector, {Position{statePartition(), state}});
  }
  Result<LocalFile> openLocalFile(const std::string& path, LocalPath access) override {
    return openConfined(env_, path, access);
  }

 private:
  StringMap statePartition() const { return {{"ferry.sink.task", std::to_string(env_.taskId)}}; }
  const TaskEnv& env_;
  ErrorReporter& errors_;
  std::atomic<bool>& commitRequested_;
};

// put() with retries: retriable errors are retried as `retrier` says (a sink task: until they pass
// or the task stops, Kafka Connect's RetriableException semantics; a direct task: within
// errors.retry.timeout); other errors fail the task, and so does a failure while stopping.
Status putWithRetry(SinkTask& task, std::vector<Record>& records, CallRetrier& retrier,
                    const std::function<bool()>& stopping) {
  while (true) {
    Status s = guarded("put", [&] { return task.put(records); });
    if (s.isOk()) {
      retrier.reset();
      return s;
    }
    if (s.isRetriable() && stopping()) return s.withContext("put (stopping)");
    FERRY_RETURN_IF_ERROR(retrier.retryOrFail(s));
  }
}

class SinkRunner final : public TaskRunner, private backbone::RebalanceListener {
 public:
  explicit SinkRunner(TaskEnv env) : TaskRunner(std::move(env)) {}
  ~SinkRunner() override { join(); }

 private:
  Status run() override {
    const auto& reg = *env_.registry;
    const std::string cls = get(env_.config, "connector.class");
    FERRY_ASSIGN_OR_RETURN(connector_, reg.createSinkConnector(cls));
    task_ = connector_->createTask();
    if (!task_) return Status::internal(cls + " created no task");
    FERRY_ASSIGN_OR_RETURN(chain_, TransformChain::build(reg, env_.config));
    FERRY_ASSIGN_OR_RETURN(converters_, makeTaskConverters(reg, *env_.worker, env_.config));
    errors_ = std::make_unique<ErrorReporter>(env_, metrics_);
    context_ = std::make_unique<SinkContextImpl>(env_, *errors_, commitRequested_);
    FERRY_RETURN_IF_ERROR(startWithRetry(
        env_, errors_->policy(), metrics_, [&] { return task_->start(env_.config, *context_); }, [&] { return stopping(); },
        [&](std::int64_t ms) { idleWait(ms); }));
    started_ = true;
    FERRY_ASSIGN_OR_RETURN(consumer_, env_.backbone->createConsumer("connect-" + env_.connector,
                                                                     env_.connector + "-" + std::to_string(env_.taskId),
                                                                     {}));
    auto topics = listOf(env_.config, "topics");
    if (topics.empty() && !get(env_.config, "topics.regex").empty()) {
      // Kafka Connect's topics.regex: the topics that exist now and match (validated at create).
      // A topic made later is picked up when the task restarts.
      FERRY_ASSIGN_OR_RETURN(auto all, env_.backbone->admin().listTopics());
      try {
        const std::regex re(get(env_.config, "topics.regex"));
        for (const auto& t : all)
          if (std::regex_match(t.name, re)) topics.push_back(t.name);
      } catch (const std::regex_error& e) {
        return Status::invalidArgument(std::string("topics.regex: ") + e.what());
      }
    }
    for (const auto& t : topics) {
      FERRY_RETURN_IF_ERROR(env_.backbone->admin().ensureTopic(t, env_.worker->defaultQueues));
      noteTopic(t);
    }
    FERRY_RETURN_IF_ERROR(consumer_->subscribe(topics, this));
    Status result = loop();
    // A failed task commits nothing more: offsets past the failing record were taken in but not
    // put (or put but not flushed); the restarted task must read them again.
    if (!result.isOk() && failure_.isOk()) failure_ = result;
    Status closing = shutdown();
    return result.isOk() ? closing : result;
  }

  Status loop() {
    const auto& w = *env_.worker;
    std::int64_t nextCommit = core::monotonicMs() + w.offsetFlushIntervalMs;
    std::vector<backbone::Message> messages;
    std::vector<Record> records;
    CallRetrier putRetry("put", RetriedCall::kSinkPut, env_, errors_->policy(), metrics_,
                         [&](std::int64_t ms) { idleWait(ms); });
    while (!stopping()) {
      if (!leaseHeld()) {  // distributed mode: not while this worker's lease is in doubt
        idleWait(50);
        continue;
      }
      if (failure_.isOk() == false) return failure_;
      if (commitRequested_.exchange(false) || core::monotonicMs() >= nextCommit) {
        FERRY_RETURN_IF_ERROR(commitOffsets(current_));
        nextCommit = core::monotonicMs() + w.offsetFlushIntervalMs;
      }
      if (paused()) {
        reportState(State::kPaused);
        idleWait(100);
        continue;
      }
      reportState(State::kRunning);
      messages.clear();
      auto polled = consumer_->poll(messages, static_cast<std::size_t>(w.taskPollBatch), kSourcePollWait);
      if (!polled.isOk()) {
        if (!polled.status().isRetriable()) return polled.status().withContext("backbone poll");
        idleWait(100);
        continue;
      }
      if (!failure_.isOk()) return failure_;
      if (auto skipped = consumer_->takeSkipped(); !skipped.empty()) noteSkipped(skipped);
      if (messages.empty()) continue;
      if (!leaseHeld())
        return leaseEnded("while reading; the batch was not put and will be read again from the committed offsets");
      records.clear();
      records.reserve(messages.size());
      for (auto& m : messages) {
        metrics_.recordsIn.fetch_add(1, std::memory_order_relaxed);
        const std::size_t bytes = m.key.size() + m.value.size() + m.topic.size() + 32;
        metrics_.bytesIn.fetch_add(bytes, std::memory_order_relaxed);
        auto& next = current_[TopicQueue{m.topic, m.queue}];
        next = m.offset + 1;
        ++uncommitted_;
        metrics_.commitLagRecords.fetch_add(1, std::memory_order_relaxed);
        Record r;
        r.topic = m.topic;
        r.queue = m.queue;
        r.offset = m.offset;
        r.timestampMs = m.timestampMs;
        auto key = m.key.isNull() ? Result<Bytes>(Bytes()) : converters_.key->toRecord(m.topic, m.key);
        auto value = converters_.value->toRecord(m.topic, m.value);
        if (!key.isOk() || !value.isOk()) {
          FERRY_RETURN_IF_ERROR(errors_->report(key.isOk() ? "VALUE_CONVERTER" : "KEY_CONVERTER",
                                                key.isOk() ? value.status() : key.status(), m.topic, m.queue, m.offset,
                                                m.key, m.value, m.headers));
          continue;
        }
        r.key = std::move(*key);
        r.value = std::move(*value);
        r.headers = std::move(m.headers);
        if (!r.headers.empty()) {
          if (Status hs = convertHeaders(*converters_.header, HeaderDirection::kFromBackbone, m.topic, r.headers);
              !hs.isOk()) {
            FERRY_RETURN_IF_ERROR(
                errors_->report("HEADER_CONVERTER", hs, m.topic, m.queue, m.offset, m.key, m.value, r.headers));
            continue;
          }
        }
        if (!chain_->empty()) {
          auto kept = chain_->apply(r);
          if (!kept.isOk()) {
            FERRY_RETURN_IF_ERROR(errors_->report("TRANSFORMATION", kept.status(), m.topic, m.queue, m.offset, m.key,
                                                  m.value, r.headers));
            continue;
          }
          if (!*kept) {
            metrics_.recordsDropped.fetch_add(1, std::memory_order_relaxed);
            continue;
          }
        }
        records.push_back(std::move(r));
      }
      if (records.empty()) continue;
      std::size_t outBytes = 0;
      for (const auto& r : records) outBytes += r.sizeBytes();
      const std::size_t n = records.size();
      FERRY_RETURN_IF_ERROR(putWithRetry(*task_, records, putRetry, [&] { return stopping(); }));
      metrics_.recordsOut.fetch_add(n, std::memory_order_relaxed);
      metrics_.bytesOut.fetch_add(outBytes, std::memory_order_relaxed);
    }
    return Status::ok();
  }

  // preCommit (flushes the sink) and commits what it returns to the backbone group.
  Status commitOffsets(const OffsetMap& offsets) {
    if (offsets.empty() || uncommitted_ == 0) return Status::ok();
    if (cancelled()) return cancelledError();
    FERRY_RETURN_IF_ERROR(errors_->flush(std::chrono::milliseconds(env_.worker->offsetFlushTimeoutMs)));
    auto safe = guarded("preCommit", [&]() -> Result<OffsetMap> { return task_->preCommit(offsets); });
    if (!safe.isOk()) return safe.status().withContext("flush");
    if (!safe->empty()) {
      auto allowed = effect();  // a flush that returns after the task was cancelled commits nothing
      if (!allowed) return cancelledError();
      FERRY_RETURN_IF_ERROR(consumer_->commit(*safe).withContext("committing offsets"));
    }
    metrics_.commitLagRecords.fetch_sub(uncommitted_, std::memory_order_relaxed);
    uncommitted_ = 0;
    metrics_.commits.fetch_add(1, std::memory_order_relaxed);
    metrics_.lastCommitMs.store(core::nowMs(), std::memory_order_relaxed);
    return Status::ok();
  }

  void onRevoked(const std::vector<TopicQueue>& queues) override {
    if (!failure_.isOk() || !mayCommit()) {  // failing, or no lease: commit nothing, just tell the task
      for (const auto& q : queues) current_.erase(q);
      guarded("close", [&] { return task_->close(queues); }).isOk();
      return;
    }
    OffsetMap revoked;
    for (const auto& q : queues)
      if (auto it = current_.find(q); it != current_.end()) revoked.insert(*it);
    if (!revoked.empty()) {
      Status s = commitOffsets(revoked);
      if (!s.isOk() && failure_.isOk()) failure_ = s;
    }
    for (const auto& q : queues) current_.erase(q);
    Status s = guarded("close", [&] { return task_->close(queues); });
    if (!s.isOk() && failure_.isOk()) failure_ = s;
  }
  void onAssigned(const std::vector<TopicQueue>& queues) override {
    Status s = guarded("open", [&] { return task_->open(queues); });
    if (!s.isOk() && failure_.isOk()) failure_ = s;
  }

  Status shutdown() {
    Status committed = Status::ok();
    if (consumer_) {
      // Without the lease nothing is flushed or committed (the next owner reads it again).
      if (failure_.isOk() && mayCommit()) committed = commitOffsets(current_);
      consumer_->close();
    }
    if (started_) guarded("stop", [&] {
        task_->stop();
        return Status::ok();
      }).isOk();
    return committed;
  }

  PluginPtr<SinkConnector> connector_;
  std::unique_ptr<SinkTask> task_;
  std::unique_ptr<TransformChain> chain_;
  TaskConverters converters_;
  std::unique_ptr<ErrorReporter> errors_;
  std::unique_ptr<SinkContextImpl> context_;
  std::unique_ptr<backbone::Consumer> consumer_;
  std::atomic<bool> commitRequested_{false};
  bool started_ = false;
  OffsetMap current_;  // next offsets after every record taken in
  std::int64_t uncommitted_ = 0;
  Status failure_;  // an error raised inside a rebalance callback
};

// ---------------------------------------------------------------------------------------------
// Direct: a source task and a sink task in one thread.

class DirectRunner final : public TaskRunner {
 public:
  explicit DirectRunner(TaskEnv env) : TaskRunner(std::move(env)) {}
  ~DirectRunner() override { join(); }

 private:
  Status run() override {
    const auto& reg = *env_.registry;
    FERRY_ASSIGN_OR_RETURN(source_, reg.createSourceConnector(get(env_.config, "connector.class")));
    const StringMap sinkConfig = sinkSideConfig(env_.config);
    FERRY_ASSIGN_OR_RETURN(sink_, reg.createSinkConnector(get(sinkConfig, "connector.class")));
    sourceTask_ = source_->createTask();
    sinkTask_ = sink_->createTask();
    if (!sourceTask_ || !sinkTask_) return Status::internal("a connector created no task");
    FERRY_ASSIGN_OR_RETURN(chain_, TransformChain::build(reg, env_.config));
    errors_ = std::make_unique<ErrorReporter>(env_, metrics_);
    sinkContext_ = std::make_unique<SinkContextImpl>(env_, *errors_, commitRequested_);
    SourceContextImpl sourceContext(env_, &commitRequested_);
    auto stop = [&] { return stopping(); };
    auto wait = [&](std::int64_t ms) { idleWait(ms); };
    FERRY_RETURN_IF_ERROR(startWithRetry(
        env_, errors_->policy(), metrics_, [&] { return sinkTask_->start(sinkConfig, *sinkContext_); }, stop, wait));
    sinkStarted_ = true;
    FERRY_RETURN_IF_ERROR(startWithRetry(
        env_, errors_->policy(), metrics_, [&] { return sourceTask_->start(env_.config, sourceContext); }, stop, wait));
    sourceStarted_ = true;
    Status result = loop();
    Status closing = shutdown(result.isOk());
    return result.isOk() ? closing : result;
  }

  Status loop() {
    const auto& w = *env_.worker;
    std::int64_t nextCommit = core::monotonicMs() + w.offsetFlushIntervalMs;
    std::vector<Record> batch;
    std::vector<Record> out;
    CallRetrier pollRetry("poll", RetriedCall::kPoll, env_, errors_->policy(), metrics_,
                          [&](std::int64_t ms) { idleWait(ms); });
    CallRetrier putRetry("put", RetriedCall::kDirectPut, env_, errors_->policy(), metrics_,
                         [&](std::int64_t ms) { idleWait(ms); });
    while (!stopping()) {
      if (!leaseHeld()) {  // distributed mode: not while this worker's lease is in doubt
        idleWait(50);
        continue;
      }
      const bool full = static_cast<std::int64_t>(held_.size()) >= w.taskMaxInflightRecords ||
                        heldBytes_ >= w.taskMaxInflightBytes;
      if (full || commitRequested_.exchange(false) || core::monotonicMs() >= nextCommit) {
        FERRY_RETURN_IF_ERROR(flushAndCommit());
        nextCommit = core::monotonicMs() + w.offsetFlushIntervalMs;
      }
      if (paused()) {
        reportState(State::kPaused);
        idleWait(100);
        continue;
      }
      reportState(State::kRunning);
      batch.clear();
      auto polled = guarded("poll", [&]() -> Result<std::size_t> {
        return sourceTask_->poll(batch, static_cast<std::size_t>(w.taskPollBatch), kSourcePollWait);
      });
      if (!polled.isOk()) {
        FERRY_RETURN_IF_ERROR(pollRetry.retryOrFail(polled.status()));
        continue;
      }
      pollRetry.reset();
      if (batch.empty()) continue;
      if (!leaseHeld()) return leaseLost(batch);
      out.clear();
      std::size_t outBytes = 0;
      for (auto& r : batch) {
        metrics_.recordsIn.fetch_add(1, std::memory_order_relaxed);
        const std::size_t bytes = r.sizeBytes();
        metrics_.bytesIn.fetch_add(bytes, std::memory_order_relaxed);
        if (r.timestampMs == 0) r.timestampMs = core::nowMs();
        Record slim;  // what the commit needs, kept until the sink flushed
        slim.topic = r.topic;
        slim.position = r.position;
        slim.acknowledger = r.acknowledger;
        heldBytes_ += static_cast<std::int64_t>(bytes);
        held_.push_back(std::move(slim));
        metrics_.commitLagRecords.fetch_add(1, std::memory_order_relaxed);
        if (!chain_->empty()) {
          auto kept = chain_->apply(r);
          if (!kept.isOk()) {
            FERRY_RETURN_IF_ERROR(
                errors_->report("TRANSFORMATION", kept.status(), r.topic, -1, -1, r.key, r.value, r.headers));
            continue;
          }
          if (!*kept) {
            metrics_.recordsDropped.fetch_add(1, std::memory_order_relaxed);
            continue;
          }
        }
        r.acknowledger.reset();  // the runtime acknowledges after the sink flushed
        if (!r.topic.empty()) noteTopic(r.topic);
        outBytes += r.sizeBytes();
        out.push_back(std::move(r));
      }
      metrics_.inflightRecords.store(static_cast<std::int64_t>(held_.size()), std::memory_order_relaxed);
      metrics_.inflightBytes.store(heldBytes_, std::memory_order_relaxed);
      if (out.empty()) continue;
      const std::size_t n = out.size();
      FERRY_RETURN_IF_ERROR(putWithRetry(*sinkTask_, out, putRetry, [&] { return stopping(); }));
      metrics_.recordsOut.fetch_add(n, std::memory_order_relaxed);
      metrics_.bytesOut.fetch_add(outBytes, std::memory_order_relaxed);
    }
    return Status::ok();
  }

  // Flushes the sink, then (only then) tells the source its records are safe and commits positions.
  Status flushAndCommit() {
    if (held_.empty()) return Status::ok();
    if (cancelled()) return cancelledError();
    FERRY_RETURN_IF_ERROR(errors_->flush(std::chrono::milliseconds(env_.worker->offsetFlushTimeoutMs)));
    FERRY_RETURN_IF_ERROR(guarded("flush", [&] { return sinkTask_->flush(); }).withContext("sink flush"));
    if (cancelled()) return cancelledError();  // the flush returned after the stop timed out
    PositionBuffer positions;
    for (auto& r : held_) {
      guarded("commitRecord", [&] {
        sourceTask_->commitRecord(r);
        return Status::ok();
      }).isOk();
      positions.add(r.position);
    }
    if (env_.positions) {
      auto allowed = effect();
      if (!allowed) return cancelledError();
      FERRY_RETURN_IF_ERROR(positions.commit(*env_.positions, env_.connector).withContext("committing positions"));
    }
    FERRY_RETURN_IF_ERROR(guarded("commit", [&] { return sourceTask_->commit(); }));
    metrics_.commitLagRecords.fetch_sub(static_cast<std::int64_t>(held_.size()), std::memory_order_relaxed);
    held_.clear();
    heldBytes_ = 0;
    metrics_.inflightRecords.store(0, std::memory_order_relaxed);
    metrics_.inflightBytes.store(0, std::memory_order_relaxed);
    metrics_.commits.fetch_add(1, std::memory_order_relaxed);
    metrics_.lastCommitMs.store(core::nowMs(), std::memory_order_relaxed);
    return Status::ok();
  }

  Status shutdown(bool healthy) {
    if (sourceStarted_) guarded("stop", [&] {
        sourceTask_->stop();
        return Status::ok();
      }).isOk();
    // Without the lease the sink is not flushed and no position committed: the next owner
    // reads again what this one polled since its last commit.
    Status s = healthy && mayCommit() ? flushAndCommit() : Status::ok();
    for (auto& r : held_)
      if (r.acknowledger) r.acknowledger->release(false);
    held_.clear();
    if (sinkStarted_) guarded("stop", [&] {
        sinkTask_->stop();
        return Status::ok();
      }).isOk();
    return s;
  }

  PluginPtr<SourceConnector> source_;
  PluginPtr<SinkConnector> sink_;
  std::unique_ptr<SourceTask> sourceTask_;
  std::unique_ptr<SinkTask> sinkTask_;
  std::unique_ptr<TransformChain> chain_;
  std::unique_ptr<ErrorReporter> errors_;
  std::unique_ptr<SinkContextImpl> sinkContext_;
  std::atomic<bool> commitRequested_{false};
  bool sourceStarted_ = false;
  bool sinkStarted_ = false;
  std::vector<Record> held_;  // polled since the last flush (position + acknowledger only)
  std::int64_t heldBytes_ = 0;
};

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
        return std::unique_ptr<TaskRunner>(new TransactionalSourceRunner(std::move(env)));
      if (configValue(env.config, "exactly.once.support") == "required")
        return std::unique_ptr<TaskRunner>(new FailingRunner(std::move(env), Status::failedPrecondition(
            "exactly.once.support=required, but the worker has exactly.once.source.support=disabled")));
      return std::unique_ptr<TaskRunner>(new SourceRunner(std::move(env)));
    case ConnectorShape::kSink: return std::unique_ptr<TaskRunner>(new SinkRunner(std::move(env)));
    case ConnectorShape::kDirect: return std::unique_ptr<TaskRunner>(new DirectRunner(std::move(env)));
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
  if (thread_.joinable()) {
    requestStop();
    thread_.join();
  }
}

void TaskRunner::start() {
  startedAtMs_ = core::monotonicMs();
  thread_ = std::thread([this] {
    tActivity = &activity_;
    Status s;
    try {
      s = run();
    } catch (const std::exception& e) {
      s = Status::internal(std::string("task threw: ") + e.what());
    } catch (...) {
      s = Status::internal("task threw a non-standard exception");
    }
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
    tActivity = nullptr;
    {
      std::lock_guard lock(doneMu_);
      finished_.store(true);
    }
    doneCv_.notify_all();
  });
}

void TaskRunner::setPaused(bool p) {
  paused_.store(p);
  std::lock_guard lock(waitMu_);
  waitCv_.notify_all();
}

void TaskRunner::requestStop() {
  stop_.store(true);
  std::lock_guard lock(waitMu_);
  waitCv_.notify_all();
}

void TaskRunner::join() {
  if (thread_.joinable()) {
    requestStop();
    thread_.join();
  }
}

bool TaskRunner::join(std::chrono::milliseconds timeout) {
  if (!thread_.joinable()) return true;
  requestStop();
  {
    std::unique_lock lock(doneMu_);
    if (!doneCv_.wait_for(lock, std::max(timeout, std::chrono::milliseconds(0)), [&] { return finished_.load(); }))
      return false;
  }
  thread_.join();  // the thread has left run(): this returns at once
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

void TaskRunner::idleWait(std::int64_t ms) {
  std::unique_lock lock(waitMu_);
  const bool wasPaused = paused();
  waitCv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return stopping() || paused() != wasPaused; });
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

}  // namespace ferry::runtime
