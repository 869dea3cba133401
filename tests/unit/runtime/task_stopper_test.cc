// Stopping tasks within a timeout: a task that does not stop in time is abandoned and cancelled,
// and whatever it does when its connector call returns at last has no effect (no record sent,
// no position committed, no sink flush, no status reported). No sleeps: the connector calls block
// on a latch the test opens, the stopper's timeout is 0 where a task must be abandoned, and the
// test waits for the abandoned thread with TaskRunner::join().
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "ferry/connector.h"
#include "ferry/plugin.h"
#include "runtime/task_stopper.h"
#include "runtime/tasks.h"
#include "store/store.h"

namespace ferry::runtime {
namespace {

using namespace std::chrono_literals;

// A gate a connector call waits at until the test opens it; `entered` says a call is waiting.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;
  int stops = 0;
  int flushes = 0;
  void reset() {
    std::lock_guard l(mu);
    open = false;
    entered = stops = flushes = 0;
  }
  void wait() {
    std::unique_lock l(mu);
    ++entered;
    cv.notify_all();
    cv.wait(l, [&] { return open; });
  }
  void release() {
    std::lock_guard l(mu);
    open = true;
    cv.notify_all();
  }
  bool waitEntered() {
    std::unique_lock l(mu);
    return cv.wait_for(l, 20s, [&] { return entered > 0; });
  }
};
Latch& latch() {
  static Latch l;
  return l;
}

// block = start | poll | none. Each poll returns three records (positions n = 1, 2, 3).
class LatchSourceTask : public SourceTask {
 public:
  Status start(const StringMap& config, SourceTaskContext&) override {
    block_ = config.count("block") ? config.at("block") : "none";
    if (block_ == "start") latch().wait();
    return Status::ok();
  }
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t, std::chrono::milliseconds) override {
    if (block_ == "poll") latch().wait();
    for (int i = 0; i < 3; ++i) {
      Record r;
      r.topic = "t";
      r.value = Bytes("v" + std::to_string(next_));
      r.position = Position{{{"p", "0"}}, {{"n", std::to_string(++next_)}}};
      out.push_back(std::move(r));
    }
    latch().cv.notify_all();  // the test may be waiting for records to be sent
    return std::size_t{3};
  }
  void stop() override {
    std::lock_guard l(latch().mu);
    ++latch().stops;
    latch().cv.notify_all();
  }

 private:
  std::string block_;
  int next_ = 0;
};

class LatchSource : public SourceConnector {
 public:
  std::string version() const override { return "1"; }
  const ConfigDef& configDef() const override {
    static const ConfigDef d;
    return d;
  }
  Status start(const StringMap&, ConnectorContext&) override { return Status::ok(); }
  Result<std::vector<StringMap>> taskConfigs(int) override { return std::vector<StringMap>{{}}; }
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override { return std::make_unique<LatchSourceTask>(); }
};

// put() blocks at the latch; flush() counts.
class LatchSinkTask : public SinkTask {
 public:
  Status start(const StringMap&, SinkTaskContext&) override { return Status::ok(); }
  Status put(std::vector<Record>&) override {
    latch().wait();
    return Status::ok();
  }
  Status flush() override {
    std::lock_guard l(latch().mu);
    ++latch().flushes;
    return Status::ok();
  }
  void stop() override {}
};

class LatchSink : public SinkConnector {
 public:
  std::string version() const override { return "1"; }
  const ConfigDef& configDef() const override {
    static const ConfigDef d;
    return d;
  }
  Status start(const StringMap&, ConnectorContext&) override { return Status::ok(); }
  Result<std::vector<StringMap>> taskConfigs(int) override { return std::vector<StringMap>{{}}; }
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override { return std::make_unique<LatchSinkTask>(); }
};

const PluginEntry kEntries[] = {
    {"LatchSource", nullptr, PluginKind::kSourceConnector, "1", "test", &pluginCreate<LatchSource, SourceConnector>,
     &pluginDestroy<SourceConnector>},
    {"LatchSink", nullptr, PluginKind::kSinkConnector, "1", "test", &pluginCreate<LatchSink, SinkConnector>,
     &pluginDestroy<SinkConnector>},
};
const PluginDescriptor kDescriptor = makePluginDescriptor("latch", "1", kEntries);

