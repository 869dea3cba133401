// KafkaReplicator (see kafka_replicator.h).
#include "connectors/kafka/kafka_replicator.h"

#include <librdkafka/rdkafka.h>

#include <sys/types.h>

#include <chrono>
#include <thread>

#include "connectors/common.h"
#include "core/clock.h"
#include "core/logging.h"
#include "kafka/rdkafka_util.h"

namespace ferry::connectors {
namespace {

constexpr const char* kConsumerOverride = "consumer.override.";
constexpr const char* kProducerOverride = "producer.override.";
constexpr const char* kSourceClient = "source.client.";
constexpr const char* kTargetClient = "target.client.";

StringMap withPrefixStripped(const StringMap& config, const std::string& prefix) {
  StringMap out;
  for (const auto& [k, v] : config)
    if (k.rfind(prefix, 0) == 0) out[k.substr(prefix.size())] = v;
  return out;
}

bool legalTopicName(const std::string& s) {
  if (s.empty() || s.size() > 200) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

krepl::Naming namingOf(const ParsedConfig& p) {
  krepl::Naming n;
  n.policy = p.getString("replication.policy") == "identity" ? krepl::Policy::kIdentity : krepl::Policy::kPrefix;
  n.sourceAlias = p.getString("source.alias");
  n.targetAlias = p.getString("target.alias");
  n.separator = p.getString("replication.policy.separator");
  return n;
}

std::vector<std::regex> compileAll(const std::vector<std::string>& in) {
  std::vector<std::regex> out;
  for (const auto& r : in)
    if (!r.empty()) out.emplace_back(r, std::regex::ECMAScript | std::regex::optimize);
  return out;
}

bool anyMatch(const std::vector<std::regex>& rs, const std::string& s) {
  for (const auto& r : rs)
    if (std::regex_match(s, r)) return true;
  return false;
}

}  // namespace

// One copy handed to the producer. The producer is given the record's key and value without
// RD_KAFKA_MSG_F_COPY: it reads them in place until the delivery report, so they are held here
// until then (Bytes share their buffer; no byte is copied). Linked into Shared::pending so the
// copies never reported (the producer destroyed with them queued) are freed, not leaked.
struct KafkaReplicatorSinkTask::PendingCopy {
  KafkaReplicatorSinkTask::Shared* shared;
  int topic;
  std::int32_t partition;
  std::int64_t sourceOffset;
  Bytes key;
  Bytes value;
  PendingCopy* prev = nullptr;
  PendingCopy* next = nullptr;

  void link() {
    next = shared->pending;
    if (next) next->prev = this;
    shared->pending = this;
  }
  void unlink() {
    if (prev) prev->next = next;
    else shared->pending = next;
    if (next) next->prev = prev;
  }
};

namespace {

using PendingCopy = KafkaReplicatorSinkTask::PendingCopy;

// The connection watch's signals (see kafka::ConnectionWatch): statistics and error events, the
// watch as the client's opaque.
int onStats(rd_kafka_t*, char* json, size_t len, void* opaque) {
  if (opaque) static_cast<kafka::ConnectionWatch*>(opaque)->onStats(std::string_view(json, len));
  return 0;
}

// With an error callback librdkafka no longer logs its errors itself.
void onError(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  core::logger("kafka")->warn("{}: {}", rd_kafka_name(rk), reason);
  if (opaque) static_cast<kafka::ConnectionWatch*>(opaque)->onError(err, reason);
}

// A watch reporting to a task's context, on statistics and error events of `conf` (when
// statistics.interval.ms > 0; else the runtime infers the connection from the task's calls).
template <class Context>
std::unique_ptr<kafka::ConnectionWatch> watchConnection(rd_kafka_conf_t* conf, Context& context) {
  auto watch = std::make_unique<kafka::ConnectionWatch>();
  if (!kafka::statsEnabled(conf)) return watch;
  watch->setReport(kafka::reportTo(context));
  rd_kafka_conf_set_stats_cb(conf, onStats);
  rd_kafka_conf_set_error_cb(conf, onError);
  rd_kafka_conf_set_opaque(conf, watch.get());
  return watch;
}

void onDelivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque) {
  auto* p = static_cast<PendingCopy*>(m->_private);
  if (p == nullptr) return;
  p->unlink();
  auto& s = *p->shared;
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (opaque) static_cast<kafka::ConnectionWatch*>(opaque)->onAcknowledged();
    ++s.ok;
    s.syncs[{p->topic, p->partition}].record(p->sourceOffset, m->offset);
  } else if (s.failed++ == 0) {
    s.firstError = std::string(rd_kafka_err2str(m->err)) + " (topic " + (m->rkt ? rd_kafka_topic_name(m->rkt) : "?") +
                   ", partition " + std::to_string(m->partition) + ")";
  }
  delete p;
}

}  // namespace

