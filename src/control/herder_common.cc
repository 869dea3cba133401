// Pieces both herders (standalone and distributed) use: config checks, plugin descriptions,
// sink offsets in backbone groups, starting a connector instance and computing its task configs.
#include "control/herder_common.h"

#include <set>

#include "runtime/config_util.h"
#include "runtime/local_files.h"

namespace ferry::control {

using runtime::ConnectorShape;

namespace {

std::string get(const StringMap& m, const std::string& k) { return runtime::configValue(m, k); }

}  // namespace

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
                       ConfigValidation& validation) {
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
  FERRY_ASSIGN_OR_RETURN(auto v, runtime::validateConnectorConfig(registry, config));
  checkWorkerLimits(config, v.shape, limits, v.validation);
  if (limits.worker != nullptr) runtime::checkLocalPaths(v.keys, config, *limits.worker, v.validation);
  if (!v.validation.ok())
    return Status::invalidArgument("Connector configuration is invalid and contains the following " +
                                   v.validation.summary() +
                                   "\nYou can also find the above list of errors at the endpoint "
                                   "`/connector-plugins/{connectorType}/config/validate`");
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
  FERRY_ASSIGN_OR_RETURN(auto v, runtime::validateConnectorConfig(registry, cfg));
  checkWorkerLimits(cfg, v.shape, limits, v.validation);
  if (limits.worker != nullptr) runtime::checkLocalPaths(v.keys, cfg, *limits.worker, v.validation);
  ConfigReport report;
  report.className = v.connectorClass.empty() ? pluginClass : v.connectorClass;
  report.groups = {"Common", "Transforms", "Predicates", "Error Handling"};
  std::set<std::string> seen;
  for (const auto& key : v.keys) {
    ConfigKeyReport k;
    k.definition = key;
    if (auto it = cfg.find(key.name); it != cfg.end()) {
      k.value = it->second;
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
    if (auto it = cfg.find(name); it != cfg.end()) k.value = it->second;
    k.errors = msgs;
    seen.insert(name);
    report.keys.push_back(std::move(k));
  }
  for (const auto& name : v.validation.unknownKeys) {
    ConfigKeyReport k;
    k.definition.name = name;
    if (auto it = cfg.find(name); it != cfg.end()) k.value = it->second;
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
                              std::vector<StringMap>& taskConfigs) {
  const std::string cls = get(config, "connector.class");
  FERRY_ASSIGN_OR_RETURN(auto instance, registry.createConnector(cls));
  Status started;
  try {
    started = instance->start(config, context);
  } catch (const std::exception& e) {
    started = Status::internal(std::string("start threw: ") + e.what());
  }
  FERRY_RETURN_IF_ERROR(started.withContext("starting connector " + name));
  out.instance = std::move(instance);
  auto parsedMax = ConfigDef::parseValue(ConfigType::kInt, get(config, "tasks.max").empty() ? "1" : get(config, "tasks.max"));
  const int maxTasks = parsedMax.isOk() ? static_cast<int>(std::get<std::int64_t>(*parsedMax)) : 1;
  FERRY_ASSIGN_OR_RETURN(auto own, out.instance->taskConfigs(maxTasks));
  if (static_cast<int>(own.size()) > maxTasks) own.resize(static_cast<std::size_t>(maxTasks));
  std::vector<StringMap> sinkOwn;
  if (shape == runtime::ConnectorShape::kDirect) {
    const StringMap sinkCfg = runtime::sinkSideConfig(config);
    FERRY_ASSIGN_OR_RETURN(auto sink, registry.createConnector(get(sinkCfg, "connector.class")));
    FERRY_RETURN_IF_ERROR(sink->start(sinkCfg, context).withContext("starting the sink side of " + name));
    out.sinkInstance = std::move(sink);
    FERRY_ASSIGN_OR_RETURN(sinkOwn, out.sinkInstance->taskConfigs(std::max<int>(1, static_cast<int>(own.size()))));
    if (sinkOwn.empty()) sinkOwn.push_back({});
  }
  taskConfigs.clear();
  for (std::size_t i = 0; i < own.size(); ++i) {
    StringMap t = config;
    for (const auto& [k, v] : own[i]) t[k] = v;
    if (!sinkOwn.empty())
      for (const auto& [k, v] : sinkOwn[i % sinkOwn.size()]) t["sink." + k] = v;
    t["task.id"] = std::to_string(i);
    taskConfigs.push_back(std::move(t));
  }
  return Status::ok();
}

}  // namespace ferry::control
