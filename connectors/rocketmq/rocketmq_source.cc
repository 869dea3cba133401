// RocketMQSource (see rocketmq_source.h).
#include "connectors/rocketmq/rocketmq_source.h"

#include <unistd.h>

#include <atomic>

#include "rocketmq/client.h"
#include "connectors/common.h"
#include "core/logging.h"

namespace ferry::connectors {
namespace {

std::atomic<std::uint64_t> gInstance{0};

}  // namespace

const ConfigDef& RocketMQSourceConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("rocketmq.namesrv", ConfigType::kString, std::nullopt, Importance::kHigh,
             "NameServer addresses, 'host:port;host:port'.", validators::nonEmptyString());
    d.define("rocketmq.topics", ConfigType::kList, std::nullopt, Importance::kHigh,
             "RocketMQ topics to read.", validators::nonEmptyList());
    d.define("rocketmq.tags", ConfigType::kString, "*", Importance::kMedium,
             "Tag expression: '*' for every message, or 'TagA || TagB'.");
    d.define("rocketmq.group", ConfigType::kString, "", Importance::kMedium,
             "Consumer group shared by the tasks; empty means 'ferry-<connector name>'.");
    d.define("rocketmq.from", ConfigType::kString, "last", Importance::kMedium,
             "Where a queue the group never committed starts: 'first' or 'last'.",
             validators::oneOf({"first", "last"}));
    d.define("topic", ConfigType::kString, "", Importance::kMedium,
             "Ferry topic of the records; empty means the RocketMQ topic's name.");
    d.define("key.from", ConfigType::kString, "keys", Importance::kLow,
             "Record key: 'keys' (the KEYS property) or 'none' (null).",
             validators::oneOf({"keys", "none"}));
    d.define("rocketmq.access.key", ConfigType::kString, "", Importance::kMedium,
             "ACL access key; when set every request is signed.");
    d.define("rocketmq.secret.key", ConfigType::kPassword, "", Importance::kMedium,
             "ACL secret key.");
    d.define("rocketmq.request.timeout.ms", ConfigType::kLong, "3000", Importance::kLow,
             "Timeout of one request to a NameServer or broker.", validators::atLeast(100));
    return d;
  }();
  return def;
}

std::string RocketMQSourceConnector::version() const { return kVersion; }

Status RocketMQSourceConnector::start(const StringMap& config, ConnectorContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "RocketMQSource"));
  config_ = config;
  if (parsed.getString("rocketmq.group").empty())
    config_["rocketmq.group"] = rmq::safeName("ferry-" + context.connectorName());
  return Status::ok();
}

Result<std::vector<StringMap>> RocketMQSourceConnector::taskConfigs(int maxTasks) {
  // Every task joins the same group; the broker-side rebalance spreads the queues.
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)), config_);
}

std::unique_ptr<SourceTask> RocketMQSourceConnector::createTask() {
  return std::make_unique<RocketMQSourceTask>();
}

RocketMQSourceTask::RocketMQSourceTask() : log_(core::logger("rocketmq-source")) {}

RocketMQSourceTask::~RocketMQSourceTask() { stop(); }

std::string RocketMQSourceTask::version() const { return kVersion; }

Status RocketMQSourceTask::setup(const StringMap& config, SourceTaskContext& context,
                                 rocketmq::ClientOptions& co, rocketmq::ConsumerOptions& opts) {
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(RocketMQSourceConnector::definition(), config,
                                                  "RocketMQSource task"));
  options_.targetTopic = parsed.getString("topic");
  options_.keyFromKeys = parsed.getString("key.from") == "keys";
  std::string group = parsed.getString("rocketmq.group");
  if (group.empty()) group = rmq::safeName("ferry-" + context.connectorName());
  co.namesrvAddrs = parsed.getString("rocketmq.namesrv");
  co.accessKey = parsed.getString("rocketmq.access.key");
  co.secretKey = parsed.getString("rocketmq.secret.key");
  co.requestTimeoutMs = parsed.getLong("rocketmq.request.timeout.ms");
  opts.group = group;
  const std::string tags = parsed.getString("rocketmq.tags");
  for (const std::string& t : parsed.getList("rocketmq.topics"))
    opts.subscriptions.push_back({t, tags.empty() ? "*" : tags});
  opts.fromWhere = parsed.getString("rocketmq.from") == "first"
                       ? rocketmq::ConsumeFromWhere::kFirstOffset
                       : rocketmq::ConsumeFromWhere::kLastOffset;
  return Status::ok();
}

bool RocketMQSourceTask::toRecord(rocketmq::PulledMessage& m, Record& out) {
  out = rmq::recordFromMessage(m.message, m.brokerName, options_);
  out.receivedNs = m.receivedNs;
  return true;
}

