// KafkaSink (see kafka_sink.h).
#include "connectors/kafka/kafka_sink.h"

#include <librdkafka/rdkafka.h>

#include <sys/types.h>

#include <chrono>

#include "connectors/common.h"
#include "core/logging.h"
#include "kafka/rdkafka_util.h"

namespace ferry::connectors {
namespace {

constexpr const char* kOverride = "producer.override.";

void onDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* d = static_cast<KafkaSinkTask::Deliveries*>(opaque);
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    d->ok.fetch_add(1, std::memory_order_relaxed);
    d->connection.onAcknowledged();
    return;
  }
  if (d->failed.fetch_add(1, std::memory_order_relaxed) == 0)
    d->firstError = std::string(rd_kafka_err2str(m->err)) + " (topic " +
                    (m->rkt ? rd_kafka_topic_name(m->rkt) : "?") + ")";
}

// Client-level errors. An authentication the brokers refuse, or a TLS handshake that fails (a
// certificate that does not verify), is retried by librdkafka forever and would only surface as
// delivery timeouts minutes later: it fails the task at once instead.
void onError(rd_kafka_t*, int err, const char* reason, void* opaque) {
  auto* d = static_cast<KafkaSinkTask::Deliveries*>(opaque);
  d->connection.onError(err, reason);
  if (!d->authError.empty()) return;
  if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED)
    d->authError = std::string("the brokers refused the client: ") + reason;
  else if (err == RD_KAFKA_RESP_ERR__SSL)
    d->authError = std::string("the TLS handshake with the brokers failed: ") + reason;
}

// librdkafka's statistics event (served inside rd_kafka_poll / rd_kafka_flush): the brokers'
// state for the connection watch. 0: librdkafka frees the JSON.
int onStats(rd_kafka_t*, char* json, size_t len, void* opaque) {
  static_cast<KafkaSinkTask::Deliveries*>(opaque)->connection.onStats(std::string_view(json, len));
  return 0;
}

}  // namespace

const ConfigDef& KafkaSinkConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("kafka.bootstrap.servers", ConfigType::kString, std::nullopt, Importance::kHigh,
             "Kafka brokers, 'host:port,host:port'.", validators::nonEmptyString());
    d.define("kafka.topic", ConfigType::kString, "", Importance::kHigh,
             "Kafka topic written to; empty means the record's topic.");
    d.define("kafka.partition.from", ConfigType::kString, "key", Importance::kMedium,
             "'key': the Java client's partitioner (murmur2) on the record key, so a key lands "
             "where a Java producer puts it (producer.override.partitioner changes it); "
             "'record': the record's queue as the partition (kept by replication).",
             validators::oneOf({"key", "record"}));
    d.define("flush.timeout.ms", ConfigType::kLong, "30000", Importance::kLow,
             "How long flush() waits for the brokers' acknowledgements.", validators::atLeast(100));
    d.allowPrefix(kOverride);
    return d;
  }();
  return def;
}

std::string KafkaSinkConnector::version() const { return kVersion; }

Status KafkaSinkConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "KafkaSink"));
  (void)parsed;
  config_ = config;
  return Status::ok();
}

Result<std::vector<StringMap>> KafkaSinkConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)), config_);
}

std::unique_ptr<SinkTask> KafkaSinkConnector::createTask() { return std::make_unique<KafkaSinkTask>(); }

KafkaSinkTask::KafkaSinkTask() : log_(core::logger("kafka-sink")) {}

KafkaSinkTask::~KafkaSinkTask() { stop(); }

std::string KafkaSinkTask::version() const { return kVersion; }

