// RocketMQ Replicator (see replicator.h).
#include "connectors/rocketmq/replicator.h"


#include <algorithm>

#include "connectors/common.h"
#include "connectors/rocketmq/rocketmq_mapping.h"
#include "core/clock.h"
#include "core/logging.h"
#include "core/thread.h"
#include "rocketmq/admin.h"
#include "rocketmq/client_pool.h"
#include "rocketmq/remoting.h"

namespace ferry::connectors {
namespace {

constexpr std::size_t kMaxBatchBytes = 1u << 20;
constexpr const char* kTaskTopicsKey = "replicator.task.topics";  // set by taskConfigs()

std::string aliasOf(const ParsedConfig& p, const char* side) {
  std::string alias = p.getString(std::string(side) + ".alias");
  return alias.empty() ? p.getString(std::string(side) + ".namesrv") : alias;
}

// Client options for one side ("source" / "target") of the replicator.
rocketmq::ClientOptions sideOptions(const ParsedConfig& p, const std::string& side) {
  rocketmq::ClientOptions co;
  co.namesrvAddrs = p.getString(side + ".namesrv");
  co.requestTimeoutMs = p.getLong("request.timeout.ms");
  co.accessKey = p.getString(side + ".access.key");
  co.secretKey = p.getString(side + ".secret.key");
  co.reconnectBackoffMaxMs = 500;  // a broker coming back is seen within about half a second
  return co;
}

std::string joinList(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

const ConfigDef& replicatorDefinition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("source.namesrv", ConfigType::kString, std::nullopt, Importance::kHigh,
             "NameServer addresses of the source cluster, 'host:port;host:port'.",
             validators::nonEmptyString());
    d.define("target.namesrv", ConfigType::kString, std::nullopt, Importance::kHigh,
             "NameServer addresses of the target cluster.", validators::nonEmptyString());
    d.define("source.alias", ConfigType::kString, "", Importance::kMedium,
             "Name of the source cluster in replication paths and ${source.alias}; empty means "
             "source.namesrv.");
    d.define("target.alias", ConfigType::kString, "", Importance::kMedium,
             "Name of the target cluster; messages that came from it are not replicated back "
             "(loop prevention). Empty means target.namesrv.");
    d.define("topics", ConfigType::kList, "", Importance::kHigh, "Source topics to replicate.");
    d.define("topics.regex", ConfigType::kString, "", Importance::kHigh,
             "Regex (ECMAScript, whole name) of further source topics to replicate.");
    d.define("topics.exclude", ConfigType::kString, "", Importance::kMedium,
             "Regex of source topics never replicated.");
    d.define("topic.rename", ConfigType::kString, "${topic}", Importance::kMedium,
             "Target topic name: ${topic} and ${source.alias} are replaced.");
    d.define("placement", ConfigType::kString, "preserve", Importance::kMedium,
             "'preserve': a message goes to the target queue with its source queue's index "
             "(order per queue kept; needed for checkpoints); 'hash': a hash of its KEYS.",
             validators::oneOf({"preserve", "hash"}));
    d.define("source.group", ConfigType::kString, "", Importance::kMedium,
             "Consumer group of the replicator on the source; empty means "
             "'ferry-replicator-<connector name>'.");
    d.define("source.from", ConfigType::kString, "first", Importance::kMedium,
             "Where a queue the replicator never read starts: 'first' or 'last'.",
             validators::oneOf({"first", "last"}));
    d.define("target.create.topics", ConfigType::kBool, "true", Importance::kMedium,
             "Create missing target topics with the source topic's queue count.");
    d.define("target.cluster", ConfigType::kList, "", Importance::kLow,
             "Clusters or broker names of the target where topics are created; empty: all.");
    d.define("topics.refresh.interval.ms", ConfigType::kLong, "10000", Importance::kLow,
             "How often the source's topic list is re-read for new topics.",
             validators::atLeast(100));
    d.define("source.rebalance.interval.ms", ConfigType::kLong, "5000", Importance::kLow,
             "How often the source consumer re-reads routes and rebalances (new queues).",
             validators::atLeast(100));
    d.define("checkpoint.groups", ConfigType::kList, "", Importance::kMedium,
             "Consumer groups whose source offsets are translated onto the target.");
    d.define("checkpoint.interval.ms", ConfigType::kLong, "5000", Importance::kLow,
             "How often checkpoints are written.", validators::atLeast(100));
    d.define("heartbeats.topic", ConfigType::kString, "ferry_heartbeats", Importance::kLow,
             "Topic on the source cluster the connector writes heartbeats into (replicated like "
             "any topic); empty disables heartbeats.");
    d.define("heartbeats.interval.ms", ConfigType::kLong, "1000", Importance::kLow,
             "Interval between heartbeats.", validators::atLeast(10));
    d.define("batch.size", ConfigType::kInt, "128", Importance::kLow,
             "Most messages per target send (SEND_BATCH_MESSAGE), at most 1 MiB of bodies.",
             validators::between(1, 1000));
    d.define("max.in.flight", ConfigType::kInt, "10000", Importance::kLow,
             "Most messages outstanding on the target at once.", validators::atLeast(1));
    for (const char* side : {"source", "target"}) {
      d.define(std::string(side) + ".access.key", ConfigType::kString, "", Importance::kMedium,
               std::string("ACL access key for the ") + side + " cluster; when set every request is signed.");
      d.define(std::string(side) + ".secret.key", ConfigType::kPassword, "", Importance::kMedium,
               std::string("ACL secret key for the ") + side + " cluster.");
    }
    d.define("request.timeout.ms", ConfigType::kLong, "3000", Importance::kLow,
             "Timeout of one request to a NameServer or broker.", validators::atLeast(100));
    return d;
  }();
  return def;
}

void validateReplicatorConfig(const StringMap& config, ConfigValidation& v) {
  auto parsed = replicatorDefinition().parse(config, false);
  if (!parsed.isOk()) return;  // the ConfigDef already reported it
  const auto topics = parsed->getList("topics");
  const std::string regex = parsed->getString("topics.regex");
  if (topics.empty() && regex.empty())
    v.errors["topics"].push_back("give topics, topics.regex or both");
  auto filter = repl::TopicFilter::create(topics, regex, parsed->getString("topics.exclude"));
  if (!filter.isOk())
    v.errors[regex.empty() ? "topics.exclude" : "topics.regex"].push_back(filter.status().message());
  Status rename = repl::validateRenameFormat(parsed->getString("topic.rename"));
  if (!rename.isOk()) v.errors["topic.rename"].push_back(rename.message());
  const std::string src = aliasOf(*parsed, "source"), dst = aliasOf(*parsed, "target");
  if (src == dst) v.errors["target.alias"].push_back("source and target aliases are both '" + src + "'");
  if (parsed->getString("source.namesrv") == parsed->getString("target.namesrv") &&
      parsed->getString("topic.rename") == "${topic}")
    v.errors["topic.rename"].push_back(
        "source and target are the same cluster: a rename is needed or every message would "
        "be replicated onto itself");
  if (!parsed->getList("checkpoint.groups").empty() && parsed->getString("placement") != "preserve")
    v.errors["checkpoint.groups"].push_back("checkpoints need placement=preserve");
}

// ---------------------------------------------------------------------------------------------
// Source connector

RocketMQReplicatorConnector::~RocketMQReplicatorConnector() { stop(); }

std::string RocketMQReplicatorConnector::version() const { return kVersion; }

Status RocketMQReplicatorConnector::start(const StringMap& config, ConnectorContext& context) {
  stop();
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(replicatorDefinition(), config, "RocketMQReplicator"));
  ConfigValidation v;
  validateReplicatorConfig(config, v);
  if (!v.ok()) return Status::invalidArgument("RocketMQReplicator: " + v.summary());
  config_ = config;
  context_ = &context;
  if (p.getString("source.group").empty())
    config_["source.group"] = rmq::safeName("ferry-replicator-" + context.connectorName());
  FERRY_ASSIGN_OR_RETURN(auto filter, repl::TopicFilter::create(p.getList("topics"), p.getString("topics.regex"),
                                                                p.getString("topics.exclude")));
  filter_ = std::make_unique<repl::TopicFilter>(std::move(filter));
  sourceAlias_ = aliasOf(p, "source");
  heartbeatTopic_ = p.getString("heartbeats.topic");
  heartbeatMs_ = p.getLong("heartbeats.interval.ms");
  refreshMs_ = p.getLong("topics.refresh.interval.ms");
  FERRY_ASSIGN_OR_RETURN(client_, rocketmq::sharedClient(sideOptions(p, "source")));
  if (!heartbeatTopic_.empty()) {
    if (!client_->queryRoute(heartbeatTopic_).isOk())
      FERRY_RETURN_IF_ERROR(client_->createTopic(heartbeatTopic_, 1).withContext(
          "RocketMQReplicator: creating heartbeats topic on the source"));
    rocketmq::ProducerOptions po;
    po.group = "ferry_replicator_heartbeats";
    heartbeatProducer_ = std::make_unique<rocketmq::Producer>(*client_, po);
  }
  FERRY_ASSIGN_OR_RETURN(auto topics, selectTopics());
  {
    std::lock_guard lock(mu_);
    topics_ = std::move(topics);
    stopping_ = false;
  }
  thread_ = core::namedThread("repl-bg", [this] { background(); });
  return Status::ok();
}

