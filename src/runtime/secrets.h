// Secrets in connector configs: the one masking rule applied wherever a config leaves the worker
// (REST answers, validate echoes, pipelines, ferry ctl through REST, logs, task traces,
// dead-letter headers).
//
// The rule. A value is shown as "[hidden]" (Kafka Connect's word) when
//   - its key is declared with ConfigType::kPassword by the framework or by one of the plugins
//     the config names (connector, direct sink side as "sink.<key>", transforms.<a>.<key>,
//     predicates.<a>.<key>, key/value/header.converter.<key>) — that is how a plugin says a key
//     is secret; or
//   - its key is declared by nobody (a pass-through key such as producer.override.*, a key under
//     a plugin's allowPrefix, an unknown key) and its name looks secret (looksSecret below).
// A declared key of another type is never hidden: the plugin said it is not a secret.
// A value that is exactly one config-provider reference, "${provider:[path:]key}" and nothing
// else, is shown as it is: the reference is not the secret (that is what providers are for).
// An empty value is shown as it is (nothing to hide, and "no password" is useful to see).
//
// Thread-safety: pure functions; SecretKeys is a value.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/config.h"
#include "runtime/plugins.h"

namespace ferry::runtime {

inline constexpr const char* kHiddenValue = "[hidden]";

// Whether an undeclared key's name looks secret. Case-insensitive; true when the name
//   contains  password, passwd, secret, jaas, token, credential, private.key, privatekey,
//             apikey, api.key, keystore.key, auth.user.info, oauthbearer.config
//   ends with key.pem (ssl.key.pem, private.key.pem, ...)
// Covers librdkafka / Kafka client pass-through keys (sasl.password, ssl.key.password,
// sasl.jaas.config, ssl.keystore.key, sasl.oauthbearer.client.secret, basic.auth.user.info).
bool looksSecret(std::string_view key);

// Whether `value` is exactly one config-provider reference: "${" name ":" ... "}" with no other
// "}" inside and nothing around it.
bool isProviderReference(std::string_view value);

// What the plugins a config names declare: the keys they declare (full names, as in the
// config) and which of those are passwords.
struct SecretKeys {
  std::set<std::string> declared;
  std::set<std::string> passwords;
  // The rule above for one key (the value decides only the reference/empty exceptions).
  bool hides(const std::string& key, std::string_view value) const;
};

// Collects the declarations for `config`: framework keys of its shape, the connector's (and a
// direct connector's sink side, prefixed "sink."), every listed transform and predicate, and the
// converters it names. Plugins the registry does not know contribute nothing (their keys fall
// under the name rule). Never fails.
SecretKeys secretKeysOf(const PluginRegistry& registry, const StringMap& config);
// Without a registry: only the framework's keys (so everything else is judged by its name).
SecretKeys frameworkSecretKeys(const StringMap& config);

// The password of every "scheme://user:password@host" in `value` (several URIs in one value too)
// replaced by kHiddenValue: a credential inside a URI hides under any key name
// (mqtt.server.uri=tcp://u:pw@h reads tcp://u:[hidden]@h). A value without one comes back as is.
std::string maskUriPasswords(std::string value);
// Those passwords themselves, for scrubbing messages.
std::vector<std::string> uriPasswords(std::string_view value);

// `config` with every hidden value replaced by kHiddenValue (and URI passwords masked in the
// values the rule shows).
StringMap maskConfig(const StringMap& config, const SecretKeys& keys);
StringMap maskConfig(const PluginRegistry& registry, const StringMap& config);

// The secret values of `config` (values the rule hides, at least 4 bytes long so that scrubbing
// does not garble text around a one-letter password).
std::vector<std::string> secretValues(const StringMap& config, const SecretKeys& keys);
// `text` with every occurrence of each of `secrets` replaced by kHiddenValue: for messages built
// from configs (validation errors, connector errors, traces, dead-letter headers, log lines).
std::string scrubSecrets(std::string text, const std::vector<std::string>& secrets);

// A config written back by a client that read it masked: every value equal to kHiddenValue whose
// key `previous` has is replaced by the previous value, and a value equal to the previous value
// with its URI passwords masked gets the previous value back, so GET, edit, PUT keeps the secret.
StringMap restoreHidden(StringMap config, const StringMap& previous);

}  // namespace ferry::runtime
