// HoistField, InsertField, ReplaceField, MaskField, ExtractField ($Key and $Value), ValueToKey.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::transforms {
namespace {

using ::testing::HasSubstr;
using namespace testing;
using J = nlohmann::json;

TEST(HoistField, WrapsJsonAndNonJsonValues) {
  auto t = transform("HoistField$Value", {{"field", "line"}});
  Record r = record("t", "hello ferry");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.value.str(), R"({"line":"hello ferry"})");
  r = record("t", R"({"a": [1, 2]})");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(json(r.value), J::parse(R"({"line":{"a":[1,2]}})"));
  r = record("t", "42");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.value.str(), R"({"line":42})");
  r = record("t", "say \"hi\"\n");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(json(r.value)["line"], "say \"hi\"\n");
  r = record("t", std::nullopt);
  ASSERT_TRUE(*t->apply(r));
  EXPECT_TRUE(r.value.isNull());
}

TEST(HoistField, KeyVariantLeavesTheValueAlone) {
  auto t = transform("org.apache.kafka.connect.transforms.HoistField$Key", {{"field", "id"}});
  Record r = record("t", "v", "7");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.key.str(), R"({"id":7})");
  EXPECT_EQ(r.value.str(), "v");
}

TEST(HoistField, FieldIsRequired) {
  auto t = create<Transform>("HoistField$Value");
  Status s = t->configure({});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("field"));
}

TEST(InsertField, AddsRecordDataAndStaticFields) {
  auto t = transform("InsertField$Value", {{"static.field", "pipeline"},
                                           {"static.value", "quickstart"},
                                           {"topic.field", "topic"},
                                           {"partition.field", "queue"},
                                           {"offset.field", "offset"},
                                           {"timestamp.field", "ts"}});
  Record r = record("orders", R"({"id":1})");
  r.queue = 3;
  r.offset = 99;
  r.timestampMs = 1700000000000;
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.value.str(),
            R"({"id":1,"topic":"orders","queue":3,"offset":99,"ts":1700000000000,"pipeline":"quickstart"})");
  // Optional data the record lacks is skipped.
  Record s = record("orders", R"({"id":2})");
  ASSERT_TRUE(*t->apply(s));
  EXPECT_EQ(json(s.value), J::parse(R"({"id":2,"topic":"orders","pipeline":"quickstart"})"));
}

TEST(InsertField, RequiredSuffixFailsRecordsWithoutTheDatum) {
  auto t = transform("InsertField$Value", {{"offset.field", "offset!"}, {"topic.field", "t?"}});
  Record r = record("orders", R"({})");
  auto res = t->apply(r);
  ASSERT_FALSE(res.isOk());
  EXPECT_THAT(res.status().message(), HasSubstr("offset"));
  r.offset = 5;
  ASSERT_TRUE(t->apply(r).isOk());
  EXPECT_EQ(r.value.str(), R"({"t":"orders","offset":5})");
}

TEST(InsertField, NonObjectValueIsAnErrorNamingTheTopic) {
  auto t = transform("InsertField$Value", {{"static.field", "a"}, {"static.value", "b"}});
  for (const char* v : {"plain text", "[1,2]", "12"}) {
    Record r = record("orders", v);
    auto res = t->apply(r);
    ASSERT_FALSE(res.isOk()) << v;
    EXPECT_EQ(res.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(res.status().message(), HasSubstr("orders"));
    EXPECT_THAT(res.status().message(), HasSubstr("InsertField$Value"));
  }
  Record tomb = record("orders", std::nullopt);
  ASSERT_TRUE(*t->apply(tomb));
  EXPECT_TRUE(tomb.value.isNull());
}

TEST(InsertField, NeedsAtLeastOneField) {
  auto t = create<Transform>("InsertField$Key");
  EXPECT_EQ(t->configure({}).code(), StatusCode::kInvalidArgument);
}

TEST(ReplaceField, IncludesExcludesAndRenames) {
  auto t = transform("ReplaceField$Value", {{"exclude", "secret"}, {"renames", "a:alpha,b:beta"}});
  Record r = record("t", R"({"a":1,"secret":"x","b":2,"c":3})");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.value.str(), R"({"alpha":1,"beta":2,"c":3})");
  auto inc = transform("ReplaceField$Value", {{"include", "a,c"}});
  r = record("t", R"({"a":1,"b":2,"c":3})");
  ASSERT_TRUE(*inc->apply(r));
  EXPECT_EQ(r.value.str(), R"({"a":1,"c":3})");
  // Kafka's old names still work.
  auto old = transform("ReplaceField$Key", {{"whitelist", "a,b"}, {"blacklist", "b"}});
  r = record("t", "v", R"({"a":1,"b":2,"c":3})");
  ASSERT_TRUE(*old->apply(r));
  EXPECT_EQ(r.key.str(), R"({"a":1})");
}

