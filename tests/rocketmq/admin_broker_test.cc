// rocketmq/admin.h against a real NameServer + Broker (scripts/services/rocketmq start): topic
// list, system-topic filter on real names, a group's offsets written and read from outside the
// group (QUERY/UPDATE_CONSUMER_OFFSET, GET_CONSUME_STATS), group deletion, min/max offsets.
// FERRY_ROCKETMQ_NAMESRV gives the NameServer (default 127.0.0.1:19876) and
// FERRY_ROCKETMQ_CLUSTER the cluster topics are created in (default ferry-a); an unreachable
// NameServer makes the tests fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "rocketmq/admin.h"
#include "rocketmq/client.h"
#include "rocketmq/producer.h"

namespace ferry::rocketmq {
namespace {

std::string env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::string randomSuffix() {
  std::random_device rd;
  std::mt19937_64 gen(rd());
  return std::to_string(gen() % 100000000000ULL);
}

class RocketmqAdminBroker : public ::testing::Test {
 protected:
  void SetUp() override {
    ClientOptions o;
    o.namesrvAddrs = env("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876");
    auto c = RocketmqClient::create(o);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = std::move(c).value();
    auto info = client_->clusterInfo();
    ASSERT_TRUE(info.isOk()) << "RocketMQ NameServer " << o.namesrvAddrs
                             << " is not reachable (start it with scripts/services/rocketmq start): "
                             << info.status().toString();
    cluster_ = env("FERRY_ROCKETMQ_CLUSTER", "ferry-a");
    ASSERT_TRUE(info->clusters.count(cluster_)) << "no cluster " << cluster_;
    brokers_ = info->clusters[cluster_];
  }

