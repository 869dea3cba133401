// Java connectors in the plugin registry (jvm/README.md).
//
// registerJavaPlugins() asks the JVM host for the connector classes it found in plugin.path and
// registers each (PluginRegistry::addExternal) with a factory of proxies: a JavaSourceConnector
// or JavaSinkConnector whose configDef() is the Java connector's ConfigDef (asked once per class)
// and whose validate() is the Java connector's own validate(). Listing, config and validation
// therefore answer from the connector itself, as in Kafka Connect.
//
// Running Java connectors and their tasks is the next part of issue 21: start() refuses, with a
// message that says so, so a Java connector created now is FAILED with that trace.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "jvm/host.h"
#include "runtime/plugins.h"

namespace ferry::jvm {

// Java plugins the host found, and what it could not load.
struct JavaPluginScan {
  struct Plugin {
    std::string className;
    bool source = false;
    bool openMessaging = false;  // written to the OpenMessaging connector API (RocketMQ Connect's)
    std::string version;
    std::string location;
  };
  std::vector<Plugin> plugins;
  std::vector<std::pair<std::string, std::string>> problems;  // (where, why)
};
Result<JavaPluginScan> scanJavaPlugins(JvmHostSupervisor& host);

// The host's answers, parsed (pure: the fuzz target tests/fuzz/jvm_answers feeds them anything).
Result<JavaPluginScan> parsePluginScan(std::string_view payload);
Result<ConfigDef> parseConfigDef(std::string_view payload);
// Key -> error messages (keys without errors too, with none).
Result<std::map<std::string, std::vector<std::string>>> parseValidation(std::string_view payload);

// Registers the scan's connectors; returns how many. A class whose name another class already
// has is skipped and logged.
Result<int> registerJavaPlugins(runtime::PluginRegistry& registry, std::shared_ptr<JvmHostSupervisor> host,
                                const JavaPluginScan& scan);

// The jars of plugin.path (a jar in a folder, or in a sub-folder): whether any Java plugin may be
// there at all, so that a worker without them never starts a JVM.
std::vector<std::string> javaJarsIn(const std::vector<std::string>& pluginPath);

}  // namespace ferry::jvm
