// Task executors with in-test plugins: positions are committed only when every record before
// them is safe (source), only after the sink flushed (direct), and the source -> backbone -> sink
// path delivers everything. No sleeps: tests wait on condition variables fed by the plugins.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "ferry/connector.h"
#include "ferry/plugin.h"
#include "ferry/push_source.h"
#include "core/clock.h"
#include "runtime/executor.h"
#include "runtime/tasks.h"
#include "store/store.h"

namespace ferry::runtime {
namespace {

using namespace std::chrono_literals;

// ----- in-test plugins -------------------------------------------------------------------------

struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> put;      // values put
  std::vector<std::string> schemas;  // the value schema of each (Schema::describe(), "" = none)
  std::vector<Headers> headers;      // the headers of each
  std::size_t flushedCount = 0;      // values put before the last flush
  int flushes = 0;
  void reset() {
    std::lock_guard l(mu);
    put.clear();
    schemas.clear();
    headers.clear();
    flushedCount = 0;
    flushes = 0;
  }
  template <typename Pred>
  bool waitFor(Pred p) {
    std::unique_lock l(mu);
    return cv.wait_for(l, 20s, [&] { return p(); });
  }
};
Collector& collector() {
  static Collector c;
  return c;
}

// Where commitRecord said the backbone put each record: (queue, offset), in commitRecord order.
std::mutex placedMu;
std::vector<std::pair<std::int32_t, std::int64_t>> placed;

class SeqSourceTask : public SourceTask {
 public:
  void commitRecord(const Record& r) override {
    std::lock_guard l(placedMu);
    placed.emplace_back(r.queue.value_or(-1), r.offset);
  }
  Status start(const StringMap& config, SourceTaskContext& ctx) override {
    count_ = std::stoi(config.at("count"));
    if (auto a = config.find("age.ms"); a != config.end()) ageMs_ = std::stoi(a->second);
    if (auto c = config.find("commit.at"); c != config.end()) {  // record indexes, comma-separated
      std::stringstream list(c->second);
      for (std::string at; std::getline(list, at, ',');) commitAt_.insert(std::stoi(at));
    }
    ctx_ = &ctx;
    if (config.count("typed") != 0) {  // records with a value schema: struct{n:int64}, named
      schema_ = SchemaBuilder::structure()
                    .name("seq.Row")
                    .field("n", SchemaBuilder::int64().build().value())
                    .build()
                    .value();
    }
    if (auto off = ctx.committedOffset({{"p", "0"}})) next_ = std::stoi(off->at("n"));
    return Status::ok();
  }
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t max, std::chrono::milliseconds wait) override {
    if (next_ >= count_) {
      std::unique_lock l(mu_);
      cv_.wait_for(l, wait, [&] { return stopped_; });
      return std::size_t{0};
    }
    std::size_t n = 0;
    while (next_ < count_ && n < max) {
      Record r;
      r.topic = "seq";
      r.value = Bytes("v" + std::to_string(next_));
      if (schema_) {
        r.value = Bytes("{\"n\":" + std::to_string(next_) + "}");
        r.valueSchema = schema_;
      }
      r.position = Position{{{"p", "0"}}, {{"n", std::to_string(next_ + 1)}}};
      // "Received" age.ms ago (a source that read the record from its socket earlier); 0: not
      // stamped, the runtime stamps it.
      if (ageMs_ > 0) r.receivedNs = core::monotonicNs() - std::int64_t{ageMs_} * 1000000;
      out.push_back(std::move(r));
      if (commitAt_.count(next_) != 0) ctx_->requestCommit();  // as a source does whose outside window fills
      ++next_;
      ++n;
    }
    return n;
  }
  void stop() override {
    std::lock_guard l(mu_);
    stopped_ = true;
    cv_.notify_all();
  }

 private:
  int count_ = 0;
  int ageMs_ = 0;
  SchemaPtr schema_;
  std::set<int> commitAt_;
  SourceTaskContext* ctx_ = nullptr;
  int next_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

class SeqSource : public SourceConnector {
 public:
  std::string version() const override { return "1"; }
  const ConfigDef& configDef() const override {
    static const ConfigDef d = ConfigDef().define("count", ConfigType::kInt, "10", Importance::kHigh, "records");
    return d;
  }
  Status start(const StringMap&, ConnectorContext&) override { return Status::ok(); }
  Result<std::vector<StringMap>> taskConfigs(int) override { return std::vector<StringMap>{{}}; }
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override { return std::make_unique<SeqSourceTask>(); }
};

class CollectSinkTask : public SinkTask {
 public:
  Status start(const StringMap&, SinkTaskContext&) override { return Status::ok(); }
  Status put(std::vector<Record>& records) override {
    auto& c = collector();
    std::lock_guard l(c.mu);
    for (auto& r : records) {
      c.put.push_back(r.value.str());
      c.schemas.push_back(r.valueSchema ? r.valueSchema->describe() : std::string());
      c.headers.push_back(r.headers);
    }
    c.cv.notify_all();
    return Status::ok();
  }
  Status flush() override {
    auto& c = collector();
    std::lock_guard l(c.mu);
    c.flushedCount = c.put.size();
    ++c.flushes;
    c.cv.notify_all();
    return Status::ok();
  }
  void stop() override {}
};

class CollectSink : public SinkConnector {
 public:
  std::string version() const override { return "1"; }
  const ConfigDef& configDef() const override {
    static const ConfigDef d;
    return d;
  }
  Status start(const StringMap&, ConnectorContext&) override { return Status::ok(); }
  Result<std::vector<StringMap>> taskConfigs(int) override { return std::vector<StringMap>{{}}; }
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override { return std::make_unique<CollectSinkTask>(); }
};

// A push-style source: start() offers its records into the hand-off, as a client library's
// callback would. Each record's outside-system ack checks that the sink had flushed by then.
struct PushLog {
  std::atomic<int> acked{0};
  std::atomic<int> ackedBeforeFlush{0};
};
PushLog& pushLog() {
  static PushLog l;
  return l;
}

class PushTask : public PushSourceTask {
 public:
  Status start(const StringMap& config, SourceTaskContext&) override {
    const int n = std::stoi(config.at("count"));
    for (int i = 0; i < n; ++i) {
      Record r;
      r.topic = "push";
      r.value = Bytes("p" + std::to_string(i));
      auto onSafe = [] {
        std::lock_guard l(collector().mu);
        if (collector().flushedCount == 0) pushLog().ackedBeforeFlush++;
        pushLog().acked++;
      };
      FERRY_RETURN_IF_ERROR(handoff().offer(std::move(r), onSafe, nullptr, 0ms));
    }
    return Status::ok();
  }

 protected:
  void stopPush() override {}
};

class PushSource : public SeqSource {
 public:
  std::unique_ptr<SourceTask> createTask() override { return std::make_unique<PushTask>(); }
};

// A notifying source (PollMode::kNotify): poll() never waits; records come from the test thread,
// which calls the context's wakeup() after each. Its idle delay is long (10 s), so a record that
// arrives promptly at the sink proves the wake-up, not a periodic poll, delivered it.
struct Feed {
  std::mutex mu;
  std::deque<std::string> items;
  SourceTaskContext* ctx = nullptr;
  int polls = 0;
  void push(std::string v) {
    SourceTaskContext* c;
    {
      std::lock_guard l(mu);
      items.push_back(std::move(v));
      c = ctx;
    }
    if (c != nullptr) c->wakeup();
  }
};
Feed& feed() {
  static Feed f;
  return f;
}

class NotifyTask : public SourceTask {
 public:
  Status start(const StringMap&, SourceTaskContext& ctx) override {
    std::lock_guard l(feed().mu);
    feed().ctx = &ctx;
    return Status::ok();
  }
  PollMode pollMode() const override { return PollMode::kNotify; }
  std::chrono::milliseconds idlePollDelay() const override { return 10s; }
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t max, std::chrono::milliseconds wait) override {
    EXPECT_EQ(wait.count(), 0) << "a notifying task is polled without waiting";
    std::lock_guard l(feed().mu);
    ++feed().polls;
    std::size_t n = 0;
    while (!feed().items.empty() && n < max) {
      Record r;
      r.topic = "notify";
      r.value = Bytes(feed().items.front());
      r.position = Position{{{"p", "0"}}, {{"n", std::to_string(++taken_)}}};
      feed().items.pop_front();
      out.push_back(std::move(r));
      ++n;
    }
    return n;
  }
  void stop() override {
    std::lock_guard l(feed().mu);
    feed().ctx = nullptr;
  }

