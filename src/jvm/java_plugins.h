// Java connectors in the plugin registry (jvm/README.md).
//
// registerJavaPlugins() asks the JVM host for the connector classes it found in plugin.path and
// registers each (PluginRegistry::addExternal) with a factory of proxies: a JavaSourceConnector
// or JavaSinkConnector whose configDef() is the Java connector's ConfigDef (asked once per class)
// and whose validate() is the Java connector's own validate(). Listing, config and validation
// therefore answer from the connector itself, as in Kafka Connect.
//
// The proxies also run the connector and its tasks in the host (jvm/README.md, "Running"): the
// connector's start/taskConfigs/stop, and JavaSourceTask / JavaSinkTask, whose records cross the
// channel in batches (java_records.h).
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

// The worker's default converters (key.converter, value.converter): a Java sink task whose
// connector names none gets schemaless data as these would have read it.
struct JavaTaskDefaults {
  std::string keyConverter;
  std::string valueConverter;
  // task.shutdown.graceful.timeout.ms: a task's stop() in the host gets half of it, so that a
  // poll thread that does not end is abandoned there before the worker abandons the task.
  std::int64_t taskShutdownTimeoutMs = 5000;
};
// Registers the scan's connectors; returns how many. A class whose name another class already
// has is skipped and logged.
Result<int> registerJavaPlugins(runtime::PluginRegistry& registry, std::shared_ptr<JvmHostSupervisor> host,
                                const JavaPluginScan& scan, const JavaTaskDefaults& defaults = {});

// The jars of plugin.path (a jar in a folder, or in a sub-folder): whether any Java plugin may be
// there at all, so that a worker without them never starts a JVM.
std::vector<std::string> javaJarsIn(const std::vector<std::string>& pluginPath);

}  // namespace ferry::jvm
