// PullConsumer against a real NameServer + Broker (scripts/services/rocketmq start): consume a
// produced topic byte-exact and in per-queue order, resume exactly after committed offsets, split
// a topic between two members of a group, and a tag-filtered subscription.
// FERRY_ROCKETMQ_NAMESRV gives the NameServer (default 127.0.0.1:19876); an unreachable one makes
// the tests fail.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>

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

std::unique_ptr<RocketmqClient> newClient() {
  ClientOptions o;
  o.namesrvAddrs = namesrv();
  auto c = RocketmqClient::create(o);
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  return c.isOk() ? std::move(c).value() : nullptr;
}

OutgoingMessage makeMessage(const std::string& topic, int i) {
  OutgoingMessage m;
  m.topic = topic;
  m.body = std::string("bin\0ary\xff-", 9) + std::to_string(i) + std::string(i % 7, 'x');
  m.properties["TAGS"] = i % 2 == 0 ? "TagA" : "TagB";
  m.properties["KEYS"] = "key-" + std::to_string(i);
  m.properties["ferry.index"] = std::to_string(i);
  m.properties["ferry.text"] = "h\xc3\xa9llo w\xc3\xb6rld " + std::to_string(i * 31);
  return m;
}

struct Sent {
  int index = 0;
  OutgoingMessage message;
};

class RocketmqConsumerBroker : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = newClient();
    ASSERT_NE(admin_, nullptr);
    auto info = admin_->clusterInfo();
    ASSERT_TRUE(info.isOk()) << "RocketMQ NameServer " << namesrv()
                             << " is not reachable (start it with scripts/services/rocketmq "
                                "start): "
                             << info.status().toString();
  }

  std::string freshTopic(int queues) {
    std::string topic = "ferry-c-" + randomSuffix();
    Status s = admin_->createTopic(topic, queues, {testenv::cluster()});
    EXPECT_TRUE(s.isOk()) << s.toString();
    return topic;
  }

  // Sends `n` messages (async, round robin); returns (queue, offset) -> what was sent.
  std::map<std::pair<MessageQueue, std::int64_t>, Sent> produce(const std::string& topic, int n) {
    Producer producer(*admin_, {});
    std::mutex mu;
    std::condition_variable cv;
    int done = 0;
    std::map<std::pair<MessageQueue, std::int64_t>, Sent> sent;
    for (int i = 0; i < n; ++i) {
      OutgoingMessage m = makeMessage(topic, i);
      producer.sendAsync(m, QueueSelection::roundRobin(),
                         [&, i, m](Result<SendResult> r) {
                           std::lock_guard lock(mu);
                           EXPECT_TRUE(r.isOk()) << r.status().toString();
                           if (r.isOk()) {
                             sent[{MessageQueue{topic, r->brokerName, r->queueId},
                                   r->queueOffset}] = Sent{i, m};
                           }
                           ++done;
                           cv.notify_all();
                         });
    }
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done == n; }));
    EXPECT_EQ(sent.size(), static_cast<std::size_t>(n));
    return sent;
  }

  std::unique_ptr<RocketmqClient> admin_;
};

ConsumerOptions consumerOptions(const std::string& group, const std::string& topic,
                                const std::string& expression = "*") {
  ConsumerOptions o;
  o.group = group;
  o.subscriptions = {{topic, expression}};
  o.fromWhere = ConsumeFromWhere::kFirstOffset;
  return o;
}

// Polls until `n` messages arrived or 60 s passed.
std::vector<PulledMessage> pollAtLeast(PullConsumer& c, std::size_t n,
                                       std::chrono::seconds limit = std::chrono::seconds(60)) {
  std::vector<PulledMessage> all;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (all.size() < n && std::chrono::steady_clock::now() < deadline) {
    auto r = c.poll(500, std::chrono::milliseconds(200));
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    if (!r.isOk()) break;
    for (auto& m : *r) all.push_back(std::move(m));
  }
  return all;
}

