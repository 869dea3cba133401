// MQTTSourceTask against a real broker (mosquitto, or mochi-mqtt with FERRY_MQTT_BROKER=mochi; the
// same addresses as broker_client_test.cc). What the source promises the runtime:
//  - it is a kNotify source: poll() with maxWait 0 returns at once, and the task calls
//    SourceTaskContext::wakeup() when records arrive — once per empty -> non-empty turn of its
//    queue, not once per message;
//  - records come in publish order (sequence-numbered payloads, checked one by one);
//  - a QoS 1 message is acknowledged to the broker only when its record is committed: after a
//    restart on the same persistent session the uncommitted ones (and only those) come again.
// And of MQTTSinkTask::flushAsync (direct tasks): answered once every earlier publish was
// acknowledged, exactly once, puts going on meanwhile, and still answered when the task stops.
// It fails, not skips, when the broker is unreachable.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "connectors/mqtt/mqtt_sink.h"
#include "connectors/mqtt/mqtt_source.h"
#include "mqtt/client.h"

namespace ferry::connectors {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
bool mochi() { return env("FERRY_MQTT_BROKER", "mosquitto") == "mochi"; }
std::string host() { return env("FERRY_MQTT_HOST", "127.0.0.1"); }
std::uint16_t port() {
  return static_cast<std::uint16_t>(std::stoi(env("FERRY_MQTT_PORT", mochi() ? "1893" : "18830")));
}
std::string runId() {
  static const std::string id = std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  return id;
}

class Context final : public SourceTaskContext {
 public:
  const std::string& connectorName() const override { return name_; }
  int taskId() const override { return 0; }
  std::optional<StringMap> committedOffset(const StringMap&) override { return std::nullopt; }
  void requestCommit() override { commits.fetch_add(1); }
  void wakeup() override { wakeups.fetch_add(1); }
  std::atomic<int> wakeups{0};
  std::atomic<int> commits{0};

 private:
  std::string name_ = "mqtt-source-test";
};

StringMap config(const std::string& filter, const std::string& clientId) {
  return {{"mqtt.server.uri", "tcp://" + host() + ":" + std::to_string(port())},
          {"mqtt.topics", filter},
          {"mqtt.qos", "1"},
          {"mqtt.client.id", clientId},
          {"mqtt.clean.start", "false"},
          {"topic", "t"}};
}

void publish(const std::string& topic, int from, int n) {
  mqtt::ClientOptions o;
  o.host = host();
  o.port = port();
  o.connectTimeoutMs = 3000;
  mqtt::MqttClient c(o);
  ASSERT_TRUE(c.connect().isOk());
  std::atomic<int> failed{0};
  for (int i = from; i < from + n; ++i)
    c.publish(mqtt::OutgoingMessage{topic, std::to_string(i), 1, false, {}}, [&failed](Status s) {
      if (!s.isOk()) ++failed;
    });
  ASSERT_TRUE(c.flush(20s).isOk());
  ASSERT_EQ(failed.load(), 0);
}

// Polls with maxWait 0 (as the notify-driven runtime does) until `n` records or `timeout`.
// Returns the polls that returned records. `commit`: commit every record as it comes.
int drain(MQTTSourceTask& task, std::vector<Record>& got, std::size_t n, std::chrono::seconds timeout,
          bool commit = false) {
  int nonEmpty = 0;
  const auto deadline = Clock::now() + timeout;
  while (got.size() < n && Clock::now() < deadline) {
    std::vector<Record> batch;
    auto polled = task.poll(batch, 500, 0ms);
    EXPECT_TRUE(polled.isOk()) << polled.status().toString();
    if (!polled.isOk() || *polled == 0) {
      std::this_thread::sleep_for(2ms);
      continue;
    }
    ++nonEmpty;
    for (auto& r : batch) {
      if (commit) task.commitRecord(r);  // keeps the broker's window of unacknowledged ones open
      got.push_back(std::move(r));
    }
  }
  return nonEmpty;
}

TEST(MqttSourceTask, NotifyModeWakesOncePerTurnAndKeepsOrder) {
  const std::string t = "ferry-test/" + runId() + "/notify";
  MQTTSourceTask task;
  Context ctx;
  ASSERT_TRUE(task.start(config(t, "ferry-src-notify-" + runId()), ctx).isOk());
  EXPECT_EQ(task.pollMode(), SourceTask::PollMode::kNotify);
  // Nothing queued: maxWait 0 returns at once with nothing.
  std::vector<Record> none;
  const auto t0 = Clock::now();
  auto empty = task.poll(none, 100, 0ms);
  ASSERT_TRUE(empty.isOk());
  EXPECT_EQ(*empty, 0u);
  EXPECT_LT(Clock::now() - t0, 100ms);
  EXPECT_EQ(ctx.wakeups.load(), 0);

  constexpr int kN = 3000;
  publish(t, 0, kN);
  std::vector<Record> got;
  const int nonEmpty = drain(task, got, kN, 30s, true);
  ASSERT_EQ(got.size(), static_cast<std::size_t>(kN));
  for (int i = 0; i < kN; ++i) ASSERT_EQ(got[i].value.str(), std::to_string(i)) << "record " << i;
  EXPECT_EQ(got[0].headers.last("mqtt.topic")->value.str(), t);
  EXPECT_EQ(got[0].key.str(), t);
  // The runtime was told records arrived, and not once per message: each wake-up is an empty ->
  // non-empty turn, and every turn was emptied by a poll that returned records.
  EXPECT_GE(ctx.wakeups.load(), 1);
  EXPECT_LE(ctx.wakeups.load(), nonEmpty + 1);
  task.stop();
}

TEST(MqttSourceTask, AcknowledgesOnlyCommittedRecords) {
  const std::string t = "ferry-test/" + runId() + "/acks";
  const std::string id = "ferry-src-acks-" + runId();
  constexpr int kN = 400;
  {
    MQTTSourceTask task;
    Context ctx;
    ASSERT_TRUE(task.start(config(t, id), ctx).isOk());
    publish(t, 0, kN);
    std::vector<Record> got;
    drain(task, got, kN, 30s);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kN));
    // Commit the first half only; the rest is never safe.
    for (int i = 0; i < kN / 2; ++i) task.commitRecord(got[i]);
    std::this_thread::sleep_for(300ms);  // let the PUBACKs leave
    task.stop();
  }
  MQTTSourceTask again;
  Context ctx;
  ASSERT_TRUE(again.start(config(t, id), ctx).isOk());
  std::vector<Record> redelivered;
  drain(again, redelivered, kN / 2, 30s);
  std::this_thread::sleep_for(500ms);  // anything beyond the second half would show up now
  drain(again, redelivered, kN, std::chrono::seconds(1));
  ASSERT_EQ(redelivered.size(), static_cast<std::size_t>(kN / 2));
  // Exactly the uncommitted half, each once. In any order: mochi-mqtt 2.7.9 re-sends a resumed
  // session's in-flight messages in map order, not in their original order (mosquitto keeps it).
  std::vector<int> seqs;
  for (auto& r : redelivered) seqs.push_back(std::stoi(r.value.str()));
  std::sort(seqs.begin(), seqs.end());
  for (int i = 0; i < kN / 2; ++i) ASSERT_EQ(seqs[i], kN / 2 + i);
  for (auto& r : redelivered) again.commitRecord(r);
  std::this_thread::sleep_for(300ms);
  again.stop();
}