const ConfigDef& kafkaReplicatorDefinition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("source.bootstrap.servers", ConfigType::kString, std::nullopt, Importance::kHigh,
             "Brokers of the source cluster, 'host:port,host:port'.", validators::nonEmptyString());
    d.define("target.bootstrap.servers", ConfigType::kString, std::nullopt, Importance::kHigh,
             "Brokers of the target cluster.", validators::nonEmptyString());
    d.define("source.alias", ConfigType::kString, "source", Importance::kHigh,
             "Name of the source cluster: the prefix of replicated topics (replication.policy=prefix) "
             "and its entry in replication paths.", validators::nonEmptyString());
    d.define("target.alias", ConfigType::kString, "target", Importance::kHigh,
             "Name of the target cluster; what came from it is never replicated back to it.",
             validators::nonEmptyString());
    d.define("topics", ConfigType::kList, ".*", Importance::kHigh,
             "Regexes (ECMAScript, whole name) of the source topics to replicate.");
    d.define("topics.exclude", ConfigType::kList, "__.*,.*[-.]internal,.*\\.replica", Importance::kMedium,
             "Regexes of source topics never replicated (internal topics by default).");
    d.define("replication.policy", ConfigType::kString, "prefix", Importance::kHigh,
             "'prefix': a source topic T becomes <source.alias><separator>T on the target (MirrorMaker 2's "
             "default; loops are impossible by name); 'identity': the same name (loops prevented by the "
             "ferry.replication.path header).",
             validators::oneOf({"prefix", "identity"}));
    d.define("replication.policy.separator", ConfigType::kString, ".", Importance::kLow,
             "Separator between the alias and the topic under replication.policy=prefix.");
    d.define("source.group", ConfigType::kString, "", Importance::kMedium,
             "Consumer group of the replicator on the source; empty means ferry-replicator-<connector>.");
    d.define("source.from", ConfigType::kString, "earliest", Importance::kMedium,
             "Where a partition the replicator never read starts: earliest or latest.",
             validators::oneOf({"earliest", "latest"}));
    d.define("topics.refresh.interval.ms", ConfigType::kLong, "5000", Importance::kLow,
             "How often the source's topics are listed for new ones.", validators::atLeast(100));
    d.define("target.create.topics", ConfigType::kBool, "true", Importance::kMedium,
             "Create missing target topics with the source's partition count, and grow target topics "
             "that have fewer partitions than the source.");
    d.define("target.replication.factor", ConfigType::kInt, "-1", Importance::kMedium,
             "Replication factor of target topics the replicator creates (-1: the brokers' default).",
             validators::between(-1, 32));
    d.define("groups", ConfigType::kList, "", Importance::kMedium,
             "Regexes of consumer groups whose committed source offsets are translated onto the target "
             "(empty: none).");
    d.define("groups.exclude", ConfigType::kList, "console-consumer-.*,connect-.*,__.*,ferry-replicator-.*",
             Importance::kLow, "Regexes of consumer groups never synced.");
    d.define("sync.group.offsets.interval.ms", ConfigType::kLong, "5000", Importance::kLow,
             "How often group offsets are translated and written to the target.", validators::atLeast(100));
    d.define("exactly.once", ConfigType::kBool, "false", Importance::kHigh,
             "Exactly-once: every batch of copies and the source offsets it covers are committed in one "
             "transaction on the target (transactional.id ferry-<connector>-<task>, so a zombie task is "
             "fenced); partitions are assigned to tasks statically and the source offsets live in the "
             "target cluster (group exactly.once.offsets.group). Consumers on the target read with "
             "isolation.level=read_committed.");
    d.define("exactly.once.offsets.group", ConfigType::kString, "", Importance::kLow,
             "Group on the target whose committed offsets are the replicator's source positions in "
             "exactly-once mode (stored under the target topic names); empty means ferry-eos-<connector>.");
    d.define("task.count", ConfigType::kInt, "1", Importance::kLow,
             "Set by the connector: how many tasks share the partitions in exactly-once mode.",
             validators::atLeast(1));
    d.define("request.timeout.ms", ConfigType::kLong, "30000", Importance::kLow,
             "Timeout of admin requests and of flush() waiting for the target's acknowledgements.",
             validators::atLeast(100));
    d.allowPrefix(kConsumerOverride);
    d.allowPrefix(kProducerOverride);
    d.allowPrefix(kSourceClient);
    d.allowPrefix(kTargetClient);
    return d;
  }();
  return def;
}

void validateKafkaReplicatorConfig(const StringMap& config, ConfigValidation& v) {
  auto parsed = kafkaReplicatorDefinition().parse(config, false);
  if (!parsed.isOk()) return;  // the ConfigDef already reported it
  auto sel = krepl::TopicSelector::make(parsed->getList("topics"), parsed->getList("topics.exclude"));
  if (!sel.isOk()) {
    const std::string m = sel.status().message();
    v.errors[m.rfind("topics.exclude", 0) == 0 ? "topics.exclude" : "topics"].push_back(m);
  }
  for (const char* key : {"groups", "groups.exclude"})
    for (const auto& r : parsed->getList(key)) try {
        std::regex re(r, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        v.errors[key].push_back("'" + r + "' is not a valid regex: " + e.what());
      }
  const std::string src = parsed->getString("source.alias"), dst = parsed->getString("target.alias");
  if (src == dst) v.errors["target.alias"].push_back("source and target aliases are both '" + src + "'");
  if (parsed->getString("replication.policy") == "prefix" &&
      !legalTopicName(src + parsed->getString("replication.policy.separator")))
    v.errors["source.alias"].push_back("'" + src + parsed->getString("replication.policy.separator") +
                                       "' cannot start a Kafka topic name ([a-zA-Z0-9._-])");
  if (parsed->getString("source.bootstrap.servers") == parsed->getString("target.bootstrap.servers") &&
      parsed->getString("replication.policy") == "identity")
    v.errors["replication.policy"].push_back(
        "source and target are the same cluster: identity would replicate every topic onto itself");
}

// ---------------------------------------------------------------------------------------------
// Source side

std::string KafkaReplicatorConnector::version() const { return kVersion; }

Status KafkaReplicatorConnector::start(const StringMap& config, ConnectorContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(kafkaReplicatorDefinition(), config, "KafkaReplicator"));
  config_ = config;
  if (parsed.getString("source.group").empty()) config_["source.group"] = "ferry-replicator-" + context.connectorName();
  return Status::ok();
}

