// The masking rule (see secrets.h).
#include "runtime/secrets.h"

#include <algorithm>
#include <cctype>

#include "runtime/config_util.h"
#include "runtime/connector_config.h"

namespace ferry::runtime {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void addKeys(SecretKeys& out, const ConfigDef& def, const std::string& prefix) {
  for (const auto& k : def.keys()) {
    out.declared.insert(prefix + k.name);
    if (k.type == ConfigType::kPassword) out.passwords.insert(prefix + k.name);
  }
}

ConnectorShape shapeOf(const PluginRegistry* registry, const StringMap& config) {
  if (registry != nullptr) {
    auto info = registry->find(configValue(config, "connector.class"));
    if (info.isOk() && info->kind == PluginKind::kSinkConnector) return ConnectorShape::kSink;
  }
  if (config.count("sink.connector.class")) return ConnectorShape::kDirect;
  // Without a registry a sink cannot be told from a source; `topics` is the sink's mark.
  if (registry == nullptr && config.count("topics")) return ConnectorShape::kSink;
  return ConnectorShape::kSource;
}

}  // namespace

bool looksSecret(std::string_view key) {
  const std::string k = lower(key);
  static const char* const kParts[] = {"password",      "passwd",       "secret",         "jaas",
                                       "token",         "credential",   "private.key",    "privatekey",
                                       "apikey",        "api.key",      "keystore.key",   "auth.user.info",
                                       "oauthbearer.config"};
  for (const char* p : kParts)
    if (k.find(p) != std::string::npos) return true;
  return endsWith(k, "key.pem");
}

bool isProviderReference(std::string_view v) {
  if (v.size() < 5 || v.substr(0, 2) != "${" || v.back() != '}') return false;
  const std::string_view inner = v.substr(2, v.size() - 3);
  if (inner.find('}') != std::string_view::npos || inner.find("${") != std::string_view::npos) return false;
  const auto colon = inner.find(':');
  return colon != std::string_view::npos && colon > 0;
}

bool SecretKeys::hides(const std::string& key, std::string_view value) const {
  if (value.empty() || isProviderReference(value)) return false;
  if (passwords.count(key)) return true;
  if (declared.count(key)) return false;
  return looksSecret(key);
}

SecretKeys frameworkSecretKeys(const StringMap& config) {
  SecretKeys out;
  addKeys(out, frameworkConfigDef(shapeOf(nullptr, config)), "");
  return out;
}

SecretKeys secretKeysOf(const PluginRegistry& registry, const StringMap& config) {
  SecretKeys out;
  const ConnectorShape shape = shapeOf(&registry, config);
  addKeys(out, frameworkConfigDef(shape), "");
  if (auto c = registry.createConnector(configValue(config, "connector.class")); c.isOk())
    addKeys(out, (*c)->configDef(), "");
  if (shape == ConnectorShape::kDirect)
    if (auto s = registry.createConnector(configValue(config, "sink.connector.class")); s.isOk())
      addKeys(out, (*s)->configDef(), "sink.");
  for (const auto& alias : configList(config, "transforms")) {
    const std::string prefix = "transforms." + alias + ".";
    if (auto t = registry.createTransform(configValue(config, prefix + "type")); t.isOk())
      addKeys(out, (*t)->configDef(), prefix);
    for (const char* k : {"type", "predicate", "negate"}) out.declared.insert(prefix + k);
  }
  for (const auto& alias : configList(config, "predicates")) {
    const std::string prefix = "predicates." + alias + ".";
    if (auto p = registry.createPredicate(configValue(config, prefix + "type")); p.isOk())
      addKeys(out, (*p)->configDef(), prefix);
    out.declared.insert(prefix + "type");
  }
  for (const char* side : {"key", "value", "header"}) {
    const std::string key = std::string(side) + ".converter";
    const std::string cls = configValue(config, key);
    if (cls.empty()) continue;
    if (auto c = registry.createConverter(cls); c.isOk()) addKeys(out, (*c)->configDef(), key + ".");
  }
  return out;
}

namespace {
// [start, end) of each URI password in `v`: after "://", within the authority (up to the next
// '/', '?', '#', ',' or whitespace), the userinfo before the last '@', after its first ':'.
std::vector<std::pair<std::size_t, std::size_t>> uriPasswordSpans(std::string_view v) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (auto scheme = v.find("://"); scheme != std::string_view::npos; scheme = v.find("://", scheme + 3)) {
    const std::size_t start = scheme + 3;
    std::size_t end = start;
    while (end < v.size() && std::string_view("/?#, \t\n").find(v[end]) == std::string_view::npos) ++end;
    const std::string_view authority = v.substr(start, end - start);
    const auto at = authority.rfind('@');
    if (at == std::string_view::npos) continue;
    const auto colon = authority.substr(0, at).find(':');
    if (colon == std::string_view::npos || colon + 1 >= at) continue;
    if (authority.substr(colon + 1, at - colon - 1) == kHiddenValue) continue;
    out.emplace_back(start + colon + 1, start + at);
  }
  return out;
}
}  // namespace

std::string maskUriPasswords(std::string value) {
  const auto spans = uriPasswordSpans(value);
  for (auto it = spans.rbegin(); it != spans.rend(); ++it)  // from the back: earlier offsets stay valid
    value.replace(it->first, it->second - it->first, kHiddenValue);
  return value;
}

std::vector<std::string> uriPasswords(std::string_view value) {
  std::vector<std::string> out;
  for (const auto& [b, e] : uriPasswordSpans(value)) out.emplace_back(value.substr(b, e - b));
  return out;
}

StringMap maskConfig(const StringMap& config, const SecretKeys& keys) {
  StringMap out = config;
  for (auto& [k, v] : out) {
    if (keys.hides(k, v)) v = kHiddenValue;
    else if (!isProviderReference(v)) v = maskUriPasswords(std::move(v));
  }
  return out;
}

StringMap maskConfig(const PluginRegistry& registry, const StringMap& config) {
  return maskConfig(config, secretKeysOf(registry, config));
}

std::vector<std::string> secretValues(const StringMap& config, const SecretKeys& keys) {
  std::vector<std::string> out;
  for (const auto& [k, v] : config) {
    if (v.size() >= 4 && keys.hides(k, v)) out.push_back(v);
    for (auto& p : uriPasswords(v))
      if (p.size() >= 4) out.push_back(std::move(p));
  }
  // Longest first, so a secret that contains another is replaced whole.
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string scrubSecrets(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& s : secrets) {
    if (s.empty()) continue;
    for (auto pos = text.find(s); pos != std::string::npos; pos = text.find(s, pos + std::char_traits<char>::length(kHiddenValue)))
      text.replace(pos, s.size(), kHiddenValue);
  }
  return text;
}

StringMap restoreHidden(StringMap config, const StringMap& previous) {
  for (auto& [k, v] : config) {
    if (v.find(kHiddenValue) == std::string::npos) continue;
    auto it = previous.find(k);
    if (it == previous.end()) continue;
    if (v == kHiddenValue || v == maskUriPasswords(it->second)) v = it->second;
  }
  return config;
}

}  // namespace ferry::runtime
