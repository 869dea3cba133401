// MqttClient against a real broker: Eclipse Mosquitto (scripts/services/mosquitto start) or, with
// FERRY_MQTT_BROKER=mochi, mochi-mqtt (scripts/services/mochi start). Addresses come from
// FERRY_MQTT_* (`scripts/services/<broker> env`), defaulting to what the script uses. The
// tests fail, not skip, when the broker is unreachable. Every topic carries a per-run prefix so
// retained messages and persistent sessions of earlier runs never interfere.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mqtt/client.h"

namespace ferry::mqtt {
namespace {

using namespace std::chrono_literals;

std::string env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
bool mochi() { return env("FERRY_MQTT_BROKER", "mosquitto") == "mochi"; }
// The broker's default port for a listener: mosquitto's 18830.. or mochi's 1893.. (+ offset).
int defaultPort(int offset) { return (mochi() ? 1893 : 18830) + offset; }
std::uint16_t envPort(const char* name, int offset) {
  return static_cast<std::uint16_t>(std::stoi(env(name, std::to_string(defaultPort(offset)))));
}
std::string certDir() {
  return env("HOME", "/root") + "/.cache/ferry-peers/" + (mochi() ? "mochi" : "mosquitto") +
         "/run/certs/";
}
const std::string& runPrefix() {
  static const std::string p =
      "ferry-test/" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  return p;
}
std::string topic(const std::string& rest) { return runPrefix() + "/" + rest; }

ClientOptions plain(Version v = Version::k5, const std::string& id = "") {
  ClientOptions o;
  o.host = env("FERRY_MQTT_HOST", "127.0.0.1");
  o.port = envPort("FERRY_MQTT_PORT", 0);
  o.version = v;
  o.clientId = id;
  o.connectTimeoutMs = 3000;
  o.reconnectMaxMs = 300;
  return o;
}
// A persistent session (clean start off, 300 s expiry) under a client id of its own.
ClientOptions persistent(Version v, const std::string& name) {
  const std::string id = "ferry-" + name + "-" + std::to_string(static_cast<int>(v)) + "-" +
                         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  auto o = plain(v, id);
  o.cleanStart = false;
  o.sessionExpiryS = 300;
  return o;
}
ClientOptions withPassword(ClientOptions o, std::uint16_t port) {
  o.port = port;
  o.username = env("FERRY_MQTT_USER", "ferry");
  o.password = env("FERRY_MQTT_PASSWORD", "ferry-secret");
  return o;
}
ClientOptions tls(ClientOptions o) {
  o = withPassword(std::move(o), envPort("FERRY_MQTT_TLS_PORT", 2));
  o.tls.enabled = true;
  o.tls.caFile = env("FERRY_MQTT_CA", certDir() + "ca.crt");
  return o;
}

// Collects what a subscriber receives; acks immediately unless told not to. Declare it before
// the client it attaches to: the client's io thread may still deliver a message (a retained one
// being cleared, a re-send) until the client is destroyed.
struct Collector {
  MqttClient* client = nullptr;
  bool autoAck = true;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<IncomingMessage> got;

  void attach(MqttClient& c) {
    client = &c;
    c.setMessageHandler([this](IncomingMessage m) {
      const auto token = m.token;
      {
        std::lock_guard lock(mu);
        got.push_back(std::move(m));
      }
      cv.notify_all();
      if (autoAck) client->ack(token);
    });
  }
  bool waitFor(std::size_t n, std::chrono::milliseconds t = 10s) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, t, [&] { return got.size() >= n; });
  }
  std::vector<IncomingMessage> snapshot() {
    std::lock_guard lock(mu);
    return got;
  }
};

// Publishes n messages "0".."n-1" with the given QoS and waits for all to complete.
void publishSeq(MqttClient& c, const std::string& t, int n, std::uint8_t qos, int from = 0) {
  std::atomic<int> failed{0};
  for (int i = from; i < from + n; ++i) {
    c.publish(OutgoingMessage{t, std::to_string(i), qos, false, {}}, [&failed](Status s) {
      if (!s.isOk()) ++failed;
    });
  }
  Status st = c.flush(20s);
  ASSERT_TRUE(st.isOk()) << st.toString();
  ASSERT_EQ(failed.load(), 0);
}

