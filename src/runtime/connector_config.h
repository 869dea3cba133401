// Connector configuration: the framework keys every connector shares, and whole-config
// validation (framework + connector + transforms + predicates + converters, all errors at once).
//
// A connector is one of three shapes:
//   source  connector.class is a source connector; records go to the backbone;
//   sink    connector.class is a sink connector; records come from the backbone (`topics`);
//   direct  connector.class is a source and `sink.connector.class` a sink: one task runs both,
//           with the transforms between them and no backbone hop. Keys for the sink side are
//           given with the `sink.` prefix (sink.file=...).
//
// Thread-safety: pure functions over a read-only PluginRegistry.
#pragma once

#include <string>
#include <vector>

#include "ferry/config.h"
#include "ferry/result.h"
#include "runtime/plugins.h"

namespace ferry::runtime {

enum class ConnectorShape { kSource, kSink, kDirect };
const char* connectorShapeName(ConnectorShape s) noexcept;

// Framework keys of each shape (name, connector.class, tasks.max, errors.*, transforms, ...).
const ConfigDef& frameworkConfigDef(ConnectorShape shape);

// Kafka Connect's per-connector client override prefixes.
inline constexpr const char* kClientOverridePrefixes[] = {"producer.override.", "consumer.override.",
                                                          "admin.override."};

// Prefixes under which keys are checked elsewhere (transforms.<alias>.*, producer.override.*, ...).
std::vector<std::string> frameworkPrefixes(ConnectorShape shape);

struct ConnectorValidation {
  ConnectorShape shape = ConnectorShape::kSource;
  std::string connectorClass;       // as resolved (the class name, not an alias)
  std::string sinkClass;            // direct only
  std::vector<ConfigKey> keys;      // every declared key, framework first (direct: sink.* too)
  ConfigValidation validation;      // per-key errors and unknown keys
};

// Validates a whole connector config. NotFound (listing the known connector classes) when
// connector.class or sink.connector.class names no connector; otherwise every problem is in
// the returned validation.
Result<ConnectorValidation> validateConnectorConfig(const PluginRegistry& registry, const StringMap& config);

// A config whose connector.class has a paired sink (PluginRegistry::pairDirect) and no other
// sink.connector.class, completed as a direct connector: sink.connector.class = the paired sink
// and sink.<k> = <k> for every key the sink declares that the config sets (the plain key wins, so
// a config read back, edited and put again stays consistent). Other configs come back unchanged.
// Idempotent.
StringMap expandDirectPair(const PluginRegistry& registry, const StringMap& config);

// Key/value of the sink side of a direct connector: sink.* keys with the prefix stripped.
StringMap sinkSideConfig(const StringMap& config);

// errors.* keys, parsed.
struct ErrorPolicy {
  bool tolerateAll = false;           // errors.tolerance=all
  std::int64_t retryTimeoutMs = 0;    // errors.retry.timeout (-1 = forever)
  std::int64_t retryDelayMaxMs = 60000;
  bool logErrors = false;             // errors.log.enable
  bool logMessages = false;           // errors.log.include.messages
  std::string deadLetterTopic;        // errors.deadletterqueue.topic.name
  bool contextHeaders = true;         // errors.deadletterqueue.context.headers.enable
};
ErrorPolicy parseErrorPolicy(const StringMap& config);

}  // namespace ferry::runtime
