// The tasks that run on this worker (see task_host.h).
#include "control/task_host.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/logging.h"

namespace ferry::control {

namespace {
runtime::ExecutorOptions executorOptions(const runtime::WorkerConfig& w) {
  runtime::ExecutorOptions o;
  o.threads = w.taskThreads;
  o.name = "task";
  return o;
}
}  // namespace

TaskHost::TaskHost(TaskHostOptions o)
    : o_(std::move(o)),
      executor_(std::make_unique<runtime::Executor>(executorOptions(*o_.worker))),
      producers_(o_.backbone ? std::make_unique<backbone::SharedProducer>(*o_.backbone) : nullptr),
      schemas_(o_.backbone && !o_.worker->schemaStorageTopic.empty()
                   ? std::make_unique<runtime::SchemaRegistry>(*o_.backbone, o_.worker->schemaStorageTopic)
                   : nullptr),
      stopper_(std::chrono::milliseconds(o_.worker->taskShutdownTimeoutMs)) {}

TaskHost::~TaskHost() {
  // An abandoned task may still be inside a step that never returns (its connector wedged): the
  // executor would wait for it for ever, so it is left allocated, as the abandoned runners are.
  stopper_.reap();
  if (stopper_.abandonedRunning() > 0) (void)executor_.release();
}

std::unique_ptr<runtime::TaskRunner> TaskHost::start(const std::string& connector, int taskId,
                                                     runtime::ConnectorShape shape, const StringMap& config,
                                                     bool paused, TaskHooks hooks) {
  runtime::TaskEnv env;
  env.registry = o_.registry;
  env.executor = executor_.get();
  env.backbone = o_.backbone;
  env.producers = producers_.get();
  env.schemas = schemas_.get();
  env.positions = o_.positions;
  env.worker = o_.worker;
  env.connector = connector;
  env.taskId = taskId;
  env.shape = shape;
  env.config = config;
  env.onState = std::move(hooks.onState);
  env.onTopic = std::move(hooks.onTopic);
  env.mayRun = std::move(hooks.mayRun);
  env.leaseValid = std::move(hooks.leaseValid);
  env.mayCommit = std::move(hooks.mayCommit);
  env.tap = taps_.point(connector);
  auto runner = runtime::TaskRunner::create(std::move(env));
  runner->setPaused(paused);
  runner->start();
  return runner;
}

RestartState TaskHost::restartState() const {
  return RestartState(o_.worker->taskRestartBackoffInitialMs, o_.worker->taskRestartBackoffMaxMs);
}

bool TaskHost::restartDue(RestartState& state, const runtime::TaskRunner& runner, const std::string& connector,
                          int taskId) const {
  if (!o_.worker->taskRestartEnable) return false;
  // The steady clock TaskRunner::startedAtMs() is read from (the arithmetic is
  // core::RestartBackoff's, tested with injected times).
  const std::int64_t now = core::monotonicMs();
  if (state.restartAtMs < 0) {
    const std::int64_t ranFor = now - runner.startedAtMs();
    state.restartAtMs = state.backoff.onFailure(now, ranFor);
    core::logger("herder")->info("task {}-{} failed; restarting in {} ms (failure {} in a row)", connector, taskId,
                                 state.restartAtMs - now, state.backoff.failures());
    return false;
  }
  return now >= state.restartAtMs;
}

std::int64_t TaskHost::connectorRestartDelayMs(int failures) const {
  return core::backoffDelay(o_.worker->taskRestartBackoffInitialMs, o_.worker->taskRestartBackoffMaxMs, failures);
}

bool TaskHost::isInternalTopic(const std::string& topic) const {
  const auto& w = *o_.worker;
  // The cluster's log, its snapshots and its offsets (runtime::kClusterTopicPrefix); any cluster's,
  // not only this worker's.
  return topic == w.offsetStorageTopic || topic == w.schemaStorageTopic || topic.rfind(runtime::kClusterTopicPrefix, 0) == 0;
}

Result<std::vector<backbone::TopicInfo>> TaskHost::topics() const {
  if (o_.backbone == nullptr) return Status::failedPrecondition("this worker has no backbone to read");
  FERRY_ASSIGN_OR_RETURN(auto all, o_.backbone->admin().listTopics());
  std::vector<backbone::TopicInfo> out;
  for (auto& t : all)
    if (!isInternalTopic(t.name) && t.name.rfind("__", 0) != 0) out.push_back(std::move(t));  // "__": the broker's
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

Result<std::vector<TopicRecord>> TaskHost::topicRecords(const std::string& topic, std::size_t limit) const {
  if (o_.backbone == nullptr) return Status::failedPrecondition("this worker has no backbone to read");
  FERRY_RETURN_IF_ERROR(o_.backbone->validateTopicName(topic));
  if (isInternalTopic(topic)) return Status::failedPrecondition("topic " + topic + " is the worker's own");
  // Newest `limit` by timestamp, then queue and offset (a stable order for equal times); trimmed
  // as it goes so that many queues never hold more than 2 x limit records.
  std::vector<TopicRecord> kept;
  auto newer = [](const TopicRecord& a, const TopicRecord& b) {
    return std::tie(a.record.timestampMs, a.queue, a.offset) > std::tie(b.record.timestampMs, b.queue, b.offset);
  };
  auto trim = [&] {
    std::sort(kept.begin(), kept.end(), newer);
    if (kept.size() > limit) kept.resize(limit);
  };
  FERRY_RETURN_IF_ERROR(o_.backbone->peek(
      topic, limit,
      [&](const backbone::Message& m) {
        kept.push_back(TopicRecord{runtime::boundedCopy(-1, m.topic, m.key, m.value, m.headers, m.timestampMs), m.queue,
                                   m.offset});
        if (kept.size() >= 2 * limit) trim();
      },
      std::chrono::seconds(5)));
  trim();
  std::reverse(kept.begin(), kept.end());  // oldest first
  return kept;
}

std::optional<ConnectionInfo> TaskHost::connectionOf(const runtime::TaskMetrics& m) {
  auto c = m.connection(core::nowMs());
  if (!c) return std::nullopt;
  ConnectionInfo out;
  switch (c->state) {
    case ConnectionHealth::State::kConnected: out.state = "connected"; break;
    case ConnectionHealth::State::kReconnecting: out.state = "reconnecting"; break;
    case ConnectionHealth::State::kDegraded: out.state = "degraded"; break;
  }
  out.reason = c->reason;
  out.sinceMs = c->sinceMs;
  out.reconnects = c->reconnects;
  return out;
}

std::string TaskHost::connectionText(const ConnectionInfo& c) {
  // The reason is cut so that a heartbeat stays small.
  std::string reason = c.reason.size() > 300 ? c.reason.substr(0, 300) + "..." : c.reason;
  return nlohmann::json{{"state", c.state}, {"reason", reason}, {"since", c.sinceMs}, {"reconnects", c.reconnects}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<ConnectionInfo> TaskHost::readConnectionText(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("state") || !j["state"].is_string() || !j.contains("reason") ||
      !j["reason"].is_string() || !j.contains("since") || !j["since"].is_number_integer() ||
      !j.contains("reconnects") || !j["reconnects"].is_number_unsigned())
    return std::nullopt;
  ConnectionInfo c{j["state"].get<std::string>(), j["reason"].get<std::string>(), j["since"].get<std::int64_t>(),
                   j["reconnects"].get<std::uint64_t>()};
  if (c.state != "connected" && c.state != "reconnecting" && c.state != "degraded") return std::nullopt;
  return c;
}

TaskCounters TaskHost::countersOf(const runtime::TaskMetrics& m) {
  auto ld = [](const auto& a) { return static_cast<std::int64_t>(a.load(std::memory_order_relaxed)); };
  return TaskCounters{ld(m.recordsIn), ld(m.recordsOut), ld(m.errors), std::max<std::int64_t>(0, ld(m.commitLagRecords))};
}

void TaskHost::appendTaskMetrics(std::vector<MetricSample>& out, const std::string& connector, int taskId,
                                 const runtime::TaskMetrics& m) {
  const std::map<std::string, std::string> l{{"connector", connector}, {"task", std::to_string(taskId)}};
  auto add = [&](const char* name, const char* type, const char* help, double value) {
    out.push_back(MetricSample{name, l, value, help, type});
  };
  auto ld = [](const auto& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); };
  add("ferry_task_records_in_total", "counter",
      "Records taken in by the task (polled from the source, or read from the backbone).", ld(m.recordsIn));
  add("ferry_task_records_out_total", "counter",
      "Records delivered by the task (acknowledged by the backbone, or put to the sink).", ld(m.recordsOut));
  add("ferry_task_bytes_in_total", "counter", "Bytes taken in by the task.", ld(m.bytesIn));
  add("ferry_task_bytes_out_total", "counter", "Bytes delivered by the task.", ld(m.bytesOut));
  add("ferry_task_records_dropped_total", "counter", "Records dropped by transforms (filters).", ld(m.recordsDropped));
  add("ferry_task_errors_total", "counter", "Record errors (tolerated or not).", ld(m.errors));
  add("ferry_task_dead_letter_records_total", "counter", "Records sent to the dead-letter topic.", ld(m.deadLettered));
  add("ferry_task_retries_total", "counter", "Retried calls (retriable errors).", ld(m.retries));
  add("ferry_task_commits_total", "counter", "Position / offset commits.", ld(m.commits));
  add("ferry_task_inflight_records", "gauge", "Records taken in and not yet safe.", ld(m.inflightRecords));
  add("ferry_task_inflight_bytes", "gauge", "Bytes taken in and not yet safe.", ld(m.inflightBytes));
  add("ferry_task_commit_lag_records", "gauge",
      "Records taken in whose position (source) or offset (sink) is not committed yet.", ld(m.commitLagRecords));
  add("ferry_task_last_commit_timestamp_ms", "gauge", "Wall-clock time of the last commit.", ld(m.lastCommitMs));
  add("ferry_task_records_lost_in_storage_total", "counter",
      "Records the task could not read because the backbone's storage lost them.", ld(m.recordsLostInStorage));
  if (auto c = connectionOf(m)) {
    add("ferry_task_connected", "gauge",
        "1 while the task is connected to its outside system (also when degraded), 0 while it reconnects.",
        c->state == "reconnecting" ? 0.0 : 1.0);
    add("ferry_task_connection_degraded", "gauge",
        "1 while the task's connection is degraded (repeated reconnects, a stalled peer, input it cannot take).",
        c->state == "degraded" ? 1.0 : 0.0);
    add("ferry_task_reconnects_total", "counter", "Times the task's connection was lost.",
        static_cast<double>(c->reconnects));
  }
  if (auto p = m.progress()) {
    add("ferry_task_progress_done", "gauge", "Long work done (a table's first load, a snapshot), in the unit the task says.",
        static_cast<double>(p->report.done));
    add("ferry_task_progress_estimated", "gauge", "Long work expected in all (-1: not known).",
        static_cast<double>(p->report.estimated));
    add("ferry_task_progress_rate", "gauge", "Long work done per second (recent).", p->ratePerSecond);
  }
  // A Prometheus histogram: cumulative buckets by `le`, then _sum and _count.
  static constexpr const char* kLatency = "ferry_task_record_latency_seconds";
  static constexpr const char* kLatencyHelp =
      "Time records spent inside the worker: from receiving a record (its bytes read from the source's "
      "connection, or the record taken from poll()) to handing it to the task's output (the sink task's put() "
      "returned, or the backbone producer took it).";
  // The `le` values, once: plain decimals (0.00005, not 5e-05), trailing zeros dropped, then +Inf.
  static const std::vector<std::string> kLe = [] {
    std::vector<std::string> le;
    for (double bound : core::LatencyHistogram::kBoundsSeconds) {
      char buf[32];
      int n = std::snprintf(buf, sizeof buf, "%.5f", bound);
      while (n > 1 && buf[n - 1] == '0') buf[--n] = '\0';
      if (n > 1 && buf[n - 1] == '.') buf[--n] = '\0';
      le.emplace_back(buf);
    }
    le.emplace_back("+Inf");
    return le;
  }();
  const auto h = m.latency.snapshot();
  for (std::size_t i = 0; i <= core::LatencyHistogram::kBounds; ++i) {
    auto bl = l;
    bl["le"] = kLe[i];
    out.push_back(MetricSample{std::string(kLatency) + "_bucket", std::move(bl), static_cast<double>(h.cumulative[i]),
                               kLatencyHelp, "histogram"});
  }
  out.push_back(MetricSample{std::string(kLatency) + "_sum", l, h.sumSeconds, kLatencyHelp, "histogram"});
  out.push_back(
      MetricSample{std::string(kLatency) + "_count", l, static_cast<double>(h.count), kLatencyHelp, "histogram"});
}

void TaskHost::appendWorkerMetrics(std::vector<MetricSample>& out, std::size_t tasks) const {
  out.push_back(MetricSample{"ferry_worker_tasks", {}, static_cast<double>(tasks), "Tasks running on this worker.",
                             "gauge"});
  out.push_back(MetricSample{"ferry_tasks_abandoned_total", {}, static_cast<double>(stopper_.abandonedTotal()),
                             "Tasks that did not stop within task.shutdown.graceful.timeout.ms and were abandoned "
                             "(cancelled).",
                             "counter"});
  out.push_back(MetricSample{"ferry_tasks_abandoned_running", {}, static_cast<double>(stopper_.abandonedRunning()),
                             "Abandoned tasks whose threads still run.", "gauge"});
  out.push_back(MetricSample{"ferry_worker_task_threads", {}, static_cast<double>(executor_->threads()),
                             "Threads running task loops now: the shared ones (task.threads) and those moved off "
                             "them while a connector call blocks.",
                             "gauge"});
  out.push_back(MetricSample{"ferry_worker_task_threads_blocked", {}, static_cast<double>(executor_->blockedThreads()),
                             "Task threads inside a connector call that has blocked longer than 50 ms.", "gauge"});
  out.push_back(MetricSample{"ferry_worker_task_steps_total", {}, static_cast<double>(executor_->steps()),
                             "Steps of task loops run on this worker.", "counter"});
  out.push_back(MetricSample{"ferry_worker_task_steps_blocked_total", {}, static_cast<double>(executor_->blockedSteps()),
                             "Steps of task loops found blocked (in one connector call for more than 50 ms); each "
                             "moved its thread off the shared ones.",
                             "counter"});
}

}  // namespace ferry::control
