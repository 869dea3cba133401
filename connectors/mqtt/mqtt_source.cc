// MQTTSource (see mqtt_source.h).
#include "connectors/mqtt/mqtt_source.h"

#include "connectors/common.h"
#include "core/logging.h"

namespace ferry::connectors {
namespace {

// Acknowledges the MQTT message of a record once the record is safe; a record dropped on purpose
// (filter, tolerated error) is acknowledged too, one the runtime gives up on is not (the broker
// delivers it again after a reconnect).
class MqttAck final : public Acknowledger {
 public:
  // Holds the client: the runtime may settle records after the task stopped (acks to a closed
  // client are ignored). `pending` counts the task's records not settled yet.
  MqttAck(std::shared_ptr<mqtt::MqttClient> client, std::uint64_t token, std::shared_ptr<std::atomic<long>> pending)
      : client_(std::move(client)), token_(token), pending_(std::move(pending)) {}
  void ack() noexcept override {
    client_->ack(token_);
    settle();
  }
  void release(bool delivered) noexcept override {
    if (delivered) client_->ack(token_);
    settle();
  }

 private:
  void settle() noexcept {
    if (!settled_.exchange(true)) pending_->fetch_sub(1, std::memory_order_relaxed);
  }
  std::shared_ptr<mqtt::MqttClient> client_;
  std::uint64_t token_;
  std::shared_ptr<std::atomic<long>> pending_;
  std::atomic<bool> settled_{false};
};

}  // namespace

const ConfigDef& MQTTSourceConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    mqttc::defineConnectionKeys(d);
    d.define("mqtt.topics", ConfigType::kList, std::nullopt, Importance::kHigh,
             "Topic filters to subscribe (+ and # wildcards; $share/<group>/<filter> for shared ones).",
             validators::nonEmptyList());
    d.define("mqtt.qos", ConfigType::kInt, "1", Importance::kHigh, "Subscription QoS: 0, 1 or 2.",
             validators::between(0, 2));
    d.define("mqtt.shared.group", ConfigType::kString, "", Importance::kMedium,
             "Subscribe every filter as $share/<group>/<filter> so the tasks (and workers) split the "
             "stream; needed for tasks.max > 1.");
    d.define("topic", ConfigType::kString, "", Importance::kMedium,
             "Ferry topic of the records; empty means the MQTT topic of each message.");
    d.define("key.from", ConfigType::kString, "topic", Importance::kLow,
             "Record key: 'topic' (the MQTT topic) or 'none'.", validators::oneOf({"topic", "none"}));
    return d;
  }();
  return def;
}

std::string MQTTSourceConnector::version() const { return kVersion; }

void MQTTSourceConnector::validate(const StringMap& config, ConfigValidation& v) const {
  auto p = definition().parse(config, false);
  if (!p.isOk()) return;
  if (auto uri = mqttc::parseServerUri(p->getString("mqtt.server.uri")); !uri.isOk())
    v.errors["mqtt.server.uri"].push_back(uri.status().message());
  auto filters = mqttc::subscriptionFilters(p->getList("mqtt.topics"), p->getString("mqtt.shared.group"));
  if (!filters.isOk()) {
    v.errors["mqtt.topics"].push_back(filters.status().message());
    return;
  }
  auto tasks = config.find("tasks.max");
  const bool many = tasks != config.end() && tasks->second != "1" && !tasks->second.empty();
  bool allShared = true;
  for (const auto& f : *filters) allShared = allShared && f.rfind("$share/", 0) == 0;
  if (many && !allShared)
    v.errors["mqtt.shared.group"].push_back(
        "tasks.max > 1 needs shared subscriptions (set mqtt.shared.group or give $share/<group>/ "
        "filters), or every task would receive every message");
  if (!p->getString("mqtt.ssl.cert.file").empty() && p->getString("mqtt.ssl.key.file").empty())
    v.errors["mqtt.ssl.key.file"].push_back("a client certificate needs its key");
}

Status MQTTSourceConnector::start(const StringMap& config, ConnectorContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "MQTTSource"));
  (void)parsed;
  config_ = config;
  if (config_["mqtt.client.id"].empty()) config_["mqtt.client.id"] = "ferry-" + context.connectorName();
  return Status::ok();
}

Result<std::vector<StringMap>> MQTTSourceConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)), config_);
}

std::unique_ptr<SourceTask> MQTTSourceConnector::createTask() { return std::make_unique<MQTTSourceTask>(); }

MQTTSourceTask::MQTTSourceTask() : log_(core::logger("mqtt-source")) {}

