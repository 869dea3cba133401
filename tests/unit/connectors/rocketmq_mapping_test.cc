// Unit tests of the RocketMQ connectors' pure parts: message <-> record mapping, positions,
// property filtering, config definitions.
#include <gtest/gtest.h>

#include "rocketmq/remoting.h"
#include "connectors/rocketmq/rocketmq_mapping.h"
#include "connectors/rocketmq/rocketmq_sink.h"
#include "connectors/rocketmq/rocketmq_source.h"

namespace ferry::connectors::rmq {
namespace {

rocketmq::StoredMessage sample() {
  rocketmq::StoredMessage m;
  m.topic = "T1";
  m.queueId = 3;
  m.queueOffset = 41;
  m.bornTimestamp = 1700000000123;
  m.body = std::string("a\0b", 3);
  m.offsetMsgId = "OFFSETID";
  m.properties = {{"TAGS", "TagA"}, {"KEYS", "k1"}, {"UNIQ_KEY", "UNIQ"}, {"WAIT", "true"},
                  {"REAL_TOPIC", "x"}, {"__STARTDELIVERTIME", "5"}, {"color", "red"}};
  return m;
}

TEST(RocketmqMapping, RecordFromMessageMapsBodyHeadersKeyAndPosition) {
  auto m = sample();
  Record r = recordFromMessage(m, "broker-a", SourceOptions{});
  EXPECT_TRUE(m.body.empty()) << "the body is moved into the record, not copied";
  EXPECT_EQ(r.topic, "T1");
  EXPECT_EQ(r.value.view(), std::string_view("a\0b", 3));
  EXPECT_EQ(r.key.view(), "k1");
  EXPECT_EQ(r.timestampMs, 1700000000123);
  ASSERT_NE(r.headers.last("color"), nullptr);
  EXPECT_EQ(r.headers.last("color")->value.view(), "red");
  EXPECT_EQ(r.headers.last(kHeaderTags)->value.view(), "TagA");
  EXPECT_EQ(r.headers.last(kHeaderKeys)->value.view(), "k1");
  EXPECT_EQ(r.headers.last(kHeaderMsgId)->value.view(), "UNIQ");
  EXPECT_FALSE(r.headers.has("WAIT"));
  EXPECT_FALSE(r.headers.has("REAL_TOPIC"));
  EXPECT_FALSE(r.headers.has("__STARTDELIVERTIME"));
  EXPECT_FALSE(r.headers.has("UNIQ_KEY"));
  EXPECT_EQ(r.headers.size(), 4u);
  const StringMap partition = {
      {"rocketmq.topic", "T1"}, {"rocketmq.broker", "broker-a"}, {"rocketmq.queue", "3"}};
  EXPECT_EQ(r.position.partition, partition);
  EXPECT_EQ(r.position.offset, (StringMap{{"offset", "42"}}));
}

TEST(RocketmqMapping, RecordFromMessageOptions) {
  auto m = sample();
  m.properties.erase("UNIQ_KEY");
  Record r = recordFromMessage(m, "b", SourceOptions{"target", false});
  EXPECT_EQ(r.topic, "target");
  EXPECT_TRUE(r.key.isNull());
  EXPECT_EQ(r.headers.last(kHeaderMsgId)->value.view(), "OFFSETID");
  // Written to another backbone topic, the record keeps where it was read; the sink never writes
  // that header back as a property.
  ASSERT_NE(r.headers.last(kHeaderTopic), nullptr);
  EXPECT_EQ(r.headers.last(kHeaderTopic)->value.view(), "T1");
  auto again = sample();
  EXPECT_FALSE(recordFromMessage(again, "b", SourceOptions{}).headers.has(kHeaderTopic));
  auto out = messageFromRecord(r, SinkOptions{}, nullptr);
  EXPECT_EQ(out.topic, "target");
  EXPECT_EQ(out.properties.count(kHeaderTopic), 0u);
}

TEST(RocketmqMapping, PositionRoundTripAndRejects) {
  rocketmq::MessageQueue q{"T", "broker-b", 7};
  auto back = queueFromPartition(queuePartition(q));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, q);
  EXPECT_FALSE(queueFromPartition({{"filename", "/x"}}).has_value());
  EXPECT_FALSE(queueFromPartition({{"rocketmq.topic", "T"}, {"rocketmq.broker", "b"},
                                   {"rocketmq.queue", "x1"}})
                   .has_value());
  EXPECT_EQ(offsetFromPosition({{"offset", "12"}}), std::optional<std::int64_t>(12));
  EXPECT_FALSE(offsetFromPosition({{"offset", "-1"}}).has_value());
  EXPECT_FALSE(offsetFromPosition({{"offset", "12a"}}).has_value());
  EXPECT_FALSE(offsetFromPosition({}).has_value());
}

TEST(RocketmqMapping, PropertyCarriable) {
  EXPECT_TRUE(propertyCarriable("color", "red"));
  EXPECT_TRUE(propertyCarriable("a", "x\x01y"));  // 0x01 in a value survives (first one splits)
  EXPECT_FALSE(propertyCarriable("", "v"));
  EXPECT_FALSE(propertyCarriable("k", ""));
  EXPECT_FALSE(propertyCarriable("a\x01" "b", "v"));
  EXPECT_FALSE(propertyCarriable("a\x02" "b", "v"));
  EXPECT_FALSE(propertyCarriable("k", "v\x02w"));
  EXPECT_FALSE(propertyCarriable("TAGS", "v"));
  EXPECT_FALSE(propertyCarriable("k", "\xff\xfe"));
  EXPECT_FALSE(propertyCarriable("k", "\xc0\x80"));  // overlong
  EXPECT_TRUE(propertyCarriable("k", "caf\xc3\xa9"));
  EXPECT_FALSE(propertyCarriable("k", "caf\xc3"));  // cut sequence
}

TEST(RocketmqMapping, MessageFromRecordSkipsAndCounts) {
  Record r;
  r.topic = "ferry-topic";
  r.key = Bytes(std::string("key-1"));
  r.value = Bytes(std::string("body"));
  r.headers.add("color", std::string_view("red"));
  r.headers.add("color", std::string_view("blue"));
  r.headers.add("bad", Bytes(std::string("a\x02" "b")));
  r.headers.add("TAGS", std::string_view("sneaky"));
  r.headers.add("empty", std::string_view(""));
  std::size_t skipped = 0;
  auto m = messageFromRecord(r, SinkOptions{"", "TagA"}, &skipped);
  EXPECT_EQ(m.topic, "ferry-topic");
  EXPECT_EQ(m.body, "body");
  EXPECT_EQ(m.properties.at("color"), "blue");
  EXPECT_EQ(m.properties.at("KEYS"), "key-1");
  EXPECT_EQ(m.properties.at("TAGS"), "TagA");
  EXPECT_EQ(m.properties.size(), 3u);
  EXPECT_EQ(skipped, 3u);
  // The properties string decodes back to the same map.
  EXPECT_EQ(rocketmq::decodeProperties(rocketmq::encodeProperties(m.properties)), m.properties);

  Record nullKey;
  nullKey.topic = "t";
  skipped = 0;
  auto m2 = messageFromRecord(nullKey, SinkOptions{"other", ""}, &skipped);
  EXPECT_EQ(m2.topic, "other");
  EXPECT_TRUE(m2.body.empty());
  EXPECT_TRUE(m2.properties.empty());
  EXPECT_EQ(skipped, 0u);
}

TEST(RocketmqMapping, TagHeaderBecomesTagsUnlessTheOptionSetsOne) {
  Record r;
  r.topic = "t";
  r.headers.add("rocketmq.tags", std::string_view("from-header"));
  r.headers.add("p", std::string_view("v"));
  std::size_t skipped = 0;
  auto m = messageFromRecord(r, SinkOptions{"", ""}, &skipped);
  EXPECT_EQ(m.properties.at("TAGS"), "from-header");
  EXPECT_EQ(m.properties.count("rocketmq.tags"), 0u);
  EXPECT_EQ(m.properties.at("p"), "v");
  auto fixed = messageFromRecord(r, SinkOptions{"", "TagA"}, &skipped);
  EXPECT_EQ(fixed.properties.at("TAGS"), "TagA");
  EXPECT_EQ(fixed.properties.count("rocketmq.tags"), 0u);
  EXPECT_EQ(skipped, 0u);
}

TEST(RocketmqMapping, SafeName) {
  EXPECT_EQ(safeName("ferry-my conn.1"), "ferry-my_conn_1");
  EXPECT_EQ(safeName(std::string(300, 'a')).size(), 255u);
}

TEST(RocketmqConnectors, ConfigDefinitionsRequireNamesrvAndTopics) {
  auto bad = RocketMQSourceConnector::definition().parse({}, false);
  EXPECT_FALSE(bad.isOk());
  auto good = RocketMQSourceConnector::definition().parse(
      {{"rocketmq.namesrv", "127.0.0.1:9876"}, {"rocketmq.topics", "A, B"}}, false);
  ASSERT_TRUE(good.isOk()) << good.status().toString();
  EXPECT_EQ(good.value().getList("rocketmq.topics"), (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(good.value().getString("rocketmq.from"), "last");
  EXPECT_EQ(good.value().getString("rocketmq.tags"), "*");
  EXPECT_FALSE(RocketMQSourceConnector::definition()
                   .parse({{"rocketmq.namesrv", "h:1"}, {"rocketmq.topics", "A"},
                           {"rocketmq.from", "middle"}},
                          false)
                   .isOk());
  EXPECT_FALSE(RocketMQSinkConnector::definition().parse({}, false).isOk());
  EXPECT_FALSE(RocketMQSinkConnector::definition()
                   .parse({{"rocketmq.namesrv", "h:1"}, {"rocketmq.order", "random"}}, false)
                   .isOk());
  EXPECT_TRUE(RocketMQSinkConnector::definition().parse({{"rocketmq.namesrv", "h:1"}}, false).isOk());
}

}  // namespace
}  // namespace ferry::connectors::rmq
