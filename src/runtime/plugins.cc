// The plugin registry (plugins.h).
//
// Why the checks come first: a descriptor from a shared library built against another SDK may
// have a different layout, so nothing beyond its first three 32-bit fields (ABI version and the
// two struct sizes, whose position never changes) is read until they match this worker's.
//
// Shared libraries are held by shared_ptr: every registered entry and every instance's deleter
// keeps its library mapped, so an instance that outlives the registry does not call into
// unmapped code. The registry's destructor drops its own references; dlclose() runs when the
// last one goes.
#include "runtime/plugins.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <system_error>

#include "core/logging.h"

namespace ferry::runtime {

const char* pluginKindName(PluginKind k) noexcept {
  switch (k) {
    case PluginKind::kSourceConnector:
      return "source";
    case PluginKind::kSinkConnector:
      return "sink";
    case PluginKind::kTransform:
      return "transformation";
    case PluginKind::kPredicate:
      return "predicate";
    case PluginKind::kConverter:
      return "converter";
  }
  return "unknown";
}

namespace {

// "source connector", "transformation", ... for messages.
std::string kindPhrase(PluginKind k) {
  switch (k) {
    case PluginKind::kSourceConnector:
      return "source connector";
    case PluginKind::kSinkConnector:
      return "sink connector";
    default:
      return pluginKindName(k);
  }
}

bool isConnectorKind(PluginKind k) {
  return k == PluginKind::kSourceConnector || k == PluginKind::kSinkConnector;
}

bool validKind(PluginKind k) {
  auto v = static_cast<std::uint32_t>(k);
  return v >= static_cast<std::uint32_t>(PluginKind::kSourceConnector) &&
         v <= static_cast<std::uint32_t>(PluginKind::kConverter);
}

// A dlopen()ed library; dlclose()d when the last reference goes.
struct Library {
  Library(void* h, std::string p) : handle(h), path(std::move(p)) {}
  ~Library() {
    if (handle != nullptr) ::dlclose(handle);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* handle;
  std::string path;
};

struct Registered {
  PluginInfo info;
  const PluginEntry* entry = nullptr;  // points into the descriptor (static storage of its library)
  std::shared_ptr<Library> library;    // null for built-ins
  // Instead of `entry`: addExternal()'s factory.
  std::shared_ptr<std::function<void*()>> create;
  std::shared_ptr<std::function<void(void*)>> destroy;
};

std::string dlErrorText() {
  const char* e = ::dlerror();
  return e != nullptr ? std::string(e) : std::string("unknown dlopen error");
}

}  // namespace

struct PluginRegistry::Impl {
  std::vector<Registered> plugins;
  std::map<std::string, std::size_t> byName;  // class names and aliases -> index in plugins
  // Simple names of dotted aliases ("FileStreamSinkConnector" for
  // org.apache.kafka.connect.file.FileStreamSinkConnector), as Kafka Connect accepts them. Looked
  // up after byName, so they never shadow a registered name; a simple name two plugins share is
  // nobody's (ambiguous, as in Kafka Connect).
  std::map<std::string, std::size_t> bySimpleName;
  std::set<std::string> ambiguousSimpleNames;
  // The index of a class name, alias or simple name.
  std::optional<std::size_t> indexOf(const std::string& name) const {
    if (auto it = byName.find(name); it != byName.end()) return it->second;
    if (auto it = bySimpleName.find(name); it != bySimpleName.end()) return it->second;
    return std::nullopt;
  }
  std::map<std::string, std::string> pairs;   // source class name -> paired sink class name
  std::string unknownConnectorHint;           // setUnknownConnectorHint()

