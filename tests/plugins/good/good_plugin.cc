// A shared-library plugin for the plugin-loader tests: a source connector and a transform.
//
//  TestCounterSource  one task; emits values "c-<n>" (n = 0, 1, ...) to the `topic` config, with
//                     partition {"counter": "0"} and offset {"n": "<n>"}; resumes after the
//                     committed n. poll() never waits: it returns up to `batch.size` records.
//  TestUpper          uppercases the record value (ASCII).
//
// Built with the SDK only. bad_abi/ compiles this same file with FERRY_ABI_VERSION=999.
// Threading: as the SDK says, one task thread per instance.
#include <cctype>
#include <memory>
#include <string>

#include "ferry/connector.h"
#include "ferry/plugin.h"
#include "ferry/transform.h"

namespace {

using namespace ferry;

const ConfigDef& counterConfigDef() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("topic", ConfigType::kString, std::nullopt, Importance::kHigh,
             "Topic to write the counter records to.");
    d.define("batch.size", ConfigType::kInt, "10", Importance::kLow,
             "Most records returned by one poll().", validators::atLeast(1));
    return d;
  }();
  return def;
}

const StringMap kPartition{{"counter", "0"}};

class CounterTask final : public SourceTask {
 public:
  Status start(const StringMap& config, SourceTaskContext& context) override {
    auto parsed = counterConfigDef().parse(config);
    if (!parsed.isOk()) return parsed.status();
    topic_ = parsed->getString("topic");
    batch_ = static_cast<std::size_t>(parsed->getLong("batch.size"));
    next_ = 0;
    if (auto offset = context.committedOffset(kPartition)) {
      auto it = offset->find("n");
      if (it != offset->end()) next_ = std::stoll(it->second) + 1;
    }
    return Status::ok();
  }
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                           std::chrono::milliseconds) override {
    std::size_t n = std::min(maxRecords, batch_);
    for (std::size_t i = 0; i < n; ++i, ++next_) {
      Record r;
      r.topic = topic_;
      r.value = Bytes("c-" + std::to_string(next_));
      r.position = Position{kPartition, {{"n", std::to_string(next_)}}};
      out.push_back(std::move(r));
    }
    return n;
  }
  void stop() override {}

 private:
  std::string topic_;
  std::size_t batch_ = 10;
  long long next_ = 0;
};

class CounterSource final : public SourceConnector {
 public:
  std::string version() const override { return "1.0.0"; }
  const ConfigDef& configDef() const override { return counterConfigDef(); }
  Status start(const StringMap& config, ConnectorContext&) override {
    auto parsed = counterConfigDef().parse(config);
    if (!parsed.isOk()) return parsed.status();
    config_ = config;
    return Status::ok();
  }
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override {
    if (maxTasks < 1) return std::vector<StringMap>{};
    return std::vector<StringMap>{config_};  // one counter, one task
  }
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override { return std::make_unique<CounterTask>(); }

 private:
  StringMap config_;
};

class Upper final : public Transform {
 public:
  const ConfigDef& configDef() const override {
    static const ConfigDef def;
    return def;
  }
  Status configure(const StringMap&) override { return Status::ok(); }
  Result<bool> apply(Record& record) override {
    if (record.value.isNull()) return true;
    std::string v = record.value.str();
    for (char& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    record.value = Bytes(std::move(v));
    return true;
  }
};

const char* const kCounterAliases[] = {"TestCounter", nullptr};

const PluginEntry kEntries[] = {
    {"TestCounterSource", kCounterAliases, PluginKind::kSourceConnector, "1.0.0",
     "Counts: emits c-0, c-1, ... (test plugin)", &pluginCreate<CounterSource, SourceConnector>,
     &pluginDestroy<SourceConnector>},
    {"TestUpper", nullptr, PluginKind::kTransform, "1.0.0", "Uppercases values (test plugin)",
     &pluginCreate<Upper, Transform>, &pluginDestroy<Transform>},
};

}  // namespace

FERRY_PLUGIN("ferry-test-plugin", "1.0.0", kEntries)
