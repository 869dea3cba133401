// ACL signing against a real secured broker: cluster S of scripts/services/rocketmq (ACL 2.0
// authentication and authorization on; NameServer in FERRY_ROCKETMQ_SECURE_NAMESRV, default
// 127.0.0.1:39876; super user ferryAdmin / ferrySecret12345 unless
// FERRY_ROCKETMQ_SECURE_ACCESS_KEY / _SECRET_KEY say otherwise; normal user ferryReader /
// ferryReader12345, Sub only, unless FERRY_ROCKETMQ_SECURE_READER_KEY / _SECRET). With the right
// keys topics are created, messages sent and pulled back; with a wrong secret or no keys the broker
// refuses and the error says so; the normal user may consume but not send. Fails when S is
// unreachable.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <set>

#include "tests/rocketmq/broker_env.h"
#include "rocketmq/admin.h"
#include "rocketmq/client.h"
#include "rocketmq/consumer.h"
#include "rocketmq/producer.h"

namespace ferry::rocketmq {
namespace {

std::string env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::string secureNamesrv() { return env("FERRY_ROCKETMQ_SECURE_NAMESRV", "127.0.0.1:39876"); }
std::string accessKey() { return env("FERRY_ROCKETMQ_SECURE_ACCESS_KEY", "ferryAdmin"); }
std::string secretKey() { return env("FERRY_ROCKETMQ_SECURE_SECRET_KEY", "ferrySecret12345"); }
std::string readerKey() { return env("FERRY_ROCKETMQ_SECURE_READER_KEY", "ferryReader"); }
std::string readerSecret() { return env("FERRY_ROCKETMQ_SECURE_READER_SECRET", "ferryReader12345"); }

std::unique_ptr<RocketmqClient> client(const std::string& ak, const std::string& sk) {
  ClientOptions o;
  o.namesrvAddrs = secureNamesrv();
  o.accessKey = ak;
  o.secretKey = sk;
  auto c = RocketmqClient::create(o);
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  return c.isOk() ? std::move(c).value() : nullptr;
}

std::string freshName(const char* prefix) {
  std::random_device rd;
  return std::string(prefix) + std::to_string(std::mt19937_64(rd())() % 100000000000ULL);
}

class RocketmqAclBroker : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = client(accessKey(), secretKey());
    ASSERT_NE(good_, nullptr);
    auto info = good_->clusterInfo();
    ASSERT_TRUE(info.isOk()) << "secured RocketMQ NameServer " << secureNamesrv()
                             << " is not reachable (scripts/services/rocketmq start S): "
                             << info.status().toString();
  }
  std::unique_ptr<RocketmqClient> good_;
};

TEST_F(RocketmqAclBroker, SignedRequestsWork) {
  const std::string topic = freshName("ferry-acl-");
  Status created = good_->createTopic(topic, 2, {testenv::secureCluster()});
  ASSERT_TRUE(created.isOk()) << created.toString();
  Producer producer(*good_);
  OutgoingMessage m;
  m.topic = topic;
  m.body = std::string("secured\0body", 12);
  m.properties["TAGS"] = "T";
  auto sent = producer.send(m, QueueSelection::queue(testenv::secureCluster(), 1));
  ASSERT_TRUE(sent.isOk()) << sent.status().toString();

  // Pull it back (PULL, HEART_BEAT, QUERY/UPDATE_CONSUMER_OFFSET are all signed).
  ConsumerOptions co;
  co.group = freshName("ferry-acl-g-");
  co.subscriptions = {{topic, "*"}};
  co.fromWhere = ConsumeFromWhere::kFirstOffset;
  co.longPollingSuspendMs = 1000;
  co.pullTimeoutMs = 5000;
  auto consumerClient = client(accessKey(), secretKey());
  ASSERT_NE(consumerClient, nullptr);
  PullConsumer consumer(*consumerClient, co);
  ASSERT_TRUE(consumer.start().isOk());
  std::vector<PulledMessage> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (got.empty() && std::chrono::steady_clock::now() < deadline) {
    auto r = consumer.poll(10, std::chrono::milliseconds(500));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    got.insert(got.end(), r->begin(), r->end());
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].message.body, m.body);
  EXPECT_EQ(got[0].message.queueId, 1);
  ASSERT_TRUE(consumer.commit({{got[0].queue(), got[0].message.queueOffset + 1}}).isOk());
  auto committed = queryGroupOffset(*good_, co.group, got[0].queue());
  ASSERT_TRUE(committed.isOk()) << committed.status().toString();
  EXPECT_EQ(committed->value_or(-1), got[0].message.queueOffset + 1);
  consumer.close();
}

