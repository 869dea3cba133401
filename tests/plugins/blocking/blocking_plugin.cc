// A shared-library test plugin whose tasks block where their config says (see README.md).
//
//  TestBlockingSource  one task; one record per poll ("<n>", offset {"n": "<n>"}).
//  TestBlockingSink    drops what it is given.
//  block.in (start, poll, commit, put, flush, stop), block.ms (-1: for ever), block.marker.
//  fail.in (start, poll, put): the call fails instead, once the task has run fail.after.ms;
//  fail.retriable (Unavailable, else Internal); events.file (start/fail lines with a steady time).
//  outage.file (source): while this file exists, poll fails (Unavailable), as a source whose peer
//  is down; with reports.connection the task also reports its connection (reconnecting with the
//  reason; connected again from a thread of its own within 20 ms of the file going away, as a
//  client that reconnects by itself).
//
// A block "for ever" waits on a condition variable nothing notifies, so it ignores stop(): the
// task behaves as a connector stuck in a call that never returns (an open() of a FIFO, a read
// without timeout). Threading: one task thread per instance, as the SDK says.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <sys/stat.h>
#include <thread>

#include "ferry/connector.h"
#include "ferry/plugin.h"

namespace {

using namespace ferry;

void defineBlockKeys(ConfigDef& d) {
  d.define("block.in", ConfigType::kList, "", Importance::kHigh,
           "Where the task blocks: start, poll, commit, put, flush, stop (comma-separated).");
  d.define("block.ms", ConfigType::kLong, "-1", Importance::kHigh, "How long a block lasts; -1: for ever.");
  d.define("block.marker", ConfigType::kString, "", Importance::kLow,
           "A file the task appends '<stage>\\n' to when it starts blocking.");
  d.define("fail.in", ConfigType::kList, "", Importance::kHigh,
           "Where the task fails instead of working: start, poll, put (comma-separated).");
  d.define("fail.after.ms", ConfigType::kLong, "0", Importance::kLow,
           "The failures begin once the task has run this long (from its start).");
  d.define("fail.retriable", ConfigType::kBool, "true", Importance::kLow,
           "true: the failure is retriable (Unavailable); false: it is not (Internal).");
  d.define("events.file", ConfigType::kString, "", Importance::kLow,
           "A file the task appends 'start <ms>' and 'fail <ms>' to (steady clock, ms).");
}

const ConfigDef& sourceDef() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("topic", ConfigType::kString, std::nullopt, Importance::kHigh, "Topic of the records.");
    d.define("poll.wait.ms", ConfigType::kLong, "50", Importance::kLow, "How long a poll waits before its record.");
    d.define("outage.file", ConfigType::kString, "", Importance::kLow,
             "While this file exists, poll fails (Unavailable): the peer is down.");
    d.define("reports.connection", ConfigType::kBool, "false", Importance::kLow,
             "Report the connection (SourceTaskContext::reportConnection) as outage.file says.");
    defineBlockKeys(d);
    return d;
  }();
  return def;
}

const ConfigDef& sinkDef() {
  static const ConfigDef def = [] {
    ConfigDef d;
    defineBlockKeys(d);
    return d;
  }();
  return def;
}

long long steadyMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// Where and how long to block, and the marker file; where to fail (fail.*), and the events file.
class Blocker {
 public:
  Status configure(const ParsedConfig& c) {
    for (const auto& s : c.getList("block.in")) stages_.insert(s);
    ms_ = c.getLong("block.ms");
    marker_ = c.getString("block.marker");
    for (const auto& s : c.getList("fail.in")) failIn_.insert(s);
    failAfterMs_ = c.getLong("fail.after.ms");
    retriable_ = c.getBool("fail.retriable");
    events_ = c.getString("events.file");
    startedMs_ = steadyMs();
    event("start");
    return Status::ok();
  }
  // The failure `stage` must return now, or OK.
  Status failure(const char* stage) {
    if (!failIn_.count(stage) || steadyMs() - startedMs_ < failAfterMs_) return Status::ok();
    event("fail");
    const std::string why = std::string("test plugin: ") + stage + " fails (fail.in)";
    return retriable_ ? Status::unavailable(why) : Status::internal(why);
  }
  void at(const char* stage) {
    if (!stages_.count(stage)) return;
    if (!marker_.empty()) {
      if (std::FILE* f = std::fopen(marker_.c_str(), "a")) {
        std::fprintf(f, "%s\n", stage);
        std::fclose(f);
      }
    }
    static std::mutex mu;
    static std::condition_variable never;  // nothing notifies it
    std::unique_lock lock(mu);
    if (ms_ < 0) {
      while (true) never.wait(lock);
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms_);
    while (never.wait_until(lock, until) != std::cv_status::timeout) {
    }
  }

 private:
  void event(const char* what) const {
    if (events_.empty()) return;
    if (std::FILE* f = std::fopen(events_.c_str(), "a")) {
      std::fprintf(f, "%s %lld\n", what, steadyMs());
      std::fclose(f);
    }
  }

  std::set<std::string> stages_;
  long long ms_ = -1;
  std::string marker_;
  std::set<std::string> failIn_;
  long long failAfterMs_ = 0;
  bool retriable_ = true;
  std::string events_;
  long long startedMs_ = 0;
};

const StringMap kPartition{{"blocking", "0"}};