 private:
  int taken_ = 0;
};

class NotifySource : public SeqSource {
 public:
  std::unique_ptr<SourceTask> createTask() override { return std::make_unique<NotifyTask>(); }
};

// Generates `count` records without ever waiting (kNotify, idle delay 1 ms): for many tasks at once.
class QuickTask : public SeqSourceTask {
 public:
  PollMode pollMode() const override { return PollMode::kNotify; }
  std::chrono::milliseconds idlePollDelay() const override { return 1ms; }
};

class QuickSource : public SeqSource {
 public:
  std::unique_ptr<SourceTask> createTask() override { return std::make_unique<QuickTask>(); }
};

// A sink whose put() always fails with a retriable error (a target that went away): counts the
// attempts.
struct PutFailures {
  std::mutex mu;
  std::condition_variable cv;
  int puts = 0;
};
PutFailures& putFailures() {
  static PutFailures p;
  return p;
}

class DownSinkTask : public CollectSinkTask {
 public:
  Status put(std::vector<Record>&) override {
    std::lock_guard l(putFailures().mu);
    ++putFailures().puts;
    putFailures().cv.notify_all();
    return Status::unavailable("the target is down");
  }
};

class DownSink : public CollectSink {
 public:
  std::unique_ptr<SinkTask> createTask() override { return std::make_unique<DownSinkTask>(); }
};

// A sink that flushes asynchronously: flushAsync() records how many values had been put and keeps
// the answer until the test gives it (answerFlush).
struct AsyncFlushes {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::size_t> putBeforeFlush;  // values put when each flushAsync was called
  std::function<void(Status)> pending;      // the unanswered flush
  int syncFlushes = 0;
  void reset() {
    std::lock_guard l(mu);
    putBeforeFlush.clear();
    pending = nullptr;
    syncFlushes = 0;
  }
  // Waits (up to 20 s) for an unanswered flush and takes its answer callback (null: none came).
  std::function<void(Status)> takePending() {
    std::unique_lock l(mu);
    if (!cv.wait_for(l, 20s, [&] { return static_cast<bool>(pending); })) return nullptr;
    return std::exchange(pending, nullptr);
  }
};
AsyncFlushes& asyncFlushes() {
  static AsyncFlushes a;
  return a;
}

class AsyncCollectSinkTask : public CollectSinkTask {
 public:
  Status flush() override {
    {
      std::lock_guard l(asyncFlushes().mu);
      ++asyncFlushes().syncFlushes;
    }
    return CollectSinkTask::flush();
  }
  bool flushAsync(std::function<void(Status)> done) override {
    std::size_t put = 0;
    {
      std::lock_guard l(collector().mu);
      put = collector().put.size();
    }
    auto& a = asyncFlushes();
    std::lock_guard l(a.mu);
    EXPECT_FALSE(a.pending) << "a second flushAsync before the first answered";
    a.putBeforeFlush.push_back(put);
    a.pending = std::move(done);
    a.cv.notify_all();
    return true;
  }
};

class AsyncCollectSink : public CollectSink {
 public:
  std::unique_ptr<SinkTask> createTask() override { return std::make_unique<AsyncCollectSinkTask>(); }
};

// A sink whose readyForPut() is a gate: it closes itself once `closeAt` values were put (as a
// sink's window fills) and the test opens it and wakes the task (as the sink's peer answering).
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = true;
  std::size_t closeAt = SIZE_MAX;
  int refusals = 0;  // readyForPut() calls that said no
  SinkTaskContext* ctx = nullptr;
  void reset(std::size_t at) {
    std::lock_guard l(mu);
    open = true;
    closeAt = at;
    refusals = 0;
    ctx = nullptr;
  }
};
Gate& gate() {
  static Gate g;
  return g;
}

class GatedSinkTask : public CollectSinkTask {
 public:
  Status start(const StringMap& c, SinkTaskContext& ctx) override {
    std::lock_guard l(gate().mu);
    gate().ctx = &ctx;
    return CollectSinkTask::start(c, ctx);
  }
  bool readyForPut() override {
    auto& g = gate();
    std::lock_guard l(g.mu);
    if (!g.open) {
      ++g.refusals;
      g.cv.notify_all();
    }
    return g.open;
  }
  Status put(std::vector<Record>& records) override {
    Status s = CollectSinkTask::put(records);
    std::size_t n = 0;
    {
      std::lock_guard l(collector().mu);
      n = collector().put.size();
    }
    std::lock_guard l(gate().mu);
    if (n >= gate().closeAt) gate().open = false;
    return s;
  }
};

class GatedSink : public CollectSink {
 public:
  std::unique_ptr<SinkTask> createTask() override { return std::make_unique<GatedSinkTask>(); }
};

// A sink whose flush() fails retriably `flakyFlushes` times (its peer away for a moment), then
// flushes as CollectSink does.
std::atomic<int> flakyFlushes{0};
class FlakyFlushSinkTask : public CollectSinkTask {
 public:
  Status flush() override {
    if (flakyFlushes.fetch_sub(1) > 0) return Status::unavailable("the peer is away for a moment");
    return CollectSinkTask::flush();
  }
};
class FlakyFlushSink : public CollectSink {
 public:
  std::unique_ptr<SinkTask> createTask() override { return std::make_unique<FlakyFlushSinkTask>(); }
};

const PluginEntry kEntries[] = {
    {"GatedSink", nullptr, PluginKind::kSinkConnector, "1", "test", &pluginCreate<GatedSink, SinkConnector>,
     &pluginDestroy<SinkConnector>},
    {"AsyncCollectSink", nullptr, PluginKind::kSinkConnector, "1", "test",
     &pluginCreate<AsyncCollectSink, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"FlakyFlushSink", nullptr, PluginKind::kSinkConnector, "1", "test",
     &pluginCreate<FlakyFlushSink, SinkConnector>, &pluginDestroy<SinkConnector>},
    {"DownSink", nullptr, PluginKind::kSinkConnector, "1", "test", &pluginCreate<DownSink, SinkConnector>,
     &pluginDestroy<SinkConnector>},
    {"NotifySource", nullptr, PluginKind::kSourceConnector, "1", "test",
     &pluginCreate<NotifySource, SourceConnector>, &pluginDestroy<SourceConnector>},
    {"QuickSource", nullptr, PluginKind::kSourceConnector, "1", "test", &pluginCreate<QuickSource, SourceConnector>,
     &pluginDestroy<SourceConnector>},
    {"PushSource", nullptr, PluginKind::kSourceConnector, "1", "test", &pluginCreate<PushSource, SourceConnector>,
     &pluginDestroy<SourceConnector>},
    {"SeqSource", nullptr, PluginKind::kSourceConnector, "1", "test", &pluginCreate<SeqSource, SourceConnector>,
     &pluginDestroy<SourceConnector>},
    {"CollectSink", nullptr, PluginKind::kSinkConnector, "1", "test", &pluginCreate<CollectSink, SinkConnector>,
     &pluginDestroy<SinkConnector>},
};
const PluginDescriptor kDescriptor = makePluginDescriptor("test", "1", kEntries);

// ----- a backbone whose producer acknowledges only when the test says so -----------------------