// Checks every pulled message against what was sent (byte-exact body, sent properties present
// with equal values), no duplicate, strictly increasing offsets per queue.
void checkExact(const std::vector<PulledMessage>& got,
                const std::map<std::pair<MessageQueue, std::int64_t>, Sent>& sent) {
  std::set<std::pair<MessageQueue, std::int64_t>> seen;
  std::map<MessageQueue, std::int64_t> last;
  for (const auto& m : got) {
    auto key = std::make_pair(m.queue(), m.message.queueOffset);
    ASSERT_TRUE(seen.insert(key).second) << "duplicate " << m.queue().toString() << "@"
                                         << m.message.queueOffset;
    auto it = sent.find(key);
    ASSERT_NE(it, sent.end()) << "unexpected " << m.queue().toString() << "@"
                              << m.message.queueOffset;
    EXPECT_EQ(m.message.body, it->second.message.body);
    for (const auto& [k, v] : it->second.message.properties) {
      auto p = m.message.properties.find(k);
      ASSERT_NE(p, m.message.properties.end()) << "property " << k << " missing";
      EXPECT_EQ(p->second, v) << "property " << k;
    }
    auto l = last.find(m.queue());
    if (l != last.end()) {
      EXPECT_EQ(m.message.queueOffset, l->second + 1) << "order in " << m.queue().toString();
    }
    last[m.queue()] = m.message.queueOffset;
  }
}

TEST_F(RocketmqConsumerBroker, ConsumesAllExactlyThenResumesAfterCommittedOffsets) {
  const std::string topic = freshTopic(4);
  auto sent = produce(topic, 2000);
  ASSERT_EQ(sent.size(), 2000u);
  const std::string group = "ferry-g-" + randomSuffix();

  std::map<MessageQueue, std::int64_t> commitAt;
  std::size_t expectAfter = 0;
  {
    auto client = newClient();
    PullConsumer consumer(*client, consumerOptions(group, topic));
    ASSERT_TRUE(consumer.start().isOk());
    auto got = pollAtLeast(consumer, 2000);
    ASSERT_EQ(got.size(), 2000u);
    checkExact(got, sent);
    EXPECT_EQ(consumer.assignment().size(), 4u);
    // Every queue starts at 0; "process" the first 60% of each queue and commit that position.
    std::map<MessageQueue, std::int64_t> perQueue;
    for (const auto& m : got) {
      EXPECT_GE(m.message.queueOffset, 0);
      perQueue[m.queue()] = std::max(perQueue[m.queue()], m.message.queueOffset + 1);
    }
    ASSERT_EQ(perQueue.size(), 4u);
    for (const auto& [q, end] : perQueue) {
      commitAt[q] = end * 6 / 10;
      expectAfter += static_cast<std::size_t>(end - commitAt[q]);
    }
    Status s = consumer.commit(commitAt);
    ASSERT_TRUE(s.isOk()) << s.toString();
    consumer.close();
  }
  auto client = newClient();
  PullConsumer resumed(*client, consumerOptions(group, topic));
  ASSERT_TRUE(resumed.start().isOk());
  auto got = pollAtLeast(resumed, expectAfter);
  // A little longer: anything beyond would be a duplicate.
  auto extra = resumed.poll(500, std::chrono::milliseconds(1000));
  ASSERT_TRUE(extra.isOk());
  for (auto& m : *extra) got.push_back(std::move(m));
  ASSERT_EQ(got.size(), expectAfter);
  checkExact(got, sent);
  std::map<MessageQueue, std::int64_t> first;
  for (const auto& m : got) {
    auto it = first.find(m.queue());
    if (it == first.end()) first[m.queue()] = m.message.queueOffset;
  }
  for (const auto& [q, off] : commitAt) {
    EXPECT_EQ(first[q], off) << "queue " << q.toString() << " resumed at the wrong offset";
  }
}