// A backbone whose producer acknowledges every send at once and counts them.
class CountingBackbone : public backbone::Backbone {
 public:
  std::string kind() const override { return "counting"; }
  Result<std::unique_ptr<backbone::Producer>> createProducer(const StringMap&) override {
    return std::unique_ptr<backbone::Producer>(std::make_unique<Producer>(*this));
  }
  Result<std::unique_ptr<backbone::Consumer>> createConsumer(const std::string&, const std::string&,
                                                             const StringMap&) override {
    return Status::unavailable("no consumers here");
  }
  backbone::Admin& admin() override { return admin_; }
  void close() override {}
  std::atomic<int> sent{0};

 private:
  struct Producer : backbone::Producer {
    explicit Producer(CountingBackbone& b) : b_(b) {}
    Status send(backbone::Message, backbone::SendCallback cb) override {
      b_.sent++;
      if (cb) cb(Status::ok(), 0, 0);
      return Status::ok();
    }
    Status flush(std::chrono::milliseconds) override { return Status::ok(); }
    CountingBackbone& b_;
  };
  struct NoAdmin : backbone::Admin {
    Status ensureTopic(const std::string&, std::int32_t) override { return Status::ok(); }
    Result<std::vector<backbone::TopicInfo>> listTopics() override { return Status::notFound("x"); }
    Result<backbone::TopicInfo> describeTopic(const std::string&) override { return Status::notFound("x"); }
    Result<OffsetMap> endOffsets(const std::string&) override { return Status::notFound("x"); }
    Result<OffsetMap> startOffsets(const std::string&) override { return Status::notFound("x"); }
    Result<OffsetMap> committedOffsets(const std::string&) override { return Status::notFound("x"); }
    Status setCommittedOffsets(const std::string&, const OffsetMap&) override { return Status::notFound("x"); }
    Status deleteGroup(const std::string&) override { return Status::notFound("x"); }
  } admin_;
};

class TaskStopperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registerBuiltins(registry_).isOk());
    ASSERT_TRUE(registry_.add(&kDescriptor, "latch").isOk());
    worker_.offsetFlushIntervalMs = 1;
    worker_.offsetFlushTimeoutMs = 0;
    latch().reset();
  }
  void TearDown() override { latch().release(); }  // never leave a thread waiting

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
    e.onState = [this](store::State s, const std::string&) {
      std::lock_guard l(stateMu_);
      states_.push_back(s);
    };
    return e;
  }
  std::size_t stateCount() {
    std::lock_guard l(stateMu_);
    return states_.size();
  }
  bool committed() {
    auto r = positions_->get("c", {{"p", "0"}});
    return r.isOk() && r->has_value();
  }

  PluginRegistry registry_;
  CountingBackbone backbone_;
  std::unique_ptr<store::PositionStore> positions_ = store::makeMemoryPositionStore();
  WorkerConfig worker_;
  std::mutex stateMu_;
  std::vector<store::State> states_;
};

TEST_F(TaskStopperTest, ATaskThatStopsInTimeIsNotAbandonedAndCommits) {
  auto runner = TaskRunner::create(env(ConnectorShape::kSource, {{"connector.class", "LatchSource"}}));
  runner->start();
  {  // wait until records were sent
    std::unique_lock l(latch().mu);
    ASSERT_TRUE(latch().cv.wait_for(l, 20s, [&] { return backbone_.sent.load() >= 3; }));
  }
  TaskStopper stopper(20s);  // far more than a cooperating task needs
  EXPECT_EQ(stopper.stop(std::move(runner)), 0u);
  EXPECT_EQ(stopper.abandonedTotal(), 0u);
  EXPECT_EQ(stopper.abandonedRunning(), 0u);
  EXPECT_TRUE(committed());
}