class HeldProducer : public backbone::Producer {
 public:
  Status send(backbone::Message m, backbone::SendCallback cb) override {
    std::lock_guard l(mu);
    sent.push_back(std::move(m));
    held.push_back(std::move(cb));
    cv.notify_all();
    return Status::ok();
  }
  Status flush(std::chrono::milliseconds) override {
    std::lock_guard l(mu);
    return acked == held.size() ? Status::ok() : Status::timeout("held");
  }
  void ack(std::size_t i) {
    backbone::SendCallback cb;
    {
      std::lock_guard l(mu);
      cb = held.at(i);
      ++acked;
    }
    cb(Status::ok(), 0, static_cast<std::int64_t>(i));
  }
  // Answers send `i` with `error` (as a broker's refusal reaches a producer's callback).
  void fail(std::size_t i, const Status& error) {
    backbone::SendCallback cb;
    {
      std::lock_guard l(mu);
      cb = held.at(i);
      ++acked;
    }
    cb(error, 0, -1);
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<backbone::SendCallback> held;
  std::vector<backbone::Message> sent;  // what send() was given, in order
  std::size_t acked = 0;
};

class NoAdmin : public backbone::Admin {
 public:
  Status ensureTopic(const std::string&, std::int32_t) override { return Status::ok(); }
  Result<std::vector<backbone::TopicInfo>> listTopics() override { return Status::notFound("x"); }
  Result<backbone::TopicInfo> describeTopic(const std::string&) override { return Status::notFound("x"); }
  Result<OffsetMap> endOffsets(const std::string&) override { return Status::notFound("x"); }
  Result<OffsetMap> startOffsets(const std::string&) override { return Status::notFound("x"); }
  Result<OffsetMap> committedOffsets(const std::string&) override { return Status::notFound("x"); }
  Status setCommittedOffsets(const std::string&, const OffsetMap&) override { return Status::notFound("x"); }
  Status deleteGroup(const std::string&) override { return Status::notFound("x"); }
};

// A consumer of three messages on topic "t" queue 0 whose first `failures` commits fail as a busy
// broker's do (retriable); what it committed is kept.
struct ListConsumerState {
  std::mutex mu;
  std::condition_variable cv;
  int failures = 0;
  int failedCommits = 0;
  OffsetMap committed;
  std::vector<std::string> values;  // the messages' values; empty: "m0", "m1", "m2"
};
class ListConsumer : public backbone::Consumer {
 public:
  explicit ListConsumer(std::shared_ptr<ListConsumerState> st) : st_(std::move(st)) {}
  Status subscribe(const std::vector<std::string>&, backbone::RebalanceListener* listener) override {
    listener_ = listener;
    return Status::ok();
  }
  Result<std::size_t> poll(std::vector<backbone::Message>& out, std::size_t max, std::chrono::milliseconds wait) override {
    if (!assigned_ && listener_ != nullptr) {
      assigned_ = true;
      listener_->onAssigned({TopicQueue{"t", 0}});
    }
    std::size_t n = 0;
    const auto count = st_->values.empty() ? 3 : static_cast<std::int64_t>(st_->values.size());
    while (next_ < count && n < max) {
      backbone::Message m;
      m.topic = "t";
      m.queue = 0;
      m.offset = next_;
      m.value = st_->values.empty() ? Bytes("m" + std::to_string(next_)) : Bytes(st_->values[next_]);
      out.push_back(std::move(m));
      ++next_;
      ++n;
    }
    if (n == 0) {
      std::unique_lock l(st_->mu);
      st_->cv.wait_for(l, std::min(wait, std::chrono::milliseconds(50)));
    }
    return n;
  }
  Status commit(const OffsetMap& offsets) override {
    std::lock_guard l(st_->mu);
    if (st_->failures > 0) {
      --st_->failures;
      ++st_->failedCommits;
      return Status::unavailable("cannot connect to the broker: connection refused");
    }
    for (const auto& [q, o] : offsets) st_->committed[q] = o;
    st_->cv.notify_all();
    return Status::ok();
  }
  Status seek(const TopicQueue&, std::int64_t offset) override {
    next_ = offset;
    return Status::ok();
  }
  std::vector<TopicQueue> assignment() const override { return {TopicQueue{"t", 0}}; }
  void close() override {}

 private:
  std::shared_ptr<ListConsumerState> st_;
  backbone::RebalanceListener* listener_ = nullptr;
  bool assigned_ = false;
  std::int64_t next_ = 0;
};

class HeldBackbone : public backbone::Backbone {
 public:
  std::string kind() const override { return "held"; }
  Result<std::unique_ptr<backbone::Producer>> createProducer(const StringMap&) override {
    auto p = std::make_unique<ForwardingProducer>(producer);
    return std::unique_ptr<backbone::Producer>(std::move(p));
  }
  Result<std::unique_ptr<backbone::Consumer>> createConsumer(const std::string&, const std::string&,
                                                             const StringMap&) override {
    if (consumer) return std::unique_ptr<backbone::Consumer>(std::make_unique<ListConsumer>(consumer));
    return Status::unavailable("no consumers here");
  }
  std::shared_ptr<ListConsumerState> consumer;  // set: createConsumer() makes a ListConsumer
  backbone::Admin& admin() override { return admin_; }
  void close() override {}
  HeldProducer producer;

 private:
  struct ForwardingProducer : backbone::Producer {
    explicit ForwardingProducer(HeldProducer& p) : p_(p) {}
    Status send(backbone::Message m, backbone::SendCallback cb) override { return p_.send(std::move(m), std::move(cb)); }
    Status flush(std::chrono::milliseconds t) override { return p_.flush(t); }
    HeldProducer& p_;
  };
  NoAdmin admin_;
};

// A position store whose first `failures` writes fail as a busy broker's do (retriable).
class FlakyPositions : public store::PositionStore {
 public:
  FlakyPositions(std::unique_ptr<store::PositionStore> inner, int failures)
      : inner_(std::move(inner)), failures_(failures) {}
  Result<std::optional<StringMap>> get(const std::string& c, const StringMap& p) override { return inner_->get(c, p); }
  Result<std::vector<Position>> getAll(const std::string& c) override { return inner_->getAll(c); }
  Status put(const std::string& c, const std::vector<Position>& positions) override {
    if (failures_.fetch_sub(1) > 0) return Status::unavailable("broker busy, start flow control for a while");
    Status st = inner_->put(c, positions);
    std::lock_guard l(mu_);
    cv_.notify_all();
    return st;
  }
  Status removeConnector(const std::string& c) override { return inner_->removeConnector(c); }
  // Waits (up to 20 s) until connector "c" has offset n="want" for partition p=0.
  bool waitFor(const std::string& want) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, 20s, [&] {
      auto r = inner_->get("c", {{"p", "0"}});
      return r.isOk() && r->has_value() && (*r)->at("n") == want;
    });
  }

 private:
  std::unique_ptr<store::PositionStore> inner_;
  std::atomic<int> failures_;
  std::mutex mu_;
  std::condition_variable cv_;
};

// ----- fixture ---------------------------------------------------------------------------------

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registerBuiltins(registry_).isOk());
    ASSERT_TRUE(registry_.add(&kDescriptor, "test").isOk());
    worker_.offsetFlushIntervalMs = 1;
    worker_.offsetFlushTimeoutMs = 0;
    collector().reset();
  }
  // A source task with `config` run until the backbone holds `n` sends, which are then
  // acknowledged, and stopped; it must not have failed.
  void runSourceUntilSent(StringMap config, std::size_t n) {
    auto runner = TaskRunner::create(env(ConnectorShape::kSource, std::move(config)));
    runner->start();
    {
      std::unique_lock l(backbone_.producer.mu);
      ASSERT_TRUE(backbone_.producer.cv.wait_for(l, 20s, [&] { return backbone_.producer.held.size() == n; }))
          << trace_;
    }
    for (std::size_t i = 0; i < n; ++i) backbone_.producer.ack(i);
    runner->requestStop();
    runner->join();
    EXPECT_FALSE(runner->failed()) << trace_;
  }
  TaskEnv env(ConnectorShape shape, StringMap config) {
    TaskEnv e;
    e.registry = &registry_;
    e.backbone = &backbone_;
    e.positions = positions_.get();
    e.worker = &worker_;
    e.connector = "c";
    e.taskId = 0;
    e.shape = shape;
    e.config = std::move(config);
    e.onState = [this](store::State s, const std::string& trace) {
      std::lock_guard l(stateMu_);
      states_.push_back(s);
      if (!trace.empty()) trace_ = trace;
      stateCv_.notify_all();
    };
    return e;
  }
  // Puts a FlakyPositions (its first `failures` writes fail retriably) in front of the store.
  FlakyPositions* flakyPositions(int failures) {
    auto flaky = std::make_unique<FlakyPositions>(std::move(positions_), failures);
    auto* raw = flaky.get();
    positions_ = std::move(flaky);
    return raw;
  }
  std::optional<StringMap> committed() {
    auto r = positions_->get("c", {{"p", "0"}});
    EXPECT_TRUE(r.isOk());
    return r.isOk() ? *r : std::nullopt;
  }

  PluginRegistry registry_;
  HeldBackbone backbone_;
  std::unique_ptr<store::PositionStore> positions_ = store::makeMemoryPositionStore();
  WorkerConfig worker_;
  std::mutex stateMu_;
  std::condition_variable stateCv_;  // notified on every state change
  std::vector<store::State> states_;
  std::string trace_;
};