std::vector<int> payloads(const std::vector<IncomingMessage>& ms) {
  std::vector<int> out;
  for (const auto& m : ms) out.push_back(std::stoi(m.payload));
  return out;
}
std::vector<int> iota(int from, int n) {
  std::vector<int> v;
  for (int i = from; i < from + n; ++i) v.push_back(i);
  return v;
}

// Publishes `ticks` x `perTick` QoS 1 messages (payloads 0, 1, ...), `perTick` back to back every
// `every`: the paced publisher that sets the rate (and burst pattern) a test is about.
void publishPaced(MqttClient& pub, const std::string& t, int ticks, int perTick, std::chrono::microseconds every) {
  auto next = std::chrono::steady_clock::now();
  for (int k = 0; k < ticks; ++k) {
    for (int i = 0; i < perTick; ++i)
      pub.publish(OutgoingMessage{t, std::to_string(k * perTick + i), 1, false, {}}, [](Status) {});
    next += every;
    std::this_thread::sleep_until(next);
  }
}

// What a resumed session re-sends: in order from mosquitto. mochi-mqtt 2.7.9 re-sends a
// session's stored messages sorted by their creation second, i.e. in map order within a second
// (MQTT §4.6 wants them in the original order): a difference of the broker, reported here and in
// scripts/services/README.md, and the set of messages is still checked in full.
std::vector<int> resent(std::vector<int> got) {
  if (mochi()) {
    std::vector<int> sorted = got;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != got) {
      std::cout << "[ NOTE     ] mochi re-sent the session's messages out of order\n";
    }
    return sorted;
  }
  return got;
}

class MqttBroker : public ::testing::TestWithParam<Version> {};

// QoS 0/1/2 both ways on one version: every message once, in order, with the QoS granted.
TEST_P(MqttBroker, QosRoundTripInOrder) {
  const Version v = GetParam();
  for (std::uint8_t qos : {0, 1, 2}) {
    SCOPED_TRACE("qos " + std::to_string(qos));
    const std::string t = topic("rt/" + std::to_string(static_cast<int>(v)) + "/q" +
                                std::to_string(qos));
    Collector col;
    MqttClient sub(plain(v));
    col.attach(sub);
    ASSERT_TRUE(sub.connect().isOk());
    ASSERT_TRUE(sub.subscribe({{t, qos}}).isOk());
    MqttClient pub(plain(v));
    ASSERT_TRUE(pub.connect().isOk());
    const int n = qos == 0 ? 200 : 2000;
    publishSeq(pub, t, n, qos);
    ASSERT_TRUE(col.waitFor(n)) << col.snapshot().size();
    auto got = col.snapshot();
    EXPECT_EQ(payloads(got), iota(0, n));
    EXPECT_EQ(got.front().qos, qos);
    EXPECT_EQ(got.front().topic, t);
    // Everything acknowledged: nothing left on either side.
    EXPECT_EQ(pub.inflight(), 0u);
  }
}

// A persistent session keeps QoS 1/2 messages published while the subscriber is away.
TEST_P(MqttBroker, PersistentSessionReceivesWhatArrivedWhileAway) {
  const Version v = GetParam();
  const std::string t = topic("persist/" + std::to_string(static_cast<int>(v)));
  auto o = persistent(v, "persist");
  {
    MqttClient sub(o);
    bool present = true;
    ASSERT_TRUE(sub.connect(&present).isOk());
    EXPECT_FALSE(present);
    ASSERT_TRUE(sub.subscribe({{t, 1}}).isOk());
    sub.close();
  }
  MqttClient pub(plain(v));
  ASSERT_TRUE(pub.connect().isOk());
  publishSeq(pub, t, 500, 1);
  Collector col;
  MqttClient sub(o);
  col.attach(sub);
  bool present = false;
  ASSERT_TRUE(sub.connect(&present).isOk());
  EXPECT_TRUE(present);
  ASSERT_TRUE(col.waitFor(500));
  EXPECT_EQ(resent(payloads(col.snapshot())), iota(0, 500));
}