class SinkContext final : public SinkTaskContext {
 public:
  const std::string& connectorName() const override { return name_; }
  int taskId() const override { return 0; }
  void requestCommit() override {}
  Status reportBadRecord(const Record&, const Status& reason) override { return reason; }

 private:
  std::string name_ = "mqtt-sink-test";
};

std::vector<Record> sequence(int from, int n) {
  std::vector<Record> out;
  for (int i = from; i < from + n; ++i) {
    Record r;
    r.topic = "t";
    r.value = Bytes(std::to_string(i));
    out.push_back(std::move(r));
  }
  return out;
}

// MQTTSinkTask::flushAsync (direct tasks): answers once every publish put before it was
// acknowledged, exactly once, with puts going on meanwhile; with nothing outstanding at once.
TEST(MqttSinkTask, FlushAsyncAnswersOnceEveryEarlierPublishIsAcknowledged) {
  const std::string t = "ferry-test/" + runId() + "/sink-async";
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> got;
  mqtt::ClientOptions o;
  o.host = host();
  o.port = port();
  mqtt::MqttClient sub(o);
  sub.setBatchHandler([&](std::vector<mqtt::IncomingMessage>& batch) {
    std::lock_guard lock(mu);
    for (auto& m : batch) {
      got.push_back(m.payload);
      sub.ack(m.token);
    }
    cv.notify_all();
  });
  ASSERT_TRUE(sub.connect().isOk());
  ASSERT_TRUE(sub.subscribe({{t, 1}}).isOk());

  MQTTSinkTask sink;
  SinkContext ctx;
  ASSERT_TRUE(sink.start({{"mqtt.server.uri", "tcp://" + host() + ":" + std::to_string(port())},
                          {"mqtt.topic", t},
                          {"mqtt.qos", "1"},
                          {"mqtt.client.id", "ferry-sink-async-" + runId()}},
                         ctx)
                  .isOk());
  // Nothing put: the answer comes before flushAsync returns.
  bool answered = false;
  ASSERT_TRUE(sink.flushAsync([&](Status s) {
    EXPECT_TRUE(s.isOk()) << s.toString();
    answered = true;
  }));
  EXPECT_TRUE(answered);

  auto flushOnce = [&](int from, int n, int alsoPutAfter) {
    auto batch = sequence(from, n);
    ASSERT_TRUE(sink.put(batch).isOk());
    auto p = std::make_shared<std::promise<Status>>();
    auto f = p->get_future();
    auto calls = std::make_shared<std::atomic<int>>(0);
    ASSERT_TRUE(sink.flushAsync([p, calls](Status s) {
      if (calls->fetch_add(1) == 0) p->set_value(std::move(s));
    }));
    // Puts go on while the flush is outstanding (not covered by it).
    if (alsoPutAfter > 0) {
      auto more = sequence(from + n, alsoPutAfter);
      ASSERT_TRUE(sink.put(more).isOk());
    }
    ASSERT_EQ(f.wait_for(20s), std::future_status::ready) << "flushAsync never answered";
    EXPECT_TRUE(f.get().isOk());
    EXPECT_EQ(calls->load(), 1);
  };
  flushOnce(0, 2000, 500);
  flushOnce(2500, 1500, 0);  // covers the 500 put during the first one too
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return got.size() >= 4000; })) << got.size() << " of 4000";
    for (int i = 0; i < 4000; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], std::to_string(i)) << "message " << i;
  }
  // A flush outstanding when the task stops is still answered (its publishes end, acknowledged or
  // cancelled): a stopping direct task never waits for an answer that cannot come.
  auto last = sequence(4000, 2000);
  ASSERT_TRUE(sink.put(last).isOk());
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  ASSERT_TRUE(sink.flushAsync([p](Status s) { p->set_value(std::move(s)); }));
  sink.stop();
  EXPECT_EQ(f.wait_for(10s), std::future_status::ready) << "flushAsync never answered after stop()";
  sub.close();
}

}  // namespace
}  // namespace ferry::connectors