Result<std::vector<StringMap>> KafkaReplicatorConnector::taskConfigs(int maxTasks) {
  StringMap c = config_;
  c["task.count"] = std::to_string(std::max(1, maxTasks));
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)), c);
}

std::unique_ptr<SourceTask> KafkaReplicatorConnector::createTask() {
  return std::make_unique<KafkaReplicatorTask>();
}

KafkaReplicatorTask::KafkaReplicatorTask() : log_(core::logger("kafka-replicator")) {}
KafkaReplicatorTask::~KafkaReplicatorTask() { stop(); }
std::string KafkaReplicatorTask::version() const { return kVersion; }

Status KafkaReplicatorTask::start(const StringMap& config, SourceTaskContext& context) {
  stop();
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(kafkaReplicatorDefinition(), config, "KafkaReplicator task"));
  naming_ = namingOf(p);
  FERRY_ASSIGN_OR_RETURN(auto sel, krepl::TopicSelector::make(p.getList("topics"), p.getList("topics.exclude")));
  selector_ = std::make_unique<krepl::TopicSelector>(std::move(sel));
  refreshMs_ = p.getLong("topics.refresh.interval.ms");
  std::string group = p.getString("source.group");
  if (group.empty()) group = "ferry-replicator-" + context.connectorName();
  const std::string member = "ferry-" + context.connectorName() + "-" + std::to_string(context.taskId());
  StringMap base = {{"bootstrap.servers", p.getString("source.bootstrap.servers")},
                    {"group.id", group},
                    {"client.id", member},
                    {"auto.offset.reset", p.getString("source.from")},
                    {"enable.auto.commit", "false"},
                    {"enable.auto.offset.store", "false"},
                    {"partition.assignment.strategy", "cooperative-sticky"},
                    {"session.timeout.ms", "10000"},
                    {"allow.auto.create.topics", "false"}};
  for (const auto& kv : kafka::connectorClientDefaults()) base.insert(kv);
  // Prefetch (queued.max.messages.kbytes, fetch.wait.max.ms) stays at librdkafka's defaults: a
  // 32 MB queue with 100 ms fetch waits held 1 KB records to 43k/s, the defaults give ~73k/s.
  const StringMap client = withPrefixStripped(config, kSourceClient);
  const StringMap overrides = withPrefixStripped(config, kConsumerOverride);
  FERRY_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf, kafka::makeConf({{&base, "KafkaReplicator: "},
                                                                  {&client, kSourceClient},
                                                                  {&overrides, kConsumerOverride}}));
  watch_ = watchConnection(conf, context);
  char err[512];
  rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk_ == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::invalidArgument(std::string("KafkaReplicator: cannot create the source consumer: ") + err);
  }
  rd_kafka_poll_set_consumer(rk_);
  waker_.attach(rk_, [ctx = &context] { ctx->wakeup(); });
  nextRefresh_ = 0;
  subscribed_.clear();
  assigned_.clear();
  eos_ = p.getBool("exactly.once");
  if (eos_) {
    eosGroup_ = p.getString("exactly.once.offsets.group");
    if (eosGroup_.empty()) eosGroup_ = "ferry-eos-" + context.connectorName();
    taskCount_ = p.getInt("task.count");
    taskId_ = context.taskId();
    fromLatest_ = p.getString("source.from") == "latest";
    StringMap tadmin = {{"bootstrap.servers", p.getString("target.bootstrap.servers")}, {"client.id", member + "-admin"}};
    const StringMap targetClient = withPrefixStripped(config, kTargetClient);
    eosTargetSettings_ = {{"bootstrap.servers", p.getString("target.bootstrap.servers")}, {"client.id", member + "-positions"}};
    eosTargetClient_ = targetClient;
    FERRY_ASSIGN_OR_RETURN(targetAdmin_, kafka::newAdminHandle({{&tadmin, "KafkaReplicator: "},
                                                                {&targetClient, kTargetClient}}));
  }
  FERRY_RETURN_IF_ERROR(refreshTopics());
  log_->info("{} task {}: group {} on {} replicates {} topic(s) as {}", context.connectorName(), context.taskId(), group,
             p.getString("source.bootstrap.servers"), subscribed_.size(),
             naming_.policy == krepl::Policy::kPrefix ? naming_.sourceAlias + naming_.separator + "<topic>"
                                                       : std::string("<topic>"));
  return Status::ok();
}

