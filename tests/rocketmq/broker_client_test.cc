// The native RocketMQ client against a real NameServer + Broker (scripts/services/rocketmq
// start): routes, topic creation, sync / async / batch sends. FERRY_ROCKETMQ_NAMESRV gives the
// NameServer (default 127.0.0.1:19876); an unreachable one makes the tests fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "tests/rocketmq/broker_env.h"
#include "rocketmq/client.h"
#include "rocketmq/consumer.h"
#include "rocketmq/producer.h"

namespace ferry::rocketmq {
namespace {

std::string namesrv() {
  const char* env = std::getenv("FERRY_ROCKETMQ_NAMESRV");
  return env != nullptr && *env != '\0' ? env : "127.0.0.1:19876";
}

std::string randomSuffix() {
  std::random_device rd;
  std::mt19937_64 gen(rd());
  return std::to_string(gen() % 100000000000ULL);
}

class RocketmqBroker : public ::testing::Test {
 protected:
  void SetUp() override {
    ClientOptions o;
    o.namesrvAddrs = namesrv();
    auto c = RocketmqClient::create(o);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = std::move(c).value();
    auto info = client_->clusterInfo();
    ASSERT_TRUE(info.isOk()) << "RocketMQ NameServer " << namesrv()
                             << " is not reachable (start it with scripts/services/rocketmq "
                                "start): "
                             << info.status().toString();
  }

  // Creates a fresh topic with `queues` queues on cluster ferry-a.
  std::string freshTopic(int queues) {
    std::string topic = "ferry-t-" + randomSuffix();
    Status s = client_->createTopic(topic, queues, {testenv::cluster()});
    EXPECT_TRUE(s.isOk()) << s.toString();
    return topic;
  }

  std::unique_ptr<RocketmqClient> client_;
};

OutgoingMessage makeMessage(const std::string& topic, int i) {
  OutgoingMessage m;
  m.topic = topic;
  m.body = std::string("bin\0ary-", 8) + std::to_string(i) + std::string(1, '\0');
  m.properties["TAGS"] = i % 2 == 0 ? "even" : "odd";
  m.properties["KEYS"] = "key-" + std::to_string(i);
  m.properties["ferry.index"] = std::to_string(i);
  return m;
}

TEST_F(RocketmqBroker, SmokeTopicRouteListsBrokerFerryA) {
  auto r = client_->queryRoute("ferry-smoke");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  bool found = false;
  for (const auto& b : r->brokerDatas) found = found || b.brokerName == testenv::cluster();
  EXPECT_TRUE(found);
  EXPECT_TRUE(r->masterAddress(testenv::cluster()).has_value());
  EXPECT_FALSE(r->publishQueues().empty());
  auto addr = client_->brokerAddress(testenv::cluster());
  ASSERT_TRUE(addr.isOk()) << addr.status().toString();
  EXPECT_EQ(*addr, *r->masterAddress(testenv::cluster()));
}

TEST_F(RocketmqBroker, UnknownTopicIsNotFound) {
  auto r = client_->queryRoute("ferry-absent-" + randomSuffix());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().toString();
}

TEST_F(RocketmqBroker, CreateTopicThenRouteShowsFourQueues) {
  std::string topic = freshTopic(4);
  auto r = client_->queryRoute(topic, true);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->publishQueues().size(), 4u);
  EXPECT_EQ(r->subscribeQueues().size(), 4u);
}

TEST_F(RocketmqBroker, ThousandSyncSendsHaveIncreasingOffsetsPerQueue) {
  std::string topic = freshTopic(4);
  Producer producer(*client_, {});
  std::map<std::int32_t, std::int64_t> last;
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    auto r = producer.send(makeMessage(topic, i));
    ASSERT_TRUE(r.isOk()) << "message " << i << ": " << r.status().toString();
    EXPECT_EQ(r->brokerName, testenv::cluster());
    auto it = last.find(r->queueId);
    if (it != last.end()) {
      EXPECT_GT(r->queueOffset, it->second);
    }
    last[r->queueId] = r->queueOffset;
    ids.insert(r->msgId);
  }
  EXPECT_EQ(last.size(), 4u);  // round-robin used every queue
  EXPECT_EQ(ids.size(), 1000u);
}

TEST_F(RocketmqBroker, TenThousandAsyncSends) {
  std::string topic = freshTopic(4);
  Producer producer(*client_, {});
  constexpr int kCount = 10000;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<std::string> errors;
  std::map<std::int32_t, std::vector<std::int64_t>> offsets;
  for (int i = 0; i < kCount; ++i) {
    producer.sendAsync(makeMessage(topic, i), {}, [&](Result<SendResult> r) {
      std::lock_guard lock(mu);
      if (r.isOk()) {
        offsets[r->queueId].push_back(r->queueOffset);
      } else if (errors.size() < 5) {
        errors.push_back(r.status().toString());
      }
      ++done;
      cv.notify_all();
    });
  }
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return done == kCount; }));
  ASSERT_TRUE(errors.empty()) << errors.front();
  std::size_t total = 0;
  for (auto& [q, offs] : offsets) {
    std::sort(offs.begin(), offs.end());
    total += offs.size();
    // A fresh queue: offsets 0..n-1, each exactly once.
    EXPECT_EQ(offs.front(), 0) << "queue " << q;
    EXPECT_EQ(offs.back(), static_cast<std::int64_t>(offs.size()) - 1) << "queue " << q;
    EXPECT_EQ(std::adjacent_find(offs.begin(), offs.end()), offs.end()) << "queue " << q;
  }
  EXPECT_EQ(total, static_cast<std::size_t>(kCount));
}