TEST_F(RocketmqConsumerBroker, TwoMembersSplitTheQueuesAndSeeEveryMessageOnce) {
  const std::string topic = freshTopic(4);
  const std::string group = "ferry-g-" + randomSuffix();
  auto c1 = newClient();
  auto c2 = newClient();
  PullConsumer a(*c1, consumerOptions(group, topic));
  PullConsumer b(*c2, consumerOptions(group, topic));
  ASSERT_TRUE(a.start().isOk());
  ASSERT_TRUE(b.start().isOk());
  // Let the group converge (NOTIFY from the broker) before anything is produced.
  std::vector<PulledMessage> got;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline &&
         (a.assignment().size() != 2 || b.assignment().size() != 2)) {
    for (PullConsumer* c : {&a, &b}) {
      auto r = c->poll(100, std::chrono::milliseconds(100));
      ASSERT_TRUE(r.isOk());
      EXPECT_TRUE(r->empty());
    }
  }
  ASSERT_EQ(a.assignment().size(), 2u);
  ASSERT_EQ(b.assignment().size(), 2u);
  std::set<MessageQueue> all;
  for (const auto& q : a.assignment()) all.insert(q);
  for (const auto& q : b.assignment()) all.insert(q);
  EXPECT_EQ(all.size(), 4u);

  auto sent = produce(topic, 400);
  std::size_t fromA = 0;
  std::size_t fromB = 0;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (got.size() < 400 && std::chrono::steady_clock::now() < deadline) {
    for (PullConsumer* c : {&a, &b}) {
      auto r = c->poll(500, std::chrono::milliseconds(100));
      ASSERT_TRUE(r.isOk());
      for (auto& m : *r) {
        auto mine = c->assignment();
        EXPECT_NE(std::find(mine.begin(), mine.end(), m.queue()), mine.end());
        (c == &a ? fromA : fromB) += 1;
        got.push_back(std::move(m));
      }
    }
  }
  EXPECT_EQ(got.size(), 400u);
  EXPECT_EQ(fromA + fromB, 400u);
  EXPECT_GT(fromA, 0u);
  EXPECT_GT(fromB, 0u);
  checkExact(got, sent);
}

TEST_F(RocketmqConsumerBroker, TagSubscriptionSeesOnlyThatTag) {
  const std::string topic = freshTopic(4);
  auto sent = produce(topic, 200);
  auto client = newClient();
  PullConsumer consumer(*client, consumerOptions("ferry-g-" + randomSuffix(), topic, "TagA"));
  ASSERT_TRUE(consumer.start().isOk());
  auto got = pollAtLeast(consumer, 100);
  auto extra = consumer.poll(500, std::chrono::milliseconds(1000));
  ASSERT_TRUE(extra.isOk());
  for (auto& m : *extra) got.push_back(std::move(m));
  ASSERT_EQ(got.size(), 100u);
  for (const auto& m : got) {
    EXPECT_EQ(m.message.properties.at("TAGS"), "TagA");
    auto it = sent.find({m.queue(), m.message.queueOffset});
    ASSERT_NE(it, sent.end());
    EXPECT_EQ(it->second.index % 2, 0);
    EXPECT_EQ(m.message.body, it->second.message.body);
  }
}

TEST_F(RocketmqConsumerBroker, CompressedBodiesRoundTripByteExact) {
  // ferry compresses single bodies of 4 KiB and more (zlib, like the Java producer); the broker
  // stores them compressed and the consumer inflates them.
  const std::string topic = freshTopic(1);
  auto client = newClient();
  Producer producer(*client);
  std::string big;
  for (int i = 0; i < 8192; ++i) big += static_cast<char>("ferry\0\xff"[i % 7]);  // 64 KiB, compressible
  std::string random(6000, '\0');
  std::mt19937 gen(7);
  for (char& c : random) c = static_cast<char>(gen());  // not compressible: sent as is
  for (const std::string* body : {&big, &random}) {
    OutgoingMessage m;
    m.topic = topic;
    m.body = *body;
    auto r = producer.send(m);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
  }
  PullConsumer consumer(*client, consumerOptions("ferry-g-" + randomSuffix(), topic));
  ASSERT_TRUE(consumer.start().isOk());
  auto got = pollAtLeast(consumer, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].message.body, big);
  EXPECT_EQ(got[1].message.body, random);
}

}  // namespace
}  // namespace ferry::rocketmq