// Lists the source's topics and (re)subscribes when the selection changed. New partitions of
// subscribed topics need nothing: the consumer's metadata refresh rebalances them in.
Status KafkaReplicatorTask::refreshTopics() {
  const std::int64_t now = core::monotonicMs();
  if (now < nextRefresh_) return Status::ok();
  nextRefresh_ = now + refreshMs_;
  auto all = kafka::topicPartitions(rk_, 10000);
  if (!all.isOk()) {
    // Not fatal: the source may be restarting; keep the current subscription and retry later.
    log_->warn("KafkaReplicator: listing source topics: {}", all.status().message());
    return Status::ok();
  }
  std::set<std::string> want;
  for (const auto& [t, parts] : *all)
    if (selector_->selected(t) && !naming_.cameFromTarget(t)) want.insert(t);
  if (eos_) return assignStatically(*all, want);
  if (want == subscribed_) return Status::ok();
  for (const auto& t : want)
    if (!subscribed_.count(t)) log_->info("KafkaReplicator: replicating {} -> {}", t, naming_.targetTopic(t));
  rd_kafka_resp_err_t e;
  if (want.empty()) {
    e = rd_kafka_unsubscribe(rk_);
  } else {
    rd_kafka_topic_partition_list_t* subs = rd_kafka_topic_partition_list_new(static_cast<int>(want.size()));
    for (const auto& t : want) rd_kafka_topic_partition_list_add(subs, t.c_str(), RD_KAFKA_PARTITION_UA);
    e = rd_kafka_subscribe(rk_, subs);
    rd_kafka_topic_partition_list_destroy(subs);
  }
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return Status::unavailable(std::string("KafkaReplicator: cannot subscribe: ") + rd_kafka_err2str(e));
  subscribed_ = std::move(want);
  return Status::ok();
}

// Exactly-once mode: no consumer group on the source. Partition p of topic t belongs to task
// (hash(t) + p) % task.count, always the same one, so the task's transactional.id fences any zombie
// that copied it before; a newly owned partition starts at the source offset committed with the
// last transaction on the target.
Status KafkaReplicatorTask::assignStatically(const std::map<std::string, std::int32_t>& all,
                                             const std::set<std::string>& want) {
  std::vector<std::pair<std::string, std::int32_t>> fresh;
  for (const auto& t : want) {
    const std::uint32_t h = static_cast<std::uint32_t>(std::hash<std::string>{}(t) & 0xffffffffu);
    for (std::int32_t p = 0; p < all.at(t); ++p)
      if ((h + static_cast<std::uint32_t>(p)) % static_cast<std::uint32_t>(taskCount_) ==
              static_cast<std::uint32_t>(taskId_) &&
          !assigned_.count({t, p}))
        fresh.emplace_back(t, p);
  }
  subscribed_ = want;
  if (fresh.empty()) return Status::ok();
  std::vector<std::pair<std::string, std::int32_t>> targetParts;
  for (const auto& [t, p] : fresh) targetParts.emplace_back(naming_.targetTopic(t), p);
  auto committed = kafka::committedVia({{&eosTargetSettings_, "KafkaReplicator: "}, {&eosTargetClient_, kTargetClient}},
                                       eosGroup_, targetParts, 10000);
  if (!committed.isOk()) {
    log_->warn("KafkaReplicator: reading the exactly-once positions ({}): {}", eosGroup_, committed.status().message());
    nextRefresh_ = 0;  // try again at the next poll
    return Status::ok();
  }
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(fresh.size()));
  for (const auto& [t, p] : fresh) {
    auto it = committed->find({naming_.targetTopic(t), p});
    const std::int64_t from = it != committed->end() ? it->second
                              : fromLatest_          ? RD_KAFKA_OFFSET_END
                                                     : RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_topic_partition_list_add(list, t.c_str(), p)->offset = from;
    log_->info("KafkaReplicator: exactly-once task {} takes {}/{} from {}", taskId_, t, p,
               it != committed->end() ? std::to_string(from) : std::string(fromLatest_ ? "the end" : "the start"));
  }
  rd_kafka_error_t* e = rd_kafka_incremental_assign(rk_, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (e) {
    Status s = Status::unavailable(std::string("KafkaReplicator: assigning partitions: ") + rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return s;
  }
  for (const auto& tp : fresh) assigned_.insert(tp);
  return Status::ok();
}

Result<std::size_t> KafkaReplicatorTask::poll(std::vector<Record>& out, std::size_t maxRecords,
                                              std::chrono::milliseconds maxWait) {
  if (rk_ == nullptr) return Status::failedPrecondition("KafkaReplicator: poll() before start()");
  FERRY_RETURN_IF_ERROR(refreshTopics());
  if (subscribed_.empty() || (eos_ && assigned_.empty())) {
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(maxWait, std::chrono::milliseconds(100)));
    return std::size_t{0};
  }
  std::size_t n = 0;
  auto timeout = static_cast<int>(maxWait.count());
  const bool identity = naming_.policy == krepl::Policy::kIdentity;
  while (n < maxRecords) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, timeout);
    if (m == nullptr) break;
    timeout = 0;
    if (m->err) {
      const rd_kafka_resp_err_t err = m->err;
      std::string what = rd_kafka_message_errstr(m);
      rd_kafka_message_destroy(m);
      watch_->onError(err, what.c_str());
      if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF) continue;
      if (err == RD_KAFKA_RESP_ERR__FATAL || err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
          err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED)
        return Status::internal("KafkaReplicator: " + what);
      log_->warn("KafkaReplicator: {}", what);
      break;
    }
    const std::string topic = rd_kafka_topic_name(m->rkt);
    Record r;
    r.headers = kafka::readHeaders(m);
    std::string path;
    bool loop = false;
    if (identity) {
      if (const Header* h = r.headers.last(krepl::kPathHeader)) path = h->value.str();
      r.headers.remove(krepl::kPathHeader);
      loop = krepl::pathHas(path, naming_.targetAlias);
    }
    if (loop) {
      // Came from the target: not written back. Its offset is committed with the next record
      // of the partition that is replicated.
      ++skippedLoops_;
      rd_kafka_message_destroy(m);
      continue;
    }
    if (identity) r.headers.add(krepl::kPathHeader, krepl::pathAppend(path, naming_.sourceAlias));
    auto it = renamed_.find(topic);
    if (it == renamed_.end()) it = renamed_.emplace(topic, naming_.targetTopic(topic)).first;
    r.topic = it->second;
    r.queue = m->partition;
    fillFromKafka(m, topic, r);
    rd_kafka_message_destroy(m);
    out.push_back(std::move(r));
    ++n;
  }
  return n;
}