  Status add(const PluginDescriptor* d, const std::string& origin,
             const std::shared_ptr<Library>& library);
  // The entry for `name`, or NotFound listing the known classes of `wanted` kinds
  // (`what` names them: "connector class", "transformation", ...).
  Result<const Registered*> lookup(const std::string& name, const std::string& what,
                                   const std::set<PluginKind>& wanted) const;
  // Looks `name` up (NotFound lists the `listed` kinds), checks its kind is one of `accepted`
  // (else InvalidArgument "'X' is a <kind>, not a <wantedPhrase>") and creates an instance.
  Result<std::pair<void*, const Registered*>> create(const std::string& name,
                                                     const std::string& what,
                                                     const std::set<PluginKind>& listed,
                                                     const std::set<PluginKind>& accepted,
                                                     const std::string& wantedPhrase) const;
};

Status PluginRegistry::Impl::add(const PluginDescriptor* d, const std::string& origin,
                                 const std::shared_ptr<Library>& library) {
  if (d == nullptr) return Status::invalidArgument("plugin " + origin + " has no descriptor");
  // Only these three fields are safe to read before they are checked.
  if (d->abiVersion != kAbiVersion || d->descriptorSize != sizeof(PluginDescriptor) ||
      d->entrySize != sizeof(PluginEntry)) {
    return Status::incompatible(
        "plugin " + origin + " was built for ferry plugin ABI " + std::to_string(d->abiVersion) +
        " (descriptor " + std::to_string(d->descriptorSize) + " bytes, entry " +
        std::to_string(d->entrySize) + " bytes); this worker speaks ABI " +
        std::to_string(kAbiVersion) + " (" + std::to_string(sizeof(PluginDescriptor)) + "/" +
        std::to_string(sizeof(PluginEntry)) + " bytes): rebuild the plugin against this SDK");
  }
  if (d->entryCount > 0 && d->entries == nullptr) {
    return Status::invalidArgument("plugin " + origin + " declares " +
                                   std::to_string(d->entryCount) + " entries but no table");
  }

  // Check everything before adding anything.
  std::vector<Registered> fresh;
  std::set<std::string> names;  // new names, to catch duplicates inside the descriptor
  auto claim = [&](const char* name, const std::string& owner) -> Status {
    if (name == nullptr || *name == '\0') {
      return Status::invalidArgument("plugin " + origin + ": an entry of " + owner +
                                     " has an empty name");
    }
    if (auto it = byName.find(name); it != byName.end()) {
      const PluginInfo& other = plugins[it->second].info;
      return Status::alreadyExists("plugin " + origin + ": class name '" + name + "' of " + owner +
                                   " is already registered by " + other.className + " from " +
                                   other.origin);
    }
    if (!names.insert(name).second) {
      return Status::alreadyExists("plugin " + origin + ": class name '" + name +
                                   "' appears twice in the plugin");
    }
    return Status::ok();
  };
  for (std::size_t i = 0; i < d->entryCount; ++i) {
    const PluginEntry& e = d->entries[i];
    std::string owner =
        e.className != nullptr ? std::string(e.className) : "entry " + std::to_string(i);
    FERRY_RETURN_IF_ERROR(claim(e.className, owner));
    if (e.aliases != nullptr) {
      for (const char* const* a = e.aliases; *a != nullptr; ++a)
        FERRY_RETURN_IF_ERROR(claim(*a, owner));
    }
    if (!validKind(e.kind)) {
      return Status::invalidArgument("plugin " + origin + ": " + owner + " has unknown kind " +
                                     std::to_string(static_cast<std::uint32_t>(e.kind)));
    }
    if (e.create == nullptr || e.destroy == nullptr) {
      return Status::invalidArgument("plugin " + origin + ": " + owner +
                                     " lacks a create() or destroy() function");
    }
    Registered r;
    r.info.className = e.className;
    if (e.aliases != nullptr) {
      for (const char* const* a = e.aliases; *a != nullptr; ++a) r.info.aliases.emplace_back(*a);
    }
    r.info.kind = e.kind;
    r.info.version =
        e.version != nullptr ? e.version : (d->pluginVersion != nullptr ? d->pluginVersion : "");
    r.info.summary = e.summary != nullptr ? e.summary : "";
    r.info.origin = origin;
    r.entry = &e;
    r.library = library;
    fresh.push_back(std::move(r));
  }

  for (Registered& r : fresh) {
    std::size_t index = plugins.size();
    byName.emplace(r.info.className, index);
    for (const auto& a : r.info.aliases) {
      byName.emplace(a, index);
      const auto dot = a.rfind('.');
      if (dot == std::string::npos || dot + 1 == a.size()) continue;
      const std::string simple = a.substr(dot + 1);
      if (ambiguousSimpleNames.count(simple)) continue;
      auto [it, fresh] = bySimpleName.emplace(simple, index);
      if (!fresh && it->second != index) {
        bySimpleName.erase(it);
        ambiguousSimpleNames.insert(simple);
      }
    }
    plugins.push_back(std::move(r));
  }
  return Status::ok();
}

Result<const Registered*> PluginRegistry::Impl::lookup(const std::string& name,
                                                       const std::string& what,
                                                       const std::set<PluginKind>& wanted) const {
  if (auto i = indexOf(name)) return &plugins[*i];
  std::vector<std::string> known;
  for (const auto& r : plugins) {
    if (wanted.count(r.info.kind) > 0) known.push_back(r.info.className);
  }
  std::sort(known.begin(), known.end());
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  if (list.empty()) list = "(none)";
  std::string hint = what == "connector class" && !unknownConnectorHint.empty() ? "; " + unknownConnectorHint : "";
  return Status::notFound("unknown " + what + " '" + name + "'; known: " + list + hint);
}

Result<std::pair<void*, const Registered*>> PluginRegistry::Impl::create(
    const std::string& name, const std::string& what, const std::set<PluginKind>& listed,
    const std::set<PluginKind>& accepted, const std::string& wantedPhrase) const {
  FERRY_ASSIGN_OR_RETURN(const Registered* r, lookup(name, what, listed));
  if (accepted.count(r->info.kind) == 0) {
    return Status::invalidArgument("'" + name + "' is a " + kindPhrase(r->info.kind) + ", not a " +
                                   wantedPhrase);
  }
  void* instance = nullptr;
  try {
    instance = r->entry != nullptr ? r->entry->create() : (*r->create)();
  } catch (const std::exception& e) {
    return Status::internal("creating " + r->info.className + " (from " + r->info.origin +
                            ") threw: " + e.what());
  } catch (...) {
    return Status::internal("creating " + r->info.className + " (from " + r->info.origin +
                            ") threw an unknown exception");
  }
  if (instance == nullptr) {
    return Status::internal("creating " + r->info.className + " (from " + r->info.origin +
                            ") returned nothing");
  }
  return std::make_pair(instance, r);
}

namespace {

// Wraps an instance created by `r` (as the pointer type the entry's kind promises, `Made`) in a
// PluginPtr<T> whose deleter hands it back to the entry's destroy().
template <typename T, typename Made>
PluginPtr<T> wrap(void* instance, const Registered* r) {
  Made* made = static_cast<Made*>(instance);
  if (r->entry == nullptr) {  // addExternal()'s
    return PluginPtr<T>(made, [destroy = r->destroy](T* p) {
      if (p != nullptr) (*destroy)(static_cast<void*>(static_cast<Made*>(p)));
    });
  }
  auto destroy = r->entry->destroy;
  std::shared_ptr<Library> library = r->library;  // keeps the code mapped while the object lives
  return PluginPtr<T>(made, [destroy, library](T* p) {
    if (p != nullptr) destroy(static_cast<void*>(static_cast<Made*>(p)));
  });
}

const std::set<PluginKind> kConnectorKinds{PluginKind::kSourceConnector,
                                           PluginKind::kSinkConnector};

}  // namespace

PluginRegistry::PluginRegistry() : impl_(std::make_unique<Impl>()) {}

Status PluginRegistry::addExternal(PluginInfo info, std::function<void*()> create, std::function<void(void*)> destroy) {
  if (info.className.empty()) return Status::invalidArgument("an external plugin has an empty class name");
  if (info.kind != PluginKind::kSourceConnector && info.kind != PluginKind::kSinkConnector)
    return Status::invalidArgument("external plugin " + info.className + ": only connectors");
  if (!create || !destroy) return Status::invalidArgument("external plugin " + info.className + " lacks a factory");
  auto& im = *impl_;
  if (auto it = im.byName.find(info.className); it != im.byName.end()) {
    const PluginInfo& other = im.plugins[it->second].info;
    if (other.className == info.className)
      return Status::alreadyExists("class name '" + info.className + "' from " + info.origin + " is already registered from " +
                                   other.origin);
    core::logger("plugins")->info("{} from {} takes the name over from {} ({}), whose alias it was", info.className,
                                  info.origin, other.className, other.origin);
    auto& aliases = im.plugins[it->second].info.aliases;
    aliases.erase(std::remove(aliases.begin(), aliases.end(), info.className), aliases.end());
  }
  const std::size_t index = im.plugins.size();
  // Its simple name ("FileStreamSourceConnector", as Kafka Connect accepts it) is the real class's
  // too, unless another plugin has it of its own (then nobody's, as in Kafka Connect).
  if (const auto dot = info.className.rfind('.'); dot != std::string::npos && dot + 1 < info.className.size()) {
    const std::string simple = info.className.substr(dot + 1);
    auto it = im.bySimpleName.find(simple);
    const bool stolenAlias = it != im.bySimpleName.end() && im.byName.count(info.className) &&
                             im.byName.at(info.className) == it->second;
    if (!im.ambiguousSimpleNames.count(simple)) {
      if (it == im.bySimpleName.end() || stolenAlias) {
        im.bySimpleName[simple] = index;
      } else {
        im.bySimpleName.erase(it);
        im.ambiguousSimpleNames.insert(simple);
      }
    }
  }
  Registered r;
  r.info = std::move(info);
  r.create = std::make_shared<std::function<void*()>>(std::move(create));
  r.destroy = std::make_shared<std::function<void(void*)>>(std::move(destroy));
  im.byName[r.info.className] = index;
  im.plugins.push_back(std::move(r));
  return Status::ok();
}

void PluginRegistry::setUnknownConnectorHint(std::string hint) { impl_->unknownConnectorHint = std::move(hint); }

PluginRegistry::~PluginRegistry() = default;

Status PluginRegistry::add(const PluginDescriptor* descriptor, const std::string& origin) {
  return impl_->add(descriptor, origin, nullptr);
}

Status PluginRegistry::loadLibrary(const std::string& path) {
  ::dlerror();  // clear any stale error
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return Status::invalidArgument("cannot load plugin " + path + ": " + dlErrorText());
  }
  auto library = std::make_shared<Library>(handle, path);
  ::dlerror();
  void* symbol = ::dlsym(handle, "ferry_plugin_descriptor");
  if (symbol == nullptr) {
    return Status::invalidArgument(
        path +
        " is not a ferry plugin: it does not export ferry_plugin_descriptor (declare its "
        "classes with FERRY_PLUGIN(...) from ferry/plugin.h)");
  }
  using DescriptorFn = const PluginDescriptor* (*)();
  auto fn = reinterpret_cast<DescriptorFn>(symbol);
  const PluginDescriptor* descriptor = fn();
  Status added = impl_->add(descriptor, path, library);
  if (added.isOk()) {
    core::logger("plugins")->info("loaded plugin {} {} from {} ({} classes)",
                                  descriptor->pluginName ? descriptor->pluginName : "?",
                                  descriptor->pluginVersion ? descriptor->pluginVersion : "?", path,
                                  descriptor->entryCount);
  }
  return added;  // on failure `library` goes out of scope here and the library is unloaded
}

std::vector<Status> PluginRegistry::loadPath(const std::vector<std::string>& folders) {
  namespace fs = std::filesystem;
  std::vector<Status> errors;
  auto sharedObjects = [](const fs::path& dir, std::vector<fs::path>& files,
                          std::vector<fs::path>* subdirs) -> std::error_code {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) return ec;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) return ec;
      std::error_code typeEc;
      if (it->is_regular_file(typeEc) && it->path().extension() == ".so") {
        files.push_back(it->path());
      } else if (subdirs != nullptr && it->is_directory(typeEc)) {
        subdirs->push_back(it->path());
      }
    }
    return ec;
  };
  for (const std::string& folder : folders) {
    if (folder.empty()) continue;
    std::vector<fs::path> files, subdirs;
    if (std::error_code ec = sharedObjects(folder, files, &subdirs)) {
      errors.push_back(
          Status::notFound("plugin.path folder " + folder + " cannot be read: " + ec.message()));
      continue;
    }
    std::sort(files.begin(), files.end());
    std::sort(subdirs.begin(), subdirs.end());
    for (const fs::path& sub : subdirs) {
      std::vector<fs::path> inner;
      if (std::error_code ec = sharedObjects(sub, inner, nullptr)) {
        errors.push_back(
            Status::notFound("plugin folder " + sub.string() + " cannot be read: " + ec.message()));
        continue;
      }
      std::sort(inner.begin(), inner.end());
      files.insert(files.end(), inner.begin(), inner.end());
    }
    for (const fs::path& file : files) {
      Status s = loadLibrary(file.string());
      if (!s.isOk()) {
        core::logger("plugins")->warn("plugin not loaded: {}", s.message());
        errors.push_back(std::move(s));
      }
    }
  }
  return errors;
}