MQTTSourceTask::~MQTTSourceTask() { stop(); }

std::string MQTTSourceTask::version() const { return kVersion; }

Status MQTTSourceTask::start(const StringMap& config, SourceTaskContext& context) {
  stop();
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(MQTTSourceConnector::definition(), config, "MQTTSource task"));
  mapping_.targetTopic = p.getString("topic");
  mapping_.keyFromTopic = p.getString("key.from") == "topic";
  FERRY_ASSIGN_OR_RETURN(auto filters,
                         mqttc::subscriptionFilters(p.getList("mqtt.topics"), p.getString("mqtt.shared.group")));
  FERRY_ASSIGN_OR_RETURN(auto options, mqttc::clientOptions(p, "ferry-" + context.connectorName(),
                                                            "-" + std::to_string(context.taskId())));
  queue_ = std::make_shared<Queue>();
  pending_ = std::make_shared<std::atomic<long>>(0);
  context_ = &context;
  commitAt_ = std::max<long>(1, options.receiveMaximum / 2);
  auto q = queue_;
  client_ = std::make_shared<mqtt::MqttClient>(options);
  client_->setMessageHandler([q](mqtt::IncomingMessage m) {
    std::lock_guard lock(q->mu);
    if (m.qos == 0 && q->items.size() >= q->limit) {
      ++q->dropped;  // QoS 0 may be dropped; QoS 1/2 are bounded by our Receive Maximum
      return;
    }
    q->items.push_back(std::move(m));
    q->cv.notify_one();
  });
  bool sessionPresent = false;
  Status s = client_->connect(&sessionPresent);
  if (!s.isOk()) {
    client_.reset();
    return s.withContext("MQTTSource: connecting to " + options.host + ":" + std::to_string(options.port));
  }
  std::vector<mqtt::Subscription> subs;
  const auto qos = static_cast<std::uint8_t>(p.getInt("mqtt.qos"));
  for (const auto& f : filters) subs.push_back({f, qos, false, false, 0});
  if (Status sub = client_->subscribe(subs); !sub.isOk()) {
    client_.reset();
    return sub.withContext("MQTTSource: subscribing");
  }
  log_->info("{} task {}: client {} subscribed to {} filter(s) at QoS {} (session {})", context.connectorName(),
             context.taskId(), options.clientId, subs.size(), static_cast<int>(qos),
             sessionPresent ? "resumed" : "new");
  return Status::ok();
}

Result<std::size_t> MQTTSourceTask::poll(std::vector<Record>& out, std::size_t maxRecords,
                                         std::chrono::milliseconds maxWait) {
  if (!client_) return Status::failedPrecondition("MQTTSource: poll() before start()");
  std::deque<mqtt::IncomingMessage> taken;
  {
    std::unique_lock lock(queue_->mu);
    queue_->cv.wait_for(lock, maxWait, [&] { return !queue_->items.empty(); });
    while (!queue_->items.empty() && taken.size() < maxRecords) {
      taken.push_back(std::move(queue_->items.front()));
      queue_->items.pop_front();
    }
    if (queue_->dropped > dropped_) {
      log_->warn("MQTTSource: {} QoS 0 messages dropped (the task fell behind)", queue_->dropped - dropped_);
      dropped_ = queue_->dropped;
    }
  }
  if (taken.empty() && client_->state() != mqtt::ClientState::kConnected) {
    Status e = client_->lastError();
    if (!e.isOk()) return Status::unavailable("MQTTSource: disconnected, reconnecting: " + e.toString());
  }
  for (auto& m : taken) {
    Record r = mqttc::recordFromMessage(m, mapping_);
    if (m.qos > 0) {
      pending_->fetch_add(1, std::memory_order_relaxed);
      r.acknowledger = std::make_shared<MqttAck>(client_, m.token, pending_);
    }
    out.push_back(std::move(r));
  }
  // The broker sends at most Receive Maximum unacknowledged messages: ask for a commit (which
  // acknowledges them) when half the window waits, rather than at the next flush interval.
  // A smaller window of unacknowledged messages is also what a crash re-delivers.
  if (context_ != nullptr && pending_->load(std::memory_order_relaxed) >= commitAt_) context_->requestCommit();
  return taken.size();
}

void MQTTSourceTask::stop() {
  context_ = nullptr;
  if (client_) {
    client_->close();  // unacknowledged messages stay with the broker's session
    client_.reset();
  }
  queue_.reset();
}

}  // namespace ferry::connectors