void KafkaReplicatorTask::commitRecord(const Record& record) {
  if (!eos_) safe_.markSafe(record);  // in exactly-once mode the target's transactions carry them
}

Status KafkaReplicatorTask::commit() { return eos_ ? Status::ok() : safe_.commit(rk_, *log_, "KafkaReplicator"); }

void KafkaReplicatorTask::stop() {
  if (rk_ == nullptr) return;
  (void)commit();
  if (skippedLoops_) log_->info("KafkaReplicator: {} record(s) not replicated back to {}", skippedLoops_, naming_.targetAlias);
  waker_.detach();
  rd_kafka_consumer_close(rk_);
  rd_kafka_destroy(rk_);
  rk_ = nullptr;
  kafka::destroy(targetAdmin_);
  targetAdmin_ = nullptr;
}

// ---------------------------------------------------------------------------------------------
// Target side

std::string KafkaReplicatorSinkConnector::version() const { return kVersion; }

Status KafkaReplicatorSinkConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(kafkaReplicatorDefinition(), config, "KafkaReplicatorSink"));
  (void)parsed;
  config_ = config;
  return Status::ok();
}

Result<std::vector<StringMap>> KafkaReplicatorSinkConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)), config_);
}

std::unique_ptr<SinkTask> KafkaReplicatorSinkConnector::createTask() {
  return std::make_unique<KafkaReplicatorSinkTask>();
}

KafkaReplicatorSinkTask::KafkaReplicatorSinkTask() : log_(core::logger("kafka-replicator")) {}
KafkaReplicatorSinkTask::~KafkaReplicatorSinkTask() { stop(); }
std::string KafkaReplicatorSinkTask::version() const { return kVersion; }

