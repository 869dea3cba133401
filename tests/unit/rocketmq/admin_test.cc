// Pure parts of rocketmq/admin.h: the GET_CONSUME_STATS body parser (bodies captured from a real
// RocketMQ 5.3.3 broker) and the system-topic filter.
#include <gtest/gtest.h>

#include "rocketmq/admin.h"

namespace ferry::rocketmq {
namespace {

// GET_CONSUME_STATS (208) answer of a 5.3.3 broker for a group that committed 2 on queue 0 of a
// two-queue topic holding 3 + 2 messages (fastjson writes MessageQueue objects as map keys).
constexpr const char* kCapturedBody =
    R"({"consumeTps":0.0,"offsetTable":{{"brokerName":"ferry-adm","queueId":0,"topic":"ferry-cs-capture"}:)"
    R"({"brokerOffset":3,"consumerOffset":2,"lastTimestamp":1796289453557,"pullOffset":2},)"
    R"({"brokerName":"ferry-adm","queueId":1,"topic":"ferry-cs-capture"}:)"
    R"({"brokerOffset":2,"consumerOffset":0,"lastTimestamp":0,"pullOffset":0}}})";

TEST(AdminConsumeStats, ParsesBodyCapturedFromBroker) {
  auto s = parseConsumeStats(kCapturedBody);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  ASSERT_EQ(s->queues.size(), 2u);
  const auto& q0 = s->queues[0];
  EXPECT_EQ(q0.queue, (MessageQueue{"ferry-cs-capture", "ferry-adm", 0}));
  EXPECT_EQ(q0.brokerOffset, 3);
  EXPECT_EQ(q0.consumerOffset, 2);
  EXPECT_EQ(q0.pullOffset, 2);
  EXPECT_EQ(q0.lastTimestamp, 1796289453557);
  const auto& q1 = s->queues[1];
  EXPECT_EQ(q1.queue, (MessageQueue{"ferry-cs-capture", "ferry-adm", 1}));
  EXPECT_EQ(q1.brokerOffset, 2);
  EXPECT_EQ(q1.consumerOffset, 0);
  EXPECT_EQ(s->consumeTps, 0.0);
}

TEST(AdminConsumeStats, EmptyTableOfUnknownGroup) {
  // What the broker answers for a group without offsets (captured).
  auto s = parseConsumeStats(R"({"consumeTps":0.0,"offsetTable":{}})");
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_TRUE(s->queues.empty());
  auto none = parseConsumeStats(R"({"consumeTps":1.5})");
  ASSERT_TRUE(none.isOk());
  EXPECT_TRUE(none->queues.empty());
  EXPECT_EQ(none->consumeTps, 1.5);
}

TEST(AdminConsumeStats, SortsQueuesAndKeepsInt64) {
  auto s = parseConsumeStats(
      R"({"offsetTable":{{"brokerName":"b","queueId":1,"topic":"t"}:{"consumerOffset":9007199254740993},)"
      R"({"brokerName":"a","queueId":"7","topic":"t"}:{"consumerOffset":4}},"consumeTps":2.5})");
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  ASSERT_EQ(s->queues.size(), 2u);
  EXPECT_EQ(s->queues[0].queue, (MessageQueue{"t", "a", 7}));
  EXPECT_EQ(s->queues[0].consumerOffset, 4);
  EXPECT_EQ(s->queues[1].consumerOffset, 9007199254740993LL);
  EXPECT_EQ(s->consumeTps, 2.5);
}

TEST(AdminConsumeStats, RejectsMalformedBodies) {
  EXPECT_FALSE(parseConsumeStats("").isOk());
  EXPECT_FALSE(parseConsumeStats("[]").isOk());
  EXPECT_FALSE(parseConsumeStats(R"({"offsetTable":[]})").isOk());
  // A key that is not a MessageQueue.
  EXPECT_FALSE(parseConsumeStats(R"({"offsetTable":{"t":{"consumerOffset":1}}})").isOk());
  EXPECT_FALSE(parseConsumeStats(R"({"offsetTable":{{"topic":"t","queueId":0}:{}}})").isOk());
  // A value that is not an OffsetWrapper.
  EXPECT_FALSE(
      parseConsumeStats(R"({"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:5}})").isOk());
  EXPECT_FALSE(parseConsumeStats(R"({"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:)").isOk());
}

TEST(AdminSystemTopic, RealNames) {
  // Names a 5.3.3 NameServer lists next to user topics.
  for (const char* t : {"TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "rmq_sys_wheel_timer",
                        "%RETRY%connect-sink", "%DLQ%connect-sink", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC",
                        "BenchmarkTest", "DefaultHeartBeatSyncerTopic", "TRANS_CHECK_MAX_TIME_TOPIC",
                        "rocketmq-broker-ferry-a"})
    EXPECT_TRUE(isSystemTopic(t)) << t;
  for (const char* t : {"ferry-smoke", "orders", "connect-offsets", "RETRY", "my_DLQ", "tbw102"})
    EXPECT_FALSE(isSystemTopic(t)) << t;
  EXPECT_TRUE(isSystemTopic("ferry-a", {"ferry-a", "DefaultCluster"}));
  EXPECT_FALSE(isSystemTopic("ferry-a"));
}

}  // namespace
}  // namespace ferry::rocketmq