// commitRecord carries the queue and offset the backbone's acknowledgement gave (a Java task's
// RecordMetadata, which MirrorMaker writes its offset syncs from).
TEST_F(ExecutorTest, CommitRecordSaysWhereTheBackbonePutTheRecord) {
  {
    std::lock_guard l(placedMu);
    placed.clear();
  }
  runSourceUntilSent({{"connector.class", "SeqSource"}, {"count", "3"}}, 3);
  std::lock_guard l(placedMu);
  // HeldProducer acknowledges send i at queue 0, offset i.
  EXPECT_EQ(placed, (std::vector<std::pair<std::int32_t, std::int64_t>>{{0, 0}, {0, 1}, {0, 2}}));
}

TEST_F(ExecutorTest, SourcePositionWaitsForEveryEarlierRecord) {
  auto runner = TaskRunner::create(env(ConnectorShape::kSource, {{"connector.class", "SeqSource"}, {"count", "3"}}));
  runner->start();
  {
    std::unique_lock l(backbone_.producer.mu);
    ASSERT_TRUE(backbone_.producer.cv.wait_for(l, 20s, [&] { return backbone_.producer.held.size() == 3; }));
  }
  // Records 2 and 3 are safe, record 1 is not: no position may be committed.
  backbone_.producer.ack(1);
  backbone_.producer.ack(2);
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed());
  EXPECT_FALSE(committed().has_value()) << "committed " << committed()->at("n");
  EXPECT_EQ(runner->metrics().recordsIn.load(), 3u);
}

// A position write that fails retriably (a busy broker) does not fail the task: the positions are
// written again at the next commit, as Kafka Connect retries a failed offset commit. (Until
// 2026-12-05 the task failed and was restarted, reading everything since its last commit again.)
TEST_F(ExecutorTest, SourceWritesPositionsAgainAfterARetriableStoreFailure) {
  auto* positions = flakyPositions(2);
  auto runner = TaskRunner::create(env(ConnectorShape::kSource, {{"connector.class", "SeqSource"}, {"count", "3"}}));
  runner->start();
  {
    std::unique_lock l(backbone_.producer.mu);
    ASSERT_TRUE(backbone_.producer.cv.wait_for(l, 20s, [&] { return backbone_.producer.held.size() == 3; }));
  }
  backbone_.producer.ack(0);
  backbone_.producer.ack(1);
  backbone_.producer.ack(2);
  EXPECT_TRUE(positions->waitFor("3")) << trace_;  // commits every 1 ms: the third write succeeds
  auto pos = committed();
  EXPECT_FALSE(runner->finished()) << trace_;
  ASSERT_TRUE(pos.has_value()) << trace_;
  EXPECT_EQ(pos->at("n"), "3");
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
}

// A send the backbone refuses retriably (its callback says so) is sent again, the same message,
// after a back-off; meanwhile no position passes it, although the record after it was
// acknowledged. Then the positions reach the end. (The committer settles entries in place,
// without a lock, and reuses them: this is the path where an entry is settled twice.)
TEST_F(ExecutorTest, SourceResendsARetriablyRefusedSendAndNoPositionPassesIt) {
  auto* positions = flakyPositions(0);  // never fails: its waitFor() is woken by each write
  auto runner = TaskRunner::create(env(ConnectorShape::kSource, {{"connector.class", "SeqSource"}, {"count", "3"}}));
  runner->start();
  auto& producer = backbone_.producer;
  {
    std::unique_lock l(producer.mu);
    ASSERT_TRUE(producer.cv.wait_for(l, 20s, [&] { return producer.held.size() == 3; })) << trace_;
  }
  producer.ack(0);
  producer.fail(1, Status::unavailable("broker busy"));
  producer.ack(2);
  EXPECT_TRUE(positions->waitFor("1")) << trace_;  // record 0's position, committed every 1 ms
  {
    // The resend comes after a back-off of at least 100 ms: many commits ran meanwhile.
    std::unique_lock l(producer.mu);
    ASSERT_TRUE(producer.cv.wait_for(l, 20s, [&] { return producer.held.size() == 4; })) << trace_;
    EXPECT_EQ(producer.sent[3].value, producer.sent[1].value);
    EXPECT_EQ(producer.sent[3].topic, producer.sent[1].topic);
  }
  ASSERT_TRUE(committed().has_value());
  EXPECT_EQ(committed()->at("n"), "1");  // never past the record waiting for its resend
  producer.ack(3);
  EXPECT_TRUE(positions->waitFor("3")) << trace_;
  EXPECT_GE(runner->metrics().retries.load(), 1u);
  EXPECT_EQ(runner->metrics().recordsOut.load(), 3u);
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
}

// The same for a direct task: the sink flushed, the position write failed retriably; it is
// written again at the next commit and the task goes on.
TEST_F(ExecutorTest, DirectWritesPositionsAgainAfterARetriableStoreFailure) {
  auto* positions = flakyPositions(1);
  worker_.offsetFlushIntervalMs = 10;
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "5"},
                                                                 {"sink.connector.class", "CollectSink"}}));
  runner->start();
  EXPECT_TRUE(positions->waitFor("5")) << trace_;
  EXPECT_FALSE(runner->finished()) << trace_;
  auto pos = committed();
  ASSERT_TRUE(pos.has_value()) << trace_;
  EXPECT_EQ(pos->at("n"), "5");
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
}

// At the stop a retriable failure of the position write is not put off: it is the stop's answer.
TEST_F(ExecutorTest, DirectStopReportsAPositionWriteThatFailedRetriably) {
  flakyPositions(1000000);
  worker_.offsetFlushIntervalMs = 10;
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "5"},
                                                                 {"sink.connector.class", "CollectSink"}}));
  runner->start();
  ASSERT_TRUE(collector().waitFor([] { return collector().put.size() == 5; }));
  EXPECT_FALSE(runner->finished()) << trace_;  // the writes failing meanwhile are retried
  runner->requestStop();
  runner->join();
  EXPECT_TRUE(runner->failed());
  EXPECT_NE(trace_.find("broker busy"), std::string::npos) << trace_;
  EXPECT_FALSE(committed().has_value());
}

// A sink task whose group commit fails retriably (the broker gone for a moment) goes on and
// commits at the next interval, as Kafka Connect's sink tasks do; it used to fail.
TEST_F(ExecutorTest, SinkCommitsAgainAfterARetriableCommitFailure) {
  auto st = std::make_shared<ListConsumerState>();
  st->failures = 2;
  backbone_.consumer = st;
  worker_.offsetFlushIntervalMs = 10;
  auto runner = TaskRunner::create(env(ConnectorShape::kSink, {{"connector.class", "CollectSink"}, {"topics", "t"}}));
  runner->start();
  {
    std::unique_lock l(st->mu);
    EXPECT_TRUE(st->cv.wait_for(l, 20s, [&] { return st->committed[TopicQueue{"t", 0}] == 3; })) << trace_;
    EXPECT_EQ(st->failedCommits, 2);
  }
  EXPECT_FALSE(runner->finished()) << trace_;
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  EXPECT_GE(runner->metrics().retries.load(), 2u);
  std::lock_guard l(collector().mu);
  EXPECT_EQ(collector().put, (std::vector<std::string>{"m0", "m1", "m2"}));
}

// A sink task whose flush fails retriably (its outside system away for a moment) goes on: no
// offsets are committed then, and the next interval flushes again and commits them, as Kafka
// Connect's sink tasks do. It used to fail the task, and a sink that answered "nothing safe yet"
// with no offsets had its records counted as committed (JdbcSink's last batch then waited for
// the next record to be written again).
TEST_F(ExecutorTest, SinkFlushesAgainAfterARetriableFlushFailure) {
  flakyFlushes = 3;
  auto st = std::make_shared<ListConsumerState>();
  backbone_.consumer = st;
  worker_.offsetFlushIntervalMs = 10;
  auto runner = TaskRunner::create(env(ConnectorShape::kSink, {{"connector.class", "FlakyFlushSink"}, {"topics", "t"}}));
  runner->start();
  {
    std::unique_lock l(st->mu);
    EXPECT_TRUE(st->cv.wait_for(l, 20s, [&] { return st->committed[TopicQueue{"t", 0}] == 3; })) << trace_;
  }
  EXPECT_LE(flakyFlushes.load(), 0) << "committed before the sink's flush passed";
  EXPECT_FALSE(runner->finished()) << trace_;
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  EXPECT_GE(runner->metrics().retries.load(), 3u);
  std::lock_guard l(collector().mu);
  EXPECT_EQ(collector().flushedCount, 3u);
}

