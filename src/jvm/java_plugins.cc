// Java connectors in the plugin registry (java_plugins.h).
#include "jvm/java_plugins.h"

#include <filesystem>
#include <map>
#include <mutex>

#include "core/logging.h"

namespace ferry::jvm {

namespace {

constexpr std::chrono::milliseconds kCallTimeout{30000};

ConfigType typeOf(const std::string& kafkaType) {
  if (kafkaType == "INT" || kafkaType == "SHORT") return ConfigType::kInt;
  if (kafkaType == "LONG") return ConfigType::kLong;
  if (kafkaType == "DOUBLE") return ConfigType::kDouble;
  if (kafkaType == "BOOLEAN") return ConfigType::kBool;
  if (kafkaType == "LIST") return ConfigType::kList;
  if (kafkaType == "PASSWORD") return ConfigType::kPassword;
  if (kafkaType == "CLASS") return ConfigType::kClass;
  return ConfigType::kString;
}

Importance importanceOf(const std::string& s) {
  if (s == "HIGH") return Importance::kHigh;
  if (s == "LOW") return Importance::kLow;
  return Importance::kMedium;
}

// A Java connector class's ConfigDef, asked of the host once (per worker process) and kept.
class ConfigDefCache {
 public:
  Result<std::shared_ptr<const ConfigDef>> get(JvmHostSupervisor& host, const std::string& cls) {
    {
      std::lock_guard lock(mu_);
      if (auto it = defs_.find(cls); it != defs_.end()) return it->second;
    }
    FERRY_ASSIGN_OR_RETURN(auto payload, host.call(kConfigDef, [&](Writer& w) { w.str(cls); }, kCallTimeout));
    FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfigDef(payload));
    auto def = std::make_shared<ConfigDef>(std::move(parsed));
    std::lock_guard lock(mu_);
    defs_[cls] = def;
    return std::shared_ptr<const ConfigDef>(def);
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const ConfigDef>> defs_;
};

// What both proxies share: the class, the host, the ConfigDef and validate().
class JavaConnectorCore {
 public:
  JavaConnectorCore(std::string cls, std::string version, std::shared_ptr<JvmHostSupervisor> host,
                    std::shared_ptr<ConfigDefCache> cache)
      : cls_(std::move(cls)), version_(std::move(version)), host_(std::move(host)) {
    auto def = cache->get(*host_, cls_);
    if (def.isOk()) {
      def_ = *def;
    } else {
      defError_ = def.status().message();
      def_ = std::make_shared<const ConfigDef>();
    }
  }
  const std::string& version() const { return version_; }
  const ConfigDef& configDef() const { return *def_; }

  void validate(const StringMap& config, ConfigValidation& validation) const {
    if (!defError_.empty()) {
      validation.errors["connector.class"].push_back("the JVM host could not describe " + cls_ + ": " + defError_);
      return;
    }
    auto payload = host_->call(kValidate, [&](Writer& w) { w.str(cls_).map(config); }, kCallTimeout);
    if (!payload.isOk()) {
      validation.errors["connector.class"].push_back(cls_ + ".validate() failed: " + payload.status().message());
      return;
    }
    auto read = parseValidation(*payload);
    if (!read.isOk()) {
      validation.errors["connector.class"].push_back("the JVM host's validation of " + cls_ +
                                                     " could not be read: " + read.status().message());
      return;
    }
    for (auto& [key, messages] : *read) {
      // The ConfigDef's own checks ran here already (the same keys and types): a key with an
      // error of ours keeps it, without the Java wording of the same fault beside it.
      if (messages.empty() || validation.errors.count(key)) continue;
      auto& mine = validation.errors[key];
      mine.insert(mine.end(), messages.begin(), messages.end());
    }
  }

  Status refuseToRun() const {
    return Status::failedPrecondition(
        "Java connector " + cls_ +
        " cannot run yet: this worker lists and validates Java connectors through its JVM host; running them "
        "and their tasks is not built yet");
  }

 private:
  std::string cls_, version_;
  std::shared_ptr<JvmHostSupervisor> host_;
  std::shared_ptr<const ConfigDef> def_;
  std::string defError_;
};

// A Java connector of either kind (Base: SourceConnector or SinkConnector, Task: its task type).
template <typename Base, typename Task>
class JavaConnector final : public Base {
 public:
  explicit JavaConnector(JavaConnectorCore core) : core_(std::move(core)) {}
  std::string version() const override { return core_.version(); }
  const ConfigDef& configDef() const override { return core_.configDef(); }
  void validate(const StringMap& config, ConfigValidation& v) const override { core_.validate(config, v); }
  Status start(const StringMap&, ConnectorContext&) override { return core_.refuseToRun(); }
  Result<std::vector<StringMap>> taskConfigs(int) override { return core_.refuseToRun(); }
  void stop() override {}
  std::unique_ptr<Task> createTask() override { return nullptr; }  // never asked: start() refuses