Status KafkaReplicatorSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  stop();
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(kafkaReplicatorDefinition(), config, "KafkaReplicatorSink task"));
  naming_ = namingOf(p);
  createTopics_ = p.getBool("target.create.topics");
  replicationFactor_ = p.getInt("target.replication.factor");
  timeoutMs_ = p.getLong("request.timeout.ms");
  groups_ = compileAll(p.getList("groups"));
  groupsExclude_ = compileAll(p.getList("groups.exclude"));
  syncIntervalMs_ = p.getLong("sync.group.offsets.interval.ms");
  nextSync_ = core::monotonicMs() + syncIntervalMs_;
  const std::string member = "ferry-" + context.connectorName() + "-" + std::to_string(context.taskId());
  const StringMap targetClient = withPrefixStripped(config, kTargetClient);
  const StringMap sourceClient = withPrefixStripped(config, kSourceClient);
  const StringMap overrides = withPrefixStripped(config, kProducerOverride);
  eos_ = p.getBool("exactly.once");
  eosGroup_ = p.getString("exactly.once.offsets.group");
  if (eosGroup_.empty()) eosGroup_ = "ferry-eos-" + context.connectorName();
  inTxn_ = false;
  txnOffsets_.clear();
  StringMap base = {{"bootstrap.servers", p.getString("target.bootstrap.servers")},
                    {"enable.idempotence", "true"},
                    {"acks", "all"},
                    {"linger.ms", "5"},
                    {"batch.num.messages", "10000"},
                    {"queue.buffering.max.messages", "200000"},
                    {"client.id", member}};
  for (const auto& kv : kafka::connectorClientDefaults()) base.insert(kv);
  if (eos_) base["transactional.id"] = member;
  FERRY_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf, kafka::makeConf({{&base, "KafkaReplicatorSink: "},
                                                                  {&targetClient, kTargetClient},
                                                                  {&overrides, kProducerOverride}}));
  rd_kafka_conf_set_dr_msg_cb(conf, onDelivery);
  watch_ = watchConnection(conf, context);
  char err[512];
  producer_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (producer_ == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::invalidArgument(std::string("KafkaReplicatorSink: cannot create the target producer: ") + err);
  }
  StringMap tadmin = {{"bootstrap.servers", p.getString("target.bootstrap.servers")}, {"client.id", member + "-admin"}};
  StringMap sadmin = {{"bootstrap.servers", p.getString("source.bootstrap.servers")}, {"client.id", member + "-admin"}};
  sourceSettings_ = {{"bootstrap.servers", p.getString("source.bootstrap.servers")}, {"client.id", member + "-groups"}};
  targetSettings_ = {{"bootstrap.servers", p.getString("target.bootstrap.servers")}, {"client.id", member + "-groups"}};
  sourceClient_ = sourceClient;
  targetClient_ = targetClient;
  FERRY_ASSIGN_OR_RETURN(targetAdmin_, kafka::newAdminHandle({{&tadmin, "KafkaReplicatorSink: "},
                                                              {&targetClient, kTargetClient}}));
  FERRY_ASSIGN_OR_RETURN(sourceAdmin_, kafka::newAdminHandle({{&sadmin, "KafkaReplicatorSink: "},
                                                              {&sourceClient, kSourceClient}}));
  if (eos_) {
    // Fences every earlier producer with this transactional.id (a zombie of this task) and aborts
    // the transaction it left open.
    if (rd_kafka_error_t* e = rd_kafka_init_transactions(producer_, static_cast<int>(timeoutMs_))) {
      Status s = Status::unavailable(std::string("KafkaReplicatorSink: initialising transactions: ") +
                                     rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
      return s;
    }
  }
  return Status::ok();
}

// A failed transaction is aborted (when it still can be) and fails the task: the restarted task
// starts again from the positions of the last committed transaction.
Status KafkaReplicatorSinkTask::txnFailure(rd_kafka_error_t* e, const std::string& what) {
  Status s = Status::internal("KafkaReplicatorSink: " + what + ": " + rd_kafka_error_string(e));
  const bool abortable = rd_kafka_error_txn_requires_abort(e);
  rd_kafka_error_destroy(e);
  if (abortable && inTxn_) {
    if (rd_kafka_error_t* a = rd_kafka_abort_transaction(producer_, static_cast<int>(timeoutMs_)))
      rd_kafka_error_destroy(a);
  }
  inTxn_ = false;
  txnOffsets_.clear();
  return s;
}

int KafkaReplicatorSinkTask::topicId(const std::string& sourceTopic) {
  auto it = topicIds_.find(sourceTopic);
  if (it != topicIds_.end()) return it->second;
  const int id = static_cast<int>(shared_.sourceTopics.size());
  shared_.sourceTopics.push_back(sourceTopic);
  topicIds_.emplace(sourceTopic, id);
  return id;
}