  // A fresh topic of `queues` queues holding `perQueue` messages in each queue.
  std::string topicWithMessages(int queues, int perQueue) {
    const std::string topic = "ferry-adm-" + randomSuffix();
    Status s = client_->createTopic(topic, queues, {cluster_});
    EXPECT_TRUE(s.isOk()) << s.toString();
    Producer producer(*client_, {});
    auto qs = topicQueues(*client_, topic);
    EXPECT_TRUE(qs.isOk()) << qs.status().toString();
    if (!qs.isOk()) return topic;
    for (const auto& q : *qs) {
      for (int i = 0; i < perQueue; ++i) {
        OutgoingMessage m;
        m.topic = topic;
        m.body = "m" + std::to_string(i);
        auto r = producer.send(m, QueueSelection::queue(q.brokerName, q.queueId));
        EXPECT_TRUE(r.isOk()) << r.status().toString();
      }
    }
    // A broker indexes a stored message into its consume queue a moment later (its reput
    // service): wait until every queue's max offset counts them, as a reader would.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (const auto& q : *qs) {
      for (;;) {
        auto max = maxOffset(*client_, q);
        if ((max.isOk() && *max >= perQueue) || std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    return topic;
  }

  std::unique_ptr<RocketmqClient> client_;
  std::string cluster_;
  std::vector<std::string> brokers_;
};

TEST_F(RocketmqAdminBroker, ListTopicsAndSystemTopics) {
  const std::string topic = topicWithMessages(1, 0);
  auto topics = listTopics(*client_);
  ASSERT_TRUE(topics.isOk()) << topics.status().toString();
  EXPECT_TRUE(std::is_sorted(topics->begin(), topics->end()));
  EXPECT_TRUE(std::binary_search(topics->begin(), topics->end(), topic));
  // The NameServer lists the cluster and broker names and the broker's system topics too.
  std::vector<std::string> names = brokers_;
  names.push_back(cluster_);
  int system = 0;
  for (const auto& t : *topics) {
    if (isSystemTopic(t, names)) ++system;
  }
  EXPECT_GT(system, 0);
  EXPECT_TRUE(std::binary_search(topics->begin(), topics->end(), "TBW102"));
  EXPECT_TRUE(isSystemTopic("TBW102", names));
  EXPECT_TRUE(std::binary_search(topics->begin(), topics->end(), "SCHEDULE_TOPIC_XXXX"));
  EXPECT_TRUE(isSystemTopic("SCHEDULE_TOPIC_XXXX", names));
  for (const auto& b : brokers_) EXPECT_TRUE(isSystemTopic(b, names)) << b;
  EXPECT_FALSE(isSystemTopic(topic, names));
}

TEST_F(RocketmqAdminBroker, GroupOffsetsCommitReadStatsDelete) {
  const std::string topic = topicWithMessages(2, 3);
  const std::string group = "ferry-adm-g-" + randomSuffix();
  auto qs = topicQueues(*client_, topic);
  ASSERT_TRUE(qs.isOk()) << qs.status().toString();
  ASSERT_EQ(qs->size(), 2u * brokers_.size());
  const MessageQueue& q0 = (*qs)[0];
  const MessageQueue& q1 = (*qs)[1];

  auto max0 = maxOffset(*client_, q0);
  ASSERT_TRUE(max0.isOk()) << max0.status().toString();
  EXPECT_EQ(*max0, 3);
  auto min0 = minOffset(*client_, q0);
  ASSERT_TRUE(min0.isOk()) << min0.status().toString();
  EXPECT_EQ(*min0, 0);

  auto brokerAddr = client_->brokerAddress(q0.brokerName);
  ASSERT_TRUE(brokerAddr.isOk()) << brokerAddr.status().toString();
  auto version = client_->brokerVersion(*brokerAddr);
  ASSERT_TRUE(version.isOk()) << version.status().toString();
  const bool v4 = isV4OrOlder(*version);
  // No offset for a group nobody ever ran. 5.x: none (the messages are in memory, so without
  // setZeroIfNotFound=false the broker would answer 0). 4.x has no such field and answers 0.
  const std::optional<std::int64_t> never = v4 ? std::optional<std::int64_t>(0) : std::nullopt;
  auto none = queryGroupOffset(*client_, group, q0);
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_EQ(*none, never) << mqVersionName(*version);
  // ...and a 5.x broker refuses an offset for it until the group exists (4.x takes it).
  Status refused = updateGroupOffset(*client_, group, q0, 2);
  if (v4) {
    EXPECT_TRUE(refused.isOk()) << refused.toString();
  } else {
    EXPECT_FALSE(refused.isOk());
    EXPECT_NE(refused.message().find("26"), std::string::npos) << refused.toString();
  }

  ASSERT_TRUE(setGroupOffset(*client_, group, q0, 2).isOk());
  Status s = updateGroupOffset(*client_, group, q1, 1);  // the group exists now
  ASSERT_TRUE(s.isOk()) << s.toString();

  auto got0 = queryGroupOffset(*client_, group, q0);
  ASSERT_TRUE(got0.isOk()) << got0.status().toString();
  EXPECT_EQ(*got0, std::optional<std::int64_t>(2));
  auto got1 = queryGroupOffset(*client_, group, q1);
  ASSERT_TRUE(got1.isOk());
  EXPECT_EQ(*got1, std::optional<std::int64_t>(1));

  for (const std::string& which : {topic, std::string()}) {
    auto stats = consumeStats(*client_, group, which);
    ASSERT_TRUE(stats.isOk()) << stats.status().toString();
    std::vector<QueueConsumeStats> mine;
    for (const auto& q : stats->queues)
      if (q.queue.topic == topic) mine.push_back(q);
    ASSERT_EQ(mine.size(), qs->size()) << "topic '" << which << "'";
    EXPECT_EQ(mine[0].queue, q0);
    EXPECT_EQ(mine[0].consumerOffset, 2);
    EXPECT_EQ(mine[0].brokerOffset, 3);
    EXPECT_GT(mine[0].lastTimestamp, 0);
    EXPECT_EQ(mine[1].queue, q1);
    EXPECT_EQ(mine[1].consumerOffset, 1);
  }
  auto members = groupMembers(*client_, group, {cluster_});
  ASSERT_TRUE(members.isOk()) << members.status().toString();
  EXPECT_TRUE(members->empty());

  // The group's offsets are gone after a delete (the reset of DELETE /connectors/<sink>/offsets
  // on the rocketmq backbone). Regression: 4.9.x reads `removeOffset`, not 5.x's `cleanOffset`,
  // and kept the offsets.
  ASSERT_TRUE(deleteGroup(*client_, group, {cluster_}).isOk());
  auto gone = queryGroupOffset(*client_, group, q0);
  ASSERT_TRUE(gone.isOk()) << gone.status().toString();
  EXPECT_EQ(*gone, never) << mqVersionName(*version);
  auto gone1 = queryGroupOffset(*client_, group, q1);
  ASSERT_TRUE(gone1.isOk()) << gone1.status().toString();
  EXPECT_EQ(*gone1, never) << mqVersionName(*version);
  auto after = consumeStats(*client_, group);
  ASSERT_TRUE(after.isOk()) << after.status().toString();
  EXPECT_TRUE(after->queues.empty());
  // Deleting again (a group that no longer exists) is fine.
  EXPECT_TRUE(deleteGroup(*client_, group).isOk());
  EXPECT_FALSE(deleteGroup(*client_, group, {"no-such-cluster-" + randomSuffix()}).isOk());
}

TEST_F(RocketmqAdminBroker, ConsumeStatsOfUnknownTopicFails) {
  auto stats = consumeStats(*client_, "ferry-adm-g", "ferry-adm-missing-" + randomSuffix());
  ASSERT_FALSE(stats.isOk());
  EXPECT_EQ(stats.status().code(), StatusCode::kNotFound) << stats.status().toString();
}

}  // namespace
}  // namespace ferry::rocketmq
