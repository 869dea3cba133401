// HeaderFrom, DecodePayload, TopicLevelRouter, Sample.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "transforms/iot_transforms.h"

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

// The clock a Sample reads, settable by the test (no sleeping).
struct FakeClock {
  std::int64_t now = 0;
  int reads = 0;
};

Sample* asSample(Owned<Transform>& t, FakeClock& clock) {
  auto* s = dynamic_cast<Sample*>(t.get());
  EXPECT_NE(s, nullptr);
  if (s) s->setClock([&clock] { ++clock.reads; return clock.now; });
  return s;
}

TEST(Sample, RateKeepsAtMostNPerSecondByTokenBucket) {
  auto t = transform("io.ferry.transforms.Sample", {{"rate", "2"}});
  FakeClock clock;
  ASSERT_NE(asSample(t, clock), nullptr);
  auto pass = [&](std::int64_t at) {
    clock.now = at;
    Record r = record("t", "x");
    return *t->apply(r);
  };
  clock.now = 1'000'000;  // any monotonic origin
  EXPECT_TRUE(pass(1'000'000)) << "the bucket starts full: a burst of 2";
  EXPECT_TRUE(pass(1'000'000));
  EXPECT_FALSE(pass(1'000'000)) << "the third in the same instant is dropped";
  EXPECT_FALSE(pass(1'000'499)) << "499 ms refill 0.998 of a token";
  EXPECT_TRUE(pass(1'000'500)) << "500 ms at 2/s refill one";
  EXPECT_FALSE(pass(1'000'500));
  EXPECT_TRUE(pass(1'001'000));
  EXPECT_FALSE(pass(1'001'000));
  // A long pause refills up to the capacity (2), no more.
  EXPECT_TRUE(pass(5'000'000));
  EXPECT_TRUE(pass(5'000'000));
  EXPECT_FALSE(pass(5'000'000));
  // A clock that goes back refills nothing.
  EXPECT_FALSE(pass(4'000'000));
  // Steady 100 records/s in, 2/s out over 10 s: 2 (burst) + 20.
  auto steady = transform("Sample", {{"rate", "2"}});
  FakeClock c2;
  ASSERT_NE(asSample(steady, c2), nullptr);
  int kept = 0;
  for (int i = 0; i <= 1000; ++i) {
    c2.now = i * 10;
    Record r = record("t", "x");
    if (*steady->apply(r)) ++kept;
  }
  EXPECT_EQ(kept, 22);
}

TEST(Sample, FractionalRateAndEveryDoesNotReadTheClock) {
  auto slow = transform("Sample", {{"rate", "0.5"}});  // one per 2 s, bursts of 1
  FakeClock clock;
  ASSERT_NE(asSample(slow, clock), nullptr);
  std::string kept;
  for (int s = 0; s <= 6; ++s) {
    clock.now = s * 1000;
    Record r = record("t", std::to_string(s));
    if (*slow->apply(r)) kept += r.value.str();
  }
  EXPECT_EQ(kept, "0246");
  auto every = transform("Sample", {{"every", "2"}});
  FakeClock unused;
  ASSERT_NE(asSample(every, unused), nullptr);
  Record r = record("t", "x");
  EXPECT_TRUE(*every->apply(r));
  EXPECT_EQ(unused.reads, 0);
}

TEST(Sample, ExactlyOneOfEveryAndRate) {
  auto bad = create<Transform>("Sample");
  EXPECT_THAT(bad->configure({}).message(),
              HasSubstr("Sample: set exactly one of 'every' (keep one in N) and 'rate' (at most N records per "
                        "second), with a value above 0"));
  EXPECT_THAT(bad->configure({{"every", "3"}, {"rate", "5"}}).message(), HasSubstr("; both are set"));
  EXPECT_FALSE(bad->configure({{"rate", "-1"}}).isOk());
  EXPECT_FALSE(bad->configure({{"rate", "fast"}}).isOk());
  EXPECT_FALSE(bad->configure({{"every", "-1"}}).isOk());
  EXPECT_TRUE(bad->configure({{"rate", "100"}}).isOk());
  EXPECT_TRUE(bad->configure({{"every", "1"}, {"rate", "0"}}).isOk()) << "0 is not set";
}

}  // namespace
}  // namespace ferry::transforms
