// DatagenSource: sequences per format, task numbers, resume, max.records, config errors, and the
// rate limit's first token (no timing assertions).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "connectors/datagen/datagen_source.h"
#include "test_util.h"

namespace ferry::connectors {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace testing;

std::vector<Record> pollOnce(SourceTask& t, std::size_t max) {
  std::vector<Record> out;
  auto n = t.poll(out, max, std::chrono::milliseconds(0));
  EXPECT_TRUE(n.isOk()) << n.status().toString();
  return out;
}

TEST(Datagen, StringFormatSequencesAndPositions) {
  FakeSourceContext ctx(0);
  DatagenSourceTask t;
  ASSERT_TRUE(t.start({{"topic", "g"}, {"format", "string"}, {"max.records", "5"}}, ctx).isOk());
  auto got = pollOnce(t, 3);
  ASSERT_THAT(values(got), ElementsAre("0-0", "0-1", "0-2"));
  EXPECT_EQ(got[0].topic, "g");
  EXPECT_TRUE(got[0].key.isNull());
  EXPECT_EQ(got[0].position.partition, (StringMap{{"datagen.task", "0"}}));
  EXPECT_EQ(got[2].position.offset, (StringMap{{"seq", "3"}}));
  EXPECT_THAT(values(pollOnce(t, 100)), ElementsAre("0-3", "0-4"));
  EXPECT_TRUE(pollOnce(t, 100).empty());  // max.records reached
  EXPECT_EQ(t.nextSeq(), 5);
}

TEST(Datagen, TaskNumberComesFromTheContext) {
  FakeSourceContext ctx(3);
  DatagenSourceTask t;
  ASSERT_TRUE(t.start({{"topic", "g"}, {"format", "string"}, {"key.mode", "seq"}}, ctx).isOk());
  auto got = pollOnce(t, 2);
  ASSERT_THAT(values(got), ElementsAre("3-0", "3-1"));
  EXPECT_EQ(got[1].key.str(), "1");
  EXPECT_EQ(got[0].position.partition.at("datagen.task"), "3");
}

TEST(Datagen, JsonFormat) {
  FakeSourceContext ctx(1);
  DatagenSourceTask t;
  ASSERT_TRUE(t.start({{"topic", "g"}}, ctx).isOk());  // json is the default
  auto got = pollOnce(t, 2);
  ASSERT_EQ(got.size(), 2u);
  auto j = nlohmann::json::parse(got[1].value.str());
  EXPECT_EQ(j["task"], 1);
  EXPECT_EQ(j["seq"], 1);
  EXPECT_GT(j["ts"].get<std::int64_t>(), 0);
  EXPECT_EQ(got[1].value.view().substr(0, 18), "{\"task\":1,\"seq\":1,");
}

TEST(Datagen, BytesFormatHasTheValueSize) {
  FakeSourceContext ctx;
  DatagenSourceTask t;
  ASSERT_TRUE(t.start({{"topic", "g"}, {"format", "bytes"}, {"value.size", "10"}}, ctx).isOk());
  auto got = pollOnce(t, 13);
  ASSERT_EQ(got.size(), 13u);
  EXPECT_EQ(got[0].value.str(), "0xxxxxxxxx");
  EXPECT_EQ(got[12].value.str(), "12xxxxxxxx");
  for (const auto& r : got) EXPECT_EQ(r.value.size(), 10u);
}

TEST(Datagen, ResumesAtTheCommittedSequence) {
  FakeSourceContext ctx(0);
  ctx.committed[{{"datagen.task", "0"}}] = {{"seq", "42"}};
  DatagenSourceTask t;
  ASSERT_TRUE(t.start({{"topic", "g"}, {"format", "string"}, {"max.records", "44"}}, ctx).isOk());
  EXPECT_THAT(values(pollOnce(t, 100)), ElementsAre("0-42", "0-43"));
  EXPECT_TRUE(pollOnce(t, 100).empty());

  FakeSourceContext bad(0);
  bad.committed[{{"datagen.task", "0"}}] = {{"seq", "x"}};
  DatagenSourceTask t2;
  EXPECT_FALSE(t2.start({{"topic", "g"}}, bad).isOk());
}

TEST(Datagen, RateLimitHandsOutTheFirstTokenAtOnce) {
  FakeSourceContext ctx;
  DatagenSourceTask t;
  // One record per 1000 s: the bucket starts with one token, then nothing within maxWait 0.
  ASSERT_TRUE(t.start({{"topic", "g"}, {"format", "string"}, {"rate", "0.001"}}, ctx).isOk());
  EXPECT_EQ(pollOnce(t, 100).size(), 1u);
  EXPECT_TRUE(pollOnce(t, 100).empty());
}

TEST(Datagen, ManyRecordsInOnePoll) {
  FakeSourceContext ctx;
  DatagenSourceTask t;
  ASSERT_TRUE(t.start({{"topic", "g"}, {"format", "string"}}, ctx).isOk());
  auto got = pollOnce(t, 100000);
  ASSERT_EQ(got.size(), 100000u);
  EXPECT_EQ(got.back().value.str(), "0-99999");
}

TEST(Datagen, ConfigErrorsNameEveryBadKey) {
  DatagenSourceConnector c;
  FakeConnectorContext cctx;
  Status s = c.start({{"topic", "g"}, {"format", "xml"}, {"rate", "-1"}, {"max.records", "x"}}, cctx);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("format"));
  EXPECT_THAT(s.message(), HasSubstr("rate"));
  EXPECT_THAT(s.message(), HasSubstr("max.records"));
  s = c.start({{"format", "json"}}, cctx);
  EXPECT_THAT(s.message(), HasSubstr("topic"));
  ASSERT_TRUE(c.start({{"topic", "g"}, {"tasks.max", "3"}}, cctx).isOk());
  auto cfgs = c.taskConfigs(3);
  ASSERT_TRUE(cfgs.isOk());
  EXPECT_EQ(cfgs->size(), 3u);
}

}  // namespace
}  // namespace ferry::connectors
