// registerBuiltins (plugins.h): the built-in plugins, listed explicitly (no static initialisers).
// Each folder's library is compiled in only when that folder is part of the build
// (src/runtime/CMakeLists.txt defines HAVE_FERRY_CONNECTORS / HAVE_FERRY_TRANSFORMS).
#include "runtime/plugins.h"

// Each header declares `const ferry::PluginDescriptor& ferry::<folder>::builtinPlugins();`.
#ifdef HAVE_FERRY_CONNECTORS
#include "connectors/builtins.h"
#endif
#ifdef HAVE_FERRY_TRANSFORMS
#include "transforms/builtins.h"
#endif

namespace ferry::runtime {

Status registerBuiltins(PluginRegistry& registry) {
  (void)registry;  // unused when no built-in folder is part of the build
#ifdef HAVE_FERRY_CONNECTORS
  FERRY_RETURN_IF_ERROR(registry.add(&ferry::connectors::builtinPlugins(), "builtin")
                            .withContext("built-in connectors"));
  FERRY_RETURN_IF_ERROR(registry.pairDirect("RocketMQReplicator", "RocketMQReplicatorSink"));
  FERRY_RETURN_IF_ERROR(registry.pairDirect("KafkaReplicator", "KafkaReplicatorSink"));
#endif
#ifdef HAVE_FERRY_TRANSFORMS
  FERRY_RETURN_IF_ERROR(registry.add(&ferry::transforms::builtinPlugins(), "builtin")
                            .withContext("built-in transforms"));
#endif
  return Status::ok();
}

}  // namespace ferry::runtime
