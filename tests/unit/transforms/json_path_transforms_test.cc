// JsonPathExtract ($Key/$Value): path syntax, results of every JSON type, `field`, `missing`
// null/drop/fail, and configure-time path errors with their position.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::transforms {
namespace {

using ::testing::HasSubstr;
using namespace testing;
using J = nlohmann::json;

constexpr const char* kDoc =
    R"({"device":{"id":"d-1","readings":[{"temp":21.5},{"temp":22,"ok":null}]},"a.b":{"c":[10,[20,30]]}})";

// The value after extracting `path` (plus `extra` keys) from kDoc; "<null>" for a null value,
// "<dropped>" when the record is dropped, "<error: ...>" when it fails.
std::string extract(const std::string& path, StringMap extra = {}, const std::string& value = kDoc) {
  extra["path"] = path;
  auto t = transform("io.ferry.transforms.JsonPathExtract$Value", extra);
  if (!t) return "<no transform>";
  Record r = record("iot", value);
  auto kept = t->apply(r);
  if (!kept.isOk()) return "<error: " + kept.status().message() + ">";
  if (!*kept) return "<dropped>";
  return r.value.isNull() ? "<null>" : r.value.str();
}

TEST(JsonPathExtract, SelectsNestedFieldsAndArrayElements) {
  EXPECT_EQ(extract("device.readings[1].temp"), "22");
  EXPECT_EQ(extract("$.device.readings[0].temp"), "21.5");
  EXPECT_EQ(extract("$.device.readings[0]"), R"({"temp":21.5})");
  EXPECT_EQ(extract("device.id"), "d-1") << "a string as its raw text, like ExtractField";
  EXPECT_EQ(extract("$['a.b'].c[1][0]"), "20") << "quoted names may hold dots; nested indexes";
  EXPECT_EQ(extract(R"($["a.b"]['c'][0])"), "10");
  EXPECT_EQ(extract("$[1]", {}, "[5,6,7]"), "6") << "a top-level array";
  EXPECT_EQ(json(Bytes(extract("$"))), J::parse(kDoc)) << "$ is the whole document";
  EXPECT_EQ(extract("device.readings[1].ok"), "<null>") << "a JSON null result is a null value";
  EXPECT_EQ(extract("device.readings[1].ok", {{"missing", "fail"}}), "<null>") << "null is found, not missing";
}

TEST(JsonPathExtract, FieldWrapsTheResult) {
  EXPECT_EQ(extract("device.readings[1].temp", {{"field", "t"}}), R"({"t":22})");
  EXPECT_EQ(extract("device.id", {{"field", "id"}}), R"({"id":"d-1"})") << "a string stays a JSON string";
  EXPECT_EQ(extract("device.readings[1].ok", {{"field", "ok"}}), R"({"ok":null})");
  EXPECT_EQ(extract("device.nothing", {{"field", "t"}}), R"({"t":null})");
}

TEST(JsonPathExtract, MissingIsNullDropOrFail) {
  EXPECT_EQ(extract("device.nothing"), "<null>") << "missing=null is the default";
  EXPECT_EQ(extract("device.readings[2].temp", {{"missing", "null"}}), "<null>");
  EXPECT_EQ(extract("device.readings[2]", {{"missing", "drop"}}), "<dropped>");
  EXPECT_EQ(extract("device.id.x", {{"missing", "drop"}}), "<dropped>") << "a step into a string";
  EXPECT_EQ(extract("device.readings[2].temp", {{"missing", "fail"}}),
            "<error: JsonPathExtract$Value: path 'device.readings[2].temp' selects nothing in the value of a "
            "record in topic 'iot' ($.device.readings is a JSON array without index 2)>");
  EXPECT_EQ(extract("device.serial", {{"missing", "FAIL"}}),
            "<error: JsonPathExtract$Value: path 'device.serial' selects nothing in the value of a record in topic "
            "'iot' ($.device is a JSON object without field 'serial')>");
  EXPECT_THAT(extract("device[0]", {{"missing", "fail"}}), HasSubstr("($.device is a JSON object without index 0)"));
  EXPECT_THAT(extract("device.readings.temp", {{"missing", "fail"}}),
              HasSubstr("($.device.readings is a JSON array without field 'temp')"));
}

TEST(JsonPathExtract, NullPassesAndNonJsonFails) {
  auto t = transform("JsonPathExtract$Value", {{"path", "a"}, {"missing", "drop"}});
  Record tomb = record("iot", std::nullopt);
  EXPECT_TRUE(*t->apply(tomb)) << "a tombstone is kept, whatever missing says";
  EXPECT_TRUE(tomb.value.isNull());
  EXPECT_EQ(extract("a", {}, "not json"),
            "<error: JsonPathExtract$Value: the value of a record in topic 'iot' is not JSON; path 'a' needs it>");
  EXPECT_EQ(extract("a", {{"missing", "fail"}}, "42"),
            "<error: JsonPathExtract$Value: path 'a' selects nothing in the value of a record in topic 'iot' ($ is "
            "a JSON number without field 'a')>");
}

TEST(JsonPathExtract, KeySide) {
  auto t = transform("io.ferry.transforms.JsonPathExtract$Key", {{"path", "$.id"}});
  Record r = record("iot", R"({"id":"v"})", R"({"id":"k-7","x":1})");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.key.str(), "k-7");
  EXPECT_EQ(r.value.str(), R"({"id":"v"})");
  Record bad = record("iot", "v", "k");
  EXPECT_THAT(t->apply(bad).status().message(),
              HasSubstr("JsonPathExtract$Key: the key of a record in topic 'iot' is not JSON"));
}

