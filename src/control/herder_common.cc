// Pieces both herders (standalone and distributed) use: config checks, plugin descriptions,
// sink offsets in backbone groups, starting a connector instance and computing its task configs.
#include "control/herder_common.h"

#include <algorithm>
#include <map>
#include <set>

#include "runtime/config_util.h"
#include "runtime/secrets.h"

namespace ferry::control {

using runtime::ConnectorShape;

namespace {

std::string get(const StringMap& m, const std::string& k) { return runtime::configValue(m, k); }

// `config` with its references resolved for a check; a reference that cannot be resolved keeps
// its raw text and becomes an error on its key (the message names the reference, not a value).
StringMap resolvedForCheck(const StringMap& config, const WorkerLimits& limits,
                           std::map<std::string, std::string>& errors) {
  if (limits.providers == nullptr) return config;
  StringMap out = config;
  for (auto& [k, v] : out) {
    auto r = limits.providers->resolveValue(k, v);
    if (r.isOk())
      v = std::move(*r);
    else
      errors[k] = r.status().message();
  }
  return out;
}

// The secret values of a config as given and as resolved, for scrubbing messages.
std::vector<std::string> secretsOf(const runtime::PluginRegistry& registry, const StringMap& raw,
                                   const StringMap& resolved) {
  const auto keys = runtime::secretKeysOf(registry, resolved);
  auto out = runtime::secretValues(raw, keys);
  for (auto& v : runtime::secretValues(resolved, keys)) out.push_back(std::move(v));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  return out;
}

}  // namespace

StringMap maskedConfig(const runtime::PluginRegistry& registry, const StringMap& config) {
  return runtime::maskConfig(registry, config);
}

ConnectorType typeOf(ConnectorShape s) {
  switch (s) {
    case ConnectorShape::kSource: return ConnectorType::kSource;
    case ConnectorShape::kSink: return ConnectorType::kSink;
    case ConnectorShape::kDirect: return ConnectorType::kDirect;
  }
  return ConnectorType::kUnknown;
}

Status validName(const std::string& name) {
  if (name.empty()) return Status::invalidArgument("connector name must not be empty");
  if (name.size() > 249) return Status::invalidArgument("connector name is longer than 249 characters");
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\')
      return Status::invalidArgument("connector name '" + name + "' contains a '/', '\\' or control character");
  return Status::ok();
}

std::string sinkGroupOf(const std::string& connector) { return "connect-" + connector; }

void checkWorkerLimits(const StringMap& config, ConnectorShape shape, const WorkerLimits& limits,
                       ConfigValidation& validation, std::vector<std::pair<std::string, std::string>>* warnings) {
  // Client overrides under the worker's policy (Kafka Connect's ConnectorClientConfigOverridePolicy).
  for (const auto& [k, v] : config) {
    for (const char* prefix : runtime::kClientOverridePrefixes) {
      const std::string p = prefix;
      if (k.compare(0, p.size(), p) != 0) continue;
      const std::string client = k.substr(p.size());
      const bool allowed = limits.overridePolicy == "All" ||
                           (limits.overridePolicy == "Principal" &&
                            (client == "sasl.jaas.config" || client == "sasl.mechanism" || client == "security.protocol"));
      if (!allowed)
        validation.errors[k].push_back("The '" + limits.overridePolicy + "' policy does not allow '" + client +
                                       "' to be overridden in the connector configuration "
                                       "(worker key connector.client.config.override.policy)");
    }
  }
  if (!limits.refuseUnknownKeys) {
    for (const auto& k : validation.unknownKeys)
      if (warnings)
        warnings->emplace_back(k, "unknown configuration key '" + k +
                                      "': accepted and passed to the connector, which does not declare it "
                                      "(a typo? the worker refuses such keys with config.unknown.keys=refuse)");
    validation.unknownKeys.clear();
  }
  const std::string tasks = get(config, "tasks.max");
  if (!tasks.empty()) {
    std::int64_t n = 0;
    try {
      n = std::stoll(tasks);
    } catch (...) {
      n = 0;  // the framework's own check names the bad value
    }
    if (n > limits.tasksMax)
      validation.errors["tasks.max"].push_back("Invalid value " + tasks + " for configuration tasks.max: this worker " +
                                               "runs at most " + std::to_string(limits.tasksMax) +
                                               " tasks per connector (worker key tasks.max.limit)");
  }
  if (limits.backbone == nullptr) return;
  auto checkTopic = [&](const std::string& key, const std::string& topic) {
    if (topic.empty()) return;
    Status s = limits.backbone->validateTopicName(topic);
    if (!s.isOk())
      validation.errors[key].push_back("Invalid value " + topic + " for configuration " + key + ": " + s.message() +
                                       " (the " + limits.backbone->kind() + " backbone's rule)");
  };
  if (shape == ConnectorShape::kSink) {
    std::string list = get(config, "topics");
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      std::string t = list.substr(start, comma - start);
      const auto b = t.find_first_not_of(" \t"), e = t.find_last_not_of(" \t");
      checkTopic("topics", b == std::string::npos ? "" : t.substr(b, e - b + 1));
      start = comma + 1;
    }
    checkTopic("errors.deadletterqueue.topic.name", get(config, "errors.deadletterqueue.topic.name"));
  } else if (shape == ConnectorShape::kSource) {
    checkTopic("topic", get(config, "topic"));
  }
}