TEST_F(RocketmqBroker, BatchSendsGetConsecutiveOffsets) {
  std::string topic = freshTopic(4);
  Producer producer(*client_, {});
  std::map<std::int32_t, std::int64_t> expected;
  for (int b = 0; b < 100; ++b) {
    std::vector<OutgoingMessage> batch;
    for (int i = 0; i < 10; ++i) batch.push_back(makeMessage(topic, b * 10 + i));
    const std::int32_t queue = b % 4;
    auto r = producer.sendBatch(batch, QueueSelection::queue(testenv::cluster(), queue));
    ASSERT_TRUE(r.isOk()) << "batch " << b << ": " << r.status().toString();
    EXPECT_EQ(r->queueId, queue);
    EXPECT_EQ(r->queueOffset, expected[queue]) << "batch " << b;
    expected[queue] += 10;
    EXPECT_EQ(std::count(r->msgId.begin(), r->msgId.end(), ','), 9);
  }
}

// Regression: the batch wrapper carried a UNIQ_KEY of its own, which 4.9.x and 5.3.x brokers copy
// onto every message of the batch, so all of them were stored with one message id.
TEST_F(RocketmqBroker, BatchMessagesKeepTheirOwnIdsWhenPulledBack) {
  const std::string topic = freshTopic(1);
  Producer producer(*client_, {});
  std::vector<OutgoingMessage> batch;
  for (int i = 0; i < 16; ++i) batch.push_back(makeMessage(topic, i));
  auto sent = producer.sendBatch(batch, QueueSelection::queue(testenv::cluster(), 0));
  ASSERT_TRUE(sent.isOk()) << sent.status().toString();
  std::vector<std::string> ids;
  for (std::size_t start = 0;;) {
    const auto comma = sent->msgId.find(',', start);
    ids.push_back(sent->msgId.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  ASSERT_EQ(ids.size(), 16u);
  ASSERT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 16u);
  const auto stored = testenv::pullStored(*client_, {topic, testenv::cluster(), 0}, sent->queueOffset, 16);
  ASSERT_EQ(stored.size(), 16u);
  std::set<std::string> storedIds;
  for (std::size_t i = 0; i < stored.size(); ++i) {
    EXPECT_EQ(stored[i].properties.at("ferry.index"), std::to_string(i));
    EXPECT_EQ(stored[i].properties.at("UNIQ_KEY"), ids[i]) << "message " << i;
    storedIds.insert(stored[i].properties.at("UNIQ_KEY"));
  }
  EXPECT_EQ(storedIds.size(), 16u);
}

// The broker's version is read off its answers (the `version` header field) and named.
TEST_F(RocketmqBroker, BrokerVersionIsTheClustersRelease) {
  auto addr = client_->brokerAddress(testenv::cluster());
  ASSERT_TRUE(addr.isOk()) << addr.status().toString();
  auto v = client_->brokerVersion(*addr);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(mqVersionName(*v), testenv::expectedVersion()) << "ordinal " << *v;
  // The NameServer answers with its version too.
  auto ns = client_->brokerVersion(client_->namesrvAddresses().front());
  ASSERT_TRUE(ns.isOk()) << ns.status().toString();
  EXPECT_EQ(mqVersionName(*ns), testenv::expectedVersion()) << "ordinal " << *ns;
}

TEST_F(RocketmqBroker, CompressedSendRoundTripsByteExact) {
  // A 64 KiB compressible body goes out zlib-compressed (over compressOverBytes, as the Java
  // producer); the broker stores it as sent (the raw pull answer is much smaller than the body)
  // and it inflates back to the original bytes.
  const std::string topic = freshTopic(1);
  std::string big;
  big.reserve(64 * 1024);
  for (int i = 0; big.size() < 64 * 1024; ++i) big += "reading-" + std::to_string(i % 97) + '\0';
  big.resize(64 * 1024);
  Producer producer(*client_);
  OutgoingMessage m;
  m.topic = topic;
  m.body = big;
  m.properties["TAGS"] = "big";
  auto sent = producer.send(m, QueueSelection::queue(testenv::cluster(), 0));
  ASSERT_TRUE(sent.isOk()) << sent.status().toString();

  auto r = testenv::pullOnce(*client_, MessageQueue{topic, testenv::cluster(), 0},
                             sent->queueOffset, 1);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->code, 0) << r->remark.value_or("");  // FOUND
  EXPECT_LT(r->body.size(), big.size() / 4);          // stored compressed
  StoredDecode d = decodeStoredMessages(r->body);
  ASSERT_TRUE(d.complete) << d.error;
  ASSERT_EQ(d.messages.size(), 1u);
  EXPECT_EQ(d.messages[0].queueOffset, sent->queueOffset);
  EXPECT_EQ(d.messages[0].body, big);
  EXPECT_EQ(d.messages[0].properties.at("TAGS"), "big");
}

TEST(RocketmqBrokerErrors, UnknownNameServerFailsQuicklyWithUnavailable) {
  ClientOptions o;
  o.namesrvAddrs = "127.0.0.1:1";
  auto c = RocketmqClient::create(o);
  ASSERT_TRUE(c.isOk());
  auto start = std::chrono::steady_clock::now();
  auto r = (*c)->queryRoute("ferry-smoke");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().toString();
  EXPECT_NE(r.status().message().find("127.0.0.1:1"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

}  // namespace
}  // namespace ferry::rocketmq