TEST(JsonPathExtract, PathErrorsNameThePosition) {
  auto t = create<Transform>("JsonPathExtract$Value");
  ASSERT_NE(t, nullptr);
  auto error = [&](const std::string& path) { return t->configure({{"path", path}}).message(); };
  EXPECT_THAT(t->configure({}).message(), HasSubstr("path"));
  EXPECT_THAT(error(""), HasSubstr("the path is empty (use $ for the whole document)"));
  EXPECT_THAT(error("a..b"), HasSubstr("recursive descent (..) is not supported at character 2"));
  EXPECT_THAT(error("a.b["), HasSubstr("unterminated '[' at character 4"));
  EXPECT_THAT(error("a[x]"), HasSubstr("expected an array index or a quoted name at character 3"));
  EXPECT_THAT(error("a[0"), HasSubstr("expected ']' at character 4"));
  EXPECT_THAT(error("a[0]x"), HasSubstr("expected '.' or '[' at character 5, found 'x'"));
  EXPECT_THAT(error("$x"), HasSubstr("expected '.' or '[' at character 2, found 'x'"));
  EXPECT_THAT(error("a.*"), HasSubstr("wildcards are not supported at character 3"));
  EXPECT_THAT(error("a[*]"), HasSubstr("wildcards are not supported at character 3"));
  EXPECT_THAT(error("a[-1]"), HasSubstr("negative array indexes are not supported at character 3"));
  EXPECT_THAT(error("a."), HasSubstr("expected a field name at character 3"));
  EXPECT_THAT(error(".a"), HasSubstr("expected a field name at character 1"));
  EXPECT_THAT(error("$['a"), HasSubstr("unterminated quoted name at character 2"));
  EXPECT_THAT(error("$['a'x"), HasSubstr("expected ']' at character 6"));
  EXPECT_THAT(error("a]"), HasSubstr("expected '.' or '[' at character 2, found ']'"));
  EXPECT_FALSE(t->configure({{"path", "a"}, {"missing", "skip"}}).isOk());
  EXPECT_TRUE(t->configure({{"path", R"($['it\'s'])"}}).isOk()) << "an escaped quote inside a quoted name";
  EXPECT_TRUE(t->configure({{"path", "$"}}).isOk());
}

}  // namespace
}  // namespace ferry::transforms