TEST(ReplaceField, BadRenamesAreRejected) {
  auto t = create<Transform>("ReplaceField$Value");
  Status s = t->configure({{"renames", "a:b,c"}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("renames"));
  Record r = record("t", "not json");
  ASSERT_TRUE(t->configure({{"exclude", "x"}}).isOk());
  EXPECT_FALSE(t->apply(r).isOk());
}

TEST(MaskField, MasksByTypeOrWithAReplacement) {
  auto t = transform("MaskField$Value", {{"fields", "n,f,s,b,a,o,z,missing"}});
  Record r = record("t", R"({"n":42,"f":1.5,"s":"secret","b":true,"a":[1],"o":{"x":1},"z":null,"k":"keep"})");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(json(r.value),
            J::parse(R"({"n":0,"f":0.0,"s":"","b":false,"a":[],"o":{},"z":null,"k":"keep"})"));
  auto rep = transform("MaskField$Value", {{"fields", "s,n"}, {"replacement", "****"}});
  r = record("t", R"({"s":"secret","n":7})");
  ASSERT_TRUE(*rep->apply(r));
  EXPECT_EQ(r.value.str(), R"({"s":"****","n":"****"})");
  auto num = transform("MaskField$Key", {{"fields", "n"}, {"replacement", "-1"}});
  r = record("t", "v", R"({"n":7})");
  ASSERT_TRUE(*num->apply(r));
  EXPECT_EQ(r.key.str(), R"({"n":-1})");
}

TEST(MaskField, FieldsAreRequired) {
  auto t = create<Transform>("MaskField$Value");
  Status s = t->configure({{"fields", ""}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("fields"));
}

TEST(ExtractField, ReplacesTheValueByOneField) {
  auto t = transform("ExtractField$Value", {{"field", "payload"}});
  Record r = record("t", R"({"payload":{"a":1},"x":2})");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.value.str(), R"({"a":1})");
  r = record("t", R"({"payload":"raw text"})");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.value.str(), "raw text");  // strings unquoted
  r = record("t", R"({"other":1})");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_TRUE(r.value.isNull());
  r = record("t", "[1]");
  EXPECT_FALSE(t->apply(r).isOk());
  auto k = transform("ExtractField$Key", {{"field", "id"}});
  r = record("t", "v", R"({"id":12})");
  ASSERT_TRUE(*k->apply(r));
  EXPECT_EQ(r.key.str(), "12");
}

TEST(ValueToKey, BuildsTheKeyFromValueFields) {
  auto t = transform("ValueToKey", {{"fields", "id,region"}});
  Record r = record("t", R"({"id":5,"name":"x","region":"eu"})", "old");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.key.str(), R"({"id":5,"region":"eu"})");
  EXPECT_EQ(r.value.str(), R"({"id":5,"name":"x","region":"eu"})");
  r = record("t", R"({"id":6})");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.key.str(), R"({"id":6,"region":null})");
  r = record("t", "text");
  EXPECT_EQ(t->apply(r).status().code(), StatusCode::kInvalidArgument);
  auto bad = create<Transform>("org.apache.kafka.connect.transforms.ValueToKey");
  EXPECT_FALSE(bad->configure({}).isOk());
}

}  // namespace
}  // namespace ferry::transforms