Result<std::vector<std::string>> RocketMQReplicatorConnector::selectTopics() {
  FERRY_ASSIGN_OR_RETURN(auto all, rocketmq::listTopics(*client_));
  std::vector<std::string> names;
  if (auto info = client_->clusterInfo(); info.isOk()) {
    for (const auto& [c, brokers] : info->clusters) {
      names.push_back(c);
      names.insert(names.end(), brokers.begin(), brokers.end());
    }
  }
  std::vector<std::string> out;
  for (const auto& t : all)
    if (!rocketmq::isSystemTopic(t, names) && (filter_->matches(t) || t == heartbeatTopic_))
      out.push_back(t);
  return out;
}

void RocketMQReplicatorConnector::background() {
  auto log = core::logger("replicator");
  std::int64_t nextRefresh = core::monotonicMs() + refreshMs_;
  std::int64_t nextBeat = core::monotonicMs();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const std::int64_t now = core::monotonicMs();
    if (heartbeatProducer_ && now >= nextBeat) {
      nextBeat = now + heartbeatMs_;
      lock.unlock();
      rocketmq::OutgoingMessage m;
      m.topic = heartbeatTopic_;
      m.body = "{\"source\":\"" + sourceAlias_ + "\",\"ts\":" + std::to_string(core::nowMs()) + "}";
      m.properties["FERRY_HEARTBEAT"] = sourceAlias_;
      heartbeatProducer_->sendAsync(std::move(m), {}, [](Result<rocketmq::SendResult>) {});
      lock.lock();
      continue;
    }
    if (now >= nextRefresh) {
      nextRefresh = now + refreshMs_;
      lock.unlock();
      auto topics = selectTopics();
      lock.lock();
      if (!topics.isOk()) {
        log->warn("replicator: cannot list the source's topics: {}", topics.status().toString());
      } else if (*topics != topics_) {
        log->info("replicator: source topics changed to [{}]", joinList(*topics));
        topics_ = std::move(*topics);
        if (context_) context_->requestTaskReconfiguration();
      }
      continue;
    }
    const std::int64_t until = heartbeatProducer_ ? std::min(nextBeat, nextRefresh) : nextRefresh;
    cv_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(1, until - now)));
  }
}