// Messages delivered but never acknowledged come again after a reconnect (and acking the old
// tokens does nothing); after acking on the new connection they are gone for good.
TEST_P(MqttBroker, UnackedMessagesAreRedeliveredAfterReconnect) {
  const Version v = GetParam();
  const std::string t = topic("redeliver/" + std::to_string(static_cast<int>(v)));
  auto o = persistent(v, "redeliver");
  std::vector<std::uint64_t> oldTokens;
  {
    Collector col;
    MqttClient sub(o);
    col.autoAck = false;
    col.attach(sub);
    ASSERT_TRUE(sub.connect().isOk());
    ASSERT_TRUE(sub.subscribe({{t, 1}}).isOk());
    MqttClient pub(plain(v));
    ASSERT_TRUE(pub.connect().isOk());
    publishSeq(pub, t, 50, 1);
    ASSERT_TRUE(col.waitFor(50));
    // Only the first 10 are acknowledged.
    auto got = col.snapshot();
    for (int i = 0; i < 10; ++i) sub.ack(got[i].token);
    for (int i = 10; i < 50; ++i) oldTokens.push_back(got[i].token);
    ASSERT_TRUE(col.waitFor(50));
    // Make sure the 10 PUBACKs left before the connection goes: a PINGREQ round trip would do,
    // but the public API has none; a subscription round trip orders after them.
    ASSERT_TRUE(sub.subscribe({{t + "/sync", 0}}).isOk());
    EXPECT_EQ(sub.unacked(), 40u);
  }
  Collector col;
  MqttClient sub(o);
  col.autoAck = false;
  col.attach(sub);
  ASSERT_TRUE(sub.connect().isOk());
  ASSERT_TRUE(col.waitFor(40));
  auto again = col.snapshot();
  EXPECT_EQ(resent(payloads(again)), iota(10, 40));
  for (auto tok : oldTokens) sub.ack(tok);  // stale: ignored
  for (const auto& m : again) sub.ack(m.token);
  ASSERT_TRUE(sub.subscribe({{t + "/sync", 0}}).isOk());
  EXPECT_EQ(sub.unacked(), 0u);
  sub.close();
  // A third connection gets nothing more.
  Collector col3;
  MqttClient third(o);
  col3.attach(third);
  ASSERT_TRUE(third.connect().isOk());
  EXPECT_FALSE(col3.waitFor(1, 500ms));
}