Result<runtime::ConnectorShape> checkConnectorConfig(const runtime::PluginRegistry& registry, const std::string& name,
                                                     StringMap& config, const WorkerLimits& limits) {
  if (auto it = config.find("name"); it != config.end() && it->second != name)
    return Status::invalidArgument("name: the config's name '" + it->second + "' differs from the connector name '" +
                                   name + "'");
  config["name"] = name;
  std::map<std::string, std::string> unresolved;
  const StringMap resolved = resolvedForCheck(config, limits, unresolved);
  auto validated = runtime::validateConnectorConfig(registry, resolved);
  const auto secrets = secretsOf(registry, config, resolved);
  if (!validated.isOk())
    return Status(validated.status().code(), runtime::scrubSecrets(validated.status().message(), secrets));
  auto& v = *validated;
  checkWorkerLimits(resolved, v.shape, limits, v.validation);
  for (const auto& [k, msg] : unresolved) v.validation.errors[k].push_back(msg);
  if (!v.validation.ok())
    return Status::invalidArgument(runtime::scrubSecrets("Connector configuration is invalid and contains the following " +
                                                         v.validation.summary() +
                                                         "\nYou can also find the above list of errors at the endpoint "
                                                         "`/connector-plugins/{connectorType}/config/validate`",
                                                         secrets));
  return v.shape;
}

Result<std::vector<ConfigKey>> pluginConfigKeys(const runtime::PluginRegistry& registry, const std::string& pluginClass) {
  FERRY_ASSIGN_OR_RETURN(auto info, registry.find(pluginClass));
  switch (info.kind) {
    case PluginKind::kSourceConnector:
    case PluginKind::kSinkConnector: {
      FERRY_ASSIGN_OR_RETURN(auto c, registry.createConnector(pluginClass));
      ConfigDef def = runtime::frameworkConfigDef(info.kind == PluginKind::kSinkConnector ? ConnectorShape::kSink
                                                                                            : ConnectorShape::kSource);
      def.include(c->configDef());
      return def.keys();
    }
    case PluginKind::kTransform: {
      FERRY_ASSIGN_OR_RETURN(auto t, registry.createTransform(pluginClass));
      return t->configDef().keys();
    }
    case PluginKind::kPredicate: {
      FERRY_ASSIGN_OR_RETURN(auto p, registry.createPredicate(pluginClass));
      return p->configDef().keys();
    }
    case PluginKind::kConverter: {
      FERRY_ASSIGN_OR_RETURN(auto c, registry.createConverter(pluginClass));
      return c->configDef().keys();
    }
  }
  return Status::notFound(pluginClass);
}

