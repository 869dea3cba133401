// Pieces both herders (standalone and distributed) use.
#pragma once

#include <string>
#include <vector>

#include "backbone/backbone.h"
#include "control/herder.h"
#include "runtime/connector_config.h"
#include "runtime/plugins.h"
#include "runtime/worker_config.h"

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
  // Local paths (keys declared with ConfigKey::localPath) must lie in its file.allowed.dirs;
  // null: not checked here (tasks still open files only through the confinement).
  const runtime::WorkerConfig* worker = nullptr;
};
// Adds errors for what `limits` refuses: tasks.max above the limit; a backbone topic name the
// backbone cannot hold (a sink's `topics` and dead-letter topic, a source's `topic`).
void checkWorkerLimits(const StringMap& config, runtime::ConnectorShape shape, const WorkerLimits& limits,
                       ConfigValidation& validation);
// Sets config["name"], validates it whole; InvalidArgument listing every error.
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
// the sink side's task configs), plus task.id.
Status startConnectorInstance(const runtime::PluginRegistry& registry, const std::string& name, const StringMap& config,
                              runtime::ConnectorShape shape, ConnectorContext& context, ConnectorInstances& out,
                              std::vector<StringMap>& taskConfigs);

}  // namespace ferry::control