// With a read linger, a subscriber fed faster than one message per linger takes them in bursts
// (one socket read, one batch, many messages), acknowledges every one (the acks queued while
// the io thread lingers leave with its next turn), and its session holds nothing afterwards.
TEST_P(MqttBroker, ReadLingerTakesBurstsAndLosesNoAck) {
  const Version v = GetParam();
  const std::string t = topic("linger/" + std::to_string(static_cast<int>(v)));
  auto o = persistent(v, "linger");
  o.readLinger = 2ms;
  constexpr int kN = 5000;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> got;
  std::size_t batches = 0;
  {
    MqttClient sub(o);
    std::thread acker;  // acks from another thread too, as a task does
    std::vector<std::uint64_t> late;
    sub.setBatchHandler([&](std::vector<IncomingMessage>& batch) {
      std::lock_guard lock(mu);
      ++batches;
      for (auto& m : batch) {
        got.push_back(std::stoi(m.payload));
        if (got.size() % 2 == 0) sub.ack(m.token);  // on the io thread
        else late.push_back(m.token);               // later, from the test thread
      }
      cv.notify_all();
    });
    ASSERT_TRUE(sub.connect().isOk());
    ASSERT_TRUE(sub.subscribe({{t, 1}}).isOk());
    MqttClient pub(plain(v));
    ASSERT_TRUE(pub.connect().isOk());
    std::atomic<bool> done{false};
    acker = std::thread([&] {
      while (!done) {
        std::vector<std::uint64_t> take;
        {
          std::unique_lock lock(mu);
          cv.wait_for(lock, 1ms, [&] { return !late.empty() || done; });
          take.swap(late);
        }
        for (auto tok : take) sub.ack(tok);
      }
    });
    publishSeq(pub, t, kN, 1);
    {
      std::unique_lock lock(mu);
      EXPECT_TRUE(cv.wait_for(lock, 20s, [&] { return got.size() >= static_cast<std::size_t>(kN); }));
    }
    while (sub.unacked() > 0 && sub.state() == ClientState::kConnected) std::this_thread::sleep_for(1ms);
    done = true;
    acker.join();
    ASSERT_TRUE(sub.subscribe({{t + "/sync", 0}}).isOk());  // orders after the last PUBACKs
    EXPECT_EQ(sub.unacked(), 0u);
    std::lock_guard lock(mu);
    EXPECT_EQ(got, iota(0, kN));
    // 5,000 messages published as fast as one client can, read at most every 2 ms: bursts. Without
    // the linger nearly every read holds one or two.
    std::cout << "[ NOTE     ] " << got.size() << " messages in " << batches << " socket reads\n";
    EXPECT_GE(static_cast<double>(got.size()) / static_cast<double>(batches), 4.0)
        << got.size() << " messages in " << batches << " batches";
    EXPECT_GT(sub.readLingers(), 0u) << "no read lingered at full speed";
  }
  Collector again;
  MqttClient resumed(o);
  again.attach(resumed);
  bool present = false;
  ASSERT_TRUE(resumed.connect(&present).isOk());
  EXPECT_TRUE(present);
  EXPECT_FALSE(again.waitFor(1, 500ms)) << "the session re-sent a message the client had acknowledged";
}

// The linger is for dense traffic only: 150 messages one every 2 ms (500/s), with a read linger
// of up to 5 ms — too slow to gather 8 in one linger — arrive one per read, none held back by a
// wait. Before the linger was sized by the rate, every read that found data sooner than 5 ms
// after the previous one waited 5 ms: 2-3 messages per read, each up to 5 ms late.
TEST_P(MqttBroker, ReadLingerAddsNoWaitAtLowRates) {
  const Version v = GetParam();
  const std::string t = topic("slow/" + std::to_string(static_cast<int>(v)));
  auto o = plain(v);
  o.readLinger = 5ms;
  constexpr int kN = 150;
  std::mutex mu;
  std::condition_variable cv;
  std::size_t got = 0;
  std::size_t batches = 0;
  // IncomingMessage::receivedNs: every message stamped when read, in order, never in the future.
  const std::int64_t startNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now().time_since_epoch()).count();
  std::int64_t lastReceived = startNs;
  std::size_t badStamps = 0;
  MqttClient sub(o);
  sub.setBatchHandler([&](std::vector<IncomingMessage>& batch) {
    const std::int64_t nowNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
    std::lock_guard lock(mu);
    ++batches;
    got += batch.size();
    for (auto& m : batch) {
      if (m.receivedNs < lastReceived || m.receivedNs > nowNs) ++badStamps;
      lastReceived = std::max(lastReceived, m.receivedNs);
      sub.ack(m.token);
    }
    cv.notify_all();
  });
  ASSERT_TRUE(sub.connect().isOk());
  ASSERT_TRUE(sub.subscribe({{t, 1}}).isOk());
  MqttClient pub(plain(v));
  ASSERT_TRUE(pub.connect().isOk());
  publishPaced(pub, t, kN, 1, 2ms);
  ASSERT_TRUE(pub.flush(20s).isOk());
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return got >= static_cast<std::size_t>(kN); }));
  std::cout << "[ NOTE     ] " << got << " messages in " << batches << " socket reads\n";
  EXPECT_LT(static_cast<double>(got) / static_cast<double>(batches), 1.3)
      << got << " messages in " << batches << " reads: the linger held messages back at 500/s";
  EXPECT_EQ(badStamps, 0u) << "messages without a receive time, out of order or stamped in the future";
}

