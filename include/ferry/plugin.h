// ferry connector SDK — plugin descriptors.
//
// Every plugin (built-in or a shared library in plugin.path) describes what it provides with one
// PluginDescriptor: a versioned table of entries, each naming a connector, transform, predicate
// or converter class and a factory for it. The worker checks the ABI version and the struct sizes
// before using anything else in the descriptor, and refuses a mismatch with a clear message.
//
// A shared-library plugin exports exactly one C symbol, `ferry_plugin_descriptor`, through
// FERRY_PLUGIN(...). Built-in plugins use the same descriptor shape but are listed explicitly by
// the runtime (no static initialisers anywhere).
//
// Ownership: create() returns a new object owned by the caller, which must release it with the
// same entry's destroy() (so the plugin's own allocator frees it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry {

// Bump on any change to the SDK's classes or to the structs below.
#ifndef FERRY_ABI_VERSION
// 2: Transform::apply(record, cache), TransformCache, Predicate::readsKeyOrValueBytes
// 3: SinkTaskContext::loadState/saveState
// 4: ConfigKey::localPath, Source/SinkTaskContext::openLocalFile
// 5: SourceTask::pollMode/idlePollDelay, SourceTaskContext::wakeup (new virtual functions)
// 6: Record::receivedNs, SinkTask::flushAsync
// 7: Record::keySchema/valueSchema (ferry/schema.h), Converter::fromRecordWithSchema/toRecordWithSchema
// 8: SourceTaskContext::reportProgress, TaskProgress
// 9: Converter::fromRecordWithHeaders/toRecordWithHeaders, ConnectionHealth,
//    Source/SinkTaskContext::reportConnection
#define FERRY_ABI_VERSION 9
#endif
inline constexpr std::uint32_t kAbiVersion = FERRY_ABI_VERSION;

enum class PluginKind : std::uint32_t {
  kSourceConnector = 1,  // create() returns SourceConnector*
  kSinkConnector = 2,    // create() returns SinkConnector*
  kTransform = 3,        // create() returns Transform*
  kPredicate = 4,        // create() returns Predicate*
  kConverter = 5,        // create() returns Converter*
};

struct PluginEntry {
  const char* className;     // the name used in configs, e.g. "FileStreamSource"
  const char* const* aliases;  // null-terminated list of other accepted names, or nullptr
  PluginKind kind;
  const char* version;
  const char* summary;       // one line for listings
  void* (*create)();
  void (*destroy)(void*);
};

struct PluginDescriptor {
  std::uint32_t abiVersion;      // kAbiVersion of the SDK the plugin was built with
  std::uint32_t descriptorSize;  // sizeof(PluginDescriptor) there
  std::uint32_t entrySize;       // sizeof(PluginEntry) there
  const char* pluginName;
  const char* pluginVersion;
  const PluginEntry* entries;
  std::size_t entryCount;
};

// Builds a PluginDescriptor for `entries` (a static array of PluginEntry).
template <std::size_t N>
constexpr PluginDescriptor makePluginDescriptor(const char* name, const char* version,
                                                const PluginEntry (&entries)[N]) {
  return PluginDescriptor{kAbiVersion, sizeof(PluginDescriptor), sizeof(PluginEntry), name, version,
                          entries, N};
}

// Factory helpers for entries: ferry::pluginCreate<MyConnector, SourceConnector>.
template <typename Impl, typename Base>
void* pluginCreate() {
  return static_cast<Base*>(new Impl());
}
template <typename Base>
void pluginDestroy(void* p) {
  delete static_cast<Base*>(p);
}

}  // namespace ferry

// Exports the descriptor of a shared-library plugin. Use once per library, at namespace scope:
//   static const ferry::PluginEntry kEntries[] = {{"MySource", nullptr, ...}};
//   FERRY_PLUGIN("my-plugin", "1.0.0", kEntries)
#define FERRY_PLUGIN(name, version, entries)                                         \
  extern "C" __attribute__((visibility("default"))) const ::ferry::PluginDescriptor* \
  ferry_plugin_descriptor() {                                                        \
    static const ::ferry::PluginDescriptor d =                                       \
        ::ferry::makePluginDescriptor(name, version, entries);                       \
    return &d;                                                                       \
  }