Result<ConfigReport> validationReport(const runtime::PluginRegistry& registry, const std::string& pluginClass,
                                    const StringMap& config, const WorkerLimits& limits) {
  StringMap cfg = config;
  if (get(cfg, "connector.class").empty()) cfg["connector.class"] = pluginClass;
  std::map<std::string, std::string> unresolved;
  const StringMap resolved = resolvedForCheck(cfg, limits, unresolved);
  const auto secrets = secretsOf(registry, cfg, resolved);
  auto validated = runtime::validateConnectorConfig(registry, resolved);
  if (!validated.isOk())
    return Status(validated.status().code(), runtime::scrubSecrets(validated.status().message(), secrets));
  auto& v = *validated;
  ConfigReport report;
  checkWorkerLimits(resolved, v.shape, limits, v.validation, &report.warnings);
  for (const auto& [k, msg] : unresolved) v.validation.errors[k].push_back(msg);
  for (auto& [k, msgs] : v.validation.errors)
    for (auto& m : msgs) m = runtime::scrubSecrets(std::move(m), secrets);
  // Values are echoed as given (references stay references), secrets as "[hidden]".
  const runtime::SecretKeys secretKeys = runtime::secretKeysOf(registry, cfg);
  report.className = v.connectorClass.empty() ? pluginClass : v.connectorClass;
  // Kafka Connect lists the groups its keys use, in order of first use.
  for (const auto& key : v.keys)
    if (!key.group.empty() &&
        std::find(report.groups.begin(), report.groups.end(), key.group) == report.groups.end())
      report.groups.push_back(key.group);
  std::set<std::string> seen;
  for (const auto& key : v.keys) {
    ConfigKeyReport k;
    k.definition = key;
    if (auto it = cfg.find(key.name); it != cfg.end()) {
      k.value = secretKeys.hides(key.name, it->second) ? std::string(runtime::kHiddenValue) : it->second;
    } else {
      k.value = key.defaultValue;
    }
    if (auto e = v.validation.errors.find(key.name); e != v.validation.errors.end()) k.errors = e->second;
    seen.insert(key.name);
    report.keys.push_back(std::move(k));
  }
  for (const auto& [name, msgs] : v.validation.errors) {
    if (seen.count(name)) continue;
    ConfigKeyReport k;
    k.definition.name = name;
    if (auto it = cfg.find(name); it != cfg.end())
      k.value = secretKeys.hides(name, it->second) ? std::string(runtime::kHiddenValue) : it->second;
    k.errors = msgs;
    seen.insert(name);
    report.keys.push_back(std::move(k));
  }
  for (const auto& name : v.validation.unknownKeys) {
    ConfigKeyReport k;
    k.definition.name = name;
    if (auto it = cfg.find(name); it != cfg.end())
      k.value = secretKeys.hides(name, it->second) ? std::string(runtime::kHiddenValue) : it->second;
    k.errors.push_back("unknown configuration key '" + name + "' (not declared by " + report.className +
                       " nor by the framework)");
    report.keys.push_back(std::move(k));
  }
  report.errorCount = static_cast<int>(v.validation.errorCount());
  return report;
}

Result<PositionList> sinkOffsets(backbone::Backbone& backbone, const std::string& name) {
  FERRY_ASSIGN_OR_RETURN(auto committed, backbone.admin().committedOffsets(sinkGroupOf(name)));
  PositionList out;
  for (const auto& [tq, off] : committed)
    out.push_back(Position{{{"kafka_topic", tq.topic}, {"kafka_partition", std::to_string(tq.queue)}},
                           {{"kafka_offset", std::to_string(off)}}});
  return out;
}

