// Flatten and Cast ($Key and $Value), through the plugin descriptor by their Kafka names too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::transforms {
namespace {

using ::testing::HasSubstr;
using namespace testing;
using J = nlohmann::json;

TEST(Flatten, NestedObjectsBecomePathsArraysStay) {
  auto t = transform("org.apache.kafka.connect.transforms.Flatten$Value", {});
  Record r = record("t", R"({"a": {"b": {"c": 1}, "d": [1, {"x": 2}]}, "e": null, "f": {}, "g": "s"})");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(json(r.value), J::parse(R"({"a.b.c": 1, "a.d": [1, {"x": 2}], "e": null, "f": {}, "g": "s"})"));
  auto u = transform("Flatten$Key", {{"delimiter", "_"}});
  Record k = record("t", "v", R"({"id": {"n": 7}})");
  ASSERT_TRUE(*u->apply(k));
  EXPECT_EQ(k.key.str(), R"({"id_n":7})");
  EXPECT_EQ(k.value.str(), "v");
  Record tomb = record("t", std::nullopt);
  ASSERT_TRUE(*t->apply(tomb));
  EXPECT_TRUE(tomb.value.isNull());
  Record text = record("t", "plain");
  auto err = t->apply(text);
  ASSERT_FALSE(err.isOk());
  EXPECT_THAT(err.status().message(), HasSubstr("Flatten$Value: the value of a record in topic 't' is not a JSON object"));
}

TEST(Cast, FieldsNarrowParseAndFormat) {
  auto t = transform("Cast$Value", {{"spec", "a:int8,b:int32,c:float32,d:boolean,e:string,f:int64,g:boolean,h:float64"}});
  Record r = record("t", R"({"a": 300, "b": "-12", "c": 0.1, "d": 2, "e": 12.5, "f": 3.99, "g": "TRUE", "h": "1e3", "z": 1})");
  ASSERT_TRUE(*t->apply(r));
  const J v = json(r.value);
  EXPECT_EQ(v["a"], 44);  // 300 wraps in 8 bits
  EXPECT_EQ(v["b"], -12);
  EXPECT_NEAR(v["c"].get<double>(), 0.1, 1e-7);
  EXPECT_NE(v["c"].get<double>(), 0.1) << "float32 precision";
  EXPECT_EQ(v["d"], true);
  EXPECT_EQ(v["e"], "12.5");
  EXPECT_EQ(v["f"], 3);
  EXPECT_EQ(v["g"], true);
  EXPECT_EQ(v["h"], 1000.0);
  EXPECT_EQ(v["z"], 1) << "fields not in the spec are untouched";
  Record bad = record("t", R"({"b": "12x"})");
  auto err = t->apply(bad);
  ASSERT_FALSE(err.isOk());
  EXPECT_THAT(err.status().message(), HasSubstr("Cast$Value: field b of a record in topic 't': '12x' is not an int32"));
  Record range = record("t", R"({"a": "200"})");
  EXPECT_FALSE(t->apply(range).isOk()) << "a string out of int8's range fails";
  Record obj = record("t", R"({"a": {"x": 1}})");
  EXPECT_FALSE(t->apply(obj).isOk());
}

TEST(Cast, WholeKeyOrValueAndSpecErrors) {
  auto t = transform("Cast$Key", {{"spec", "int16"}});
  Record r = record("t", "v", "70000");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.key.str(), "4464");  // 70000 wraps in 16 bits
  auto s = transform("Cast$Value", {{"spec", "string"}});
  Record n = record("t", "42");
  ASSERT_TRUE(*s->apply(n));
  EXPECT_EQ(n.value.str(), "42");
  auto b = transform("Cast$Value", {{"spec", "boolean"}});
  Record txt = record("t", "yes");
  ASSERT_TRUE(*b->apply(txt));
  EXPECT_EQ(txt.value.str(), "false");
  const PluginEntry* e = findEntry("Cast$Value");
  ASSERT_NE(e, nullptr);
  for (const std::string spec : {"a:int9", "int8,b:int32", "uint8", ":int8", ""}) {
    auto c = create<Transform>("Cast$Value");
    EXPECT_FALSE(c->configure({{"spec", spec}}).isOk()) << spec;
  }
}

}  // namespace
}  // namespace ferry::transforms