// Makes sure `target` exists with more than `partition` partitions (and at least as many as the
// source topic has), creating or growing it when allowed.
Status KafkaReplicatorSinkTask::ensureTarget(const std::string& target, const std::string& source,
                                             std::int32_t partition) {
  auto known = targetPartitions_.find(target);
  if (known != targetPartitions_.end() && partition < known->second) return Status::ok();
  FERRY_ASSIGN_OR_RETURN(auto targets, kafka::topicPartitions(targetAdmin_, timeoutMs_));
  std::int32_t have = targets.count(target) ? targets[target] : 0;
  if (partition >= have) {
    if (!createTopics_)
      return Status::failedPrecondition("KafkaReplicatorSink: target topic " + target +
                                        (have ? " has only " + std::to_string(have) + " partition(s)" : " does not exist") +
                                        " and target.create.topics=false");
    std::int32_t want = partition + 1;
    auto sources = kafka::topicPartitions(sourceAdmin_, timeoutMs_);
    if (sources.isOk() && sources->count(source)) want = std::max(want, (*sources)[source]);
    if (have == 0) {
      FERRY_RETURN_IF_ERROR(kafka::createTopic(targetAdmin_, target, want, replicationFactor_, timeoutMs_));
      log_->info("KafkaReplicatorSink: created target topic {} with {} partition(s)", target, want);
    } else {
      FERRY_RETURN_IF_ERROR(kafka::createPartitions(targetAdmin_, target, want, timeoutMs_));
      log_->info("KafkaReplicatorSink: grew target topic {} from {} to {} partition(s)", target, have, want);
    }
  }
  // Wait until the producer's own metadata shows the partition: it refuses partitions it does not
  // know yet, and another task may have grown the topic without this producer noticing. An
  // all-topics request refreshes the producer's cache; a request naming the topic through a
  // temporary topic handle is avoided (twice a worker crashed inside librdkafka 2.0.2 right after
  // such requests for a topic being created).
  const std::int64_t deadline = core::monotonicMs() + timeoutMs_;
  have = 0;
  while (core::monotonicMs() < deadline) {
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(producer_, 1, nullptr, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      for (int i = 0; i < md->topic_cnt; ++i)
        if (target == md->topics[i].topic && md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR)
          have = md->topics[i].partition_cnt;
      rd_kafka_metadata_destroy(md);
    }
    if (have > partition) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (have <= partition)
    return Status::retriable("KafkaReplicatorSink: target topic " + target + " has no partition " +
                             std::to_string(partition) + " yet");
  targetPartitions_[target] = have;
  return Status::ok();
}

Status KafkaReplicatorSinkTask::put(std::vector<Record>& records) {
  if (producer_ == nullptr) return Status::failedPrecondition("KafkaReplicatorSink: put() before start()");
  for (auto& r : records) {
    auto st = r.position.partition.find("kafka.topic");
    auto off = r.position.offset.find("kafka.offset");
    auto nextOffset = off == r.position.offset.end() ? std::nullopt : parseKafkaNumber(off->second);
    if (st == r.position.partition.end() || !nextOffset || *nextOffset < 1 || !r.queue)
      return Status::invalidArgument("KafkaReplicatorSink: a record that did not come from KafkaReplicator (topic " +
                                     r.topic + ")");
    const std::int32_t partition = *r.queue;
    FERRY_RETURN_IF_ERROR(ensureTarget(r.topic, st->second, partition));
    if (eos_ && !inTxn_) {
      if (rd_kafka_error_t* e = rd_kafka_begin_transaction(producer_)) return txnFailure(e, "beginning a transaction");
      inTxn_ = true;
    }
    if (eos_) {
      auto& next = txnOffsets_[{r.topic, partition}];
      next = std::max<std::int64_t>(next, *nextOffset);
    }
    rd_kafka_headers_t* hdrs = kafka::toKafkaHeaders(r.headers);
    auto* pending = new PendingCopy{&shared_, topicId(st->second), partition, *nextOffset - 1, r.key, r.value};
    pending->link();
    const Bytes& key = pending->key;
    const Bytes& value = pending->value;
    for (;;) {
      // No RD_KAFKA_MSG_F_COPY: `pending` keeps key and value alive until the delivery report.
      rd_kafka_resp_err_t e = rd_kafka_producev(
          producer_, RD_KAFKA_V_TOPIC(r.topic.c_str()), RD_KAFKA_V_PARTITION(partition), RD_KAFKA_V_MSGFLAGS(0),
          RD_KAFKA_V_VALUE(value.isNull() ? nullptr : const_cast<char*>(value.data()), value.size()),
          RD_KAFKA_V_KEY(key.isNull() ? nullptr : const_cast<char*>(key.data()), key.size()),
          RD_KAFKA_V_TIMESTAMP(r.timestampMs), RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(pending), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(producer_, 50);  // serve delivery reports to make room
        continue;
      }
      if (hdrs) rd_kafka_headers_destroy(hdrs);
      pending->unlink();
      delete pending;
      targetPartitions_.erase(r.topic);  // learn the partitions again before the retry
      if (eos_) {
        // Part of the batch is in the open transaction: abort it and start over from the last
        // committed positions rather than retry into it.
        if (rd_kafka_error_t* a = rd_kafka_abort_transaction(producer_, static_cast<int>(timeoutMs_)))
          rd_kafka_error_destroy(a);
        inTxn_ = false;
        txnOffsets_.clear();
        return Status::internal(std::string("KafkaReplicatorSink: cannot produce to ") + r.topic + "/" +
                                std::to_string(partition) + ": " + rd_kafka_err2str(e) + " (transaction aborted)");
      }
      return Status::unavailable(std::string("KafkaReplicatorSink: cannot produce to ") + r.topic + "/" +
                                 std::to_string(partition) + ": " + rd_kafka_err2str(e));
    }
  }
  rd_kafka_poll(producer_, 0);
  if (shared_.failed > 0) return Status::internal("KafkaReplicatorSink: delivery failed: " + shared_.firstError);
  syncGroupOffsets(false);
  return Status::ok();
}

Status KafkaReplicatorSinkTask::flush() {
  if (producer_ == nullptr) return Status::ok();
  if (eos_) {
    if (!inTxn_) return Status::ok();
    // The source positions go into the same transaction as the copies, as offsets of the target
    // topics in the positions group.
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(txnOffsets_.size()));
    for (const auto& [tp, next] : txnOffsets_)
      rd_kafka_topic_partition_list_add(list, tp.first.c_str(), tp.second)->offset = next;
    rd_kafka_consumer_group_metadata_t* md = rd_kafka_consumer_group_metadata_new(eosGroup_.c_str());
    rd_kafka_error_t* e = rd_kafka_send_offsets_to_transaction(producer_, list, md, static_cast<int>(timeoutMs_));
    rd_kafka_consumer_group_metadata_destroy(md);
    rd_kafka_topic_partition_list_destroy(list);
    if (e) return txnFailure(e, "adding the source positions to the transaction");
    if (rd_kafka_error_t* c = rd_kafka_commit_transaction(producer_, static_cast<int>(timeoutMs_)))
      return txnFailure(c, "committing the transaction");
    inTxn_ = false;
    txnOffsets_.clear();
    if (shared_.failed > 0) return Status::internal("KafkaReplicatorSink: delivery failed: " + shared_.firstError);
    syncGroupOffsets(false);
    return Status::ok();
  }
  const std::int64_t t0 = core::monotonicMs();
  const int queued = rd_kafka_outq_len(producer_);
  rd_kafka_resp_err_t e = rd_kafka_flush(producer_, static_cast<int>(timeoutMs_));
  const std::int64_t waited = core::monotonicMs() - t0;
  ++flushes_;
  flushWaitMs_ += waited;
  log_->debug("KafkaReplicatorSink: flush waited {} ms for {} queued copies", waited, queued);
  if (shared_.failed > 0) return Status::internal("KafkaReplicatorSink: delivery failed: " + shared_.firstError);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return Status::retriable("KafkaReplicatorSink: " + std::to_string(rd_kafka_outq_len(producer_)) +
                             " record(s) not acknowledged by the target within request.timeout.ms");
  syncGroupOffsets(false);
  return Status::ok();
}

