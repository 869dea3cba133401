// Unit tests of the bounded JSON parse (src/core/json_bounds.h): depth and size limits, error
// texts that quote only a few escaped characters, no throw and no deep recursion on hostile text.
#include "core/json_bounds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace ferry::core {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string nested(int depth, char open = '[', char close = ']') {
  return std::string(static_cast<std::size_t>(depth), open) +
         std::string(static_cast<std::size_t>(depth), close);
}

TEST(JsonBounds, AcceptsUpToTheDepthAndRefusesOneMore) {
  const JsonLimits limits{8, 1 << 20};
  auto ok = parseJsonBounded<nlohmann::json>(nested(8), limits);
  ASSERT_TRUE(ok.isOk()) << ok.status().message();
  EXPECT_EQ(documentDepth(*ok), 8);
  auto deep = parseJsonBounded<nlohmann::json>(nested(9), limits);
  ASSERT_FALSE(deep.isOk());
  EXPECT_EQ(deep.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(deep.status().message(), HasSubstr("nesting deeper than 8 levels"));
}

TEST(JsonBounds, TwoHundredThousandLevelsAreRefusedNotACrash) {
  // The /rules/test body that took the worker down: 200,000 levels, objects and arrays mixed.
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "{\"a\":[";
  text += "1";
  for (int i = 0; i < 100000; ++i) text += "]}";
  auto r = parseJsonBounded<nlohmann::ordered_json>(text, kRecordJsonLimits);
  ASSERT_FALSE(r.isOk());
  EXPECT_THAT(r.status().message(), HasSubstr("nesting deeper than 128"));
  EXPECT_EQ(jsonNesting(text, 128), 129);
  EXPECT_FALSE(parseJsonBounded<nlohmann::json>(nested(200000)).isOk());
}

TEST(JsonBounds, RefusesTextsLongerThanTheSizeLimit) {
  auto r = parseJsonBounded<nlohmann::json>("\"" + std::string(100, 'x') + "\"", {64, 50});
  ASSERT_FALSE(r.isOk());
  EXPECT_THAT(r.status().message(), HasSubstr("longer than 50 bytes"));
}

TEST(JsonBounds, ErrorTextsQuoteAFewEscapedCharactersAtMost) {
  const std::string secret = "s3cr3t-" + std::string(200, 'p');
  // A string that never ends: nlohmann's message would quote the whole token ("last read: ...").
  auto r = parseJsonBounded<nlohmann::json>("{\"password\": \"" + secret);
  ASSERT_FALSE(r.isOk());
  const std::string& m = r.status().message();
  EXPECT_THAT(m, HasSubstr("malformed JSON"));
  EXPECT_THAT(m, HasSubstr("line 1"));
  EXPECT_THAT(m, Not(HasSubstr("last read")));
  EXPECT_THAT(m, Not(HasSubstr(std::string(20, 'p'))));
  EXPECT_LT(m.size(), 200u);
  // Control bytes near the error come back escaped.
  auto c = parseJsonBounded<nlohmann::json>(std::string("[1,\x01\x02]"));
  ASSERT_FALSE(c.isOk());
  EXPECT_THAT(c.status().message(), Not(HasSubstr("\x01")));
  EXPECT_THAT(c.status().message(), HasSubstr("\\x01"));
}

TEST(JsonBounds, NulBytesAreNotJson) {
  EXPECT_FALSE(parseJsonBounded<nlohmann::json>(std::string("1\0garbage", 9)).isOk());
  EXPECT_FALSE(parseJsonBounded<nlohmann::json>(std::string("\"a\0b\"", 5)).isOk());
}

TEST(JsonBounds, KeepsOrderAndValues) {
  auto r = parseJsonBounded<nlohmann::ordered_json>(R"({"b":1,"a":[true,null,-2,1.5,"x"]})");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->dump(), R"({"b":1,"a":[true,null,-2,1.5,"x"]})");
  EXPECT_FALSE(parseJsonBounded<nlohmann::json>("").isOk());
  EXPECT_FALSE(parseJsonBounded<nlohmann::json>("{} {}").isOk());
}

TEST(JsonBounds, NestingCountsOnlyBracketsOutsideStrings) {
  EXPECT_EQ(jsonNesting(R"({"a":"[[[[[[","b":[{}]})", 64), 3);
  EXPECT_EQ(jsonNesting(R"("\"[[[")", 64), 0);
  EXPECT_EQ(jsonNesting("]]]][[", 64), 2);
  EXPECT_EQ(jsonNesting(nested(10), 4), 5);  // stops once beyond the limit
}

TEST(JsonBounds, ExcerptIsShortAndEscaped) {
  EXPECT_EQ(jsonExcerpt("abcdefghijklmnopqrstuvwxyz", 13, 3), "klmnop");
  EXPECT_EQ(jsonExcerpt(std::string("a\nb\xff", 4), 0, 8), "a\\x0ab\\xff");
  EXPECT_EQ(jsonExcerpt("abc", 99, 2), "bc");
}

TEST(JsonBounds, DocumentDepthHasNoRecursion) {
  nlohmann::json j = nlohmann::json::array();
  nlohmann::json* at = &j;
  for (int i = 0; i < 1000; ++i) {
    at->push_back(nlohmann::json::array());
    at = &(*at)[0];
  }
  EXPECT_EQ(documentDepth(j), 1001);
  EXPECT_EQ(documentDepth(nlohmann::json(3)), 0);
}

}  // namespace
}  // namespace ferry::core
