// Pieces both herders (standalone and distributed) use.
#pragma once

#include <string>
#include <vector>

#include "backbone/backbone.h"
#include "control/herder.h"
#include "runtime/config_providers.h"
#include "runtime/connector_config.h"
#include "runtime/plugins.h"

namespace ferry::control {

ConnectorType typeOf(runtime::ConnectorShape s);
// Kafka Connect's rules for connector names.
Status validName(const std::string& name);
// The backbone consumer group of a sink connector.
std::string sinkGroupOf(const std::string& connector);
// What the worker allows beyond what a connector's own config declares: checked when a
// connector is validated or created, so a config that could never run is refused up front.
struct WorkerLimits {
  std::int64_t tasksMax = 1000;                  // worker key tasks.max.limit
  const backbone::Backbone* backbone = nullptr;  // names the backbone topics must satisfy
  // Resolves ${provider:...} references before the config is checked (null: none enabled).
  const runtime::ConfigProviders* providers = nullptr;
  // Worker key config.unknown.keys: false (accept, the default, as Kafka Connect does: stored,
  // passed to the connector, reported as warnings by validate) or true (refuse, 400).
  bool refuseUnknownKeys = false;
  // Worker key connector.client.config.override.policy (Kafka Connect's): None refuses every
  // producer/consumer/admin.override.* key, Principal allows only sasl.jaas.config,
  // sasl.mechanism and security.protocol, All (the default) allows every one.
  std::string overridePolicy = "All";
};
// Adds errors for what `limits` refuses: tasks.max above the limit; a backbone topic name the
// backbone cannot hold (a sink's `topics` and dead-letter topic, a source's `topic`); client
// overrides the override policy does not allow. Unknown keys stay errors only when
// limits.refuseUnknownKeys; otherwise they move to `warnings` (key -> message).
void checkWorkerLimits(const StringMap& config, runtime::ConnectorShape shape, const WorkerLimits& limits,
                       ConfigValidation& validation,
                       std::vector<std::pair<std::string, std::string>>* warnings = nullptr);
// Sets config["name"], validates it whole; InvalidArgument listing every error. References are
// resolved for the check only (`config` keeps them); one that cannot be resolved is an error on
// its key. Messages never carry a secret value (runtime/secrets.h).
Result<runtime::ConnectorShape> checkConnectorConfig(const runtime::PluginRegistry& registry, const std::string& name,
                                                     StringMap& config, const WorkerLimits& limits);
Result<std::vector<ConfigKey>> pluginConfigKeys(const runtime::PluginRegistry& registry, const std::string& pluginClass);
Result<ConfigReport> validationReport(const runtime::PluginRegistry& registry, const std::string& pluginClass,
                                      const StringMap& config, const WorkerLimits& limits);
// A sink connector's committed offsets as REST positions, and changing them (connector stopped).
Result<PositionList> sinkOffsets(backbone::Backbone& backbone, const std::string& name);
Status alterSinkOffsets(backbone::Backbone& backbone, const std::string& name, const PositionList& positions);

struct ConnectorInstances {
  runtime::PluginPtr<Connector> instance;
  runtime::PluginPtr<Connector> sinkInstance;  // direct connectors
};
// Starts the connector instance (and a direct connector's sink side) and computes its task
// configs: the connector config, overlaid by each task's own keys (and "sink."-prefixed keys of
// the sink side's task configs), plus task.id. The connector starts with its references resolved
// by `providers`; the task configs are made from the raw config and re-referenced
// (runtime::reReference), so they hold references, never the resolved secrets.
Status startConnectorInstance(const runtime::PluginRegistry& registry, const std::string& name, const StringMap& config,
                              runtime::ConnectorShape shape, ConnectorContext& context, ConnectorInstances& out,
                              std::vector<StringMap>& taskConfigs, const runtime::ConfigProviders* providers = nullptr);
// `config` as REST may show it: secrets replaced by "[hidden]" (runtime/secrets.h).
StringMap maskedConfig(const runtime::PluginRegistry& registry, const StringMap& config);

}  // namespace ferry::control