Result<std::vector<StringMap>> RocketMQReplicatorConnector::taskConfigs(int maxTasks) {
  std::lock_guard lock(mu_);
  std::vector<StringMap> out;
  if (topics_.empty()) return out;  // nothing to do until a matching topic appears
  StringMap t = config_;
  t[kTaskTopicsKey] = joinList(topics_);
  out.assign(static_cast<std::size_t>(std::max(1, maxTasks)), t);
  return out;
}

void RocketMQReplicatorConnector::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  heartbeatProducer_.reset();
  client_.reset();
}

std::unique_ptr<SourceTask> RocketMQReplicatorConnector::createTask() {
  return std::make_unique<ReplicatorSourceTask>();
}

// ---------------------------------------------------------------------------------------------
// Source task

Status ReplicatorSourceTask::setup(const StringMap& config, SourceTaskContext& context,
                                   rocketmq::ClientOptions& co, rocketmq::ConsumerOptions& opts) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(replicatorDefinition(), config, "RocketMQReplicator task"));
  log_ = core::logger("replicator");
  renameFormat_ = p.getString("topic.rename");
  heartbeatTopic_ = p.getString("heartbeats.topic");
  startedMs_ = core::nowMs();
  sourceAlias_ = aliasOf(p, "source");
  targetAlias_ = aliasOf(p, "target");
  co = sideOptions(p, "source");
  co.routeRefreshMs = std::min<std::int64_t>(co.routeRefreshMs, p.getLong("source.rebalance.interval.ms"));
  opts.group = p.getString("source.group");
  if (opts.group.empty()) opts.group = rmq::safeName("ferry-replicator-" + context.connectorName());
  auto it = config.find(kTaskTopicsKey);
  if (it == config.end() || it->second.empty())
    return Status::failedPrecondition("RocketMQReplicator task: no source topic assigned");
  std::string_view list = it->second;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    opts.subscriptions.push_back({std::string(list.substr(0, comma)), "*"});
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  opts.fromWhere = p.getString("source.from") == "first" ? rocketmq::ConsumeFromWhere::kFirstOffset
                                                         : rocketmq::ConsumeFromWhere::kLastOffset;
  opts.rebalanceIntervalMs = p.getLong("source.rebalance.interval.ms");
  opts.pullBatchSize = 64;
  queues_.clear();
  return Status::ok();
}