// A sink task whose sink flushes asynchronously is not held up by the flush: the offsets current
// when it started are committed only once it answers, the task polls and puts meanwhile, and
// preCommit's synchronous flush is not called. (Until 2026-12-06 a sink task always flushed
// synchronously: a slow peer held its thread for the whole flush.)
TEST_F(ExecutorTest, SinkCommitsWhatAnAsynchronousFlushCovered) {
  asyncFlushes().reset();
  auto st = std::make_shared<ListConsumerState>();
  backbone_.consumer = st;
  worker_.offsetFlushIntervalMs = 10;
  auto runner = TaskRunner::create(env(ConnectorShape::kSink, {{"connector.class", "AsyncCollectSink"}, {"topics", "t"}}));
  runner->start();
  auto& a = asyncFlushes();
  std::function<void(Status)> first = a.takePending();
  ASSERT_TRUE(first) << trace_;
  std::size_t covered = 0;
  {
    std::lock_guard l(a.mu);
    covered = a.putBeforeFlush.back();
  }
  ASSERT_TRUE(collector().waitFor([] { return collector().put.size() == 3; }));
  {
    std::lock_guard l(st->mu);
    EXPECT_TRUE(st->committed.empty()) << "committed before the flush answered";
  }
  EXPECT_FALSE(runner->finished()) << trace_;
  first(Status::ok());
  {
    std::unique_lock l(st->mu);
    ASSERT_TRUE(st->cv.wait_for(l, 20s, [&] { return st->committed.count(TopicQueue{"t", 0}) != 0; })) << trace_;
    // What the flush covered (the records put when it started), not more.
    EXPECT_EQ((st->committed[TopicQueue{"t", 0}]), static_cast<std::int64_t>(covered));
  }
  // Records put after the first flush started are covered by the next one.
  if (covered < 3) {
    std::function<void(Status)> second = a.takePending();
    ASSERT_TRUE(second) << trace_;
    second(Status::ok());
  }
  {
    std::unique_lock l(st->mu);
    EXPECT_TRUE(st->cv.wait_for(l, 20s, [&] { return st->committed[TopicQueue{"t", 0}] == 3; })) << trace_;
  }
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  std::lock_guard l(a.mu);
  EXPECT_EQ(a.syncFlushes, 0);
}

TEST_F(ExecutorTest, SourceCommitsTheSafePrefix) {
  auto runner = TaskRunner::create(env(ConnectorShape::kSource, {{"connector.class", "SeqSource"}, {"count", "3"}}));
  runner->start();
  {
    std::unique_lock l(backbone_.producer.mu);
    ASSERT_TRUE(backbone_.producer.cv.wait_for(l, 20s, [&] { return backbone_.producer.held.size() == 3; }));
  }
  backbone_.producer.ack(0);
  backbone_.producer.ack(2);  // 3 is safe but 2 is not: resume after record 1
  runner->requestStop();
  runner->join();
  auto pos = committed();
  ASSERT_TRUE(pos.has_value());
  EXPECT_EQ(pos->at("n"), "1");
  EXPECT_EQ(runner->metrics().recordsOut.load(), 1u);  // counted as the safe prefix advances
}

TEST_F(ExecutorTest, DirectCommitsOnlyAfterSinkFlush) {
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "5"},
                                                                 {"sink.connector.class", "CollectSink"}}));
  runner->start();
  ASSERT_TRUE(collector().waitFor([] { return collector().flushes >= 1 && collector().flushedCount == 5; }));
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  auto pos = committed();
  ASSERT_TRUE(pos.has_value());
  EXPECT_EQ(pos->at("n"), "5");
  std::lock_guard l(collector().mu);
  EXPECT_EQ(collector().put, (std::vector<std::string>{"v0", "v1", "v2", "v3", "v4"}));
}

// A record's schema survives every path. Source -> backbone: the value converter (JsonConverter,
// schemas.enable by default) writes it in Kafka Connect's envelope.
TEST_F(ExecutorTest, SourceWritesTheValueSchemaThroughTheConverter) {
  runSourceUntilSent({{"connector.class", "SeqSource"}, {"count", "2"}, {"typed", "1"},
                      {"value.converter", "org.apache.kafka.connect.json.JsonConverter"}},
                     2);
  std::lock_guard l(backbone_.producer.mu);
  ASSERT_EQ(backbone_.producer.sent.size(), 2u);
  EXPECT_EQ(backbone_.producer.sent[1].value.str(),
            R"({"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"n"}],)"
            R"("optional":false,"name":"seq.Row"},"payload":{"n":1}})");
}

// Dead letters keep a record's schema: a typed record the value converter refuses (tolerated) goes
// to the dead-letter topic with its schema in a header, in Kafka Connect's JSON form.
TEST_F(ExecutorTest, DeadLettersCarryTheRecordsSchema) {
  runSourceUntilSent({{"connector.class", "SeqSource"}, {"count", "2"}, {"typed", "1"},
                      {"value.converter", "org.apache.kafka.connect.converters.IntegerConverter"},
                      {"errors.tolerance", "all"}, {"errors.deadletterqueue.topic.name", "dlq"}},
                     2);
  std::lock_guard l(backbone_.producer.mu);
  for (const auto& m : backbone_.producer.sent) {
    EXPECT_EQ(m.topic, "dlq");
    const Header* h = m.headers.last("__ferry.errors.value.schema");
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->value.str(),
              R"({"type":"struct","fields":[{"type":"int64","optional":false,"field":"n"}],"optional":false,"name":"seq.Row"})");
    EXPECT_EQ(m.headers.last("__ferry.errors.key.schema"), nullptr);
  }
}

// Dead-letter sends still unanswered at an interval commit leave the commit for the next one: the
// task keeps running and commits once they are answered. (Until 2026-12-07 the commit's DLQ flush
// timing out - offset.flush.timeout.ms, 0 here - failed the task.)
TEST_F(ExecutorTest, SourceCommitsLaterWhileDeadLetterSendsAreUnanswered) {
  auto runner = TaskRunner::create(
      env(ConnectorShape::kSource, {{"connector.class", "SeqSource"}, {"count", "2"}, {"typed", "1"},
                                    {"value.converter", "org.apache.kafka.connect.converters.IntegerConverter"},
                                    {"errors.tolerance", "all"}, {"errors.deadletterqueue.topic.name", "dlq"}}));
  runner->start();
  {
    std::unique_lock l(backbone_.producer.mu);
    ASSERT_TRUE(backbone_.producer.cv.wait_for(l, 20s, [&] { return backbone_.producer.held.size() == 2; }));
  }
  // Commits come every millisecond and find the dead letters unanswered.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (runner->metrics().retries.load() < 2 && !runner->finished() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  EXPECT_FALSE(runner->finished()) << trace_;
  EXPECT_GE(runner->metrics().retries.load(), 2u);
  EXPECT_FALSE(committed().has_value()) << "committed before the dead letters were answered";
  backbone_.producer.ack(0);
  backbone_.producer.ack(1);
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  auto c = committed();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->at("n"), "2");
}

