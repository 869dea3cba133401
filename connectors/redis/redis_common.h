// What the Redis connectors share: the connection keys (redis.hosts, redis.client.mode, login,
// TLS, timeouts), declared once, and the client options built from them.
//
// Thread-safety: free functions.
#pragma once

#include <string>

#include "ferry/config.h"
#include "ferry/result.h"
#include "redis/client.h"

namespace ferry::connectors::redisc {

// Adds the connection keys to `def`.
void defineConnectionKeys(ConfigDef& def);
// Per-key errors of the connection keys (bad addresses, a client certificate without its key).
void validateConnectionKeys(const ParsedConfig& config, ConfigValidation& validation);
// The client options for `config`; `clientName` is sent as CLIENT SETNAME.
Result<redis::ClientOptions> clientOptions(const ParsedConfig& config, const std::string& clientName);
// `name` with every character but letters, digits, '-', '_' and '.' replaced by '_': fit for
// CLIENT SETNAME, consumer and processing-list names.
std::string safeName(std::string name);
// "host:port" list -> seeds; InvalidArgument naming a bad entry.
Result<std::vector<std::pair<std::string, std::uint16_t>>> parseHosts(const std::vector<std::string>& hosts);

}  // namespace ferry::connectors::redisc
