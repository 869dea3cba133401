// JdbcSink's conversions of typed data to PostgreSQL text and types (connectors/jdbc/values.h),
// and the quoting that keeps table and column names from becoming SQL.
#include "connectors/jdbc/values.h"

#include "core/base64.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ferry::connectors::jdbc {
namespace {

using ::testing::HasSubstr;

SchemaPtr built(const SchemaBuilder& b) { return b.build().value(); }

std::optional<std::string> text(const SchemaBuilder& b, const char* json) {
  auto r = postgresText(*built(b), Json::parse(json), "f");
  EXPECT_TRUE(r.isOk()) << json << ": " << r.status().toString();
  return r.isOk() ? *r : std::optional<std::string>("<error>");
}

TEST(JdbcValues, DecimalsAreExactAtAnyScaleAndSign) {
  EXPECT_EQ(decimalText(std::string("\x04\xd2", 2), 2), "12.34");
  EXPECT_EQ(decimalText(std::string("\xff\x6a", 2), 2), "-1.50");
  EXPECT_EQ(decimalText(std::string("\x01", 1), 0), "1");
  EXPECT_EQ(decimalText(std::string("\xff\x7f", 2), 0), "-129");
  EXPECT_EQ(decimalText(std::string("\x05", 1), 3), "0.005");
  EXPECT_EQ(decimalText(std::string("\xfb", 1), 3), "-0.005");
  EXPECT_EQ(decimalText(std::string("\x00", 1), 2), "0.00");
  EXPECT_EQ(decimalText(std::string("\x07", 1), -2), "700");
  // 2^80 - 1 with scale 5, beyond any 64-bit integer.
  EXPECT_EQ(decimalText(std::string("\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11), 5), "12089258196146291747.06175");
  EXPECT_EQ(text(logical::decimal(2), "\"BNI=\""), "12.34");
}

TEST(JdbcValues, DatesTimesAndTimestampsAreUtcText) {
  EXPECT_EQ(dateText(0), "1970-01-01");
  EXPECT_EQ(dateText(19000), "2022-01-08");
  EXPECT_EQ(dateText(-1), "1969-12-31");
  EXPECT_EQ(timeText(3723004), "01:02:03.004");
  EXPECT_EQ(timestampText(1700000000123), "2023-11-14 22:13:20.123");
  EXPECT_EQ(timestampText(-1), "1969-12-31 23:59:59.999");
  EXPECT_EQ(text(logical::date(), "19000"), "2022-01-08");
  EXPECT_EQ(text(logical::timestamp(), "1700000000123"), "2023-11-14 22:13:20.123");
  auto badTime = postgresText(*built(logical::time()), Json::parse("86400000"), "at");
  EXPECT_FALSE(badTime.isOk());
}

TEST(JdbcValues, EveryPrimitiveHasItsTextAndType) {
  EXPECT_EQ(text(SchemaBuilder::int8(), "-128"), "-128");
  EXPECT_EQ(text(SchemaBuilder::int64(), "9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(text(SchemaBuilder::float64(), "0.1"), "0.1");
  EXPECT_EQ(text(SchemaBuilder::boolean(), "true"), "true");
  EXPECT_EQ(text(SchemaBuilder::string(), "\"it's \\\"q\\\"\""), "it's \"q\"");
  EXPECT_EQ(text(SchemaBuilder::bytes(), "\"AAH/\""), "\\x0001ff");
  EXPECT_EQ(text(SchemaBuilder::string().optional(), "null"), std::nullopt);
  EXPECT_EQ(text(SchemaBuilder::int32().defaultJson("5"), "null"), "5");
  auto required = postgresText(*built(SchemaBuilder::string()), Json(), "name");
  ASSERT_FALSE(required.isOk());
  EXPECT_THAT(required.status().message(), HasSubstr("field 'name': null for a required string"));
  EXPECT_FALSE(postgresText(*built(SchemaBuilder::int32()), Json::parse("\"1\""), "n").isOk());
  EXPECT_FALSE(postgresText(*built(SchemaBuilder::bytes()), Json::parse("\"%%%\""), "b").isOk());
  EXPECT_FALSE(postgresText(*built(SchemaBuilder::string()), Json(std::string("a\0b", 3)), "s").isOk());
  EXPECT_EQ(*postgresType(*built(SchemaBuilder::int16()), "f"), "SMALLINT");
  EXPECT_EQ(*postgresType(*built(SchemaBuilder::float32()), "f"), "REAL");
  EXPECT_EQ(*postgresType(*built(logical::decimal(3)), "f"), "NUMERIC");
  EXPECT_EQ(*postgresType(*built(logical::uuid()), "f"), "UUID");
  EXPECT_EQ(*postgresType(*built(logical::json()), "f"), "JSONB");
  EXPECT_EQ(*postgresType(*built(logical::timestamp()), "f"), "TIMESTAMP");
  auto nested = postgresType(*built(SchemaBuilder::array(built(SchemaBuilder::int8()))), "tags");
  ASSERT_FALSE(nested.isOk());
  EXPECT_THAT(nested.status().message(), HasSubstr("field 'tags'"));
}

TEST(JdbcValues, Base64DecodesOnlyWhatIsBase64) {
  using core::base64Decode;
  EXPECT_EQ(base64Decode("aGk="), "hi");
  EXPECT_EQ(base64Decode(""), "");
  EXPECT_EQ(base64Decode("AAH/"), std::string("\x00\x01\xff", 3));
  EXPECT_FALSE(base64Decode("aGk").has_value());
  EXPECT_FALSE(base64Decode("a=Gk").has_value());
  EXPECT_FALSE(base64Decode("aG!=").has_value());
}

TEST(JdbcValues, IdentifiersCannotBecomeSql) {
  EXPECT_EQ(*identifier("orders", true), "\"orders\"");
  EXPECT_EQ(*identifier("x\"; DROP TABLE t; --", true), "\"x\"\"; DROP TABLE t; --\"");
  EXPECT_EQ(*identifier("plain_1", false), "plain_1");
  EXPECT_FALSE(identifier("a b", false).isOk());
  EXPECT_FALSE(identifier("", true).isOk());
  EXPECT_FALSE(identifier(std::string("a\0b", 3), true).isOk());
  EXPECT_FALSE(identifier(std::string(64, 'a'), true).isOk());
  EXPECT_EQ(*tableIdentifier("${topic}", "shop.orders", true), "\"shop\".\"orders\"");
  EXPECT_EQ(*tableIdentifier("sink_${topic}", "t\"x", true), "\"sink_t\"\"x\"");
}

}  // namespace
}  // namespace ferry::connectors::jdbc