TEST_F(RocketmqAclBroker, WrongSecretIsRefusedWithAClearError) {
  const std::string topic = freshName("ferry-acl-");
  ASSERT_TRUE(good_->createTopic(topic, 1, {testenv::secureCluster()}).isOk());
  auto bad = client(accessKey(), "not-the-secret");
  ASSERT_NE(bad, nullptr);
  Producer producer(*bad, ProducerOptions{.group = "ferry_producer", .retries = 0});
  OutgoingMessage m;
  m.topic = topic;
  m.body = "x";
  auto sent = producer.send(m);
  ASSERT_FALSE(sent.isOk());
  const std::string msg = sent.status().toString();
  EXPECT_NE(msg.find("NO_PERMISSION"), std::string::npos) << msg;
  EXPECT_NE(msg.find("access key '" + accessKey() + "'"), std::string::npos) << msg;
  // The broker's reason: "check signature failed." (5.x), "Check signature failed for
  // accessKey=..." (4.x, whose AclException comes back as 1 SYSTEM_ERROR).
  EXPECT_NE(msg.find("heck signature failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs PUB permission"), std::string::npos) << msg;
  // Regression: on 4.x the refusal (code 1) was a retriable error, so a task restarted forever.
  EXPECT_FALSE(sent.status().isRetriable()) << msg;
  Status create = bad->createTopic(freshName("ferry-acl-x-"), 1, {testenv::secureCluster()});
  ASSERT_FALSE(create.isOk());
  EXPECT_FALSE(create.isRetriable()) << create.toString();
  EXPECT_NE(create.toString().find("heck signature failed"), std::string::npos) << create.toString();
  // A consumer with the wrong secret fails to start, for good (its heartbeat is refused).
  ConsumerOptions co;
  co.group = freshName("ferry-acl-g-");
  co.subscriptions = {{topic, "*"}};
  PullConsumer consumer(*bad, co);
  Status started = consumer.start();
  ASSERT_FALSE(started.isOk());
  EXPECT_FALSE(started.isRetriable()) << started.toString();
  EXPECT_NE(started.toString().find("needs SUB permission"), std::string::npos) << started.toString();
  consumer.close();
  // An access key the broker does not know.
  auto stranger = client("ferryNobody", secretKey());
  ASSERT_NE(stranger, nullptr);
  Status s = stranger->createTopic(freshName("ferry-acl-x-"), 1, {testenv::secureCluster()});
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.toString().find("ferryNobody"), std::string::npos) << s.toString();
  // "User:ferryNobody is not found." (5.x), "No acl config for ferryNobody" (4.x).
  EXPECT_TRUE(s.toString().find("not found") != std::string::npos ||
              s.toString().find("No acl config") != std::string::npos)
      << s.toString();
  EXPECT_FALSE(s.isRetriable()) << s.toString();
}

TEST_F(RocketmqAclBroker, UnsignedRequestsAreRefused) {
  auto anonymous = client("", "");
  ASSERT_NE(anonymous, nullptr);
  Status s = anonymous->createTopic(freshName("ferry-acl-anon-"), 1, {testenv::secureCluster()});
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.toString().find("NO_PERMISSION"), std::string::npos) << s.toString();
  EXPECT_NE(s.toString().find("no access key configured"), std::string::npos) << s.toString();
  // Sends too (the NameServer is open, so the route is found; the broker refuses).
  const std::string topic = freshName("ferry-acl-");
  ASSERT_TRUE(good_->createTopic(topic, 1, {testenv::secureCluster()}).isOk());
  Producer producer(*anonymous, ProducerOptions{.group = "ferry_producer", .retries = 0});
  OutgoingMessage m;
  m.topic = topic;
  m.body = "x";
  auto sent = producer.send(m);
  ASSERT_FALSE(sent.isOk());
  EXPECT_NE(sent.status().toString().find("NO_PERMISSION"), std::string::npos)
      << sent.status().toString();
}

