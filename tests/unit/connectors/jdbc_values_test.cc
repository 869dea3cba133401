// JdbcSink's conversions of typed data to PostgreSQL text, MySQL/MariaDB literals and both
// servers' types (connectors/jdbc/values.h), the quoting that keeps table and column names from
// becoming SQL, and the MariaDB client's URL parsing and error classes (mariadb_client.h).
#include "connectors/jdbc/values.h"

#include "connectors/jdbc/mariadb_client.h"

#include "core/base64.h"

#include <simdjson.h>

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

std::optional<std::string> literal(const SchemaBuilder& b, const char* json) {
  auto r = mysqlLiteral(*built(b), Json::parse(json), "f");
  EXPECT_TRUE(r.isOk()) << json << ": " << r.status().toString();
  return r.isOk() ? *r : std::optional<std::string>("<error>");
}

TEST(JdbcValuesMysql, EveryTypeHasItsLiteral) {
  EXPECT_EQ(literal(SchemaBuilder::int8(), "-128"), "-128");
  EXPECT_EQ(literal(SchemaBuilder::int64(), "9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(literal(SchemaBuilder::float64(), "0.1"), "0.1");
  EXPECT_EQ(literal(SchemaBuilder::float64(), "1e300"), "1e+300");
  EXPECT_EQ(literal(SchemaBuilder::boolean(), "false"), "FALSE");
  EXPECT_EQ(literal(SchemaBuilder::bytes(), "\"AAH/\""), "X'0001ff'");
  EXPECT_EQ(literal(SchemaBuilder::bytes(), "\"\""), "X''");
  EXPECT_EQ(literal(logical::decimal(2), "\"/2o=\""), "'-1.50'");
  EXPECT_EQ(literal(logical::date(), "19000"), "'2022-01-08'");
  EXPECT_EQ(literal(logical::time(), "3723004"), "'01:02:03.004'");
  EXPECT_EQ(literal(logical::timestamp(), "1700000000123"), "'2023-11-14 22:13:20.123'");
  EXPECT_EQ(literal(logical::uuid(), "\"00000000-0000-0000-0000-000000000001\""), "'00000000-0000-0000-0000-000000000001'");
  EXPECT_EQ(literal(logical::json(), "\"{\\\"a\\\":1}\""), "'{\\\"a\\\":1}'");
  EXPECT_EQ(literal(SchemaBuilder::string().optional(), "null"), std::nullopt);
  EXPECT_EQ(literal(SchemaBuilder::int32().defaultJson("5"), "null"), "5");
  EXPECT_FALSE(mysqlLiteral(*built(SchemaBuilder::string()), Json(), "name").isOk());
  EXPECT_FALSE(mysqlLiteral(*built(SchemaBuilder::int32()), Json::parse("\"1; DROP TABLE t\""), "n").isOk());
  EXPECT_FALSE(mysqlLiteral(*built(SchemaBuilder::float64()), Json::parse("\"1 OR 1=1\""), "n").isOk());
  EXPECT_FALSE(mysqlLiteral(*built(SchemaBuilder::boolean()), Json::parse("1"), "b").isOk());
  EXPECT_FALSE(mysqlLiteral(*built(logical::time()), Json::parse("-1"), "t").isOk());
}

TEST(JdbcValuesMysql, StringsAreOneLiteralWhateverTheirBytes) {
  EXPECT_EQ(mysqlQuoted("it's"), "'it\\'s'");
  EXPECT_EQ(mysqlQuoted("\\' OR 1=1 -- "), "'\\\\\\' OR 1=1 -- '");  // the backslash cannot eat the quote's escape
  EXPECT_EQ(mysqlQuoted(std::string("a\0b\n\r\x1a\"", 7)), "'a\\0b\\n\\r\\Z\\\"'");
  EXPECT_EQ(mysqlQuoted("\xc3\xa9 \xf0\x9f\x9a\x80"), "'\xc3\xa9 \xf0\x9f\x9a\x80'");
  // Every byte but the escaped ones passes through, so a non-UTF-8 byte before a quote stays a
  // byte and the quote stays escaped.
  EXPECT_EQ(mysqlQuoted("\xbf'"), "'\xbf\\''");
  EXPECT_EQ(literal(SchemaBuilder::string(), "\"a\\u0000b\""), std::string("'a\\0b'"));
  // Text that is not UTF-8 (possible only from a connector, JSON parsing refuses it) is refused.
  auto notUtf8 = mysqlLiteral(*built(SchemaBuilder::string()), Json(std::string("a\xff'b")), "name");
  ASSERT_FALSE(notUtf8.isOk());
  EXPECT_THAT(notUtf8.status().message(), HasSubstr("field 'name': text that is not UTF-8"));
  EXPECT_TRUE(validUtf8("\xf0\x9f\x9a\x80"));
  EXPECT_FALSE(validUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(validUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(validUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(validUtf8("\xe2\x82"));          // cut short
}

TEST(JdbcValuesMysql, ColumnTypes) {
  auto type = [](const SchemaBuilder& b, bool key = false) { return *mysqlType(*built(b), "f", key); };
  EXPECT_EQ(type(SchemaBuilder::int8()), "TINYINT");
  EXPECT_EQ(type(SchemaBuilder::int16()), "SMALLINT");
  EXPECT_EQ(type(SchemaBuilder::int32()), "INT");
  EXPECT_EQ(type(SchemaBuilder::int64()), "BIGINT");
  EXPECT_EQ(type(SchemaBuilder::float32()), "FLOAT");
  EXPECT_EQ(type(SchemaBuilder::float64()), "DOUBLE");
  EXPECT_EQ(type(SchemaBuilder::boolean()), "BOOLEAN");
  EXPECT_EQ(type(SchemaBuilder::string()), "TEXT");
  EXPECT_EQ(type(SchemaBuilder::string(), true), "VARCHAR(255)");
  EXPECT_EQ(type(SchemaBuilder::bytes()), "LONGBLOB");
  EXPECT_EQ(type(SchemaBuilder::bytes(), true), "VARBINARY(255)");
  EXPECT_EQ(type(logical::decimal(2)), "DECIMAL(65,2)");
  EXPECT_EQ(type(logical::decimal(30)), "DECIMAL(65,30)");
  EXPECT_EQ(type(logical::date()), "DATE");
  EXPECT_EQ(type(logical::time()), "TIME(3)");
  EXPECT_EQ(type(logical::timestamp()), "DATETIME(3)");
  EXPECT_EQ(type(logical::uuid()), "CHAR(36)");
  EXPECT_EQ(type(logical::json()), "JSON");
  auto wide = mysqlType(*built(logical::decimal(31)), "price", false);
  ASSERT_FALSE(wide.isOk());
  EXPECT_THAT(wide.status().message(), HasSubstr("field 'price': a Decimal of scale 31"));
  EXPECT_FALSE(mysqlType(*built(SchemaBuilder::array(built(SchemaBuilder::int8()))), "tags", false).isOk());
}

TEST(JdbcValuesMysql, IdentifiersCannotBecomeSql) {
  EXPECT_EQ(*mysqlIdentifier("orders", true), "`orders`");
  EXPECT_EQ(*mysqlIdentifier("x`; DROP TABLE t; --", true), "`x``; DROP TABLE t; --`");
  EXPECT_EQ(*mysqlIdentifier("``", true), "``````");
  EXPECT_EQ(*mysqlIdentifier("a\"b'c\\", true), "`a\"b'c\\`");
  EXPECT_EQ(*mysqlIdentifier("plain_1", false), "plain_1");
  EXPECT_FALSE(mysqlIdentifier("a`b", false).isOk());
  EXPECT_FALSE(mysqlIdentifier("", true).isOk());
  EXPECT_FALSE(mysqlIdentifier(std::string("a\0b", 3), true).isOk());
  EXPECT_FALSE(mysqlIdentifier("a\xff", true).isOk());
  EXPECT_TRUE(mysqlIdentifier(std::string(64, 'a'), true).isOk());
  EXPECT_FALSE(mysqlIdentifier(std::string(65, 'a'), true).isOk());
  std::string wide;
  for (int i = 0; i < 64; ++i) wide += "\xc3\xa9";  // 64 characters, 128 bytes
  EXPECT_TRUE(mysqlIdentifier(wide, true).isOk());
  EXPECT_EQ(*mysqlTableIdentifier("${topic}", "shop.orders", true), "`shop`.`orders`");
  EXPECT_EQ(*mysqlTableIdentifier("sink_${topic}", "t`x", true), "`sink_t``x`");
}

TEST(MariaDbClient, UrlsAreParsedStrictly) {
  auto a = parseMariaDbUrl("jdbc:mysql://db.example:3307/shop");
  ASSERT_TRUE(a.isOk()) << a.status().toString();
  EXPECT_EQ(a->host, "db.example");
  EXPECT_EQ(a->port, 3307u);
  EXPECT_EQ(a->database, "shop");
  a = parseMariaDbUrl("mariadb://u%40x:p%3Aw@[::1]/");
  ASSERT_TRUE(a.isOk()) << a.status().toString();
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 3306u);
  EXPECT_EQ(a->database, "");
  EXPECT_EQ(a->user, "u@x");
  EXPECT_EQ(a->password, "p:w");
  EXPECT_TRUE(isMariaDbUrl("jdbc:mariadb://h/d"));
  EXPECT_FALSE(isMariaDbUrl("postgresql://h/d"));
  EXPECT_FALSE(parseMariaDbUrl("postgresql://h/d").isOk());
  EXPECT_FALSE(parseMariaDbUrl("mysql:///d").isOk());
  EXPECT_FALSE(parseMariaDbUrl("mysql://h:0/d").isOk());
  EXPECT_FALSE(parseMariaDbUrl("mysql://h:99999/d").isOk());
  EXPECT_FALSE(parseMariaDbUrl("mysql://h:33x/d").isOk());
  EXPECT_FALSE(parseMariaDbUrl("mysql://[::1/d").isOk());
  EXPECT_FALSE(parseMariaDbUrl("mysql://h/d/e").isOk());
  EXPECT_FALSE(parseMariaDbUrl(std::string("mysql://h\0/d", 12)).isOk());
  auto params = parseMariaDbUrl("mysql://h/d?user=a&password=secret");
  ASSERT_FALSE(params.isOk());
  EXPECT_THAT(params.status().message(), ::testing::Not(HasSubstr("secret")));
}

TEST(MariaDbClient, ErrorsAreClassifiedByNumber) {
  EXPECT_EQ(classifyMariaDbError(2013, "lost").code(), StatusCode::kUnavailable);
  EXPECT_EQ(classifyMariaDbError(2006, "gone").code(), StatusCode::kUnavailable);
  EXPECT_EQ(classifyMariaDbError(1927, "killed").code(), StatusCode::kUnavailable);
  EXPECT_EQ(classifyMariaDbError(1213, "deadlock").code(), StatusCode::kUnavailable);
  EXPECT_EQ(classifyMariaDbError(1205, "lock wait").code(), StatusCode::kUnavailable);
  EXPECT_EQ(classifyMariaDbError(1062, "dup").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(classifyMariaDbError(4025, "check").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(classifyMariaDbError(1406, "too long").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(classifyMariaDbError(1048, "null").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(classifyMariaDbError(1146, "no table").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(classifyMariaDbError(1045, "access denied").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(classifyMariaDbError(1064, "syntax").code(), StatusCode::kFailedPrecondition);
  Status s = classifyMariaDbError(1062, "MariaDB: Duplicate entry '1' for key 'PRIMARY'");
  EXPECT_EQ(s.message(), "MariaDB: Duplicate entry '1' for key 'PRIMARY' [errno 1062]");
  EXPECT_EQ(mariaDbErrno(s), 1062u);
  EXPECT_EQ(mariaDbErrno(Status::ok()), 0u);
}


// The quick path (a value as simdjson read it) writes exactly what the Json path writes, for
// PostgreSQL and MySQL, or leaves the value to it.
TEST(JdbcValues, QuickTextIsTheJsonPathsTextOrNothing) {
  const SchemaBuilder schemas[] = {SchemaBuilder::int8(), SchemaBuilder::int32(), SchemaBuilder::int64(),
                                   SchemaBuilder::boolean(), SchemaBuilder::string(), SchemaBuilder::float64(),
                                   SchemaBuilder::bytes(), logical::timestamp(), logical::date(), logical::uuid(),
                                   SchemaBuilder::string().optional().defaultJson("\"d\"")};
  const char* values[] = {"0", "-1", "127", "9223372036854775807", "-9223372036854775808", "18446744073709551615",
                          "1.5", "true", "false", "null", "\"\"", "\"a'b\\\"c\\\\d\\n\\r\\u001a\"", "\"\\u0000\"",
                          "\"\\u00e9\\ud83d\\ude00\"", "\"AA==\"", "\"123e4567-e89b-12d3-a456-426614174000\"",
                          "1700000000123", "-1", "[1]", "{}"};
  simdjson::dom::parser parser;
  int quick = 0;
  for (const auto& b : schemas) {
    const SchemaPtr s = built(b);
    for (const char* v : values) {
      simdjson::dom::element e;
      ASSERT_FALSE(parser.parse(std::string(v)).get(e)) << v;
      for (const bool mysql : {false, true}) {
        const auto fast = quickText(*s, e, mysql);
        if (!fast) continue;
        ++quick;
        const auto slow = mysql ? mysqlLiteral(*s, Json::parse(v), "f") : postgresText(*s, Json::parse(v), "f");
        ASSERT_TRUE(slow.isOk()) << s->describe() << " " << v << ": " << slow.status().toString();
        EXPECT_EQ(*slow, fast) << s->describe() << " " << v << (mysql ? " (mysql)" : "");
      }
    }
  }
  EXPECT_GE(quick, 30);  // integers, booleans, strings and timestamps take it
  // Left to the Json path: null (defaults), floats, bytes, other logical types, a NUL for PostgreSQL.
  simdjson::dom::element e;
  ASSERT_FALSE(parser.parse(std::string("null")).get(e));
  EXPECT_FALSE(quickText(*built(SchemaBuilder::string().optional()), e, false));
  ASSERT_FALSE(parser.parse(std::string("1.5")).get(e));
  EXPECT_FALSE(quickText(*built(SchemaBuilder::float64()), e, false));
  ASSERT_FALSE(parser.parse(std::string("\"\\u0000\"")).get(e));
  EXPECT_FALSE(quickText(*built(SchemaBuilder::string()), e, false));
  EXPECT_TRUE(quickText(*built(SchemaBuilder::string()), e, true));  // MySQL escapes it
  ASSERT_FALSE(parser.parse(std::string("1")).get(e));
  EXPECT_FALSE(quickText(*built(logical::date()), e, false));
  EXPECT_FALSE(quickText(*built(SchemaBuilder::string()), e, false));  // a number for a string: the error's path
}

}  // namespace
}  // namespace ferry::connectors::jdbc