// Bursts at a low average rate: 10 messages back to back every 5 ms (2,000/s), read linger 2 ms.
// At 2,000/s a 2 ms linger would gather 4 messages, under the 8 that make one worth its wait, so
// no read may linger. Before the rate was measured over 10 ms windows it was taken per read: a
// burst split over two reads looked like 100,000/s+, and every other read lingered 2 ms (which
// was most of ferry's own p99 on the bridge at 2,000/s).
TEST_P(MqttBroker, ReadLingerIgnoresBurstsAtALowAverageRate) {
  const Version v = GetParam();
  const std::string t = topic("bursts/" + std::to_string(static_cast<int>(v)));
  auto o = plain(v);
  o.readLinger = 2ms;
  constexpr int kBursts = 100;
  constexpr int kPerBurst = 10;
  std::mutex mu;
  std::condition_variable cv;
  std::size_t got = 0;
  std::size_t reads = 0;
  MqttClient sub(o);
  sub.setBatchHandler([&](std::vector<IncomingMessage>& batch) {
    std::lock_guard lock(mu);
    ++reads;
    got += batch.size();
    for (auto& m : batch) sub.ack(m.token);
    cv.notify_all();
  });
  ASSERT_TRUE(sub.connect().isOk());
  ASSERT_TRUE(sub.subscribe({{t, 1}}).isOk());
  MqttClient pub(plain(v));
  ASSERT_TRUE(pub.connect().isOk());
  publishPaced(pub, t, kBursts, kPerBurst, 5ms);
  ASSERT_TRUE(pub.flush(20s).isOk());
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return got >= static_cast<std::size_t>(kBursts * kPerBurst); }));
  std::cout << "[ NOTE     ] " << got << " messages in " << reads << " socket reads, " << sub.readLingers()
            << " after a linger\n";
  EXPECT_LE(sub.readLingers(), 2u) << reads << " reads: reads lingered at 2,000 messages/s";
}

// A moderate rate lingers too: 6 messages every 1 ms (6,000/s), read linger 2 ms. A 2 ms linger
// gathers 12 there, over the 8 that make one worth its wait, so reads linger and take several
// messages each. Before this a linger needed 16 (8,000/s at 2 ms): at 6,000/s every message
// had a read, a task hand-off and an ack of its own, and MQTTSource -> BlackholeSink cost 26.7 µs
// of CPU per message there against 6.7 with the linger (bench/README.md, mqtt-direct).
TEST_P(MqttBroker, ReadLingerGathersAtModerateRates) {
  const Version v = GetParam();
  const std::string t = topic("moderate/" + std::to_string(static_cast<int>(v)));
  auto o = plain(v);
  o.readLinger = 2ms;
  constexpr int kTicks = 600;
  constexpr int kPerTick = 6;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> got;
  std::size_t reads = 0;
  MqttClient sub(o);
  sub.setBatchHandler([&](std::vector<IncomingMessage>& batch) {
    std::lock_guard lock(mu);
    ++reads;
    for (auto& m : batch) {
      got.push_back(std::stoi(m.payload));
      sub.ack(m.token);
    }
    cv.notify_all();
  });
  ASSERT_TRUE(sub.connect().isOk());
  ASSERT_TRUE(sub.subscribe({{t, 1}}).isOk());
  MqttClient pub(plain(v));
  ASSERT_TRUE(pub.connect().isOk());
  publishPaced(pub, t, kTicks, kPerTick, 1ms);
  ASSERT_TRUE(pub.flush(20s).isOk());
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return got.size() >= static_cast<std::size_t>(kTicks * kPerTick); }));
  std::cout << "[ NOTE     ] " << got.size() << " messages in " << reads << " socket reads, "
            << sub.readLingers() << " after a linger\n";
  EXPECT_EQ(got, iota(0, kTicks * kPerTick));
  EXPECT_GT(sub.readLingers(), 0u) << "no read lingered at 6,000 messages/s";
  EXPECT_GE(static_cast<double>(got.size()) / static_cast<double>(reads), 3.0)
      << got.size() << " messages in " << reads << " reads at 6,000 messages/s";
}

