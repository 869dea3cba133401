// RocketMQSink (see rocketmq_sink.h).
#include "connectors/rocketmq/rocketmq_sink.h"



#include "rocketmq/client.h"
#include "rocketmq/client_pool.h"
#include "connectors/common.h"
#include "core/logging.h"

namespace ferry::connectors {
namespace {

constexpr std::size_t kMaxBatchBytes = 1u << 20;

}  // namespace

const ConfigDef& RocketMQSinkConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("rocketmq.namesrv", ConfigType::kString, std::nullopt, Importance::kHigh,
             "NameServer addresses, 'host:port;host:port'.", validators::nonEmptyString());
    d.define("rocketmq.topic", ConfigType::kString, "", Importance::kHigh,
             "RocketMQ topic written to; empty means the record's topic.");
    d.define("rocketmq.tag", ConfigType::kString, "", Importance::kMedium,
             "Tag of every message (TAGS property); empty sends none.");
    d.define("rocketmq.order", ConfigType::kString, "none", Importance::kMedium,
             "'none': round-robin over queues; 'key': a hash of the record key picks the queue, "
             "so records with one key stay in order.",
             validators::oneOf({"none", "key"}));
    d.define("rocketmq.producer.group", ConfigType::kString, "ferry_producer", Importance::kLow,
             "Producer group sent with every message.");
    d.define("rocketmq.access.key", ConfigType::kString, "", Importance::kMedium,
             "ACL access key; when set every request is signed.");
    d.define("rocketmq.secret.key", ConfigType::kPassword, "", Importance::kMedium,
             "ACL secret key.");
    d.define("rocketmq.request.timeout.ms", ConfigType::kLong, "3000", Importance::kLow,
             "Timeout of one request (one send attempt).", validators::atLeast(100));
    d.define("max.in.flight", ConfigType::kInt, "10000", Importance::kLow,
             "Most messages outstanding at once; put() waits for room.", validators::atLeast(1));
    d.define("batch.size", ConfigType::kInt, "128", Importance::kLow,
             "Most messages per send (SEND_BATCH_MESSAGE); at most 1 MiB of bodies either way.",
             validators::between(1, 1000));
    return d;
  }();
  return def;
}

std::string RocketMQSinkConnector::version() const { return kVersion; }

Status RocketMQSinkConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "RocketMQSink"));
  (void)parsed;
  return Status::ok();
}

Result<std::vector<StringMap>> RocketMQSinkConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)));
}

std::unique_ptr<SinkTask> RocketMQSinkConnector::createTask() {
  return std::make_unique<RocketMQSinkTask>();
}

RocketMQSinkTask::RocketMQSinkTask() : log_(core::logger("rocketmq-sink")) {}

RocketMQSinkTask::~RocketMQSinkTask() { stop(); }

std::string RocketMQSinkTask::version() const { return kVersion; }

Status RocketMQSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(RocketMQSinkConnector::definition(), config,
                                                  "RocketMQSink task"));
  stop();
  options_.topic = parsed.getString("rocketmq.topic");
  options_.tag = parsed.getString("rocketmq.tag");
  orderByKey_ = parsed.getString("rocketmq.order") == "key";
  maxInFlight_ = static_cast<std::size_t>(parsed.getInt("max.in.flight"));
  batchSize_ = static_cast<std::size_t>(parsed.getInt("batch.size"));
  rocketmq::ClientOptions co;
  co.namesrvAddrs = parsed.getString("rocketmq.namesrv");
  co.accessKey = parsed.getString("rocketmq.access.key");
  co.secretKey = parsed.getString("rocketmq.secret.key");
  co.requestTimeoutMs = parsed.getLong("rocketmq.request.timeout.ms");
  co.reconnectBackoffMaxMs = 500;  // a broker coming back is seen within about half a second
  FERRY_ASSIGN_OR_RETURN(client_, rocketmq::sharedClient(co));
  rocketmq::ProducerOptions po;
  po.group = parsed.getString("rocketmq.producer.group");
  producer_ = std::make_unique<rocketmq::Producer>(*client_, po);
  sender_ = std::make_unique<rmq::BatchSender>(*producer_, orderByKey_, maxInFlight_);
  // Failed sends wait for the runtime's next flush(), after its back-off: the sender reports the
  // loss and, once a probe finds the brokers answering, the return, which ends that back-off.
  sender_->watchHealth(*client_,
                       [ctx = &context](const ConnectionHealth& h) { ctx->reportConnection(h); });
  log_->info("{} task {}: writing to RocketMQ at {}", context.connectorName(), context.taskId(),
             co.namesrvAddrs);
  return Status::ok();
}

Status RocketMQSinkTask::put(std::vector<Record>& records) {
  if (!producer_) return Status::failedPrecondition("RocketMQSink: put() before start()");
  if (Status f = sender_->fatal(); !f.isOk()) return f.withContext("RocketMQSink");
  // Open batches: by key (order=key) or one (order=none); a batch holds one target topic.
  std::map<std::string, rmq::BatchSender::Batch> open;
  std::map<std::string, std::size_t> openBytes;
  auto close = [&](const std::string& id) {
    auto it = open.find(id);
    if (it == open.end()) return;
    rmq::BatchSender::Batch p = std::move(it->second);
    open.erase(it);
    openBytes.erase(id);
    sender_->send(std::move(p));
  };
  for (const Record& r : records) {
    std::size_t skipped = 0;
    rocketmq::OutgoingMessage m = rmq::messageFromRecord(r, options_, &skipped);
    if (skipped > 0) {
      if (skipped_ == 0)
        log_->warn("RocketMQSink: a header or key the RocketMQ properties format cannot carry "
                   "was left out (counted from now on)");
      skipped_ += skipped;
    }
    const std::string key = orderByKey_ ? r.key.str() : std::string();
    auto it = open.find(key);
    if (it != open.end() &&
        (it->second.messages.front().topic != m.topic || it->second.messages.size() >= batchSize_ ||
         openBytes[key] + m.body.size() > kMaxBatchBytes)) {
      close(key);
      it = open.end();
    }
    if (it == open.end()) {
      rmq::BatchSender::Batch p;
      p.orderKey = key;
      p.selection = orderByKey_ ? rocketmq::QueueSelection::byKey(key)
                                : rocketmq::QueueSelection::roundRobin();
      it = open.emplace(key, std::move(p)).first;
    }
    openBytes[key] += m.body.size() + 64;
    it->second.messages.push_back(std::move(m));
  }
  while (!open.empty()) close(open.begin()->first);
  return Status::ok();
}

bool RocketMQSinkTask::flushAsync(std::function<void(Status)> done) {
  if (!producer_) return false;
  sender_->flushAsync("RocketMQSink", std::move(done));
  return true;
}

Status RocketMQSinkTask::flush() {
  if (!producer_) return Status::failedPrecondition("RocketMQSink: flush() before start()");
  return sender_->flush("RocketMQSink");
}

void RocketMQSinkTask::stop() {
  sender_.reset();  // waits for pending sends: the producer must outlive them
  producer_.reset();
  client_.reset();
}

}  // namespace ferry::connectors
