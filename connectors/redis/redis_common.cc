#include "connectors/redis/redis_common.h"

#include <cctype>
#include <charconv>

namespace ferry::connectors::redisc {

void defineConnectionKeys(ConfigDef& d) {
  d.define("redis.hosts", ConfigType::kList, "127.0.0.1:6379", Importance::kHigh,
           "Redis servers as host:port. Standalone: the first that answers; cluster: seeds for the slot map.",
           validators::nonEmptyList());
  d.define("redis.client.mode", ConfigType::kString, "standalone", Importance::kHigh,
           "standalone (one server) or cluster (Redis Cluster: keys routed by slot, MOVED/ASK followed).",
           validators::oneOf({"standalone", "cluster"}));
  d.define("redis.username", ConfigType::kString, "", Importance::kMedium,
           "ACL user name for AUTH (empty: the password alone, the default user).");
  d.define("redis.password", ConfigType::kPassword, "", Importance::kMedium,
           "Password for AUTH (empty: no AUTH). Kept as a secret: masked in every answer.");
  d.define("redis.database", ConfigType::kInt, "0", Importance::kLow,
           "Database number (SELECT) for a standalone server; a cluster has only 0.", validators::between(0, 65535));
  d.define("redis.ssl.enabled", ConfigType::kBool, "false", Importance::kMedium, "Connect with TLS.");
  d.define("redis.ssl.ca.location", ConfigType::kString, "", Importance::kMedium,
           "PEM file of the CA that signed the server's certificate (empty: the system's store).");
  d.define("redis.ssl.certificate.location", ConfigType::kString, "", Importance::kLow,
           "Client certificate (PEM) for servers that require one (tls-auth-clients).");
  d.define("redis.ssl.key.location", ConfigType::kString, "", Importance::kLow, "The client certificate's key (PEM).");
  d.define("redis.ssl.verify", ConfigType::kBool, "true", Importance::kLow,
           "Check the server's certificate chain (turn off only for tests).");
  d.define("redis.ssl.verify.hostname", ConfigType::kBool, "true", Importance::kLow,
           "Check that the certificate names the host (IP SAN for an address).");
  d.define("redis.connect.timeout.ms", ConfigType::kLong, "5000", Importance::kLow,
           "Longest wait to connect, including TLS and AUTH.", validators::atLeast(100));
  d.define("redis.timeout.ms", ConfigType::kLong, "10000", Importance::kLow,
           "Longest wait for the answer to a command or a pipeline.", validators::atLeast(100));
}

std::string safeName(std::string n) {
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return n;
}

Result<std::vector<std::pair<std::string, std::uint16_t>>> parseHosts(const std::vector<std::string>& hosts) {
  std::vector<std::pair<std::string, std::uint16_t>> out;
  for (const std::string& h : hosts) {
    const auto colon = h.rfind(':');
    unsigned port = 6379;
    std::string host = h;
    if (colon != std::string::npos) {
      host = h.substr(0, colon);
      auto [p, ec] = std::from_chars(h.data() + colon + 1, h.data() + h.size(), port);
      if (ec != std::errc() || p != h.data() + h.size() || port == 0 || port > 65535)
        return Status::invalidArgument("redis.hosts: '" + h + "' is not host:port");
    }
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host.empty()) return Status::invalidArgument("redis.hosts: '" + h + "' has no host");
    out.emplace_back(host, static_cast<std::uint16_t>(port));
  }
  if (out.empty()) return Status::invalidArgument("redis.hosts: no server given");
  return out;
}

void validateConnectionKeys(const ParsedConfig& p, ConfigValidation& v) {
  if (auto h = parseHosts(p.getList("redis.hosts")); !h.isOk()) v.errors["redis.hosts"].push_back(h.status().message());
  if (!p.getString("redis.ssl.certificate.location").empty() && p.getString("redis.ssl.key.location").empty())
    v.errors["redis.ssl.key.location"].push_back("a client certificate needs its key");
  if (p.getString("redis.client.mode") == "cluster" && p.getInt("redis.database") != 0)
    v.errors["redis.database"].push_back("a Redis Cluster has only database 0");
}

Result<redis::ClientOptions> clientOptions(const ParsedConfig& p, const std::string& clientName) {
  redis::ClientOptions o;
  FERRY_ASSIGN_OR_RETURN(o.seeds, parseHosts(p.getList("redis.hosts")));
  o.cluster = p.getString("redis.client.mode") == "cluster";
  if (!p.getString("redis.username").empty()) o.connection.username = p.getString("redis.username");
  if (!p.getString("redis.password").empty()) o.connection.password = p.getString("redis.password");
  o.connection.database = o.cluster ? 0 : p.getInt("redis.database");
  o.connection.clientName = clientName;
  o.connection.tls.enabled = p.getBool("redis.ssl.enabled");
  o.connection.tls.caFile = p.getString("redis.ssl.ca.location");
  o.connection.tls.certFile = p.getString("redis.ssl.certificate.location");
  o.connection.tls.keyFile = p.getString("redis.ssl.key.location");
  o.connection.tls.verifyPeer = p.getBool("redis.ssl.verify");
  o.connection.tls.verifyHostname = p.getBool("redis.ssl.verify.hostname");
  o.connection.connectTimeout = std::chrono::milliseconds(p.getLong("redis.connect.timeout.ms"));
  o.connection.timeout = std::chrono::milliseconds(p.getLong("redis.timeout.ms"));
  return o;
}

}  // namespace ferry::connectors::redisc
