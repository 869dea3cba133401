// ConfigDef: typed parsing, defaults, validators, every error at once, unknown keys.
#include "ferry/config.h"

#include <gtest/gtest.h>

namespace ferry {
namespace {

ConfigDef def() {
  ConfigDef d;
  d.define("name", ConfigType::kString, std::nullopt, Importance::kHigh, "required", validators::nonEmptyString());
  d.define("count", ConfigType::kInt, "5", Importance::kMedium, "an int", validators::between(1, 10));
  d.define("big", ConfigType::kLong, "10000000000", Importance::kLow, "a long");
  d.define("ratio", ConfigType::kDouble, "0.5", Importance::kLow, "a double", validators::atLeast(0));
  d.define("on", ConfigType::kBool, "false", Importance::kLow, "a bool");
  d.define("items", ConfigType::kList, "a, b,,c ", Importance::kLow, "a list");
  d.define("mode", ConfigType::kString, "fast", Importance::kLow, "a choice", validators::oneOf({"fast", "safe"}));
  return d;
}

TEST(ConfigDef, ParsesTypesAndDefaults) {
  auto p = def().parse({{"name", "x"}, {"on", "TRUE"}, {"count", "+7"}});
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_EQ(p->getString("name"), "x");
  EXPECT_EQ(p->getInt("count"), 7);
  EXPECT_EQ(p->getLong("big"), 10000000000);
  EXPECT_DOUBLE_EQ(p->getDouble("ratio"), 0.5);
  EXPECT_TRUE(p->getBool("on"));
  EXPECT_EQ(p->getList("items"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(p->getString("mode"), "fast");
}

TEST(ConfigDef, EveryErrorAtOnce) {
  auto v = def().validate({{"count", "eleven"}, {"ratio", "-1"}, {"on", "yes"}, {"mode", "slow"}, {"typo", "1"}});
  EXPECT_EQ(v.errors.count("name"), 1u);   // missing required
  EXPECT_EQ(v.errors.count("count"), 1u);  // not an int
  EXPECT_EQ(v.errors.count("ratio"), 1u);  // validator
  EXPECT_EQ(v.errors.count("on"), 1u);     // not a bool
  EXPECT_EQ(v.errors.count("mode"), 1u);   // not one of
  ASSERT_EQ(v.unknownKeys, std::vector<std::string>{"typo"});
  EXPECT_EQ(v.errorCount(), 6u);
  const std::string s = v.summary();
  for (const char* k : {"name", "count", "ratio", "on", "mode", "typo"}) EXPECT_NE(s.find(k), std::string::npos) << k;
}

// A Java connector's key with Kafka's "default null" arrives as an empty default: an optional key
// without a value, not an invalid number. A value given for it is still checked.
TEST(ConfigDef, EmptyDefaultOfANumberIsKafkasNullDefault) {
  ConfigDef d;
  d.define("snapshot.fetch.size", ConfigType::kInt, "", Importance::kMedium, "optional, no default");
  d.define("flag", ConfigType::kBool, "", Importance::kLow, "optional, no default");
  EXPECT_TRUE(d.validate({}).ok());
  auto v = d.validate({{"snapshot.fetch.size", "many"}});
  EXPECT_EQ(v.errors.count("snapshot.fetch.size"), 1u);
  EXPECT_TRUE(d.validate({{"snapshot.fetch.size", "100"}, {"flag", "true"}}).ok());
}

TEST(ConfigDef, RangeAndIntOverflow) {
  EXPECT_FALSE(def().parse({{"name", "x"}, {"count", "0"}}).isOk());
  EXPECT_FALSE(def().parse({{"name", "x"}, {"count", "4294967296"}}).isOk());
  EXPECT_TRUE(def().parse({{"name", "x"}, {"big", "-9223372036854775808"}}).isOk());
  EXPECT_FALSE(def().parse({{"name", "x"}, {"big", "9223372036854775808"}}).isOk());
  EXPECT_FALSE(def().parse({{"name", "x"}, {"ratio", "nan"}}).isOk());
}

TEST(ConfigDef, UnknownKeysOnlyWhenAsked) {
  EXPECT_TRUE(def().parse({{"name", "x"}, {"extra", "1"}}).isOk());
  EXPECT_FALSE(def().parse({{"name", "x"}, {"extra", "1"}}, true).isOk());
  EXPECT_TRUE(def().parse({{"name", "x"}, {"transforms.a.type", "X"}}, true, {"transforms."}).isOk());
}

TEST(ConfigDef, TextRoundTripAndPrefixes) {
  EXPECT_EQ(ConfigDef::toText(ConfigValue(std::vector<std::string>{"a", "b"})), "a,b");
  EXPECT_EQ(ConfigDef::toText(ConfigValue(true)), "true");
  EXPECT_EQ(ConfigDef::toText(ConfigValue(std::int64_t{42})), "42");
  auto p = def().parse({{"name", "x"}, {"sink.file", "/f"}, {"sink.", "ignored"}});
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p->originalsWithPrefix("sink."), (StringMap{{"file", "/f"}}));
  ConfigDef composed;
  composed.include(def()).define("count", ConfigType::kInt, "2", Importance::kLow, "narrowed");
  EXPECT_EQ(*composed.find("count")->defaultValue, "2");
  EXPECT_EQ(composed.keys().size(), def().keys().size());
}

}  // namespace
}  // namespace ferry
