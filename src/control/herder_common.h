// Pieces both herders (standalone and distributed) use.
#pragma once

#include <string>
#include <vector>

#include "backbone/backbone.h"
#include "control/herder.h"
#include "runtime/connector_config.h"
#include "runtime/plugins.h"

namespace ferry::control {

ConnectorType typeOf(runtime::ConnectorShape s);
// Kafka Connect's rules for connector names.
Status validName(const std::string& name);
// The backbone consumer group of a sink connector.
std::string sinkGroupOf(const std::string& connector);
// Sets config["name"], validates it whole; InvalidArgument listing every error.
Result<runtime::ConnectorShape> checkConnectorConfig(const runtime::PluginRegistry& registry, const std::string& name,
                                                     StringMap& config);
Result<std::vector<ConfigKey>> pluginConfigKeys(const runtime::PluginRegistry& registry, const std::string& pluginClass);
Result<ConfigReport> validationReport(const runtime::PluginRegistry& registry, const std::string& pluginClass,
                                      const StringMap& config);
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