std::vector<PluginInfo> PluginRegistry::list() const {
  std::vector<PluginInfo> out;
  out.reserve(impl_->plugins.size());
  for (const auto& r : impl_->plugins) out.push_back(r.info);
  std::sort(out.begin(), out.end(),
            [](const PluginInfo& a, const PluginInfo& b) { return a.className < b.className; });
  return out;
}

Status PluginRegistry::pairDirect(const std::string& sourceClass, const std::string& sinkClass) {
  FERRY_ASSIGN_OR_RETURN(PluginInfo src, find(sourceClass));
  FERRY_ASSIGN_OR_RETURN(PluginInfo sink, find(sinkClass));
  if (src.kind != PluginKind::kSourceConnector || sink.kind != PluginKind::kSinkConnector)
    return Status::invalidArgument("pairDirect(" + sourceClass + ", " + sinkClass +
                                   "): needs a source and a sink connector");
  impl_->pairs[src.className] = sink.className;
  return Status::ok();
}

std::string PluginRegistry::pairedSink(const std::string& connectorClass) const {
  auto i = impl_->indexOf(connectorClass);
  if (!i) return {};
  auto p = impl_->pairs.find(impl_->plugins[*i].info.className);
  return p == impl_->pairs.end() ? std::string() : p->second;
}

