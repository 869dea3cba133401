// HeaderFrom, DecodePayload, TopicLevelRouter, Sample.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::transforms {
namespace {

using ::testing::HasSubstr;
using namespace testing;
using J = nlohmann::json;

TEST(HeaderFrom, CopiesOrMovesFieldsIntoHeaders) {
  auto copy = transform("org.apache.kafka.connect.transforms.HeaderFrom$Value",
                        {{"fields", "id,meta"}, {"headers", "h-id,h-meta"}, {"operation", "copy"}});
  Record r = record("t", R"({"id": "dev-1", "meta": {"v": 2}, "x": 1})");
  ASSERT_TRUE(*copy->apply(r));
  ASSERT_NE(r.headers.last("h-id"), nullptr);
  EXPECT_EQ(r.headers.last("h-id")->value.view(), "dev-1");
  EXPECT_EQ(r.headers.last("h-meta")->value.view(), R"({"v":2})");
  EXPECT_EQ(json(r.value), J::parse(R"({"id": "dev-1", "meta": {"v": 2}, "x": 1})"));
  auto move = transform("HeaderFrom$Value", {{"fields", "id,absent"}, {"headers", "h,a"}, {"operation", "move"}});
  Record m = record("t", R"({"id": 7, "x": 1})");
  ASSERT_TRUE(*move->apply(m));
  EXPECT_EQ(m.headers.last("h")->value.view(), "7");
  EXPECT_EQ(m.headers.last("a"), nullptr) << "a missing field adds no header";
  EXPECT_EQ(json(m.value), J::parse(R"({"x": 1})"));
  auto bad = create<Transform>("HeaderFrom$Key");
  EXPECT_THAT(bad->configure({{"fields", "a,b"}, {"headers", "h"}, {"operation", "copy"}}).message(),
              HasSubstr("must have the same number of entries (2 and 1)"));
  EXPECT_FALSE(bad->configure({{"fields", "a"}, {"headers", "h"}, {"operation", "swap"}}).isOk());
}

TEST(DecodePayload, Base64AndHex) {
  auto b64 = transform("DecodePayload$Value", {});
  Record r = record("t", "aGVsbG8gZmVycnk=");
  ASSERT_TRUE(*b64->apply(r));
  EXPECT_EQ(r.value.str(), "hello ferry");
  Record url = record("t", "_-8");  // URL-safe alphabet, no padding: 0xff 0xef
  ASSERT_TRUE(*b64->apply(url));
  EXPECT_EQ(url.value.str(), std::string("\xff\xef"));
  Record broken = record("t", "a*b");
  auto err = b64->apply(broken);
  ASSERT_FALSE(err.isOk());
  EXPECT_THAT(err.status().message(), HasSubstr("DecodePayload$Value: the value of a record in topic 't' is not base64 (character 2)"));
  auto hex = transform("DecodePayload$Key", {{"encoding", "hex"}});
  Record k = record("t", "v", "48692100");
  ASSERT_TRUE(*hex->apply(k));
  EXPECT_EQ(k.key.str(), std::string("Hi!\0", 4));
  Record odd = record("t", "v", "abc");
  EXPECT_THAT(hex->apply(odd).status().message(), HasSubstr("not hex (odd length)"));
  Record tomb = record("t", std::nullopt);
  EXPECT_TRUE(*b64->apply(tomb));
}

TEST(TopicLevelRouter, BuildsTopicsFromMqttLevels) {
  auto t = transform("TopicLevelRouter", {{"topic.format", "iot-${level2}-${level4}"}});
  Record r = record("bridge", "v");
  r.headers.add("mqtt.topic", std::string_view("sensors/k1/room 3/temp"));
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.topic, "iot-k1-temp");
  auto spaces = transform("TopicLevelRouter", {{"topic.format", "${level3}.${topic}"}});
  Record s = record("plain/a/b c", "v");  // no mqtt.topic header: the record's topic is split
  ASSERT_TRUE(*spaces->apply(s));
  EXPECT_EQ(s.topic, "b_c.plain_a_b_c");
  Record shortTopic = record("a/b", "v");
  EXPECT_THAT(t->apply(shortTopic).status().message(), HasSubstr("has 2 level(s), the format needs level 4"));
  auto bad = create<Transform>("TopicLevelRouter");
  EXPECT_THAT(bad->configure({{"topic.format", "x-${lvl1}"}}).message(), HasSubstr("unknown placeholder ${lvl1}"));
  EXPECT_THAT(bad->configure({{"topic.format", "x-${level0}"}}).message(), HasSubstr("unknown placeholder"));
  EXPECT_THAT(bad->configure({{"topic.format", "x-${level1"}}).message(), HasSubstr("unterminated"));
}

TEST(Sample, KeepsOneInN) {
  auto t = transform("Sample", {{"every", "3"}});
  std::string kept;
  for (int i = 0; i < 10; ++i) {
    Record r = record("t", std::to_string(i));
    if (*t->apply(r)) kept += r.value.str();
  }
  EXPECT_EQ(kept, "0369");
  auto all = transform("Sample", {{"every", "1"}});
  Record r = record("t", "x");
  EXPECT_TRUE(*all->apply(r));
  auto bad = create<Transform>("Sample");
  EXPECT_FALSE(bad->configure({{"every", "0"}}).isOk());
}

}  // namespace
}  // namespace ferry::transforms