// Backbone -> sink: the converter reads the schema back onto the record the sink task gets; a
// message whose data does not match its schema is a VALUE_CONVERTER error (tolerated here).
TEST_F(ExecutorTest, SinkGetsTheValueSchemaTheConverterRead) {
  auto st = std::make_shared<ListConsumerState>();
  const std::string schema = R"({"type":"struct","fields":[{"type":"int64","optional":false,"field":"n"}],"optional":false})";
  st->values = {R"({"schema":)" + schema + R"(,"payload":{"n":7}})",
                R"({"schema":)" + schema + R"(,"payload":{"n":"seven"}})",
                R"({"schema":null,"payload":{"n":8}})"};
  backbone_.consumer = st;
  auto runner = TaskRunner::create(env(ConnectorShape::kSink, {{"connector.class", "CollectSink"}, {"topics", "t"},
                                                               {"errors.tolerance", "all"},
                                                               {"value.converter", "JsonConverter"}}));
  runner->start();
  ASSERT_TRUE(collector().waitFor([] { return collector().put.size() == 2; })) << trace_;
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  std::lock_guard l(collector().mu);
  EXPECT_EQ(collector().put, (std::vector<std::string>{R"({"n":7})", R"({"n":8})"}));
  EXPECT_EQ(collector().schemas, (std::vector<std::string>{"struct{n:int64}", ""}));
}

// The value converter sees and sets headers (Converter::fromRecordWithHeaders): a CloudEvents
// converter in binary mode writes the value unchanged and the event's attributes as ce_* headers.
TEST_F(ExecutorTest, SourceValueConverterSetsHeaders) {
  runSourceUntilSent({{"connector.class", "SeqSource"}, {"count", "2"},
                      {"value.converter", "CloudEventsConverter"},
                      {"value.converter.cloudevents.mode", "binary"},
                      {"value.converter.cloudevents.type", "seq.v1"},
                      {"value.converter.cloudevents.datacontenttype", "text/plain"}},
                     2);
  std::lock_guard l(backbone_.producer.mu);
  ASSERT_EQ(backbone_.producer.sent.size(), 2u);
  const backbone::Message& m = backbone_.producer.sent[1];
  EXPECT_EQ(m.value.str(), "v1");
  auto header = [&](const char* k) { const Header* h = m.headers.last(k); return h ? h->value.str() : "<none>"; };
  EXPECT_EQ(header("ce_specversion"), "1.0");
  EXPECT_EQ(header("ce_type"), "seq.v1");
  EXPECT_EQ(header("ce_source"), "/ferry/seq");
  EXPECT_EQ(header("ce_id").size(), 32u);
  EXPECT_EQ(header("content-type"), "text/plain");
}

// Backbone -> sink: the value converter (Converter::toRecordWithHeaders) turns a structured
// CloudEvent into its data and ce_* headers on the record the sink gets; an event without a type
// is a VALUE_CONVERTER error (tolerated here).
TEST_F(ExecutorTest, SinkValueConverterSetsHeaders) {
  auto st = std::make_shared<ListConsumerState>();
  st->values = {R"({"specversion":"1.0","id":"e1","source":"/s","type":"t","subject":"a","data":{"n":1}})",
                R"({"specversion":"1.0","id":"e2","source":"/s","data":{"n":2}})",
                R"({"specversion":"1.0","id":"e3","source":"/s","type":"t","data":{"n":3}})"};
  backbone_.consumer = st;
  auto runner = TaskRunner::create(env(ConnectorShape::kSink, {{"connector.class", "CollectSink"}, {"topics", "t"},
                                                               {"errors.tolerance", "all"},
                                                               {"value.converter", "CloudEventsConverter"}}));
  runner->start();
  ASSERT_TRUE(collector().waitFor([] { return collector().put.size() == 2; })) << trace_;
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  std::lock_guard l(collector().mu);
  EXPECT_EQ(collector().put, (std::vector<std::string>{R"({"n":1})", R"({"n":3})"}));
  ASSERT_EQ(collector().headers.size(), 2u);
  const Headers& h = collector().headers[0];
  ASSERT_NE(h.last("ce_id"), nullptr);
  EXPECT_EQ(h.last("ce_id")->value.str(), "e1");
  EXPECT_EQ(h.last("ce_subject")->value.str(), "a");
  EXPECT_EQ(h.last("ce_specversion")->value.str(), "1.0");
  EXPECT_EQ(collector().headers[1].last("ce_id")->value.str(), "e3");
}

// Direct: no backbone, no converter: the sink gets the source's record with its schema.
TEST_F(ExecutorTest, DirectHandsTheSchemaToTheSink) {
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "2"},
                                                                 {"typed", "1"}, {"sink.connector.class", "CollectSink"}}));
  runner->start();
  ASSERT_TRUE(collector().waitFor([] { return collector().put.size() == 2; }));
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  std::lock_guard l(collector().mu);
  EXPECT_EQ(collector().schemas, (std::vector<std::string>{"struct{n:int64}", "struct{n:int64}"}));
}

// ferry_task_record_latency_seconds: from Record::receivedNs (set by the source, or by the runtime
// at take-in) to the output taking the record.
TEST_F(ExecutorTest, DirectMeasuresLatencyFromWhenTheSourceReceivedEachRecord) {
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "5"},
                                                                 {"age.ms", "30"}, {"sink.connector.class", "CollectSink"}}));
  runner->start();
  ASSERT_TRUE(collector().waitFor([] { return collector().put.size() == 5; }));
  runner->requestStop();
  runner->join();
  const auto h = runner->metrics().latency.snapshot();
  EXPECT_EQ(h.count, 5u);
  // Received 30 ms before the poll: none within 25 ms.
  std::size_t le25ms = 0;
  while (core::LatencyHistogram::kBoundsSeconds[le25ms] < 0.025) ++le25ms;
  EXPECT_EQ(h.cumulative[le25ms], 0u);
  EXPECT_GE(h.sumSeconds, 5 * 0.030);
}

TEST_F(ExecutorTest, SourceMeasuresLatencyFromTakeInWhenTheSourceDidNotStamp) {
  auto runner = TaskRunner::create(env(ConnectorShape::kSource, {{"connector.class", "SeqSource"}, {"count", "3"}}));
  runner->start();
  {
    std::unique_lock l(backbone_.producer.mu);
    ASSERT_TRUE(backbone_.producer.cv.wait_for(l, 20s, [&] { return backbone_.producer.held.size() == 3; }));
  }
  const auto h = runner->metrics().latency.snapshot();
  runner->requestStop();
  runner->join();
  EXPECT_EQ(h.count, 3u);  // one per record the producer took
  EXPECT_EQ(h.cumulative.back(), 3u);
  // Stamped at take-in, not left 0 (which would count the whole steady clock's age).
  EXPECT_LT(h.sumSeconds, 10.0);
}

// SinkTask::flushAsync: a direct task goes on polling and putting while its sink's flush is
// unanswered; the positions the flush covers are committed only once it answers, and only those.
TEST_F(ExecutorTest, DirectKeepsTakingInWhileTheSinkFlushesAsynchronously) {
  asyncFlushes().reset();
  worker_.taskPollBatch = 1;  // one record per poll: the commit asked for at record 10 comes before the 50th
  worker_.offsetFlushIntervalMs = 60000;
  worker_.offsetFlushTimeoutMs = 20000;  // the stop waits for the flush's answer this long
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "50"},
                                                                 {"commit.at", "10"},
                                                                 {"sink.connector.class", "AsyncCollectSink"}}));
  runner->start();
  auto& a = asyncFlushes();
  {
    std::unique_lock l(a.mu);
    ASSERT_TRUE(a.cv.wait_for(l, 20s, [&] { return static_cast<bool>(a.pending); }));
  }
  // The flush is not answered: every record is still put.
  ASSERT_TRUE(collector().waitFor([] { return collector().put.size() == 50; }));
  std::size_t covered = 0;
  std::function<void(Status)> done;
  {
    std::lock_guard l(a.mu);
    EXPECT_EQ(a.putBeforeFlush.size(), 1u) << "a second flush started before the first answered";
    covered = a.putBeforeFlush.front();
    done = std::exchange(a.pending, nullptr);
  }
  EXPECT_LT(covered, 50u);
  EXPECT_FALSE(committed().has_value()) << "committed before the flush answered: " << committed()->at("n");
  done(Status::ok());
  // The stop's flush covers the rest; the first one's records are committed before it starts,
  // and the task waits for its answer.
  runner->requestStop();
  std::function<void(Status)> last;
  {
    std::unique_lock l(a.mu);
    ASSERT_TRUE(a.cv.wait_for(l, 20s, [&] { return static_cast<bool>(a.pending); }));
    EXPECT_EQ(a.putBeforeFlush.back(), 50u);
    last = std::exchange(a.pending, nullptr);
  }
  auto pos = committed();
  ASSERT_TRUE(pos.has_value());
  EXPECT_EQ(pos->at("n"), std::to_string(covered));
  EXPECT_FALSE(runner->finished());
  last(Status::ok());
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  pos = committed();
  ASSERT_TRUE(pos.has_value());
  EXPECT_EQ(pos->at("n"), "50");
  std::lock_guard l(a.mu);
  EXPECT_EQ(a.syncFlushes, 0);
}