std::pair<int, int> ReplicatorSourceTask::queueIndex(const rocketmq::MessageQueue& q) {
  auto find = [&](const std::vector<rocketmq::MessageQueue>& qs) -> int {
    for (std::size_t i = 0; i < qs.size(); ++i)
      if (qs[i].brokerName == q.brokerName && qs[i].queueId == q.queueId) return static_cast<int>(i);
    return -1;
  };
  auto it = queues_.find(q.topic);
  if (it != queues_.end()) {
    const int i = find(it->second);
    if (i >= 0) return {i, static_cast<int>(it->second.size())};
  }
  // Unknown topic or a queue added since: read the route again.
  if (client() != nullptr) {
    auto qs = rocketmq::topicQueues(*client(), q.topic, it != queues_.end());
    if (qs.isOk()) {
      auto& slot = queues_[q.topic];
      slot = std::move(*qs);
      const int i = find(slot);
      if (i >= 0) return {i, static_cast<int>(slot.size())};
    }
  }
  return {q.queueId, q.queueId + 1};  // best effort: the queue id
}

bool ReplicatorSourceTask::toRecord(rocketmq::PulledMessage& m, Record& out) {
  rocketmq::StoredMessage& sm = m.message;
  // Heartbeats written before this task started are stale (a new group reads the topic from its
  // start): they would only distort the latency measure.
  if (sm.topic == heartbeatTopic_ && sm.bornTimestamp < startedMs_) return false;
  if (repl::cameFrom(sm.properties, targetAlias_)) {
    if (skippedLoops_++ == 0)
      log_->info("replicator: skipping messages that came from {} (loop prevention)", targetAlias_);
    return false;
  }
  const rocketmq::MessageQueue q = m.queue();
  const auto [index, count] = queueIndex(q);
  out.topic = repl::renameTopic(renameFormat_, sm.topic, sourceAlias_);
  out.value = Bytes(std::move(sm.body));
  if (auto k = sm.properties.find("KEYS"); k != sm.properties.end()) out.key = Bytes(k->second);
  out.timestampMs = sm.bornTimestamp;
  out.receivedNs = m.receivedNs;
  out.headers.add(repl::kHeaderProps,
                  Bytes(rocketmq::encodeProperties(repl::replicatedProperties(sm.properties, sourceAlias_))));
  repl::ReplicaMeta meta;
  meta.sourceTopic = sm.topic;
  meta.sourceBroker = m.brokerName;
  meta.sourceQueueId = sm.queueId;
  meta.sourceIndex = index;
  meta.sourceQueues = count;
  meta.sourceOffset = sm.queueOffset;
  meta.flag = sm.flag;
  meta.storeTimestamp = sm.storeTimestamp;
  out.headers.add(repl::kHeaderMeta, Bytes(repl::encodeMeta(meta)));
  out.position.partition = rmq::queuePartition(q);
  out.position.offset.emplace("offset", std::to_string(sm.queueOffset + 1));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Sink connector and task

std::string RocketMQReplicatorSinkConnector::version() const { return kVersion; }

Status RocketMQReplicatorSinkConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(replicatorDefinition(), config, "RocketMQReplicatorSink"));
  (void)p;
  return Status::ok();
}