INSTANTIATE_TEST_SUITE_P(Versions, MqttBroker, ::testing::Values(Version::k311, Version::k5),
                         [](const auto& info) {
                           return info.param == Version::k5 ? std::string("v5")
                                                            : std::string("v311");
                         });

TEST(MqttBrokerOnly, SharedSubscriptionSplitsWithoutOverlap) {
  const std::string t = topic("shared/data");
  const std::string filter = "$share/ferry-g/" + t;
  Collector ca, cb;
  MqttClient a(plain()), b(plain());
  ca.attach(a);
  cb.attach(b);
  ASSERT_TRUE(a.connect().isOk());
  ASSERT_TRUE(b.connect().isOk());
  ASSERT_TRUE(a.subscribe({{filter, 1}}).isOk());
  ASSERT_TRUE(b.subscribe({{filter, 1}}).isOk());
  MqttClient pub(plain());
  ASSERT_TRUE(pub.connect().isOk());
  const int n = 2000;
  publishSeq(pub, t, n, 1);
  std::set<int> all;
  std::size_t total = 0;
  for (int i = 0; i < 100 && total < static_cast<std::size_t>(n); ++i) {
    ca.waitFor(n, 100ms);
    total = ca.snapshot().size() + cb.snapshot().size();
  }
  auto ga = payloads(ca.snapshot());
  auto gb = payloads(cb.snapshot());
  EXPECT_EQ(ga.size() + gb.size(), static_cast<std::size_t>(n));
  EXPECT_GT(ga.size(), 0u);
  EXPECT_GT(gb.size(), 0u);
  for (int x : ga) EXPECT_TRUE(all.insert(x).second) << "twice: " << x;
  for (int x : gb) EXPECT_TRUE(all.insert(x).second) << "twice: " << x;
  EXPECT_EQ(all.size(), static_cast<std::size_t>(n));
}

TEST(MqttBrokerOnly, WildcardsMatchAsTheBrokerDoes) {
  Collector col;
  MqttClient sub(plain());
  col.attach(sub);
  ASSERT_TRUE(sub.connect().isOk());
  ASSERT_TRUE(sub.subscribe({{topic("w/+/temp"), 1}}).isOk());
  MqttClient pub(plain());
  ASSERT_TRUE(pub.connect().isOk());
  for (const char* rest : {"w/a/temp", "w/a/b/temp", "w/b/temp", "w/temp", "w/c/hum"}) {
    pub.publish(OutgoingMessage{topic(rest), rest, 1, false, {}}, nullptr);
  }
  ASSERT_TRUE(pub.flush(5s).isOk());
  ASSERT_TRUE(col.waitFor(2));
  EXPECT_FALSE(col.waitFor(3, 300ms));
  auto got = col.snapshot();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].payload, "w/a/temp");
  EXPECT_EQ(got[1].payload, "w/b/temp");
  for (const auto& m : got) EXPECT_TRUE(topicMatches(topic("w/+/temp"), m.topic)) << m.topic;
}