// SinkTask::readyForPut: a sink that cannot take a batch without waiting says so instead of
// blocking; the task then takes nothing in (its thread is free for other tasks, no step blocks)
// until the sink wakes it, and then goes on where it stopped, nothing lost or repeated.
TEST_F(ExecutorTest, DirectTakesNothingInWhileTheSinkIsNotReady) {
  gate().reset(5);
  worker_.taskPollBatch = 5;
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "20"},
                                                                 {"sink.connector.class", "GatedSink"}}));
  runner->start();
  auto& g = gate();
  SinkTaskContext* ctx = nullptr;
  {
    std::unique_lock l(g.mu);
    ASSERT_TRUE(g.cv.wait_for(l, 20s, [&] { return g.refusals >= 1; })) << "readyForPut() was not asked";
    ctx = g.ctx;
  }
  {
    std::lock_guard l(collector().mu);
    EXPECT_EQ(collector().put.size(), 5u) << "records were put while the sink said it was not ready";
  }
  ASSERT_NE(ctx, nullptr);
  {
    std::lock_guard l(g.mu);
    g.open = true;
    g.closeAt = SIZE_MAX;
  }
  ctx->wake();
  ASSERT_TRUE(collector().waitFor([] { return collector().put.size() == 20; }));
  {
    std::lock_guard l(g.mu);
    // Asked again only when woken (or at the 1 s safety net), not in a loop.
    EXPECT_LE(g.refusals, 3);
  }
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  std::lock_guard l(collector().mu);
  for (std::size_t i = 0; i < collector().put.size(); ++i) EXPECT_EQ(collector().put[i], "v" + std::to_string(i));
}

// A commit the source asks for while a flush is under way is not lost: it starts as soon as that
// flush answered, not at the next interval. (Until 2026-12-05 the request was dropped.)
TEST_F(ExecutorTest, DirectKeepsACommitAskedForDuringAnAsynchronousFlush) {
  asyncFlushes().reset();
  worker_.taskPollBatch = 1;
  worker_.offsetFlushIntervalMs = 60000;
  worker_.offsetFlushTimeoutMs = 20000;
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "50"},
                                                                 {"commit.at", "10,30"},
                                                                 {"sink.connector.class", "AsyncCollectSink"}}));
  runner->start();
  auto& a = asyncFlushes();
  std::function<void(Status)> first = a.takePending();
  ASSERT_TRUE(first);
  // The second request (record 30) comes while the first flush is unanswered.
  ASSERT_TRUE(collector().waitFor([] { return collector().put.size() == 50; }));
  first(Status::ok());
  std::function<void(Status)> second;
  {
    std::unique_lock l(a.mu);
    EXPECT_TRUE(a.cv.wait_for(l, 10s, [&] { return static_cast<bool>(a.pending); }))
        << "the commit asked for during the first flush waited for the 60 s interval";
    second = std::exchange(a.pending, nullptr);
    if (second) {
      EXPECT_EQ(a.putBeforeFlush.back(), 50u);
    }
  }
  if (second) second(Status::ok());
  runner->requestStop();
  while (!runner->join(std::chrono::milliseconds(50))) {  // answers the stop's flush, if any
    std::function<void(Status)> more;
    {
      std::lock_guard l(a.mu);
      more = std::exchange(a.pending, nullptr);
    }
    if (more) more(Status::ok());
  }
  EXPECT_FALSE(runner->failed()) << trace_;
  auto pos = committed();
  ASSERT_TRUE(pos.has_value());
  EXPECT_EQ(pos->at("n"), "50");
}

TEST_F(ExecutorTest, DirectFailsWhenAnAsynchronousFlushFailsAndCommitsNothingOfIt) {
  asyncFlushes().reset();
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "5"},
                                                                 {"sink.connector.class", "AsyncCollectSink"}}));
  runner->start();
  auto& a = asyncFlushes();
  std::function<void(Status)> done = a.takePending();
  ASSERT_TRUE(done);
  done(Status::internal("the broker refused the publish"));
  runner->join();
  EXPECT_TRUE(runner->failed());
  EXPECT_NE(trace_.find("the broker refused the publish"), std::string::npos) << trace_;
  EXPECT_FALSE(committed().has_value());
}

// A task that may not commit at its stop (its worker lost the lease) does not wait for an
// outstanding asynchronous flush: its broker may be gone, and the worker must stop in its margin.
TEST_F(ExecutorTest, DirectStopsWithoutWaitingForTheFlushWhenItMayNotCommit) {
  asyncFlushes().reset();
  worker_.offsetFlushTimeoutMs = 20000;
  std::atomic<bool> mayCommit{true};
  auto e = env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "5"},
                                         {"sink.connector.class", "AsyncCollectSink"}});
  e.mayCommit = [&mayCommit] { return mayCommit.load(); };
  auto runner = TaskRunner::create(std::move(e));
  runner->start();
  std::function<void(Status)> done = asyncFlushes().takePending();
  ASSERT_TRUE(done);
  mayCommit = false;
  runner->requestStop();
  EXPECT_TRUE(runner->join(std::chrono::milliseconds(5000))) << "the stop waited for the flush's answer";
  EXPECT_FALSE(committed().has_value());
  done(Status::ok());  // an answer after the task ended reaches nothing
}

// A retriable answer (the sink kept sends to try again) is not a failure: the runtime flushes
// again with flush(), which retries, and commits once that passed.
TEST_F(ExecutorTest, DirectFlushesAgainSynchronouslyAfterARetriableAsynchronousAnswer) {
  asyncFlushes().reset();
  worker_.offsetFlushTimeoutMs = 20000;
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "5"},
                                                                 {"sink.connector.class", "AsyncCollectSink"}}));
  runner->start();
  auto& a = asyncFlushes();
  std::function<void(Status)> done = a.takePending();
  ASSERT_TRUE(done);
  done(Status::retriable("2 sends failed: broker busy"));
  ASSERT_TRUE(collector().waitFor([] { return collector().flushes >= 1; }));  // flush() was called
  runner->requestStop();  // all 5 came in one poll, before the first flush: none is left for the stop
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  auto pos = committed();
  ASSERT_TRUE(pos.has_value());
  EXPECT_EQ(pos->at("n"), "5");
  EXPECT_GE(runner->metrics().retries.load(), 1u);
  std::lock_guard l(a.mu);
  EXPECT_EQ(a.syncFlushes, 1);
}

TEST_F(ExecutorTest, DirectResumesFromCommittedPosition) {
  ASSERT_TRUE(positions_->put("c", {Position{{{"p", "0"}}, {{"n", "3"}}}}).isOk());
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "5"},
                                                                 {"sink.connector.class", "CollectSink"}}));
  runner->start();
  ASSERT_TRUE(collector().waitFor([] { return collector().flushedCount == 2; }));
  runner->requestStop();
  runner->join();
  std::lock_guard l(collector().mu);
  EXPECT_EQ(collector().put, (std::vector<std::string>{"v3", "v4"}));
}

TEST_F(ExecutorTest, DirectTransformsAndDropsWithPredicate) {
  auto runner = TaskRunner::create(env(
      ConnectorShape::kDirect,
      {{"connector.class", "SeqSource"}, {"count", "3"}, {"sink.connector.class", "CollectSink"},
       {"transforms", "hoist"}, {"transforms.hoist.type", "HoistField$Value"}, {"transforms.hoist.field", "v"}}));
  runner->start();
  ASSERT_TRUE(collector().waitFor([] { return collector().flushedCount == 3; }));
  runner->requestStop();
  runner->join();
  std::lock_guard l(collector().mu);
  EXPECT_EQ(collector().put[0], R"({"v":"v0"})");
}