Result<std::vector<StringMap>> RocketMQReplicatorSinkConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)));
}

std::unique_ptr<SinkTask> RocketMQReplicatorSinkConnector::createTask() {
  return std::make_unique<ReplicatorSinkTask>();
}

ReplicatorSinkTask::ReplicatorSinkTask() : log_(core::logger("replicator")) {}

ReplicatorSinkTask::~ReplicatorSinkTask() { stop(); }

std::string ReplicatorSinkTask::version() const { return kVersion; }

Status ReplicatorSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  stop();
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(replicatorDefinition(), config, "RocketMQReplicatorSink task"));
  context_ = &context;
  preserve_ = p.getString("placement") == "preserve";
  createTopics_ = p.getBool("target.create.topics");
  targetClusters_ = p.getList("target.cluster");
  batchSize_ = static_cast<std::size_t>(p.getInt("batch.size"));
  groups_ = p.getList("checkpoint.groups");
  checkpointMs_ = p.getLong("checkpoint.interval.ms");
  nextCheckpoint_ = core::monotonicMs() + checkpointMs_;
  const rocketmq::ClientOptions co = sideOptions(p, "target");
  FERRY_ASSIGN_OR_RETURN(target_, rocketmq::sharedClient(co));
  if (!groups_.empty()) {
    FERRY_ASSIGN_OR_RETURN(source_, rocketmq::sharedClient(sideOptions(p, "source")));
  }
  rocketmq::ProducerOptions po;
  po.group = "ferry_replicator";
  producer_ = std::make_unique<rocketmq::Producer>(*target_, po);
  sender_ = std::make_unique<rmq::BatchSender>(*producer_, /*ordered=*/true,
                                               static_cast<std::size_t>(p.getInt("max.in.flight")));
  sender_->watchHealth(*target_,
                       [ctx = &context](const ConnectionHealth& h) { ctx->reportConnection(h); });
  log_->info("{} task {}: replicating into {} (placement {})", context.connectorName(), context.taskId(),
             co.namesrvAddrs, preserve_ ? "preserve" : "hash");
  return Status::ok();
}

