// The tolerant fastjson reader (§5.1) with the TopicRouteData bodies of §5.3 (Appendix C item 6).
#include <gtest/gtest.h>

#include "rocketmq/fastjson.h"

namespace ferry::rocketmq {
namespace {

using nlohmann::json;

TEST(CodecFastjson, NonStandardRouteBody) {
  auto j = parseFastjson(
      R"({"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},)"
      R"("brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],)"
      R"("filterServerTable":{},)"
      R"("queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,)"
      R"("writeQueueNums":4}]})");
  ASSERT_TRUE(j.isOk()) << j.status().toString();
  const json& b = (*j)["brokerDatas"][0];
  EXPECT_EQ(b["brokerAddrs"]["0"], "127.0.0.1:10911");
  EXPECT_EQ(b["brokerAddrs"]["1"], "127.0.0.1:10921");
  EXPECT_EQ(b["brokerName"], "broker-a");
  EXPECT_EQ(b["enableActingMaster"], false);
  EXPECT_EQ((*j)["queueDatas"][0]["writeQueueNums"], 4);
  EXPECT_TRUE((*j)["filterServerTable"].is_object());
}

TEST(CodecFastjson, StandardRouteBodyIsUnchanged) {
  const char* text =
      R"({"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a",)"
      R"("cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},)"
      R"("queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,)"
      R"("writeQueueNums":4}]})";
  auto strict = normalizeFastjson(text);
  ASSERT_TRUE(strict.isOk());
  EXPECT_EQ(*strict, text);
  auto j = parseFastjson(text);
  ASSERT_TRUE(j.isOk());
  EXPECT_EQ(*j, json::parse(text));
}

TEST(CodecFastjson, BareKeysOfEveryKind) {
  auto j = parseFastjson(R"({0:"a",-1:"b",  12 : "c", name:1, 'q':'it''s'})");
  // `'it''s'` is not valid even for fastjson: two adjacent strings.
  EXPECT_FALSE(j.isOk());
  j = parseFastjson(R"({0:"a",-1:"b",  12 : "c", name:1, 'q':'it\'s "x"'})");
  ASSERT_TRUE(j.isOk()) << j.status().toString();
  EXPECT_EQ((*j)["0"], "a");
  EXPECT_EQ((*j)["-1"], "b");
  EXPECT_EQ((*j)["12"], "c");
  EXPECT_EQ((*j)["name"], 1);
  EXPECT_EQ((*j)["q"], "it's \"x\"");
}

TEST(CodecFastjson, ObjectValuedKeys) {
  auto j = parseFastjson(
      R"({{"brokerName":"b","queueId":0,"topic":"t"}:5, { "topic" : "t", "queueId":1 }:6})");
  ASSERT_TRUE(j.isOk()) << j.status().toString();
  ASSERT_EQ(j->size(), 2u);
  EXPECT_EQ((*j)[R"({"brokerName":"b","queueId":0,"topic":"t"})"], 5);
  EXPECT_EQ((*j)[R"({"queueId":1,"topic":"t"})"], 6);
  json key = json::parse(j->begin().key());
  EXPECT_EQ(key["brokerName"], "b");
}

TEST(CodecFastjson, PrecisionQuotedLongsAndUnknownFields) {
  auto j = parseFastjson(
      R"({"offset":9223372036854775807,"neg":-9223372036854775808,"q":"9007199254740993",)"
      R"("topicSynFlag":0,"unknown":{"deep":[1,{}]}})");
  ASSERT_TRUE(j.isOk());
  EXPECT_EQ((*j)["offset"].get<std::int64_t>(), INT64_MAX);
  EXPECT_EQ((*j)["neg"].get<std::int64_t>(), INT64_MIN);
  EXPECT_EQ((*j)["q"], "9007199254740993");
  EXPECT_TRUE(j->contains("topicSynFlag"));
}

TEST(CodecFastjson, TrailingCommasControlCharsDuplicates) {
  auto j = parseFastjson("{\"a\":[1,2,],\"s\":\"x\x01y\ttab\",\"d\":1,\"d\":2,}");
  ASSERT_TRUE(j.isOk()) << j.status().toString();
  EXPECT_EQ((*j)["a"].size(), 2u);
  EXPECT_EQ((*j)["s"], "x\x01y\ttab");
  EXPECT_EQ((*j)["d"], 2);
}

TEST(CodecFastjson, RejectsGarbage) {
  for (const char* bad : {"", "{", "{\"a\":}", "{\"a\" 1}", "[1 2]", "{\"a\":bareword}", "{,}",
                          "{\"a\":1}}", "\"unterminated", "{\"a\":1.2.3}", "nul"}) {
    EXPECT_FALSE(parseFastjson(bad).isOk()) << bad;
  }
  std::string deep(10000, '[');
  EXPECT_FALSE(parseFastjson(deep).isOk());
  std::string ok = std::string(200, '[') + std::string(200, ']');
  EXPECT_TRUE(parseFastjson(ok).isOk());
}

}  // namespace
}  // namespace ferry::rocketmq