TEST(MqttBrokerOnly, V5PropertiesAndRetainArrive) {
  const std::string t = topic("props");
  MqttClient pub(plain());
  ASSERT_TRUE(pub.connect().isOk());
  OutgoingMessage m{t, "{\"a\":1}", 1, true, {}};
  m.properties.setText(prop::kContentType, "application/json");
  m.properties.addUser("device", "d-17");
  Status result = Status::internal("not called");
  std::mutex mu;
  pub.publish(m, [&](Status s) {
    std::lock_guard lock(mu);
    result = std::move(s);
  });
  ASSERT_TRUE(pub.flush(5s).isOk());
  {
    std::lock_guard lock(mu);
    ASSERT_TRUE(result.isOk()) << result.toString();
  }
  // Subscribing after the publish: the retained copy arrives with its flag and properties.
  Collector col;
  MqttClient sub(plain());
  col.attach(sub);
  ASSERT_TRUE(sub.connect().isOk());
  ASSERT_TRUE(sub.subscribe({{t, 1}}).isOk());
  ASSERT_TRUE(col.waitFor(1));
  auto got = col.snapshot()[0];
  EXPECT_TRUE(got.retain);
  EXPECT_EQ(got.properties.text(prop::kContentType), "application/json");
  auto users = got.properties.userProperties();
  ASSERT_EQ(users.size(), 1u);
  EXPECT_EQ(users[0].first, "device");
  EXPECT_EQ(users[0].second, "d-17");
  // Clear the retained message.
  pub.publish(OutgoingMessage{t, "", 1, true, {}}, nullptr);
  ASSERT_TRUE(pub.flush(5s).isOk());
}

TEST(MqttBrokerOnly, WrongPasswordIsRefusedClearly) {
  for (Version v : {Version::k311, Version::k5}) {
    auto o = withPassword(plain(v), envPort("FERRY_MQTT_AUTH_PORT", 1));
    o.password = "wrong";
    MqttClient c(o);
    Status st = c.connect();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.toString();
    // mosquitto answers "not authorized" (3.1.1: 5, v5: 0x87), mochi "bad user name or password"
    // (4, 0x86): both name the problem.
    EXPECT_TRUE(st.message().find("not authorized") != std::string::npos ||
                st.message().find("bad user name or password") != std::string::npos)
        << st.toString();
  }
  auto ok = withPassword(plain(), envPort("FERRY_MQTT_AUTH_PORT", 1));
  MqttClient good(ok);
  EXPECT_TRUE(good.connect().isOk());
}

TEST(MqttBrokerOnly, UnreachableBrokerIsUnavailableNamingTheAddress) {
  auto o = plain();
  o.port = 1;  // nothing listens there
  MqttClient c(o);
  Status st = c.connect();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.toString();
  EXPECT_NE(st.message().find("127.0.0.1:1"), std::string::npos) << st.toString();
}

TEST(MqttBrokerOnly, TlsWithCaAndPassword) {
  const std::string t = topic("tls");
  Collector col;
  MqttClient sub(tls(plain()));
  col.attach(sub);
  ASSERT_TRUE(sub.connect().isOk()) << sub.lastError().toString();
  ASSERT_TRUE(sub.subscribe({{t, 1}}).isOk());
  MqttClient pub(tls(plain(Version::k311)));
  ASSERT_TRUE(pub.connect().isOk());
  publishSeq(pub, t, 100, 1);
  ASSERT_TRUE(col.waitFor(100));
  EXPECT_EQ(payloads(col.snapshot()), iota(0, 100));
}

// Over TLS a socket read returns one record, and the broker writes about one record per message:
// a reader that lingered after every read would take one message per linger (5,000 x 5 ms = 25 s
// here). It must linger only once it has drained what the TLS session and its input buffer hold.
TEST(MqttBrokerOnly, TlsReadLingerDoesNotCapTheRate) {
  const std::string t = topic("tls-linger");
  Collector col;
  auto o = tls(plain());
  o.readLinger = 5ms;
  MqttClient sub(o);
  col.attach(sub);
  ASSERT_TRUE(sub.connect().isOk()) << sub.lastError().toString();
  ASSERT_TRUE(sub.subscribe({{t, 1}}).isOk());
  MqttClient pub(plain());
  ASSERT_TRUE(pub.connect().isOk());
  constexpr int kN = 5000;
  const auto t0 = std::chrono::steady_clock::now();
  publishSeq(pub, t, kN, 1);
  ASSERT_TRUE(col.waitFor(kN, 12s)) << col.snapshot().size() << " of " << kN << " arrived in 12 s";
  std::cout << "[ NOTE     ] " << kN << " messages over TLS in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
            << " ms with a 5 ms read linger\n";
  EXPECT_EQ(payloads(col.snapshot()), iota(0, kN));
}