Result<const ReplicatorSinkTask::TargetTopic*> ReplicatorSinkTask::target(const std::string& topic,
                                                                          int sourceQueues) {
  const std::int64_t now = core::monotonicMs();
  auto it = topics_.find(topic);
  if (it != topics_.end() && now - it->second.fetchedMs < 10000) return &it->second;
  auto qs = rocketmq::topicQueues(*target_, topic, it != topics_.end());
  if (!qs.isOk() && qs.status().code() == StatusCode::kNotFound) {
    if (!createTopics_)
      return Status::failedPrecondition("target topic '" + topic + "' does not exist and "
                                        "target.create.topics=false");
    const int n = std::max(1, sourceQueues);
    log_->info("replicator: creating target topic {} with {} queues", topic, n);
    FERRY_RETURN_IF_ERROR(target_->createTopic(topic, n, targetClusters_).withContext(
        "creating target topic " + topic));
    qs = rocketmq::topicQueues(*target_, topic, true);
  }
  if (!qs.isOk()) {
    if (it != topics_.end()) return &it->second;  // keep the last known queues
    return qs.status().withContext("route of target topic " + topic);
  }
  if (qs->empty()) return Status::unavailable("target topic " + topic + " has no writable queue");
  TargetTopic& t = topics_[topic];
  t.queues = std::move(*qs);
  t.fetchedMs = now;
  return &t;
}

Status ReplicatorSinkTask::put(std::vector<Record>& records) {
  if (!sender_) return Status::failedPrecondition("RocketMQReplicatorSink: put() before start()");
  if (Status f = sender_->fatal(); !f.isOk()) return f.withContext("RocketMQReplicatorSink");
  struct Open {
    rmq::BatchSender::Batch batch;
    std::size_t bytes = 0;
    std::vector<std::pair<std::string, std::int64_t>> sources;  // (source queue key, offset)
  };
  std::map<std::string, Open> open;  // by target queue
  auto close = [&](std::map<std::string, Open>::iterator it) {
    Open o = std::move(it->second);
    open.erase(it);
    const bool track = preserve_ && !groups_.empty();
    auto sources = std::make_shared<std::vector<std::pair<std::string, std::int64_t>>>(std::move(o.sources));
    o.batch.onSent = [this, sources, track](const rocketmq::SendResult& r) {
      std::lock_guard lock(mu_);
      replicated_ += sources->size();
      if (!track) return;
      for (std::size_t i = 0; i < sources->size(); ++i)
        translator_.record((*sources)[i].first, (*sources)[i].second,
                           i < r.queueOffsets.size() ? r.queueOffsets[i]
                                                     : r.queueOffset + static_cast<std::int64_t>(i));
    };
    sender_->send(std::move(o.batch));
  };
  const std::int64_t now = core::nowMs();
  std::int64_t latencyMax = -1;
  for (Record& r : records) {
    const Header* mh = r.headers.last(repl::kHeaderMeta);
    const Header* ph = r.headers.last(repl::kHeaderProps);
    auto meta = mh ? repl::decodeMeta(mh->value.view()) : std::nullopt;
    if (!meta || ph == nullptr) {
      FERRY_RETURN_IF_ERROR(context_->reportBadRecord(
          r, Status::invalidArgument("not a replicated record (no valid " + std::string(repl::kHeaderMeta) +
                                     " / " + repl::kHeaderProps + " header)")));
      continue;
    }
    FERRY_ASSIGN_OR_RETURN(const TargetTopic* t, target(r.topic, meta->sourceQueues));
    rocketmq::OutgoingMessage m;
    m.topic = r.topic;
    m.flag = meta->flag;
    m.body = r.value.str();
    m.properties = rocketmq::decodeProperties(ph->value.view());
    const auto keys = m.properties.find("KEYS");
    const int idx = repl::placeQueue(preserve_, meta->sourceIndex, static_cast<int>(t->queues.size()),
                                     keys == m.properties.end() ? std::string_view() : keys->second);
    const rocketmq::MessageQueue& tq = t->queues[static_cast<std::size_t>(idx)];
    const std::string id = tq.toString();
    auto it = open.find(id);
    if (it != open.end() && (it->second.batch.messages.size() >= batchSize_ ||
                             it->second.bytes + m.body.size() > kMaxBatchBytes)) {
      close(it);
      it = open.end();
    }
    if (it == open.end()) {
      Open o;
      o.batch.orderKey = id;
      o.batch.selection = rocketmq::QueueSelection::queue(tq.brokerName, tq.queueId);
      it = open.emplace(id, std::move(o)).first;
    }
    const rocketmq::MessageQueue sq{meta->sourceTopic, meta->sourceBroker, meta->sourceQueueId};
    const std::string sk = sq.toString();
    if (preserve_ && !groups_.empty()) {
      std::lock_guard lock(mu_);
      queueMap_[sk] = {sq, tq};
    }
    it->second.sources.emplace_back(sk, meta->sourceOffset);
    it->second.bytes += m.body.size() + 64;
    it->second.batch.messages.push_back(std::move(m));
    if (meta->storeTimestamp > 0) latencyMax = std::max(latencyMax, now - meta->storeTimestamp);
  }
  while (!open.empty()) close(open.begin());
  if (latencyMax >= 0) {
    std::lock_guard lock(mu_);
    latencyLastMs_ = latencyMax;
    latencyMaxMs_ = std::max(latencyMaxMs_, latencyMax);
  }
  return Status::ok();
}

