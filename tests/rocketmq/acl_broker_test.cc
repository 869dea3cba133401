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
  EXPECT_NE(msg.find("check signature failed"), std::string::npos) << msg;  // the broker's reason
  Status create = bad->createTopic(freshName("ferry-acl-x-"), 1, {testenv::secureCluster()});
  ASSERT_FALSE(create.isOk());
  EXPECT_NE(create.toString().find("check signature failed"), std::string::npos) << create.toString();
  // An access key the broker does not know.
  auto stranger = client("ferryNobody", secretKey());
  ASSERT_NE(stranger, nullptr);
  Status s = stranger->createTopic(freshName("ferry-acl-x-"), 1, {testenv::secureCluster()});
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.toString().find("ferryNobody"), std::string::npos) << s.toString();
  EXPECT_NE(s.toString().find("not found"), std::string::npos) << s.toString();
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
  EXPECT_NE(msg.find("no permission"), std::string::npos) << msg;  // the broker's reason
  EXPECT_NE(msg.find("access key '" + readerKey() + "'"), std::string::npos) << msg;

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

}  // namespace
}  // namespace ferry::rocketmq