class BlockingSourceTask final : public SourceTask {
 public:
  Status start(const StringMap& config, SourceTaskContext& context) override {
    auto parsed = sourceDef().parse(config);
    if (!parsed.isOk()) return parsed.status();
    topic_ = parsed->getString("topic");
    wait_ = std::chrono::milliseconds(parsed->getLong("poll.wait.ms"));
    FERRY_RETURN_IF_ERROR(blocker_.configure(*parsed));
    if (auto offset = context.committedOffset(kPartition)) {
      auto it = offset->find("n");
      if (it != offset->end()) next_ = std::stoll(it->second) + 1;
    }
    outage_ = parsed->getString("outage.file");
    if (!outage_.empty() && parsed->getBool("reports.connection")) {
      context_ = &context;
      watcher_ = std::thread([this] { watch(); });
    }
    blocker_.at("start");
    return blocker_.failure("start");
  }
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                           std::chrono::milliseconds maxWait) override {
    blocker_.at("poll");
    if (Status f = blocker_.failure("poll"); !f.isOk()) return f;
    if (down()) return Status::unavailable("test plugin: peer down (outage.file exists)");
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, std::min(wait_, maxWait), [&] { return stopped_; }) || maxRecords == 0) return std::size_t{0};
    Record r;
    r.topic = topic_;
    r.value = Bytes(std::to_string(next_));
    r.position = Position{kPartition, {{"n", std::to_string(next_)}}};
    ++next_;
    out.push_back(std::move(r));
    return std::size_t{1};
  }
  Status commit() override {
    blocker_.at("commit");
    return Status::ok();
  }
  void stop() override {
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    if (watcher_.joinable()) watcher_.join();
    blocker_.at("stop");
  }
  ~BlockingSourceTask() override {
    if (watcher_.joinable()) {
      {
        std::lock_guard lock(mu_);
        stopped_ = true;
      }
      cv_.notify_all();
      watcher_.join();
    }
  }

 private:
  bool down() const {
    struct stat st;
    return !outage_.empty() && ::stat(outage_.c_str(), &st) == 0;
  }
  // The connection as outage.file says, reported when it changes (every 20 ms).
  void watch() {
    int last = -1;
    std::unique_lock lock(mu_);
    while (!stopped_) {
      const int now = down() ? 1 : 0;
      if (now != last) {
        last = now;
        lock.unlock();
        context_->reportConnection(now ? ConnectionHealth{ConnectionHealth::State::kReconnecting,
                                                          "test plugin: peer down (outage.file exists)"}
                                       : ConnectionHealth{});
        lock.lock();
      }
      cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return stopped_; });
    }
  }

  Blocker blocker_;
  std::string outage_;
  SourceTaskContext* context_ = nullptr;
  std::thread watcher_;
  std::string topic_;
  std::chrono::milliseconds wait_{50};
  long long next_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

class BlockingSinkTask final : public SinkTask {
 public:
  Status start(const StringMap& config, SinkTaskContext&) override {
    auto parsed = sinkDef().parse(config);
    if (!parsed.isOk()) return parsed.status();
    FERRY_RETURN_IF_ERROR(blocker_.configure(*parsed));
    blocker_.at("start");
    return blocker_.failure("start");
  }
  Status put(std::vector<Record>& records) override {
    if (!records.empty()) blocker_.at("put");
    if (!records.empty()) return blocker_.failure("put");
    return Status::ok();
  }
  Status flush() override {
    blocker_.at("flush");
    return Status::ok();
  }
  void stop() override { blocker_.at("stop"); }

 private:
  Blocker blocker_;
};

// What both connectors do: check the config, hand it to their one task.
struct OneTask {
  const ConfigDef& def;
  StringMap config;
  Status start(const StringMap& c) {
    auto parsed = def.parse(c);
    if (!parsed.isOk()) return parsed.status();
    config = c;
    return Status::ok();
  }
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) const {
    if (maxTasks < 1) return std::vector<StringMap>{};
    return std::vector<StringMap>{config};
  }
};

class BlockingSource final : public SourceConnector {
 public:
  std::string version() const override { return "1.0.0"; }
  const ConfigDef& configDef() const override { return sourceDef(); }
  Status start(const StringMap& c, ConnectorContext&) override { return one_.start(c); }
  Result<std::vector<StringMap>> taskConfigs(int n) override { return one_.taskConfigs(n); }
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override { return std::make_unique<BlockingSourceTask>(); }

 private:
  OneTask one_{sourceDef(), {}};
};

class BlockingSink final : public SinkConnector {
 public:
  std::string version() const override { return "1.0.0"; }
  const ConfigDef& configDef() const override { return sinkDef(); }
  Status start(const StringMap& c, ConnectorContext&) override { return one_.start(c); }
  Result<std::vector<StringMap>> taskConfigs(int n) override { return one_.taskConfigs(n); }
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override { return std::make_unique<BlockingSinkTask>(); }

 private:
  OneTask one_{sinkDef(), {}};
};

const PluginEntry kEntries[] = {
    {"TestBlockingSource", nullptr, PluginKind::kSourceConnector, "1.0.0",
     "Emits a counter; blocks where block.in says (test plugin)", &pluginCreate<BlockingSource, SourceConnector>,
     &pluginDestroy<SourceConnector>},
    {"TestBlockingSink", nullptr, PluginKind::kSinkConnector, "1.0.0",
     "Drops records; blocks where block.in says (test plugin)", &pluginCreate<BlockingSink, SinkConnector>,
     &pluginDestroy<SinkConnector>},
};

}  // namespace

FERRY_PLUGIN("ferry-test-plugin-blocking", "1.0.0", kEntries)