Status KafkaSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  stop();
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(KafkaSinkConnector::definition(), config, "KafkaSink task"));
  topic_ = p.getString("kafka.topic");
  partitionFromRecord_ = p.getString("kafka.partition.from") == "record";
  flushTimeoutMs_ = p.getLong("flush.timeout.ms");
  StringMap settings = {{"bootstrap.servers", p.getString("kafka.bootstrap.servers")},
                        {"enable.idempotence", "true"},
                        {"acks", "all"},
                        {"linger.ms", "5"},
                        // The Java client's placement (murmur2 of the key): a key lands in the
                        // partition a Java producer would pick, as Kafka Connect users expect.
                        // librdkafka's default (CRC32) would put it elsewhere.
                        {"partitioner", "murmur2_random"},
                        {"client.id", "ferry-" + context.connectorName() + "-" + std::to_string(context.taskId())}};
  for (const auto& kv : kafka::connectorClientDefaults()) settings.insert(kv);  // under ours; overrides win
  StringMap overrides;
  for (const auto& [k, v] : config)
    if (k.rfind(kOverride, 0) == 0) overrides[k.substr(std::char_traits<char>::length(kOverride))] = v;
  FERRY_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf, kafka::makeConf({{&settings, "kafka."}, {&overrides, kOverride}}));
  char err[512];
  rd_kafka_conf_set_dr_msg_cb(conf, onDelivery);
  rd_kafka_conf_set_error_cb(conf, onError);
  if (kafka::statsEnabled(conf)) {
    deliveries_.connection.setReport(kafka::reportTo(context));
    rd_kafka_conf_set_stats_cb(conf, onStats);
  }
  rd_kafka_conf_set_opaque(conf, &deliveries_);
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);  // takes conf on success
  if (rk_ == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::invalidArgument(std::string("KafkaSink: cannot create the producer: ") + err);
  }
  log_->info("{} task {}: producing to {} ({})", context.connectorName(), context.taskId(),
             topic_.empty() ? std::string("the records' topics") : topic_, settings["bootstrap.servers"]);
  return Status::ok();
}

Status KafkaSinkTask::put(std::vector<Record>& records) {
  if (rk_ == nullptr) return Status::failedPrecondition("KafkaSink: put() before start()");
  for (auto& r : records) {
    const std::string& topic = topic_.empty() ? r.topic : topic_;
    if (topic.empty()) return Status::invalidArgument("KafkaSink: a record without a topic and no kafka.topic set");
    rd_kafka_headers_t* hdrs = kafka::toKafkaHeaders(r.headers);
    const std::int32_t partition =
        partitionFromRecord_ && r.queue ? *r.queue : static_cast<std::int32_t>(RD_KAFKA_PARTITION_UA);
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_VALUE(r.value.isNull() ? nullptr : const_cast<char*>(r.value.view().data()),
                           r.value.isNull() ? 0 : r.value.size()),
          RD_KAFKA_V_KEY(r.key.isNull() ? nullptr : const_cast<char*>(r.key.view().data()),
                         r.key.isNull() ? 0 : r.key.size()),
          RD_KAFKA_V_TIMESTAMP(r.timestampMs), RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;  // librdkafka owns hdrs now
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(rk_, 100);  // serve delivery reports to make room
        continue;
      }
      if (hdrs) rd_kafka_headers_destroy(hdrs);
      return Status::internal(std::string("KafkaSink: cannot produce to ") + topic + ": " + rd_kafka_err2str(e));
    }
  }
  rd_kafka_poll(rk_, 0);
  if (!deliveries_.authError.empty())
    return Status::internal("KafkaSink: " + deliveries_.authError);
  if (deliveries_.failed.load() > 0)
    return Status::internal("KafkaSink: delivery failed: " + deliveries_.firstError);
  return Status::ok();
}

Status KafkaSinkTask::flush() {
  if (rk_ == nullptr) return Status::ok();
  // In steps, so a refused authentication ends the wait at once.
  rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__TIMED_OUT;
  for (long waited = 0; waited < flushTimeoutMs_ && deliveries_.authError.empty(); waited += 200)
    if ((e = rd_kafka_flush(rk_, 200)) == RD_KAFKA_RESP_ERR_NO_ERROR) break;
  if (!deliveries_.authError.empty())
    return Status::internal("KafkaSink: " + deliveries_.authError);
  if (deliveries_.failed.load() > 0)
    return Status::internal("KafkaSink: delivery failed: " + deliveries_.firstError);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return Status::retriable(std::string("KafkaSink: ") + std::to_string(rd_kafka_outq_len(rk_)) +
                             " record(s) not acknowledged within flush.timeout.ms: " + rd_kafka_err2str(e));
  return Status::ok();
}

void KafkaSinkTask::stop() {
  if (rk_ == nullptr) return;
  rd_kafka_flush(rk_, 5000);
  rd_kafka_destroy(rk_);
  rk_ = nullptr;
}

}  // namespace ferry::connectors