 private:
  JavaConnectorCore core_;
};
using JavaSourceConnector = JavaConnector<SourceConnector, SourceTask>;
using JavaSinkConnector = JavaConnector<SinkConnector, SinkTask>;

}  // namespace

Result<JavaPluginScan> scanJavaPlugins(JvmHostSupervisor& host) {
  FERRY_ASSIGN_OR_RETURN(auto payload, host.call(kPlugins, [](Writer&) {}, kCallTimeout));
  return parsePluginScan(payload);
}

Result<JavaPluginScan> parsePluginScan(std::string_view payload) {
  Reader r(payload);
  JavaPluginScan scan;
  FERRY_ASSIGN_OR_RETURN(auto n, r.count("plugins"));
  for (std::int32_t i = 0; i < n; ++i) {
    JavaPluginScan::Plugin p;
    FERRY_ASSIGN_OR_RETURN(p.className, r.str("class name"));
    FERRY_ASSIGN_OR_RETURN(auto kind, r.u8());
    if (kind != 1 && kind != 2) return Status::invalidArgument("JVM host answer: plugin kind " + std::to_string(kind));
    p.source = kind == 1;
    FERRY_ASSIGN_OR_RETURN(auto api, r.u8());
    if (api > 1) return Status::invalidArgument("JVM host answer: plugin API " + std::to_string(api));
    p.openMessaging = api == 1;
    FERRY_ASSIGN_OR_RETURN(p.version, r.str("version"));
    FERRY_ASSIGN_OR_RETURN(p.location, r.str("location"));
    scan.plugins.push_back(std::move(p));
  }
  FERRY_ASSIGN_OR_RETURN(auto m, r.count("problems"));
  for (std::int32_t i = 0; i < m; ++i) {
    FERRY_ASSIGN_OR_RETURN(auto where, r.str("problem location"));
    FERRY_ASSIGN_OR_RETURN(auto why, r.str("problem"));
    scan.problems.emplace_back(std::move(where), std::move(why));
  }
  return scan;
}

Result<ConfigDef> parseConfigDef(std::string_view payload) {
  Reader r(payload);
  ConfigDef def;
  FERRY_ASSIGN_OR_RETURN(auto n, r.count("config keys"));
  for (std::int32_t i = 0; i < n; ++i) {
    ConfigKey k;
    FERRY_ASSIGN_OR_RETURN(k.name, r.str("key name"));
    FERRY_ASSIGN_OR_RETURN(auto type, r.str("key type"));
    k.type = typeOf(type);
    FERRY_ASSIGN_OR_RETURN(bool hasDefault, r.boolean());
    FERRY_ASSIGN_OR_RETURN(auto dflt, r.optStr());
    // Kafka's "default null" is an optional key without a value: no value here either, but not
    // required (an empty default).
    if (hasDefault) k.defaultValue = dflt.value_or("");
    FERRY_ASSIGN_OR_RETURN(auto importance, r.str("importance"));
    k.importance = importanceOf(importance);
    FERRY_ASSIGN_OR_RETURN(k.documentation, r.str("documentation"));
    FERRY_ASSIGN_OR_RETURN(k.group, r.str("group"));
    FERRY_ASSIGN_OR_RETURN(k.displayName, r.str("display name"));
    FERRY_ASSIGN_OR_RETURN(k.recommended, r.strings("recommended values"));
    if (def.find(k.name) != nullptr) return Status::invalidArgument("JVM host answer: key " + k.name + " twice");
    def.define(std::move(k));
  }
  return def;
}

Result<std::map<std::string, std::vector<std::string>>> parseValidation(std::string_view payload) {
  Reader r(payload);
  std::map<std::string, std::vector<std::string>> out;
  FERRY_ASSIGN_OR_RETURN(auto n, r.count("config values"));
  for (std::int32_t i = 0; i < n; ++i) {
    FERRY_ASSIGN_OR_RETURN(auto name, r.str("config value name"));
    FERRY_ASSIGN_OR_RETURN(auto value, r.optStr());
    (void)value;
    FERRY_ASSIGN_OR_RETURN(auto errors, r.strings("error messages"));
    auto& mine = out[std::move(name)];
    mine.insert(mine.end(), errors.begin(), errors.end());
  }
  return out;
}

Result<int> registerJavaPlugins(runtime::PluginRegistry& registry, std::shared_ptr<JvmHostSupervisor> host,
                                const JavaPluginScan& scan) {
  auto cache = std::make_shared<ConfigDefCache>();
  int added = 0;
  for (const auto& p : scan.plugins) {
    runtime::PluginInfo info;
    info.className = p.className;
    info.kind = p.source ? PluginKind::kSourceConnector : PluginKind::kSinkConnector;
    info.version = p.version;
    info.summary = p.openMessaging ? "OpenMessaging connector (run by the JVM host)" : "Java connector (run by the JVM host)";
    info.origin = p.location;
    const bool source = p.source;
    auto factory = [cls = p.className, version = p.version, host, cache, source]() -> void* {
      JavaConnectorCore core(cls, version, host, cache);
      if (source) return static_cast<SourceConnector*>(new JavaSourceConnector(std::move(core)));
      return static_cast<SinkConnector*>(new JavaSinkConnector(std::move(core)));
    };
    auto destroy = [source](void* c) {
      if (source) delete static_cast<SourceConnector*>(c);
      else delete static_cast<SinkConnector*>(c);
    };
    if (auto s = registry.addExternal(std::move(info), factory, destroy); !s.isOk()) {
      core::logger("jvm")->warn("Java connector {} not registered: {}", p.className, s.message());
      continue;
    }
    ++added;
  }
  for (const auto& [where, why] : scan.problems) core::logger("jvm")->warn("plugin.path {}: {}", where, why);
  return added;
}

std::vector<std::string> javaJarsIn(const std::vector<std::string>& pluginPath) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& folder : pluginPath) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
      if (it.depth() > 8) it.disable_recursion_pending();
      if (it->is_regular_file(ec) && it->path().extension() == ".jar") out.push_back(it->path().string());
    }
  }
  return out;
}

}  // namespace ferry::jvm
