// MQTTSink (see mqtt_sink.h).
#include "connectors/mqtt/mqtt_sink.h"

#include "connectors/common.h"
#include "core/logging.h"

namespace ferry::connectors {

const ConfigDef& MQTTSinkConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    mqttc::defineConnectionKeys(d);
    d.define("mqtt.topic", ConfigType::kString, "${topic}", Importance::kHigh,
             "MQTT topic of each message: a template with ${topic}, ${key}, ${header:<name>}, "
             "${value:<json path>}, ${queue}, ${offset} or ${timestamp}.");
    d.define("mqtt.qos", ConfigType::kInt, "1", Importance::kHigh, "Publish QoS: 0, 1 or 2.",
             validators::between(0, 2));
    d.define("mqtt.retain", ConfigType::kBool, "false", Importance::kMedium, "Publish with the retain flag.");
    d.define("mqtt.properties.from.headers", ConfigType::kBool, "true", Importance::kLow,
             "MQTT 5: send the record's headers (except mqtt.*) as user properties.");
    d.define("mqtt.flush.timeout.ms", ConfigType::kLong, "30000", Importance::kLow,
             "How long flush() waits for the broker's acknowledgements.", validators::atLeast(100));
    return d;
  }();
  return def;
}

std::string MQTTSinkConnector::version() const { return kVersion; }

void MQTTSinkConnector::validate(const StringMap& config, ConfigValidation& v) const {
  auto p = definition().parse(config, false);
  if (!p.isOk()) return;
  if (auto uri = mqttc::parseServerUri(p->getString("mqtt.server.uri")); !uri.isOk())
    v.errors["mqtt.server.uri"].push_back(uri.status().message());
  if (auto t = mqttc::TopicTemplate::parse(p->getString("mqtt.topic")); !t.isOk())
    v.errors["mqtt.topic"].push_back(t.status().message());
  if (!p->getString("mqtt.ssl.cert.file").empty() && p->getString("mqtt.ssl.key.file").empty())
    v.errors["mqtt.ssl.key.file"].push_back("a client certificate needs its key");
}

Status MQTTSinkConnector::start(const StringMap& config, ConnectorContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "MQTTSink"));
  (void)parsed;
  config_ = config;
  if (config_["mqtt.client.id"].empty()) config_["mqtt.client.id"] = "ferry-" + context.connectorName();
  return Status::ok();
}

Result<std::vector<StringMap>> MQTTSinkConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)), config_);
}

std::unique_ptr<SinkTask> MQTTSinkConnector::createTask() { return std::make_unique<MQTTSinkTask>(); }

MQTTSinkTask::MQTTSinkTask() : log_(core::logger("mqtt-sink")) {}

MQTTSinkTask::~MQTTSinkTask() { stop(); }

std::string MQTTSinkTask::version() const { return kVersion; }

Status MQTTSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  stop();
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(MQTTSinkConnector::definition(), config, "MQTTSink task"));
  context_ = &context;
  FERRY_ASSIGN_OR_RETURN(auto tmpl, mqttc::TopicTemplate::parse(p.getString("mqtt.topic")));
  topic_ = std::make_unique<mqttc::TopicTemplate>(std::move(tmpl));
  mapping_.qos = static_cast<std::uint8_t>(p.getInt("mqtt.qos"));
  mapping_.retain = p.getBool("mqtt.retain");
  mapping_.propertiesFromHeaders = p.getBool("mqtt.properties.from.headers");
  flushTimeoutMs_ = p.getLong("mqtt.flush.timeout.ms");
  FERRY_ASSIGN_OR_RETURN(auto options, mqttc::clientOptions(p, "ferry-" + context.connectorName(),
                                                            "-sink-" + std::to_string(context.taskId())));
  client_ = std::make_unique<mqtt::MqttClient>(options);
  // readyForPut() said no: the runtime hears when a quarter of the window is free again.
  client_->setRoomListener([ctx = context_] { ctx->wake(); });
  client_->setConnectionListener(mqttc::connectionReporter(context));
  Status s = client_->connect();
  if (!s.isOk()) {
    client_.reset();
    return s.withContext("MQTTSink: connecting to " + options.host + ":" + std::to_string(options.port));
  }
  log_->info("{} task {}: publishing to {}:{} as {} (QoS {})", context.connectorName(), context.taskId(),
             options.host, options.port, options.clientId, static_cast<int>(mapping_.qos));
  return Status::ok();
}

Status MQTTSinkTask::put(std::vector<Record>& records) {
  if (!client_) return Status::failedPrecondition("MQTTSink: put() before start()");
  // Counted in the current epoch before any is published (an answer may come at once).
  std::uint64_t epoch = 0;
  {
    std::lock_guard lock(epochs_->mu);
    epoch = epochs_->epochs.started(records.size());
  }
  std::weak_ptr<Epochs> weak = epochs_;
  const mqtt::MqttClient::PublishCallback onAnswer = [weak, epoch](Status s) {
    auto e = weak.lock();
    if (!e) return;
    Status result;
    core::FlushEpochs::Callback done;
    {
      std::lock_guard lock(e->mu);
      e->epochs.ended(epoch);
      if (!s.isOk() && e->firstError.isOk()) e->firstError = s;
      done = e->epochs.takeIfDone();
      if (done) result = std::exchange(e->firstError, Status::ok());
    }
    if (done) done(flushStatus(std::move(result)));
  };
  // Failures surface in flush() (the client keeps the first one since the last flush) and in
  // flushAsync() (the first one of its epochs). One hand-off to the client for the whole batch.
  std::vector<mqtt::OutgoingMessage> out;
  out.reserve(records.size());
  for (const Record& r : records) {
    auto topic = topic_->render(r);
    if (!topic.isOk()) {
      onAnswer(Status::ok());  // nothing to wait for
      if (Status s = context_->reportBadRecord(r, topic.status()); !s.isOk()) {
        client_->queueBatch(out, onAnswer);  // the ones before it, as one by one did
        return s;
      }
      continue;
    }
    out.push_back(mqttc::messageFromRecord(r, std::move(*topic), mapping_));
  }
  // Never blocks: the runtime asked readyForPut() first, so what waits beyond the window is at
  // most this batch.
  client_->queueBatch(out, onAnswer);
  return Status::ok();
}

bool MQTTSinkTask::readyForPut() { return !client_ || client_->hasRoom(); }

Status MQTTSinkTask::flushStatus(Status s) {
  if (s.isOk()) return s;
  // Waiting for a reconnect or a slow broker: retriable, the runtime retries the flush.
  if (s.code() == StatusCode::kTimeout || s.code() == StatusCode::kUnavailable)
    return Status::retriable("MQTTSink: " + s.toString());
  return s.withContext("MQTTSink");
}

Status MQTTSinkTask::flush() {
  if (!client_) return Status::failedPrecondition("MQTTSink: flush() before start()");
  return flushStatus(client_->flush(std::chrono::milliseconds(flushTimeoutMs_)));
}

bool MQTTSinkTask::flushAsync(std::function<void(Status)> done) {
  if (!client_) return false;
  Status result;
  core::FlushEpochs::Callback now;
  {
    std::lock_guard lock(epochs_->mu);
    epochs_->epochs.await(std::move(done));
    now = epochs_->epochs.takeIfDone();
    if (now) result = std::exchange(epochs_->firstError, Status::ok());
  }
  if (now) now(flushStatus(std::move(result)));
  return true;
}

void MQTTSinkTask::stop() {
  if (client_) {
    client_->close();
    client_.reset();
  }
}

}  // namespace ferry::connectors