Status ReplicatorSinkTask::flush() {
  if (!sender_) return Status::failedPrecondition("RocketMQReplicatorSink: flush() before start()");
  FERRY_RETURN_IF_ERROR(sender_->flush("RocketMQReplicatorSink"));
  if (core::monotonicMs() >= nextCheckpoint_) {
    nextCheckpoint_ = core::monotonicMs() + checkpointMs_;
    checkpoint();
  }
  return Status::ok();
}

void ReplicatorSinkTask::checkpoint() {
  std::map<std::string, std::pair<rocketmq::MessageQueue, rocketmq::MessageQueue>> queues;
  std::int64_t latMax, latLast;
  std::uint64_t replicated;
  {
    std::lock_guard lock(mu_);
    queues = queueMap_;
    latMax = latencyMaxMs_;
    latLast = latencyLastMs_;
    replicated = replicated_;
    latencyMaxMs_ = -1;
  }
  log_->info("replicator: {} messages replicated; latency (source store -> target put) last {} ms, "
             "max {} ms this interval",
             replicated, latLast, latMax);
  if (!source_ || groups_.empty()) return;
  std::size_t written = 0;
  for (const std::string& group : groups_) {
    for (const auto& [key, qq] : queues) {
      const auto& [sq, tq] = qq;
      auto committed = rocketmq::queryGroupOffset(*source_, group, sq);
      if (!committed.isOk()) {
        log_->warn("replicator: checkpoint of {} on {}: {}", group, key, committed.status().toString());
        continue;
      }
      if (!*committed) continue;  // the group never committed this queue
      std::optional<std::int64_t> translated;
      {
        std::lock_guard lock(mu_);
        translated = translator_.translate(key, **committed);
      }
      if (!translated) continue;
      auto current = rocketmq::queryGroupOffset(*target_, group, tq);
      if (current.isOk() && *current && **current >= *translated) continue;  // never backwards
      // setGroupOffset: a target broker refuses offsets of a group it never saw (26) — it
      // creates the group there first.
      Status s = rocketmq::setGroupOffset(*target_, group, tq, *translated);
      if (!s.isOk()) {
        log_->warn("replicator: writing checkpoint of {} on {}: {}", group, tq.toString(), s.toString());
        continue;
      }
      ++written;
    }
  }
  if (written > 0) log_->info("replicator: {} group offsets checkpointed onto the target", written);
}

void ReplicatorSinkTask::stop() {
  sender_.reset();  // waits for pending sends
  producer_.reset();
  source_.reset();
  target_.reset();
  topics_.clear();
}

}  // namespace ferry::connectors