Status RocketMQSourceTask::start(const StringMap& config, SourceTaskContext& context) {
  stop();
  context_ = &context;
  rocketmq::ClientOptions co;
  rocketmq::ConsumerOptions opts;
  FERRY_RETURN_IF_ERROR(setup(config, context, co, opts));
  // A broker coming back is seen within about a second (reconnect attempts every 0.5 s at most,
  // an unreachable queue's pull retried every 0.5 s) instead of up to 5 + 3 s.
  co.reconnectBackoffMaxMs = 500;
  opts.unreachablePullBackoffMs = 500;
  co.instanceName = "ferry-src-" + std::to_string(::getpid()) + "-" +
                    std::to_string(gInstance.fetch_add(1));
  FERRY_ASSIGN_OR_RETURN(client_, rocketmq::RocketmqClient::create(co));
  std::string topics;
  for (const auto& sub : opts.subscriptions) topics += (topics.empty() ? "" : ",") + sub.topic;
  consumer_ = std::make_unique<rocketmq::PullConsumer>(*client_, opts, this);
  consumer_->setWaker([ctx = &context] { ctx->wakeup(); });
  // The consumer pulls in the background and poll() never fails while a broker is away, so the
  // runtime cannot infer the connection: the consumer tells it (reconnecting with the pull's or
  // the heartbeat's error, connected when a broker answers again, degraded while a queue's head
  // message does not decode).
  consumer_->setHealthListener(
      [ctx = &context](const ConnectionHealth& h) { ctx->reportConnection(h); });
  Status s = consumer_->start();
  if (!s.isOk()) {
    consumer_.reset();
    client_.reset();
    // An unknown topic may be created later; everything else is the broker being away.
    return s.withContext("cannot start the consumer of group " + opts.group);
  }
  log_->info("{} task {}: consuming {} as group {}", context.connectorName(), context.taskId(),
             topics, opts.group);
  return Status::ok();
}

Result<std::size_t> RocketMQSourceTask::poll(std::vector<Record>& out, std::size_t maxRecords,
                                             std::chrono::milliseconds maxWait) {
  if (!consumer_) return Status::failedPrecondition("RocketMQSource: poll() before start()");
  FERRY_ASSIGN_OR_RETURN(auto messages, consumer_->poll(maxRecords, maxWait));
  out.reserve(out.size() + messages.size());
  std::size_t n = 0;
  // Messages come in runs of one queue: its lastPolled_ entry is looked up once per run (a
  // std::map entry stays where it is while others are added).
  std::int64_t* lastOfQueue = nullptr;
  const rocketmq::PulledMessage* runOf = nullptr;
  for (rocketmq::PulledMessage& m : messages) {
    if (runOf == nullptr || m.message.queueId != runOf->message.queueId ||
        m.brokerName != runOf->brokerName || m.message.topic != runOf->message.topic) {
      lastOfQueue = nullptr;
      runOf = &m;
    }
    const std::int64_t next = m.message.queueOffset + 1;
    Record r;
    if (toRecord(m, r)) {
      out.push_back(std::move(r));
      if (lastOfQueue == nullptr) lastOfQueue = &lastPolled_[m.queue()];
      *lastOfQueue = next;
      ++n;
      continue;
    }
    const rocketmq::MessageQueue q = m.queue();
    // Skipped: safe as soon as every record polled before it is.
    auto lp = lastPolled_.find(q);
    auto sf = safe_.find(q);
    if (lp == lastPolled_.end() || (sf != safe_.end() && sf->second >= lp->second)) {
      std::int64_t& safe = safe_[q];
      if (next > safe) {
        safe = next;
        dirty_ = true;
      }
    } else {
      skipTo_[q] = {lp->second, next};
    }
  }
  return n;
}

void RocketMQSourceTask::commitRecord(const Record& record) {
  auto queue = rmq::queueFromPartition(record.position.partition);
  auto next = rmq::offsetFromPosition(record.position.offset);
  if (!queue || !next) return;
  // A record polled before its queue was revoked: the queue is someone else's now (or ours again
  // from another start); committing it would put the group's offset back.
  if (assigned_.count(*queue) == 0) return;
  std::int64_t& safe = safe_[*queue];
  if (*next > safe) {
    safe = *next;
    dirty_ = true;
  }
  auto skip = skipTo_.find(*queue);
  if (skip != skipTo_.end() && safe >= skip->second.first) {
    safe = std::max(safe, skip->second.second);
    skipTo_.erase(skip);
  }
}

Status RocketMQSourceTask::commit() {
  if (!consumer_ || !dirty_) return Status::ok();
  Status s = consumer_->commit(safe_);
  if (!s.isOk()) {
    // The runtime keeps the positions too; the broker offset only decides where a fresh task
    // without them resumes, so a failed commit is retried at the next commit.
    log_->warn("RocketMQSource: committing offsets to the broker failed: {}", s.toString());
    return Status::ok();
  }
  dirty_ = false;
  return Status::ok();
}

void RocketMQSourceTask::onRevoked(const std::vector<rocketmq::MessageQueue>& queues) {
  std::map<rocketmq::MessageQueue, std::int64_t> revoked;
  for (const auto& q : queues) {
    assigned_.erase(q);
    lastPolled_.erase(q);
    skipTo_.erase(q);
    auto it = safe_.find(q);
    if (it == safe_.end()) continue;
    revoked.insert(*it);
    safe_.erase(it);
  }
  if (revoked.empty() || !consumer_) return;
  Status s = consumer_->commit(revoked);
  if (!s.isOk()) log_->warn("RocketMQSource: commit of revoked queues failed: {}", s.toString());
}

void RocketMQSourceTask::onAssigned(const std::vector<rocketmq::MessageQueue>& queues) {
  assigned_.insert(queues.begin(), queues.end());
  if (context_ == nullptr || !consumer_) return;
  for (const auto& q : queues) {
    auto committed = context_->committedOffset(rmq::queuePartition(q));
    if (!committed) continue;
    auto next = rmq::offsetFromPosition(*committed);
    if (!next) continue;
    Status s = consumer_->seek(q, *next);
    if (!s.isOk())
      log_->warn("RocketMQSource: cannot resume {} at {}: {}", q.toString(), *next, s.toString());
  }
}

void RocketMQSourceTask::stop() {
  if (consumer_) {
    (void)commit();
    consumer_->close();
    consumer_.reset();
  }
  client_.reset();
  safe_.clear();
  assigned_.clear();
  lastPolled_.clear();
  skipTo_.clear();
  dirty_ = false;
}

}  // namespace ferry::connectors