TEST_F(ExecutorTest, PushSourceIsAcknowledgedOnlyAfterSinkFlush) {
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "PushSource"}, {"count", "4"},
                                                                 {"sink.connector.class", "CollectSink"}}));
  runner->start();
  ASSERT_TRUE(collector().waitFor([] { return collector().flushedCount == 4; }));
  runner->requestStop();
  runner->join();
  EXPECT_EQ(pushLog().acked.load(), 4);
  EXPECT_EQ(pushLog().ackedBeforeFlush.load(), 0);
}

TEST_F(ExecutorTest, FailingTaskReportsFailedWithTrace) {
  // A direct connector whose sink class does not exist fails at task start.
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "1"},
                                                                 {"sink.connector.class", "Nope"}}));
  runner->start();
  runner->join();
  EXPECT_TRUE(runner->failed());
  std::lock_guard l(stateMu_);
  ASSERT_FALSE(states_.empty());
  EXPECT_EQ(states_.back(), store::State::kFailed);
  EXPECT_NE(trace_.find("Nope"), std::string::npos) << trace_;
}

// header.converter is applied to every header after the transforms, before the producer: the
// connector's IntegerConverter overrides the worker's SimpleHeaderConverter.
TEST_F(ExecutorTest, SourceAppliesTheHeaderConverterAfterTransforms) {
  ASSERT_EQ(worker_.headerConverter, "SimpleHeaderConverter");
  runSourceUntilSent({{"connector.class", "SeqSource"}, {"count", "2"}, {"transforms", "h"},
                      {"transforms.h.type", "InsertHeader"}, {"transforms.h.header", "n"},
                      {"transforms.h.value.literal", "42"},
                      {"header.converter", "org.apache.kafka.connect.converters.IntegerConverter"}},
                     2);
  std::lock_guard l(backbone_.producer.mu);
  for (const auto& m : backbone_.producer.sent) {
    const Header* h = m.headers.last("n");
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->value.str(), std::string("\0\0\0\x2a", 4));
    EXPECT_EQ(m.value.str().substr(0, 1), "v");  // the value converter (worker's, bytes) is untouched
  }
}

TEST_F(ExecutorTest, SourceFailsOnAHeaderTheConverterRefuses) {
  worker_.headerConverter = "IntegerConverter";  // the worker's default, no connector override
  auto runner = TaskRunner::create(env(
      ConnectorShape::kSource,
      {{"connector.class", "SeqSource"}, {"count", "1"}, {"transforms", "h"}, {"transforms.h.type", "InsertHeader"},
       {"transforms.h.header", "n"}, {"transforms.h.value.literal", "forty-two"}}));
  runner->start();
  {
    std::unique_lock l(stateMu_);
    ASSERT_TRUE(stateCv_.wait_for(l, 20s, [&] { return !states_.empty() && states_.back() == store::State::kFailed; }));
  }
  runner->join();
  EXPECT_TRUE(runner->failed());
  std::lock_guard sl(stateMu_);
  EXPECT_NE(trace_.find("HEADER_CONVERTER"), std::string::npos) << trace_;
  EXPECT_NE(trace_.find("header 'n'"), std::string::npos) << trace_;
  std::lock_guard l(backbone_.producer.mu);
  EXPECT_TRUE(backbone_.producer.sent.empty());
}

// While a put is retried, the commit timer (1 ms here) must not commit: the sink would flush and
// the positions of records never put would be stored - lost for good (the loop once did this
// between a failed put and its retry).
TEST_F(ExecutorTest, DirectCommitsNothingWhileAPutIsRetried) {
  {
    std::lock_guard l(putFailures().mu);
    putFailures().puts = 0;
  }
  auto runner = TaskRunner::create(env(ConnectorShape::kDirect, {{"connector.class", "SeqSource"}, {"count", "5"},
                                                                 {"sink.connector.class", "DownSink"}}));
  runner->start();
  {
    // Three attempts: two retry delays (100 + 200 ms), each far longer than the commit interval.
    std::unique_lock l(putFailures().mu);
    ASSERT_TRUE(putFailures().cv.wait_for(l, 20s, [] { return putFailures().puts >= 3; }));
  }
  EXPECT_FALSE(committed().has_value()) << "committed n=" << committed()->at("n") << " though nothing was put";
  runner->requestStop();
  runner->join();
  EXPECT_TRUE(runner->failed());  // its last put, at the stop, failed too
  EXPECT_FALSE(committed().has_value());
  std::lock_guard l(collector().mu);
  EXPECT_EQ(collector().flushes, 0) << "the sink was flushed while its put was being retried";
}

// ----- on the worker's shared executor ----------------------------------------------------------

TEST_F(ExecutorTest, OnTheExecutorANotifyingSourceIsPolledAtItsWakeUps) {
  Executor executor(ExecutorOptions{2});
  worker_.offsetFlushIntervalMs = 60000;  // the timer must not be what runs the loop
  {
    std::lock_guard l(feed().mu);
    feed().items.clear();
    feed().polls = 0;
  }
  auto e = env(ConnectorShape::kDirect, {{"connector.class", "NotifySource"}, {"sink.connector.class", "CollectSink"}});
  e.executor = &executor;
  auto runner = TaskRunner::create(std::move(e));
  runner->start();
  {
    std::unique_lock l(stateMu_);
    ASSERT_TRUE(stateCv_.wait_for(l, 20s, [&] { return !states_.empty() && states_.back() == store::State::kRunning; }));
  }
  for (int i = 0; i < 5; ++i) {
    feed().push("n" + std::to_string(i));
    // Each arrives within 5 s: far below the 10 s idle delay, so only the wake-up can have done it.
    ASSERT_TRUE(collector().waitFor([&] { return collector().put.size() == static_cast<std::size_t>(i + 1); }))
        << "record " << i << " not delivered after its wakeup()";
  }
  EXPECT_EQ(executor.threads(), 2) << "a notifying task stays on the shared threads";
  EXPECT_EQ(executor.jobs(), 1u);
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  auto pos = committed();
  ASSERT_TRUE(pos.has_value());
  EXPECT_EQ(pos->at("n"), "5");  // flushed, then committed at stop
  std::lock_guard l(feed().mu);
  EXPECT_LT(feed().polls, 50) << "an idle notifying task is not polled in a loop";
}

TEST_F(ExecutorTest, OnTheExecutorASourceThatWaitsInPollGetsAThreadOfItsOwn) {
  Executor executor(ExecutorOptions{2});
  auto e = env(ConnectorShape::kSource, {{"connector.class", "SeqSource"}, {"count", "3"}});
  e.executor = &executor;
  auto runner = TaskRunner::create(std::move(e));
  runner->start();
  {
    std::unique_lock l(backbone_.producer.mu);
    ASSERT_TRUE(backbone_.producer.cv.wait_for(l, 20s, [&] { return backbone_.producer.held.size() == 3; }));
  }
  // Its job on the executor ended when it began to run: SeqSource waits in poll() (kBlocking).
  for (int i = 0; i < 2000 && executor.jobs() > 0; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(executor.jobs(), 0u);
  backbone_.producer.ack(0);
  backbone_.producer.ack(1);
  backbone_.producer.ack(2);
  runner->requestStop();
  runner->join();
  EXPECT_FALSE(runner->failed()) << trace_;
  auto pos = committed();
  ASSERT_TRUE(pos.has_value());
  EXPECT_EQ(pos->at("n"), "3");
}

TEST_F(ExecutorTest, OnTheExecutorTwoHundredTasksShareTwoThreads) {
  Executor executor(ExecutorOptions{2});
  std::vector<std::unique_ptr<TaskRunner>> runners;
  for (int t = 0; t < 200; ++t) {
    auto e = env(ConnectorShape::kDirect, {{"connector.class", "QuickSource"}, {"count", "10"},
                                           {"sink.connector.class", "CollectSink"}});
    e.connector = "c" + std::to_string(t);  // positions of their own: each resumes at its own 0
    e.onState = nullptr;
    e.executor = &executor;
    runners.push_back(TaskRunner::create(std::move(e)));
    runners.back()->start();
  }
  ASSERT_TRUE(collector().waitFor([] { return collector().put.size() == 2000; })) << collector().put.size();
  EXPECT_EQ(executor.threads(), 2);
  for (auto& r : runners) r->requestStop();
  for (auto& r : runners) {
    r->join();
    EXPECT_FALSE(r->failed());
  }
}

}  // namespace
}  // namespace ferry::runtime
