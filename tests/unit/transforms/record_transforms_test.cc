// RegexRouter, TimestampRouter, InsertHeader, DropHeaders, Filter.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "transforms/record_transforms.h"

namespace ferry::transforms {
namespace {

using ::testing::HasSubstr;
using namespace testing;

TEST(RegexRouter, RewritesWholeMatchesOnly) {
  auto t = transform("RegexRouter", {{"regex", "(.*)-events"}, {"replacement", "ev.$1"}});
  Record r = record("orders-events", "v");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.topic, "ev.orders");
  r = record("orders-events-old", "v");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.topic, "orders-events-old");  // not a whole match
  auto alt = transform("RegexRouter", {{"regex", "a|ab"}, {"replacement", "[$&]"}});
  r = record("ab", "v");
  ASSERT_TRUE(*alt->apply(r));
  EXPECT_EQ(r.topic, "[ab]");
}

TEST(RegexRouter, BadRegexFailsAtConfigure) {
  auto t = create<Transform>("org.apache.kafka.connect.transforms.RegexRouter");
  Status s = t->configure({{"regex", "(unclosed"}, {"replacement", "x"}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("regex"));
  s = t->configure({{"regex", "a"}});
  EXPECT_THAT(s.message(), HasSubstr("replacement"));
  // The validator reports it too (what the REST validate endpoint shows).
  auto v = t->configDef().validate({{"regex", "[z-a]"}, {"replacement", "x"}});
  EXPECT_EQ(v.errors.count("regex"), 1u);
}

TEST(TimestampRouter, FormatsTheRecordTimestampInUtc) {
  auto t = transform("TimestampRouter", {});
  Record r = record("logs", "v");
  r.timestampMs = 1700000000123;  // 2023-11-14T22:13:20.123Z
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.topic, "logs-20231114");
  auto custom = transform("TimestampRouter", {{"topic.format", "${timestamp}/${topic}"},
                                              {"timestamp.format", "yy-MMM-dd'T'HH:mm:ss.SSS 'o''clock'"}});
  r = record("logs", "v");
  r.timestampMs = 1700000000123;
  ASSERT_TRUE(*custom->apply(r));
  EXPECT_EQ(r.topic, "23-Nov-14T22:13:20.123 o'clock/logs");
}

TEST(TimestampRouter, UnsupportedPatternLettersAreRejected) {
  auto t = create<Transform>("TimestampRouter");
  Status s = t->configure({{"timestamp.format", "yyyy-ww"}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("timestamp.format"));
  EXPECT_FALSE(t->configure({{"timestamp.format", "'open"}}).isOk());
}

TEST(Headers, InsertAndDrop) {
  auto ins = transform("InsertHeader", {{"header", "source"}, {"value.literal", "ferry"}});
  Record r = record("t", "v");
  r.headers.add("trace", std::string_view("1"));
  r.headers.add("keep", std::string_view("2"));
  r.headers.add("trace", std::string_view("3"));
  ASSERT_TRUE(*ins->apply(r));
  ASSERT_NE(r.headers.last("source"), nullptr);
  EXPECT_EQ(r.headers.last("source")->value.str(), "ferry");
  auto drop = transform("org.apache.kafka.connect.transforms.DropHeaders", {{"headers", "trace,none"}});
  ASSERT_TRUE(*drop->apply(r));
  EXPECT_FALSE(r.headers.has("trace"));
  EXPECT_TRUE(r.headers.has("keep"));
  EXPECT_EQ(r.headers.size(), 2u);
  auto bad = create<Transform>("InsertHeader");
  Status s = bad->configure({{"header", "x"}});
  EXPECT_THAT(s.message(), HasSubstr("value.literal"));
  EXPECT_FALSE(create<Transform>("DropHeaders")->configure({}).isOk());
}

TEST(Filter, DropsEveryRecord) {
  auto t = transform("Filter", {});
  Record r = record("t", "v");
  auto res = t->apply(r);
  ASSERT_TRUE(res.isOk());
  EXPECT_FALSE(*res);
}

}  // namespace
}  // namespace ferry::transforms