TEST_F(RocketmqAclBroker, NormalUserIsHeldToItsAcl) {
  const std::string topic = freshName("ferry-acl-");
  ASSERT_TRUE(good_->createTopic(topic, 1, {testenv::secureCluster()}).isOk());
  Producer admin(*good_);
  OutgoingMessage m;
  m.topic = topic;
  m.body = "for the reader";
  ASSERT_TRUE(admin.send(m).isOk());

  auto reader = client(readerKey(), readerSecret());
  ASSERT_NE(reader, nullptr);
  // Authenticated, but no Pub policy: authorization refuses the send.
  Producer producer(*reader, ProducerOptions{.group = "ferry_producer", .retries = 0});
  auto sent = producer.send(m);
  ASSERT_FALSE(sent.isOk());
  const std::string msg = sent.status().toString();
  EXPECT_NE(msg.find("NO_PERMISSION"), std::string::npos) << msg;
  EXPECT_NE(msg.find("access key '" + readerKey() + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs PUB permission"), std::string::npos) << msg;
  EXPECT_FALSE(sent.status().isRetriable()) << msg;

  // Sub is allowed: heartbeat, offsets and pulls work.
  ConsumerOptions co;
  co.group = freshName("ferry-acl-g-");
  co.subscriptions = {{topic, "*"}};
  co.fromWhere = ConsumeFromWhere::kFirstOffset;
  co.longPollingSuspendMs = 1000;
  co.pullTimeoutMs = 5000;
  PullConsumer consumer(*reader, co);
  Status started = consumer.start();
  ASSERT_TRUE(started.isOk()) << started.toString();
  std::vector<PulledMessage> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (got.empty() && std::chrono::steady_clock::now() < deadline) {
    auto r = consumer.poll(10, std::chrono::milliseconds(500));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    got.insert(got.end(), r->begin(), r->end());
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].message.body, m.body);
  consumer.close();
}

// Regression: a 4.9.x broker with ACL 1.0 checks no PUB permission for SEND_BATCH_MESSAGE (its
// PlainAccessValidator has no case for code 320), so a reader could write through a batch (the
// sink and the Replicator always batch). A signing client now sends batches to 4.x as single
// sends, which that broker checks; 5.x checks batches itself.
TEST_F(RocketmqAclBroker, ReaderCannotWriteThroughABatch) {
  const std::string topic = freshName("ferry-acl-");
  ASSERT_TRUE(good_->createTopic(topic, 1, {testenv::secureCluster()}).isOk());
  auto reader = client(readerKey(), readerSecret());
  ASSERT_NE(reader, nullptr);
  Producer producer(*reader, ProducerOptions{.group = "ferry_producer", .retries = 0});
  std::vector<OutgoingMessage> batch;
  for (int i = 0; i < 4; ++i) {
    OutgoingMessage m;
    m.topic = topic;
    m.body = "not for the reader " + std::to_string(i);
    batch.push_back(std::move(m));
  }
  auto sent = producer.sendBatch(batch);
  ASSERT_FALSE(sent.isOk()) << "a read-only account wrote a batch";
  const std::string msg = sent.status().toString();
  EXPECT_NE(msg.find("NO_PERMISSION"), std::string::npos) << msg;
  EXPECT_NE(msg.find("access key '" + readerKey() + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("PUB"), std::string::npos) << msg;
  EXPECT_FALSE(sent.status().isRetriable()) << msg;
  auto max = maxOffset(*good_, MessageQueue{topic, testenv::secureCluster(), 0});
  ASSERT_TRUE(max.isOk()) << max.status().toString();
  EXPECT_EQ(*max, 0);  // nothing stored
}

TEST_F(RocketmqAclBroker, AdminBatchesAreStoredWithTheirIds) {
  const std::string topic = freshName("ferry-acl-");
  ASSERT_TRUE(good_->createTopic(topic, 1, {testenv::secureCluster()}).isOk());
  Producer producer(*good_);
  std::vector<OutgoingMessage> batch;
  for (int i = 0; i < 8; ++i) {
    OutgoingMessage m;
    m.topic = topic;
    m.body = "batched " + std::to_string(i);
    m.properties["ferry.index"] = std::to_string(i);
    batch.push_back(std::move(m));
  }
  const MessageQueue q{topic, testenv::secureCluster(), 0};
  auto sent = producer.sendBatch(batch, QueueSelection::queue(q.brokerName, 0));
  ASSERT_TRUE(sent.isOk()) << sent.status().toString();
  EXPECT_EQ(sent->queueOffset, 0);
  const auto stored = testenv::pullStored(*good_, q, 0, 8);
  ASSERT_EQ(stored.size(), 8u);
  std::set<std::string> ids;
  std::string joined;
  for (std::size_t i = 0; i < stored.size(); ++i) {
    EXPECT_EQ(stored[i].queueOffset, static_cast<std::int64_t>(i));
    EXPECT_EQ(stored[i].body, "batched " + std::to_string(i));
    const std::string id = stored[i].properties.at("UNIQ_KEY");
    ids.insert(id);
    joined += (i == 0 ? "" : ",") + id;
  }
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_EQ(joined, sent->msgId);
}

}  // namespace
}  // namespace ferry::rocketmq