TEST_F(TaskStopperTest, ATaskBlockedInPollIsAbandonedAndItsLateRecordsHaveNoEffect) {
  auto runner = TaskRunner::create(env(ConnectorShape::kSource, {{"connector.class", "LatchSource"}, {"block", "poll"}}));
  TaskRunner* raw = runner.get();
  runner->start();
  ASSERT_TRUE(latch().waitEntered());
  EXPECT_EQ(raw->activity(), "poll");
  const std::size_t statesBefore = stateCount();

  TaskStopper stopper(0ms);
  EXPECT_EQ(stopper.stop(std::move(runner)), 1u);
  EXPECT_TRUE(raw->cancelled());
  EXPECT_EQ(stopper.abandonedTotal(), 1u);
  EXPECT_EQ(stopper.abandonedRunning(), 1u);
  stopper.reap();  // still running: kept
  EXPECT_EQ(stopper.abandonedRunning(), 1u);

  latch().release();  // the poll returns three records, after the task was given up
  raw->join();        // the thread ends: the runner stops itself (its loop sees the stop)
  EXPECT_EQ(backbone_.sent.load(), 0) << "a cancelled task sent records";
  EXPECT_FALSE(committed()) << "a cancelled task committed a position";
  EXPECT_EQ(stateCount(), statesBefore) << "a cancelled task reported a state";
  EXPECT_FALSE(raw->failed());
  {
    std::lock_guard l(latch().mu);
    EXPECT_EQ(latch().stops, 1);  // its connector is still told to stop, to free what it holds
  }
  stopper.reap();
  EXPECT_EQ(stopper.abandonedRunning(), 0u);
  EXPECT_EQ(stopper.abandonedTotal(), 1u);
}

TEST_F(TaskStopperTest, ATaskBlockedInStartNeverReportsRunning) {
  auto runner = TaskRunner::create(env(ConnectorShape::kSource, {{"connector.class", "LatchSource"}, {"block", "start"}}));
  TaskRunner* raw = runner.get();
  runner->start();
  ASSERT_TRUE(latch().waitEntered());
  EXPECT_EQ(raw->activity(), "start");
  TaskStopper stopper(0ms);
  EXPECT_EQ(stopper.stop(std::move(runner)), 1u);
  latch().release();
  raw->join();
  std::lock_guard l(stateMu_);
  EXPECT_TRUE(std::find(states_.begin(), states_.end(), store::State::kRunning) == states_.end());
  EXPECT_EQ(backbone_.sent.load(), 0);
  EXPECT_FALSE(committed());
}

TEST_F(TaskStopperTest, ADirectTaskBlockedInPutNeitherFlushesNorCommitsAfterCancel) {
  auto runner = TaskRunner::create(
      env(ConnectorShape::kDirect, {{"connector.class", "LatchSource"}, {"sink.connector.class", "LatchSink"}}));
  TaskRunner* raw = runner.get();
  runner->start();
  ASSERT_TRUE(latch().waitEntered());
  EXPECT_EQ(raw->activity(), "put");
  TaskStopper stopper(0ms);
  EXPECT_EQ(stopper.stop(std::move(runner)), 1u);
  latch().release();
  raw->join();
  std::lock_guard l(latch().mu);
  EXPECT_EQ(latch().flushes, 0) << "the sink of a cancelled task was flushed";
  EXPECT_FALSE(committed()) << "a cancelled task committed a position";
}

TEST_F(TaskStopperTest, JoinWithATimeoutReturnsAtOnceForABlockedTaskAndCancelIsIdempotent) {
  auto runner = TaskRunner::create(env(ConnectorShape::kSource, {{"connector.class", "LatchSource"}, {"block", "poll"}}));
  runner->start();
  ASSERT_TRUE(latch().waitEntered());
  EXPECT_FALSE(runner->join(0ms));
  EXPECT_FALSE(runner->finished());
  EXPECT_TRUE(runner->cancel());
  EXPECT_TRUE(runner->cancel());
  latch().release();
  runner->join();
  EXPECT_TRUE(runner->finished());
  EXPECT_TRUE(runner->join(0ms));
  EXPECT_EQ(backbone_.sent.load(), 0);
}

}  // namespace
}  // namespace ferry::runtime
