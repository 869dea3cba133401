// MQTTSource (see mqtt_source.h).
#include "connectors/mqtt/mqtt_source.h"

#include "connectors/common.h"
#include "core/clock.h"
#include "core/logging.h"

namespace ferry::connectors {
namespace {

// Acknowledges the MQTT messages of one poll's records once each record is safe; a record dropped
// on purpose (filter, tolerated error) is acknowledged too, one the runtime gives up on is not (the
// broker delivers it again after a reconnect). One allocation per poll: each record's
// acknowledger is an element of `acks`, handed out as a shared_ptr aliasing the batch, so the
// batch lives until the last of its records is settled or dropped.
struct AckBatch {
  struct Ack final : Acknowledger {
    void ack() noexcept override {
      batch->client->ack(token);
      settle();
    }
    void release(bool delivered) noexcept override {
      if (delivered) batch->client->ack(token);
      settle();
    }
    void settle() noexcept {
      if (!settled.exchange(true, std::memory_order_relaxed))
        batch->pending->fetch_sub(1, std::memory_order_relaxed);
    }
    AckBatch* batch = nullptr;
    std::uint64_t token = 0;
    std::atomic<bool> settled{false};
  };
  // Holds the client: the runtime may settle records after the task stopped (acks to a closed
  // client are ignored). `pending` counts the task's records not settled yet.
  AckBatch(std::shared_ptr<mqtt::MqttClient> c, std::shared_ptr<std::atomic<long>> p, std::size_t n)
      : client(std::move(c)), pending(std::move(p)), acks(std::make_unique<Ack[]>(n)) {}
  std::shared_ptr<mqtt::MqttClient> client;
  std::shared_ptr<std::atomic<long>> pending;
  std::unique_ptr<Ack[]> acks;
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
  queue_->context = &context;
  pending_ = std::make_shared<std::atomic<long>>(0);
  context_ = &context;
  commitAt_ = std::max<long>(1, options.receiveMaximum / 2);
  cache_ = {};
  auto q = queue_;
  client_ = std::make_shared<mqtt::MqttClient>(options);
  // The messages of one socket read, under one lock; the runtime (or a waiting poll) is woken
  // only when the queue turns non-empty: a burst costs one wake-up, not one per message.
  client_->setBatchHandler([q](std::vector<mqtt::IncomingMessage>& batch) {
    bool wasEmpty = false;
    bool waiter = false;
    SourceTaskContext* context = nullptr;
    {
      std::lock_guard lock(q->mu);
      wasEmpty = q->items.empty();
      for (auto& m : batch) {
        if (m.qos == 0 && q->items.size() >= q->limit) {
          ++q->dropped;  // QoS 0 may be dropped; QoS 1/2 are bounded by our Receive Maximum
          continue;
        }
        q->items.push_back(std::move(m));
      }
      if (q->items.empty()) return;
      waiter = q->waiting;
      context = q->context;
    }
    if (!wasEmpty) return;
    if (waiter) q->cv.notify_one();
    if (context != nullptr) context->wakeup();
  });
  client_->setConnectionListener(mqttc::connectionReporter(context));
  auto tol = config.find("errors.tolerance");
  tolerateAll_ = tol != config.end() && tol->second == "all";
  malformed_ = 0;
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
    if (sub.code() == StatusCode::kUnavailable) {
      // The connection broke between CONNACK and SUBACK: the client subscribes when it is back,
      // and says so through the connection listener; restarting the task would only start over.
      log_->warn("{} task {}: {}; subscribing when the client has reconnected", context.connectorName(),
                 context.taskId(), sub.message());
      return Status::ok();
    }
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
  if (maxRecords == 0) maxRecords = 1;
  taken_.clear();
  {
    std::unique_lock lock(queue_->mu);
    if (queue_->items.empty() && maxWait.count() > 0) {
      queue_->waiting = true;
      queue_->cv.wait_for(lock, maxWait, [&] { return !queue_->items.empty(); });
      queue_->waiting = false;
    }
    if (queue_->items.size() <= maxRecords) {
      taken_.swap(queue_->items);  // the whole queue at once
    } else {
      for (std::size_t i = 0; i < maxRecords; ++i) {
        taken_.push_back(std::move(queue_->items.front()));
        queue_->items.pop_front();
      }
    }
    if (queue_->dropped > dropped_) {
      log_->warn("MQTTSource: {} QoS 0 messages dropped (the task fell behind)", queue_->dropped - dropped_);
      dropped_ = queue_->dropped;
    }
  }
  if (taken_.empty()) {
    if (client_->state() != mqtt::ClientState::kConnected) {
      Status e = client_->lastError();
      if (!e.isOk()) return Status::unavailable("MQTTSource: disconnected, reconnecting: " + e.toString());
    }
    return std::size_t{0};
  }
  FERRY_RETURN_IF_ERROR(takeMalformed());
  if (taken_.empty()) return std::size_t{0};
  std::size_t acked = 0;
  for (const auto& m : taken_) acked += m.qos > 0 ? 1 : 0;
  std::shared_ptr<AckBatch> batch;
  if (acked > 0) {
    batch = std::make_shared<AckBatch>(client_, pending_, acked);
    pending_->fetch_add(static_cast<long>(acked), std::memory_order_relaxed);
  }
  out.reserve(out.size() + taken_.size());
  // MQTT carries no time: the record's time is when ferry took it, read once per poll (the
  // runtime would otherwise read the clock for every record without one).
  const std::int64_t now = core::nowMs();
  std::size_t i = 0;
  for (auto& m : taken_) {
    const bool needsAck = m.qos > 0;
    const std::uint64_t token = m.token;
    const std::int64_t received = m.receivedNs;
    Record r = mqttc::recordFromMessage(std::move(m), mapping_, cache_);
    r.timestampMs = now;
    r.receivedNs = received;
    if (needsAck) {
      AckBatch::Ack& a = batch->acks[i++];
      a.batch = batch.get();
      a.token = token;
      r.acknowledger = std::shared_ptr<Acknowledger>(batch, &a);
    }
    out.push_back(std::move(r));
  }
  const std::size_t n = taken_.size();
  taken_.clear();
  // The broker sends at most Receive Maximum unacknowledged messages: ask for a commit (which
  // acknowledges them) when half the window waits, rather than at the next flush interval.
  // A smaller window of unacknowledged messages is also what a crash re-delivers.
  if (context_ != nullptr && pending_->load(std::memory_order_relaxed) >= commitAt_) context_->requestCommit();
  return n;
}

// A PUBLISH the client could frame but not decode (an invalid topic name, bad UTF-8, bad
// properties) cannot become a record. errors.tolerance=all: acknowledged (the broker would send it
// again after every reconnect otherwise) and skipped, logged at warn; =none: the task fails
// saying so, and the message stays with the broker. Sources have no dead-letter topic (as in
// Kafka Connect, it is a sink's), so its bytes are only logged (the topic, shortened).
Status MQTTSourceTask::takeMalformed() {
  bool any = false;
  for (const auto& m : taken_) any = any || !m.error.isOk();
  if (!any) return Status::ok();
  std::deque<mqtt::IncomingMessage> good;
  for (auto& m : taken_) {
    if (m.error.isOk()) {
      good.push_back(std::move(m));
      continue;
    }
    std::string topic = m.topic.substr(0, 200);
    for (char& c : topic) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    }
    std::string why = "the broker delivered a PUBLISH that cannot be read (" + m.error.message() + "; topic bytes '" +
                      topic + "', QoS " + std::to_string(m.qos) + ")";
    if (!tolerateAll_) {
      // Not acknowledged: it stays with the broker's session. Records taken before it are not
      // acknowledged either, and come again after a restart.
      if (context_ != nullptr) context_->reportConnection({ConnectionHealth::State::kDegraded, why});
      taken_.clear();
      return Status::invalidArgument("MQTTSource: " + why +
                                     "; errors.tolerance=none fails the task (=all acknowledges and skips such messages)");
    }
    ++malformed_;
    if (malformed_ <= 10 || malformed_ % 1000 == 0)
      log_->warn("MQTTSource: {}; skipped and acknowledged (errors.tolerance=all), {} so far", why, malformed_);
    if (m.qos > 0) client_->ack(m.token);
  }
  taken_.swap(good);
  return Status::ok();
}

void MQTTSourceTask::stop() {
  context_ = nullptr;
  if (queue_) {
    std::lock_guard lock(queue_->mu);
    queue_->context = nullptr;  // no wake-up for a task that stopped
  }
  if (client_) {
    client_->close();  // unacknowledged messages stay with the broker's session
    client_.reset();
  }
  queue_.reset();
}

}  // namespace ferry::connectors