TEST(MqttBrokerOnly, TlsWithoutTheCaFailsVerification) {
  auto o = tls(plain());
  o.tls.caFile = certDir() + "client.crt";  // a certificate, but not the CA that signed the broker's
  MqttClient c(o);
  Status st = c.connect();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.toString();
  EXPECT_NE(st.message().find("TLS handshake"), std::string::npos) << st.toString();
  EXPECT_NE(st.message().find("certificate"), std::string::npos) << st.toString();
}

TEST(MqttBrokerOnly, MissingCaFileIsNamed) {
  auto o = tls(plain());
  o.tls.caFile = "/nonexistent/ca.crt";
  MqttClient c(o);
  Status st = c.connect();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.toString();
  EXPECT_NE(st.message().find("/nonexistent/ca.crt"), std::string::npos) << st.toString();
}

TEST(MqttBrokerOnly, ClientCertificateRequiredAndAccepted) {
  auto o = plain();
  o.port = envPort("FERRY_MQTT_MTLS_PORT", 3);
  o.tls.enabled = true;
  o.tls.caFile = env("FERRY_MQTT_CA", certDir() + "ca.crt");
  {
    MqttClient noCert(o);
    Status st = noCert.connect();
    EXPECT_FALSE(st.isOk());
    EXPECT_NE(st.code(), StatusCode::kTimeout) << st.toString();
  }
  o.tls.certFile = env("FERRY_MQTT_CLIENT_CERT", certDir() + "client.crt");
  o.tls.keyFile = env("FERRY_MQTT_CLIENT_KEY", certDir() + "client.key");
  MqttClient c(o);
  Status st = c.connect();
  ASSERT_TRUE(st.isOk()) << st.toString();
  Collector col;
  MqttClient sub(plain());
  col.attach(sub);
  ASSERT_TRUE(sub.connect().isOk());
  ASSERT_TRUE(sub.subscribe({{topic("mtls"), 1}}).isOk());
  publishSeq(c, topic("mtls"), 10, 1);
  ASSERT_TRUE(col.waitFor(10));
}

// Publishes survive a broker connection drop: the client reconnects and re-sends what was in
// flight (QoS 1 duplicates allowed, nothing lost). The drop is forced by taking the client id
// over from another connection, which makes mosquitto close the first one.
TEST(MqttBrokerOnly, PublisherReconnectsWithoutLoss) {
  const std::string t = topic("takeover");
  Collector col;
  MqttClient sub(plain());
  col.attach(sub);
  ASSERT_TRUE(sub.connect().isOk());
  ASSERT_TRUE(sub.subscribe({{t, 1}}).isOk());
  const std::string id = "ferry-takeover-" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  auto o = plain(Version::k5, id);
  o.cleanStart = false;
  o.sessionExpiryS = 60;
  MqttClient pub(o);
  ASSERT_TRUE(pub.connect().isOk());
  const int n = 3000;
  std::atomic<int> failed{0};
  for (int i = 0; i < n; ++i) {
    pub.publish(OutgoingMessage{t, std::to_string(i), 1, false, {}}, [&](Status s) {
      if (!s.isOk()) ++failed;
    });
    if (i == n / 2) {
      MqttClient thief(o);  // same id: mosquitto disconnects `pub`
      ASSERT_TRUE(thief.connect().isOk());
      thief.close();
    }
  }
  Status st = pub.flush(30s);
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(failed.load(), 0);
  ASSERT_TRUE(col.waitFor(n, 20s));
  std::set<int> seen;
  for (int x : payloads(col.snapshot())) seen.insert(x);
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(n));
  // Mosquitto sends DISCONNECT (session taken over) and closes, or resets the connection:
  // whatever was seen is kept as the last error.
  EXPECT_FALSE(pub.lastError().isOk());
  EXPECT_NE(pub.lastError().message().find(std::to_string(plain().port)), std::string::npos)
      << pub.lastError().toString();
}

}  // namespace
}  // namespace ferry::mqtt
