// JSON over bytes: the fast path (simdjson parse, ferry's writer) gives exactly what nlohmann's own
// parser and serializer give, on ordinary and on awkward input.
#include "transforms/json_util.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ferry::transforms {
namespace {

Json reference(std::string_view text) { return Json::parse(text.begin(), text.end(), nullptr, false); }

std::string referenceDump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

const std::vector<std::string> kDocuments = {
    R"({"device":"dev-00042","temp":31.7,"hum":55,"neg":-3,"ok":true,"none":null,"arr":[1,2.5,"x",[],{}]})",
    R"([1,-1,0,-0,1.0,1.5e10,1e-7,123456789012345678,-9223372036854775808,18446744073709551615])",
    R"({"big":123456789012345678901234567890})",           // beyond 64 bits: a float in nlohmann
    R"({"a":1,"b":2,"a":3})",                              // duplicate key: last value, first place
    R"({"s":"tab\there \"quoted\" back\\slash \u00e9 \ud83d\ude00 \u0001"})",
    R"("just a string")", "42", "-7", "3.14", "true", "null", "[]", "{}",
    R"({"k":"héllo wörld"})",
    std::string(128, '[') + std::string(128, ']'),        // the record bound exactly
};

TEST(JsonUtil, ParsesLikeNlohmann) {
  for (const auto& text : kDocuments) {
    auto fast = parseJson(text);
    Json ref = reference(text);
    ASSERT_FALSE(ref.is_discarded()) << text.substr(0, 80);
    ASSERT_TRUE(fast.has_value()) << text.substr(0, 80);
    EXPECT_EQ(*fast, ref) << text.substr(0, 80);
    EXPECT_EQ(fast->type(), ref.type()) << text.substr(0, 80);
    EXPECT_EQ(referenceDump(*fast), referenceDump(ref)) << text.substr(0, 80);  // same number kinds
    EXPECT_TRUE(isJson(text)) << text.substr(0, 80);
  }
}

// Writing and copying a document recurse once per level: a value nested deeper than the record
// bound is not a document the transforms take (nlohmann alone would build it).
TEST(JsonUtil, RefusesValuesNestedDeeperThanTheRecordBound) {
  for (int depth : {129, 2000, 200000}) {
    const std::string text = std::string(depth, '[') + std::string(depth, ']');
    EXPECT_FALSE(parseJson(text).has_value()) << depth;
    EXPECT_FALSE(isJson(text)) << depth;
    EXPECT_NE(jsonError(text).find("nesting deeper than 128"), std::string::npos) << jsonError(text);
  }
  std::string objects;
  for (int i = 0; i < 129; ++i) objects += "{\"a\":";
  objects += "1" + std::string(129, '}');
  EXPECT_FALSE(parseJson(objects).has_value());
}

TEST(JsonUtil, RefusesWhatNlohmannRefuses) {
  for (std::string text : {std::string("{"), std::string("not json"), std::string(R"({"a":01})"),
                           std::string("[1,]"), std::string(R"({"a":1} x)"), std::string(""),
                           std::string("\"bad \xff utf8\""), std::string(R"({"a":NaN})")}) {
    EXPECT_TRUE(reference(text).is_discarded()) << text;
    EXPECT_FALSE(parseJson(text).has_value()) << text;
    EXPECT_FALSE(isJson(text)) << text;
  }
}

TEST(JsonUtil, ANulByteDoesNotEndTheInput) {
  const std::string text("1\0garbage", 9);
  EXPECT_FALSE(reference(text).is_discarded());  // nlohmann stops reading at the NUL
  EXPECT_FALSE(parseJson(text).has_value());
  EXPECT_FALSE(isJson(text));
}

TEST(JsonUtil, WritesLikeNlohmann) {
  std::vector<Json> values;
  for (const auto& text : kDocuments) values.push_back(reference(text));
  values.push_back(Json(std::string("invalid \xc3\x28 utf8 and \x01 control")));  // replaced, escaped
  values.push_back(Json(1.0));
  values.push_back(Json(0.1));
  values.push_back(Json(1e300));
  values.push_back(Json(-0.0));
  values.push_back(Json(std::numeric_limits<double>::quiet_NaN()));  // null, as nlohmann writes it
  values.push_back(Json::object({{"nested", Json::array({Json::object({{"k", "v"}})})}}));
  for (const auto& v : values) EXPECT_EQ(dumpJson(v), referenceDump(v)) << referenceDump(v).substr(0, 80);
}

}  // namespace
}  // namespace ferry::transforms
