// MQTT <-> record mapping (see mqtt_mapping.h).
#include "connectors/mqtt/mqtt_mapping.h"

#include <charconv>

#include "mqtt/codec.h"

namespace ferry::connectors::mqttc {

void defineConnectionKeys(ConfigDef& d) {
  d.define("mqtt.server.uri", ConfigType::kString, std::nullopt, Importance::kHigh,
           "Broker address: tcp://host:port (plain) or ssl://host:port (TLS).",
           validators::nonEmptyString());
  d.define("mqtt.version", ConfigType::kString, "5", Importance::kMedium, "MQTT protocol: 3.1.1 or 5.",
           validators::oneOf({"3.1.1", "5"}));
  d.define("mqtt.client.id", ConfigType::kString, "", Importance::kMedium,
           "Client id (each task appends -<task>); empty means ferry-<connector name>. Keep it stable: a "
           "persistent session is found by it.");
  d.define("mqtt.clean.start", ConfigType::kBool, "false", Importance::kMedium,
           "Start a new session on connect. false keeps the broker-side session, so QoS 1/2 messages "
           "that arrive while ferry is down are delivered when it is back.");
  d.define("mqtt.session.expiry.s", ConfigType::kLong, "86400", Importance::kMedium,
           "MQTT 5 session expiry after a disconnect, seconds.", validators::atLeast(0));
  d.define("mqtt.keepalive.s", ConfigType::kInt, "30", Importance::kLow, "Keep-alive interval, seconds.",
           validators::between(0, 65535));
  d.define("mqtt.username", ConfigType::kString, "", Importance::kMedium, "User name; empty sends none.");
  d.define("mqtt.password", ConfigType::kPassword, "", Importance::kMedium, "Password; empty sends none.");
  d.define("mqtt.ssl.ca.file", ConfigType::kString, "", Importance::kMedium,
           "CA certificates (PEM) to verify the broker; empty uses the system's.");
  d.define("mqtt.ssl.cert.file", ConfigType::kString, "", Importance::kMedium, "Client certificate (PEM) for mutual TLS.");
  d.define("mqtt.ssl.key.file", ConfigType::kString, "", Importance::kMedium, "Client key (PEM) for mutual TLS.");
  d.define("mqtt.ssl.verify.hostname", ConfigType::kBool, "true", Importance::kLow,
           "Check that the broker's certificate names the host of mqtt.server.uri.");
  d.define("mqtt.connect.timeout.ms", ConfigType::kLong, "5000", Importance::kLow,
           "Timeout of connecting and of a SUBACK.", validators::atLeast(100));
  d.define("mqtt.reconnect.backoff.max.ms", ConfigType::kLong, "1000", Importance::kLow,
           "Longest wait between attempts to reconnect to a lost broker (100 ms doubling up to this): "
           "how soon after a broker comes back the task finds out.",
           validators::between(100, 600000));
  d.define("mqtt.max.inflight", ConfigType::kInt, "1000", Importance::kLow,
           "Most unacknowledged QoS 1/2 messages in each direction (our Receive Maximum and our "
           "publish window).", validators::between(1, 65535));
  d.define("mqtt.read.linger.us", ConfigType::kLong, "2000", Importance::kLow,
           "Read coalescing, the longest wait in microseconds: when messages arrive densely enough "
           "that this long would gather at least 8, each socket read waits until about 64 have "
           "arrived (never longer than this) and takes them in one go: far fewer thread wake-ups "
           "per message at high rates. Slower than that, reads go at once (no added latency). "
           "0 always reads at once.",
           validators::between(0, 100000));
}

Result<ServerUri> parseServerUri(std::string_view uri) {
  ServerUri out;
  const std::size_t sep = uri.find("://");
  if (sep == std::string_view::npos)
    return Status::invalidArgument("mqtt.server.uri '" + std::string(uri) + "' needs a scheme: tcp://host:port or ssl://host:port");
  const std::string_view scheme = uri.substr(0, sep);
  if (scheme == "ssl" || scheme == "tls" || scheme == "mqtts") out.tls = true;
  else if (scheme != "tcp" && scheme != "mqtt")
    return Status::invalidArgument("mqtt.server.uri scheme '" + std::string(scheme) + "' (tcp, mqtt, ssl, tls or mqtts)");
  std::string_view rest = uri.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const std::size_t colon = rest.rfind(':');
  out.host = std::string(rest.substr(0, colon));
  out.port = out.tls ? 8883 : 1883;
  if (colon != std::string_view::npos) {
    const std::string_view p = rest.substr(colon + 1);
    unsigned v = 0;
    auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (ec != std::errc() || ptr != p.data() + p.size() || v == 0 || v > 65535)
      return Status::invalidArgument("mqtt.server.uri port '" + std::string(p) + "' is not a port number");
    out.port = static_cast<std::uint16_t>(v);
  }
  if (out.host.empty()) return Status::invalidArgument("mqtt.server.uri '" + std::string(uri) + "' has no host");
  return out;
}

Result<mqtt::ClientOptions> clientOptions(const ParsedConfig& p, const std::string& defaultClientId,
                                          const std::string& clientIdSuffix) {
  FERRY_ASSIGN_OR_RETURN(ServerUri uri, parseServerUri(p.getString("mqtt.server.uri")));
  mqtt::ClientOptions o;
  o.host = uri.host;
  o.port = uri.port;
  o.version = p.getString("mqtt.version") == "3.1.1" ? mqtt::Version::k311 : mqtt::Version::k5;
  const std::string id = p.getString("mqtt.client.id");
  o.clientId = (id.empty() ? defaultClientId : id) + clientIdSuffix;
  o.cleanStart = p.getBool("mqtt.clean.start");
  o.sessionExpiryS = static_cast<std::uint32_t>(p.getLong("mqtt.session.expiry.s"));
  o.keepAliveS = static_cast<std::uint16_t>(p.getInt("mqtt.keepalive.s"));
  o.readLinger = std::chrono::microseconds(p.getLong("mqtt.read.linger.us"));
  if (!p.getString("mqtt.username").empty()) o.username = p.getString("mqtt.username");
  if (!p.getString("mqtt.password").empty()) o.password = p.getString("mqtt.password");
  o.tls.enabled = uri.tls;
  o.tls.caFile = p.getString("mqtt.ssl.ca.file");
  o.tls.certFile = p.getString("mqtt.ssl.cert.file");
  o.tls.keyFile = p.getString("mqtt.ssl.key.file");
  o.tls.verifyHostname = p.getBool("mqtt.ssl.verify.hostname");
  o.connectTimeoutMs = p.getLong("mqtt.connect.timeout.ms");
  o.reconnectMaxMs = p.getLong("mqtt.reconnect.backoff.max.ms");
  o.receiveMaximum = static_cast<std::uint16_t>(p.getInt("mqtt.max.inflight"));
  o.maxInflight = static_cast<std::size_t>(p.getInt("mqtt.max.inflight"));
  return o;
}

Record recordFromMessage(const mqtt::IncomingMessage& m, const SourceMapping& mapping) {
  Record r;
  r.topic = mapping.targetTopic.empty() ? m.topic : mapping.targetTopic;
  r.value = Bytes(m.payload);
  if (mapping.keyFromTopic) r.key = Bytes(m.topic);
  r.headers.add(kHeaderTopic, std::string_view(m.topic));
  r.headers.add(kHeaderQos, std::string_view(m.qos == 0 ? "0" : m.qos == 1 ? "1" : "2"));
  r.headers.add(kHeaderRetain, std::string_view(m.retain ? "true" : "false"));
  if (m.dup) r.headers.add(kHeaderDup, std::string_view("true"));
  if (auto ct = m.properties.text(mqtt::prop::kContentType)) r.headers.add(kHeaderContentType, std::string_view(*ct));
  for (auto& [k, v] : m.properties.userProperties()) r.headers.add(k, std::string_view(v));
  return r;
}

Record recordFromMessage(mqtt::IncomingMessage&& m, const SourceMapping& mapping, SourceCache& cache) {
  static const Bytes kQos[3] = {Bytes(std::string("0")), Bytes(std::string("1")), Bytes(std::string("2"))};
  static const Bytes kTrue(std::string("true"));
  static const Bytes kFalse(std::string("false"));
  const std::uint8_t qos = m.qos > 2 ? 2 : m.qos;
  if (cache.topic.isNull() || cache.topic.view() != m.topic || cache.qos != qos || cache.retain != m.retain) {
    if (cache.topic.isNull() || cache.topic.view() != m.topic) cache.topic = Bytes(std::move(m.topic));
    cache.qos = qos;
    cache.retain = m.retain;
    cache.headers.clear();
    cache.headers.add(kHeaderTopic, cache.topic);
    cache.headers.add(kHeaderQos, kQos[qos]);
    cache.headers.add(kHeaderRetain, m.retain ? kTrue : kFalse);
  }
  Record r;
  r.topic = mapping.targetTopic.empty() ? cache.topic.str() : mapping.targetTopic;
  r.value = Bytes(std::move(m.payload));
  if (mapping.keyFromTopic) r.key = cache.topic;
  r.headers = cache.headers;
  if (m.dup) r.headers.add(kHeaderDup, kTrue);
  if (!m.properties.empty()) {
    if (auto ct = m.properties.text(mqtt::prop::kContentType)) r.headers.add(kHeaderContentType, std::string_view(*ct));
    for (auto& [k, v] : m.properties.userProperties()) r.headers.add(k, std::string_view(v));
  }
  return r;
}

Result<TopicTemplate> TopicTemplate::parse(std::string_view text) {
  if (text.empty()) return Status::invalidArgument("topic template is empty");
  FERRY_ASSIGN_OR_RETURN(auto t, core::RecordTemplate::parse(text));
  return TopicTemplate(std::move(t));
}

Result<std::string> TopicTemplate::render(const Record& r) const {
  FERRY_ASSIGN_OR_RETURN(std::string out, template_.render(r));
  FERRY_RETURN_IF_ERROR(mqtt::validateTopicName(out).withContext("rendered MQTT topic '" + out + "'"));
  return out;
}

mqtt::OutgoingMessage messageFromRecord(const Record& r, std::string topic, const SinkMapping& mapping) {
  mqtt::OutgoingMessage m;
  m.topic = std::move(topic);
  m.payload = r.value.str();
  m.qos = mapping.qos;
  m.retain = mapping.retain;
  if (const Header* h = r.headers.last(kHeaderRetain); h && h->value.view() == "true") m.retain = true;
  if (const Header* h = r.headers.last(kHeaderContentType); h && !h->value.isNull())
    m.properties.setText(mqtt::prop::kContentType, h->value.str());
  if (mapping.propertiesFromHeaders) {
    for (const Header& h : r.headers) {
      if (h.key.rfind("mqtt.", 0) == 0 || h.value.isNull()) continue;
      m.properties.addUser(h.key, h.value.str());
    }
  }
  return m;
}

Result<std::vector<std::string>> subscriptionFilters(const std::vector<std::string>& filters,
                                                     const std::string& sharedGroup) {
  std::vector<std::string> out;
  for (const std::string& f : filters) {
    FERRY_ASSIGN_OR_RETURN(auto shared, mqtt::parseShared(f));
    if (!shared) FERRY_RETURN_IF_ERROR(mqtt::validateTopicFilter(f).withContext("mqtt.topics"));
    if (shared || sharedGroup.empty()) {
      out.push_back(f);
      continue;
    }
    if (sharedGroup.find_first_of("/+#") != std::string::npos)
      return Status::invalidArgument("mqtt.shared.group '" + sharedGroup + "' must not contain '/', '+' or '#'");
    out.push_back("$share/" + sharedGroup + "/" + f);
  }
  if (out.empty()) return Status::invalidArgument("mqtt.topics: no topic filter");
  return out;
}

}  // namespace ferry::connectors::mqttc