Status alterSinkOffsets(backbone::Backbone& backbone, const std::string& name, const PositionList& positions) {
  FERRY_ASSIGN_OR_RETURN(auto current, backbone.admin().committedOffsets(sinkGroupOf(name)));
  for (const auto& p : positions) {
    const std::string topic = get(p.partition, "kafka_topic");
    const std::string queue = get(p.partition, "kafka_partition");
    if (topic.empty() || queue.empty())
      return Status::invalidArgument("a sink partition needs kafka_topic and kafka_partition");
    auto q = ConfigDef::parseValue(ConfigType::kInt, queue);
    if (!q.isOk()) return Status::invalidArgument("kafka_partition '" + queue + "' is not an integer");
    TopicQueue tq{topic, static_cast<std::int32_t>(std::get<std::int64_t>(*q))};
    if (p.offset.empty()) {
      current.erase(tq);
      continue;
    }
    auto o = ConfigDef::parseValue(ConfigType::kLong, get(p.offset, "kafka_offset"));
    if (!o.isOk()) return Status::invalidArgument("kafka_offset must be an integer");
    current[tq] = std::get<std::int64_t>(*o);
  }
  return backbone.admin().setCommittedOffsets(sinkGroupOf(name), current);
}

Status startConnectorInstance(const runtime::PluginRegistry& registry, const std::string& name, const StringMap& config,
                              runtime::ConnectorShape shape, ConnectorContext& context, ConnectorInstances& out,
                              std::vector<StringMap>& taskConfigs, const runtime::ConfigProviders* providers) {
  const StringMap raw = config;
  StringMap resolvedConfig = raw;
  if (providers != nullptr) {
    auto r = providers->resolve(raw);
    if (!r.isOk()) return r.status().withContext("starting connector " + name);
    resolvedConfig = std::move(*r);
  }
  const StringMap& resolved = resolvedConfig;
  const auto secrets = secretsOf(registry, raw, resolved);
  const std::string cls = get(resolved, "connector.class");
  FERRY_ASSIGN_OR_RETURN(auto instance, registry.createConnector(cls));
  Status started;
  try {
    started = instance->start(resolved, context);
  } catch (const std::exception& e) {
    started = Status::internal(std::string("start threw: ") + e.what());
  }
  if (!started.isOk()) started = Status(started.code(), runtime::scrubSecrets(started.message(), secrets));
  FERRY_RETURN_IF_ERROR(started.withContext("starting connector " + name));
  out.instance = std::move(instance);
  auto parsedMax = ConfigDef::parseValue(ConfigType::kInt, get(resolved, "tasks.max").empty() ? "1" : get(resolved, "tasks.max"));
  const int maxTasks = parsedMax.isOk() ? static_cast<int>(std::get<std::int64_t>(*parsedMax)) : 1;
  FERRY_ASSIGN_OR_RETURN(auto own, out.instance->taskConfigs(maxTasks));
  if (static_cast<int>(own.size()) > maxTasks) own.resize(static_cast<std::size_t>(maxTasks));
  std::vector<StringMap> sinkOwn;
  if (shape == runtime::ConnectorShape::kDirect) {
    const StringMap sinkCfg = runtime::sinkSideConfig(resolved);
    FERRY_ASSIGN_OR_RETURN(auto sink, registry.createConnector(get(sinkCfg, "connector.class")));
    Status sinkStarted = sink->start(sinkCfg, context);
    if (!sinkStarted.isOk()) sinkStarted = Status(sinkStarted.code(), runtime::scrubSecrets(sinkStarted.message(), secrets));
    FERRY_RETURN_IF_ERROR(sinkStarted.withContext("starting the sink side of " + name));
    out.sinkInstance = std::move(sink);
    FERRY_ASSIGN_OR_RETURN(sinkOwn, out.sinkInstance->taskConfigs(std::max<int>(1, static_cast<int>(own.size()))));
    if (sinkOwn.empty()) sinkOwn.push_back({});
  }
  taskConfigs.clear();
  for (std::size_t i = 0; i < own.size(); ++i) {
    StringMap t = raw;
    for (const auto& [k, v] : own[i]) t[k] = v;
    if (!sinkOwn.empty())
      for (const auto& [k, v] : sinkOwn[i % sinkOwn.size()]) t["sink." + k] = v;
    t["task.id"] = std::to_string(i);
    taskConfigs.push_back(providers != nullptr ? runtime::reReference(t, raw, resolved) : std::move(t));
  }
  return Status::ok();
}

}  // namespace ferry::control
