// KafkaSource (see kafka_source.h).
#include "connectors/kafka/kafka_source.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>

#include "connectors/common.h"
#include "connectors/kafka/kafka_positions.h"
#include "core/logging.h"
#include "kafka/rdkafka_util.h"

namespace ferry::connectors {
namespace {

constexpr const char* kOverride = "consumer.override.";

// librdkafka's statistics event (served inside rd_kafka_consumer_poll): the brokers' state for
// the connection watch. 0: librdkafka frees the JSON.
int onStats(rd_kafka_t*, char* json, size_t len, void* opaque) {
  static_cast<kafka::ConnectionWatch*>(opaque)->onStats(std::string_view(json, len));
  return 0;
}

// Client-level errors (a broker unreachable, all brokers down, ...), served inside
// rd_kafka_consumer_poll; librdkafka no longer logs them itself once this is set.
void onError(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  core::logger("kafka")->warn("{}: {}", rd_kafka_name(rk), reason);
  static_cast<kafka::ConnectionWatch*>(opaque)->onError(err, reason);
}

}  // namespace

const ConfigDef& KafkaSourceConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("kafka.bootstrap.servers", ConfigType::kString, std::nullopt, Importance::kHigh,
             "Kafka brokers, 'host:port,host:port'.", validators::nonEmptyString());
    d.define("kafka.topics", ConfigType::kList, std::nullopt, Importance::kHigh,
             "Kafka topics to read (a name starting with ^ is a regex).", validators::nonEmptyList());
    d.define("kafka.group.id", ConfigType::kString, "", Importance::kMedium,
             "Consumer group of the tasks; empty means ferry-<connector name>.");
    d.define("kafka.from", ConfigType::kString, "earliest", Importance::kMedium,
             "Where a group without a committed offset starts: earliest or latest.",
             validators::oneOf({"earliest", "latest"}));
    d.define("topic", ConfigType::kString, "", Importance::kMedium,
             "Backbone topic written to; empty means the Kafka topic.");
    d.define("kafka.static.membership", ConfigType::kBool, "true", Importance::kMedium,
             "Tasks join as static members (group.instance.id = ferry-<connector>-<task>-<hash of the "
             "topics>): a worker restarted after a crash gets its partitions back at once instead of "
             "after the session timeout. Not used with regex topics.");
    d.allowPrefix(kOverride);
    return d;
  }();
  return def;
}

std::string KafkaSourceConnector::version() const { return kVersion; }

Status KafkaSourceConnector::start(const StringMap& config, ConnectorContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "KafkaSource"));
  (void)parsed;
  config_ = config;
  if (config_["kafka.group.id"].empty()) config_["kafka.group.id"] = "ferry-" + context.connectorName();
  return Status::ok();
}

Result<std::vector<StringMap>> KafkaSourceConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)), config_);
}

std::unique_ptr<SourceTask> KafkaSourceConnector::createTask() { return std::make_unique<KafkaSourceTask>(); }

KafkaSourceTask::KafkaSourceTask() : log_(core::logger("kafka-source")) {}

KafkaSourceTask::~KafkaSourceTask() { stop(); }

std::string KafkaSourceTask::version() const { return kVersion; }

