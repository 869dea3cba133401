// The plugin registry: every connector, transform, predicate and converter class a worker knows.
//
// Built-ins are registered explicitly by registerBuiltins() (builtins.cc lists them: no static
// initialisers). Shared libraries found in `plugin.path` (a list of folders; each *.so in them,
// one level deep) are dlopen()ed; their exported `ferry_plugin_descriptor` is checked (ABI version,
// descriptor and entry sizes) before anything else in it is used. A mismatch is refused with a
// message naming the file, the versions and what to do; it does not stop the worker.
//
// Thread-safety: load everything first (single thread), then the registry is read-only and safe
// to share; create*() may be called from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/connector.h"
#include "ferry/plugin.h"
#include "ferry/result.h"
#include "ferry/transform.h"

namespace ferry::runtime {

// unique_ptr whose deleter is the plugin's own destroy().
template <typename T>
using PluginPtr = std::unique_ptr<T, std::function<void(T*)>>;

struct PluginInfo {
  std::string className;
  std::vector<std::string> aliases;
  PluginKind kind;
  std::string version;
  std::string summary;
  std::string origin;  // "builtin" or the .so path
};

const char* pluginKindName(PluginKind k) noexcept;  // "source", "sink", "transformation", "predicate", "converter"

class PluginRegistry {
 public:
  PluginRegistry();
  ~PluginRegistry();  // unloads shared libraries (after every instance they created is gone)
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // Adds the entries of a descriptor. `origin` is "builtin" or a file path. Fails (adding
  // nothing) on an ABI mismatch or a class name that is already registered.
  Status add(const PluginDescriptor* descriptor, const std::string& origin);
  // Adds a connector class whose instances `create` makes (nullptr: it could not) and `destroy`
  // releases: the JVM host's Java connectors (src/jvm/java_plugins.h). Its class name may take
  // over an alias of another plugin — the real class beats a stand-in: a jar in plugin.path
  // holding org.apache.kafka.connect.file.FileStreamSourceConnector is that class, not ferry's
  // FileStreamSource, which keeps its own name — but not another class's name (AlreadyExists).
  Status addExternal(PluginInfo info, std::function<void*()> create, std::function<void(void*)> destroy);
  // Added to "unknown connector class" errors: e.g. why the plugin.path's Java connectors are
  // not available.
  void setUnknownConnectorHint(std::string hint);
  // dlopen()s one shared library and adds its descriptor.
  Status loadLibrary(const std::string& path);
  // Loads every *.so in each folder; returns the per-file errors (empty = all loaded).
  std::vector<Status> loadPath(const std::vector<std::string>& folders);

  std::vector<PluginInfo> list() const;
  // Pairs a source connector with the sink connector that completes it as a direct connector:
  // a config naming `sourceClass` without sink.connector.class becomes direct with `sinkClass`
  // (see expandDirectPair in connector_config.h). Both must be registered connectors.
  Status pairDirect(const std::string& sourceClass, const std::string& sinkClass);
  // The sink class paired with `connectorClass` (class name or alias), or empty.
  std::string pairedSink(const std::string& connectorClass) const;
  // By class name or alias. NotFound names the known classes of that kind.
  Result<PluginInfo> find(const std::string& name) const;
  // True when `name` resolves to a source or sink connector.
  bool isConnector(const std::string& name) const;

  Result<PluginPtr<SourceConnector>> createSourceConnector(const std::string& name) const;
  Result<PluginPtr<SinkConnector>> createSinkConnector(const std::string& name) const;
  // A connector of either kind, as its base class.
  Result<PluginPtr<Connector>> createConnector(const std::string& name) const;
  Result<PluginPtr<Transform>> createTransform(const std::string& name) const;
  Result<PluginPtr<Predicate>> createPredicate(const std::string& name) const;
  Result<PluginPtr<Converter>> createConverter(const std::string& name) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Registers every built-in plugin (connectors/, transforms/, converters).
Status registerBuiltins(PluginRegistry& registry);

}  // namespace ferry::runtime