// Translates the committed source offsets of the selected groups and writes them to the same
// groups on the target, for the partitions this task copied. Failures are logged, not fatal.
void KafkaReplicatorSinkTask::syncGroupOffsets(bool force) {
  if (groups_.empty() || shared_.syncs.empty()) return;
  const std::int64_t now = core::monotonicMs();
  if (!force && now < nextSync_) return;
  nextSync_ = now + syncIntervalMs_;
  auto groups = kafka::listGroups(sourceAdmin_, timeoutMs_);
  if (!groups.isOk()) {
    log_->warn("KafkaReplicatorSink: listing source groups: {}", groups.status().message());
    return;
  }
  for (const auto& g : *groups) {
    if (!anyMatch(groups_, g) || anyMatch(groupsExclude_, g)) continue;
    // Read and written through consumer handles of the group (kafka::committedVia / commitVia),
    // not the admin API: see rdkafka_util.h.
    std::vector<std::pair<std::string, std::int32_t>> ours;
    for (const auto& [key, syncs] : shared_.syncs)
      ours.emplace_back(shared_.sourceTopics[static_cast<std::size_t>(key.first)], key.second);
    auto committed = kafka::committedVia({{&sourceSettings_, "KafkaReplicatorSink: "}, {&sourceClient_, kSourceClient}},
                                         g, ours, timeoutMs_);
    if (!committed.isOk()) continue;
    kafka::PartitionOffsets want;
    for (const auto& [tp, c] : *committed) {
      auto id = topicIds_.find(tp.first);
      if (id == topicIds_.end()) continue;
      auto s = shared_.syncs.find({id->second, tp.second});
      if (s == shared_.syncs.end()) continue;
      if (auto t = s->second.translate(c)) want[{naming_.targetTopic(tp.first), tp.second}] = *t;
    }
    if (want.empty()) continue;
    std::vector<std::pair<std::string, std::int32_t>> targets;
    for (const auto& [tp, off] : want) targets.push_back(tp);
    auto current = kafka::committedVia({{&targetSettings_, "KafkaReplicatorSink: "}, {&targetClient_, kTargetClient}},
                                       g, targets, timeoutMs_);
    if (!current.isOk()) continue;
    for (auto it = want.begin(); it != want.end();) {
      auto c = current->find(it->first);
      if (c != current->end() && c->second >= it->second)
        it = want.erase(it);  // never move a group backwards on the target
      else
        ++it;
    }
    if (want.empty()) continue;
    Status s = kafka::commitVia({{&targetSettings_, "KafkaReplicatorSink: "}, {&targetClient_, kTargetClient}}, g,
                                want, timeoutMs_);
    if (s.isOk())
      log_->debug("KafkaReplicatorSink: group {}: {} partition offset(s) synced to the target", g, want.size());
    else if (s.code() == StatusCode::kFailedPrecondition)
      log_->debug("KafkaReplicatorSink: group {} is active on the target; its offsets are left alone", g);
    else
      log_->warn("KafkaReplicatorSink: group {}: {}", g, s.message());
  }
}

void KafkaReplicatorSinkTask::stop() {
  if (flushes_ > 0)
    log_->info("KafkaReplicatorSink: {} flush(es) waited {} ms for acknowledgements in all", flushes_, flushWaitMs_);
  flushes_ = 0;
  flushWaitMs_ = 0;
  if (producer_ != nullptr) {
    if (inTxn_) {
      // Not flushed (the task is failing): nothing of it may become visible.
      if (rd_kafka_error_t* a = rd_kafka_abort_transaction(producer_, 5000)) rd_kafka_error_destroy(a);
      inTxn_ = false;
    }
    rd_kafka_flush(producer_, 5000);
    rd_kafka_destroy(producer_);
    producer_ = nullptr;
  }
  // The producer's threads are gone: nothing reads the copies it did not report any more.
  while (shared_.pending != nullptr) {
    PendingCopy* p = shared_.pending;
    p->unlink();
    delete p;
  }
  kafka::destroy(targetAdmin_);
  targetAdmin_ = nullptr;
  kafka::destroy(sourceAdmin_);
  sourceAdmin_ = nullptr;
}

}  // namespace ferry::connectors