Status KafkaSourceTask::start(const StringMap& config, SourceTaskContext& context) {
  stop();
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(KafkaSourceConnector::definition(), config, "KafkaSource task"));
  targetTopic_ = p.getString("topic");
  std::string group = p.getString("kafka.group.id");
  if (group.empty()) group = "ferry-" + context.connectorName();
  StringMap settings = {{"bootstrap.servers", p.getString("kafka.bootstrap.servers")},
                        {"group.id", group},
                        {"auto.offset.reset", p.getString("kafka.from")},
                        {"enable.auto.commit", "false"},
                        {"enable.auto.offset.store", "false"},
                        {"session.timeout.ms", "10000"},
                        // A third of Kafka's 3 s: after an outage longer than the session the
                        // member learns sooner that it must join again (and the records follow).
                        {"heartbeat.interval.ms", "1000"},
                        {"client.id", "ferry-" + context.connectorName() + "-" + std::to_string(context.taskId())}};
  for (const auto& kv : kafka::connectorClientDefaults()) settings.insert(kv);  // under ours; overrides win
  // Static membership with an id that changes with the topics (see kafka::staticInstanceId); not
  // with regex subscriptions, whose topics change while the task runs.
  const auto topicList = p.getList("kafka.topics");
  const bool regex = std::any_of(topicList.begin(), topicList.end(),
                                 [](const std::string& t) { return !t.empty() && t[0] == '^'; });
  if (p.getBool("kafka.static.membership") && !regex)
    settings["group.instance.id"] = kafka::staticInstanceId(
        "ferry-" + context.connectorName() + "-" + std::to_string(context.taskId()), topicList);
  StringMap overrides;
  for (const auto& [k, v] : config)
    if (k.rfind(kOverride, 0) == 0) overrides[k.substr(std::char_traits<char>::length(kOverride))] = v;
  FERRY_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf, kafka::makeConf({{&settings, "kafka."}, {&overrides, kOverride}}));
  // The connection as librdkafka sees it, reported to the runtime (status, /metrics): lost on
  // an error event, back on a statistics event showing a broker UP (needs statistics.interval.ms).
  watch_ = std::make_unique<kafka::ConnectionWatch>();
  if (kafka::statsEnabled(conf)) {
    watch_->setReport(kafka::reportTo(context));
    rd_kafka_conf_set_stats_cb(conf, onStats);
    rd_kafka_conf_set_error_cb(conf, onError);
    rd_kafka_conf_set_opaque(conf, watch_.get());
  }
  char err[512];
  rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk_ == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::invalidArgument(std::string("KafkaSource: cannot create the consumer: ") + err);
  }
  rd_kafka_poll_set_consumer(rk_);
  waker_.attach(rk_, [ctx = &context] { ctx->wakeup(); });
  const auto topics = p.getList("kafka.topics");
  rd_kafka_topic_partition_list_t* subs = rd_kafka_topic_partition_list_new(static_cast<int>(topics.size()));
  for (const auto& t : topics) rd_kafka_topic_partition_list_add(subs, t.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t e = rd_kafka_subscribe(rk_, subs);
  rd_kafka_topic_partition_list_destroy(subs);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    stop();
    return Status::invalidArgument(std::string("kafka.topics: cannot subscribe: ") + rd_kafka_err2str(e));
  }
  log_->info("{} task {}: group {} subscribed to {} topic(s) at {}", context.connectorName(), context.taskId(),
             group, topics.size(), settings["bootstrap.servers"]);
  return Status::ok();
}

Result<std::size_t> KafkaSourceTask::poll(std::vector<Record>& out, std::size_t maxRecords,
                                          std::chrono::milliseconds maxWait) {
  if (rk_ == nullptr) return Status::failedPrecondition("KafkaSource: poll() before start()");
  std::size_t n = 0;
  auto timeout = static_cast<int>(maxWait.count());
  while (n < maxRecords) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, timeout);
    if (m == nullptr) break;
    timeout = 0;  // take what is there, do not wait again
    if (m->err) {
      const rd_kafka_resp_err_t err = m->err;
      const bool fatal = err == RD_KAFKA_RESP_ERR__FATAL || err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
                         err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ||
                         err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL ||
                         err == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED;
      std::string what = rd_kafka_message_errstr(m);
      rd_kafka_message_destroy(m);
      watch_->onError(err, what.c_str());
      if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF) continue;
      if (fatal) return Status::internal("KafkaSource: " + what);
      log_->warn("KafkaSource: {}", what);
      break;
    }
    Record r;
    const std::string topic = rd_kafka_topic_name(m->rkt);
    r.topic = targetTopic_.empty() ? topic : targetTopic_;
    fillFromKafka(m, topic, r);
    r.headers = kafka::readHeaders(m);
    rd_kafka_message_destroy(m);
    out.push_back(std::move(r));
    ++n;
  }
  return n;
}

void KafkaSourceTask::commitRecord(const Record& record) { safe_.markSafe(record); }

Status KafkaSourceTask::commit() {
  // Not while the brokers are known to be down: nothing would answer (the offsets wait).
  if (watch_ && !watch_->connected()) return Status::ok();
  return safe_.commit(rk_, *log_, "KafkaSource");
}

void KafkaSourceTask::stop() {
  if (rk_ == nullptr) return;
  (void)commit();
  waker_.detach();
  rd_kafka_consumer_close(rk_);
  rd_kafka_destroy(rk_);
  rk_ = nullptr;
}

}  // namespace ferry::connectors