Result<PluginInfo> PluginRegistry::find(const std::string& name) const {
  FERRY_ASSIGN_OR_RETURN(const Registered* r,
                         impl_->lookup(name, "connector class", kConnectorKinds));
  return r->info;
}

bool PluginRegistry::isConnector(const std::string& name) const {
  auto i = impl_->indexOf(name);
  return i && isConnectorKind(impl_->plugins[*i].info.kind);
}

Result<PluginPtr<SourceConnector>> PluginRegistry::createSourceConnector(
    const std::string& name) const {
  FERRY_ASSIGN_OR_RETURN(auto made,
                         impl_->create(name, "connector class", kConnectorKinds,
                                       {PluginKind::kSourceConnector}, "source connector"));
  return wrap<SourceConnector, SourceConnector>(made.first, made.second);
}

Result<PluginPtr<SinkConnector>> PluginRegistry::createSinkConnector(
    const std::string& name) const {
  FERRY_ASSIGN_OR_RETURN(auto made, impl_->create(name, "connector class", kConnectorKinds,
                                                  {PluginKind::kSinkConnector}, "sink connector"));
  return wrap<SinkConnector, SinkConnector>(made.first, made.second);
}

Result<PluginPtr<Connector>> PluginRegistry::createConnector(const std::string& name) const {
  FERRY_ASSIGN_OR_RETURN(auto made, impl_->create(name, "connector class", kConnectorKinds,
                                                  kConnectorKinds, "connector"));
  if (made.second->info.kind == PluginKind::kSourceConnector) {
    return wrap<Connector, SourceConnector>(made.first, made.second);
  }
  return wrap<Connector, SinkConnector>(made.first, made.second);
}

Result<PluginPtr<Transform>> PluginRegistry::createTransform(const std::string& name) const {
  FERRY_ASSIGN_OR_RETURN(auto made, impl_->create(name, "transformation", {PluginKind::kTransform},
                                                  {PluginKind::kTransform}, "transformation"));
  return wrap<Transform, Transform>(made.first, made.second);
}

Result<PluginPtr<Predicate>> PluginRegistry::createPredicate(const std::string& name) const {
  FERRY_ASSIGN_OR_RETURN(auto made, impl_->create(name, "predicate", {PluginKind::kPredicate},
                                                  {PluginKind::kPredicate}, "predicate"));
  return wrap<Predicate, Predicate>(made.first, made.second);
}

Result<PluginPtr<Converter>> PluginRegistry::createConverter(const std::string& name) const {
  FERRY_ASSIGN_OR_RETURN(auto made, impl_->create(name, "converter", {PluginKind::kConverter},
                                                  {PluginKind::kConverter}, "converter"));
  return wrap<Converter, Converter>(made.first, made.second);
}

}  // namespace ferry::runtime
