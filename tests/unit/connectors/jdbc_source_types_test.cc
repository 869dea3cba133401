// JdbcSource's reading of PostgreSQL column types and value texts (connectors/jdbc/source_types.h):
// each type's schema, each text's payload JSON, and texts that are not what the type promises.
#include "connectors/jdbc/source_types.h"

#include "connectors/jdbc/values.h"
#include "core/base64.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace ferry::connectors::jdbc {
namespace {

using ::testing::HasSubstr;

ColumnReader reader(unsigned oid, int typmod = -1, NumericMapping m = NumericMapping::kNone, bool optional = true) {
  auto r = pgColumnReader("c", oid, typmod, optional, m);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return r.isOk() ? *r : ColumnReader{};
}

std::string payload(const ColumnReader& col, std::string_view text) {
  std::string out;
  Status s = appendPgValue(out, col, text);
  EXPECT_TRUE(s.isOk()) << text << ": " << s.toString();
  return out;
}

// NUMERIC(p,s)'s type modifier as PostgreSQL sends it.
int numericMod(int precision, int scale) { return ((precision << 16) | (scale & 0x7ff)) + 4; }

TEST(JdbcSourceTypes, EachTypeHasItsSchema) {
  EXPECT_EQ(reader(21).schema->describe(), "int16?");
  EXPECT_EQ(reader(23, -1, NumericMapping::kNone, false).schema->describe(), "int32");
  EXPECT_EQ(reader(20).schema->type(), SchemaType::kInt64);
  EXPECT_EQ(reader(700).schema->type(), SchemaType::kFloat32);
  EXPECT_EQ(reader(701).schema->type(), SchemaType::kFloat64);
  EXPECT_EQ(reader(16).schema->type(), SchemaType::kBoolean);
  EXPECT_EQ(reader(25).schema->type(), SchemaType::kString);
  EXPECT_EQ(reader(17).schema->type(), SchemaType::kBytes);
  EXPECT_EQ(reader(1082).schema->logicalName(), logical::kDate);
  EXPECT_EQ(reader(1083).schema->logicalName(), logical::kTime);
  EXPECT_EQ(reader(1266).schema->logicalName(), logical::kTime);
  EXPECT_EQ(reader(1114).schema->logicalName(), logical::kTimestamp);
  EXPECT_EQ(reader(1184).schema->logicalName(), logical::kTimestamp);
  EXPECT_EQ(reader(2950).schema->logicalName(), logical::kUuid);
  EXPECT_EQ(reader(3802).schema->logicalName(), logical::kJson);
  EXPECT_EQ(reader(114).schema->logicalName(), logical::kJson);
  EXPECT_EQ(reader(1186).schema->type(), SchemaType::kString);  // interval: ISO 8601 text
  auto dec = reader(1700, numericMod(10, 3));
  EXPECT_EQ(dec.kind, ValueKind::kDecimal);
  EXPECT_EQ(dec.schema->logicalName(), logical::kDecimal);
  EXPECT_EQ(dec.schema->decimalScale(), 3);
  auto arr = reader(1007);
  ASSERT_EQ(arr.kind, ValueKind::kArray);
  EXPECT_EQ(arr.schema->valueSchema()->type(), SchemaType::kInt32);
}

TEST(JdbcSourceTypes, NumericMappingFollowsKafkaConnectJdbc) {
  EXPECT_EQ(reader(1700, numericMod(2, 0), NumericMapping::kPrecisionOnly).schema->type(), SchemaType::kInt8);
  EXPECT_EQ(reader(1700, numericMod(4, 0), NumericMapping::kPrecisionOnly).schema->type(), SchemaType::kInt16);
  EXPECT_EQ(reader(1700, numericMod(9, 0), NumericMapping::kPrecisionOnly).schema->type(), SchemaType::kInt32);
  EXPECT_EQ(reader(1700, numericMod(18, 0), NumericMapping::kPrecisionOnly).schema->type(), SchemaType::kInt64);
  EXPECT_EQ(reader(1700, numericMod(19, 0), NumericMapping::kPrecisionOnly).kind, ValueKind::kDecimal);
  EXPECT_EQ(reader(1700, numericMod(10, 2), NumericMapping::kPrecisionOnly).kind, ValueKind::kDecimal);
  EXPECT_EQ(reader(1700, numericMod(10, 2), NumericMapping::kBestFit).schema->type(), SchemaType::kFloat64);
  EXPECT_EQ(reader(1700, numericMod(30, 2), NumericMapping::kBestFit).kind, ValueKind::kDecimal);
  EXPECT_EQ(reader(1700, numericMod(10, 2), NumericMapping::kNone).kind, ValueKind::kDecimal);
  // NUMERIC without precision: exact text (best_fit: float64).
  EXPECT_EQ(reader(1700, -1).schema->type(), SchemaType::kString);
  EXPECT_EQ(reader(1700, -1, NumericMapping::kBestFit).schema->type(), SchemaType::kFloat64);
  EXPECT_EQ(payload(reader(1700, -1), "1.25"), "\"1.25\"");
  EXPECT_FALSE(numericMappingOf("best").isOk());
}

TEST(JdbcSourceTypes, TextsBecomeThePayloadForm) {
  EXPECT_EQ(payload(reader(23), "-42"), "-42");
  EXPECT_EQ(payload(reader(20), "9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(payload(reader(701), "1.5e+100"), "1.5e+100");
  EXPECT_EQ(payload(reader(701), "NaN"), "\"NaN\"");
  EXPECT_EQ(payload(reader(700), "-Infinity"), "\"-Infinity\"");
  EXPECT_EQ(payload(reader(16), "t"), "true");
  EXPECT_EQ(payload(reader(16), "f"), "false");
  EXPECT_EQ(payload(reader(1560, 1), "1"), "true");
  EXPECT_EQ(payload(reader(25), "a \"q\" \\ \n \U0001F680"), "\"a \\\"q\\\" \\\\ \\n \\uD83D\\uDE80\"");
  EXPECT_EQ(payload(reader(17), "\\x00ff41"), "\"" + core::base64Encode(std::string("\x00\xff" "A", 3)) + "\"");
  EXPECT_EQ(payload(reader(1082), "1970-01-02"), "1");
  EXPECT_EQ(payload(reader(1082), "1969-12-31"), "-1");
  EXPECT_EQ(payload(reader(1083), "01:02:03.456789"), "3723456");
  EXPECT_EQ(payload(reader(1266), "01:00:00+02"), std::to_string(23 * 3600000));
  EXPECT_EQ(payload(reader(1114), "1970-01-01 00:00:01.5"), "1500");
  EXPECT_EQ(payload(reader(1184), "2026-12-06 15:00:00+00"), "1796569200000");
  EXPECT_EQ(payload(reader(1184), "2026-12-06 17:00:00+02"), "1796569200000");
  EXPECT_EQ(payload(reader(1114), "1969-12-31 23:59:59.9995"), "-1");  // floor, as Java
  EXPECT_EQ(payload(reader(1007), "{1,NULL,-3}"), "[1,null,-3]");
  EXPECT_EQ(payload(reader(1009), "{a,\"b,c\",\"NULL\",NULL,\"q\\\"x\"}"), "[\"a\",\"b,c\",\"NULL\",null,\"q\\\"x\"]");
  EXPECT_EQ(payload(reader(1007), "{}"), "[]");
  EXPECT_EQ(payload(reader(1007), "[0:1]={5,6}"), "[5,6]");
  // Decimal: base64 of the unscaled value (12.34 at scale 2 = 1234 = 0x04d2).
  EXPECT_EQ(payload(reader(1700, numericMod(10, 2)), "12.34"),
            "\"" + core::base64Encode(std::string("\x04\xd2", 2)) + "\"");
}

TEST(JdbcSourceTypes, DecimalsRoundTripWithTheSinksText) {
  // The sink's decimalText reads what the source writes, at any size and sign.
  for (const char* text : {"0.00", "1.50", "-1.50", "-0.01", "127.00", "128.00", "-128.00", "-129.00",
                           "12345678901234567890123456789012345678.99", "-99999999999999999999999999999.99"}) {
    auto bytes = decimalUnscaledBytes(text, 2);
    ASSERT_TRUE(bytes) << text;
    EXPECT_EQ(decimalText(*bytes, 2), text);
  }
  EXPECT_EQ(*decimalUnscaledBytes("1", 2), std::string("\x64", 1));  // padded to the scale
  EXPECT_EQ(*decimalUnscaledBytes("-1.2300", 2), decimalUnscaledBytes("-1.23", 2));  // zeros beyond it
  EXPECT_FALSE(decimalUnscaledBytes("1.234", 2));
  EXPECT_FALSE(decimalUnscaledBytes("NaN", 2));
  EXPECT_FALSE(decimalUnscaledBytes("Infinity", 2));
  EXPECT_FALSE(decimalUnscaledBytes("", 2));
  EXPECT_FALSE(decimalUnscaledBytes("1e5", 2));
}

TEST(JdbcSourceTypes, DatesAndTimestampsEitherSideOfTheEpochAndEras) {
  EXPECT_EQ(parsePgDate("2000-03-01"), 11017);
  EXPECT_EQ(parsePgDate("0001-01-01"), -719162);
  EXPECT_EQ(parsePgDate("0001-12-31 BC"), -719163);  // 1 BC is year 0
  EXPECT_EQ(parsePgDate("10000-01-01"), 2932897);
  EXPECT_FALSE(parsePgDate("infinity"));
  EXPECT_FALSE(parsePgDate("2000-13-01"));
  EXPECT_FALSE(parsePgDate("2000-01-01x"));
  EXPECT_EQ(parsePgTime("24:00:00"), 86400000000);
  EXPECT_FALSE(parsePgTime("12:00"));
  EXPECT_FALSE(parsePgTime("12:00:00."));
  for (std::int64_t us : {0LL, 1LL, -1LL, 1796569200123456LL, -62135596800000000LL, 253402300799999999LL}) {
    const std::string text = timestampMicrosText(us);
    EXPECT_EQ(parsePgTimestamp(text), us) << text;
  }
  EXPECT_EQ(timestampMicrosText(0), "1970-01-01 00:00:00.000000");
  EXPECT_EQ(timestampMicrosText(-1), "1969-12-31 23:59:59.999999");
  EXPECT_EQ(parsePgTimestamp("2026-12-06 15:00:00.123456+05:30"), 1796569200123456LL - 19800000000LL);
  EXPECT_FALSE(parsePgTimestamp("2026-12-06"));
  EXPECT_FALSE(parsePgTimestamp("2026-12-06 15:00:00+0x"));
}

TEST(JdbcSourceTypes, TimestampPositionsKeepMicrosecondsEitherSideOfTheEpoch) {
  for (std::int64_t us : {0LL, 1LL, -1LL, 999999LL, -1000001LL, 1796569200123456LL, -62135596800000001LL}) {
    const auto [ms, nanos] = timestampOffsetOfMicros(us);
    EXPECT_GE(nanos, 0) << us;
    EXPECT_LT(nanos, 1000000000) << us;
    EXPECT_EQ(microsOfTimestampOffset(ms, nanos), us) << us;
  }
  EXPECT_EQ(timestampOffsetOfMicros(1500), (std::pair<std::int64_t, std::int64_t>(1, 1500000)));
  // A position without timestamp_nanos: the milliseconds alone, before 1970 too.
  EXPECT_EQ(microsOfTimestampOffset(-1, std::nullopt), -1000);
  EXPECT_EQ(microsOfTimestampOffset(1796569200123, std::nullopt), 1796569200123000);
}

TEST(JdbcSourceTypes, TextsThatAreNotTheTypeAreRefusedNamingTheColumn) {
  std::string out;
  Status s = appendPgValue(out, reader(23), "12abc");
  EXPECT_THAT(s.message(), HasSubstr("column 'c'"));
  EXPECT_FALSE(appendPgValue(out, reader(23), "1.5").isOk());
  EXPECT_FALSE(appendPgValue(out, reader(701), "1.").isOk());
  EXPECT_FALSE(appendPgValue(out, reader(16), "yes").isOk());
  EXPECT_FALSE(appendPgValue(out, reader(17), "\\x0").isOk());
  EXPECT_FALSE(appendPgValue(out, reader(17), "\\xzz").isOk());
  EXPECT_FALSE(appendPgValue(out, reader(1082), "infinity").isOk());
  EXPECT_FALSE(appendPgValue(out, reader(1700, numericMod(5, 1)), "NaN").isOk());
  EXPECT_FALSE(appendPgValue(out, reader(1007), "{{1,2},{3,4}}").isOk());
  EXPECT_FALSE(appendPgValue(out, reader(1007), "{1,2").isOk());
  EXPECT_FALSE(appendPgValue(out, reader(1009), "{\"unterminated}").isOk());
  // A huge text is shortened in the message.
  s = appendPgValue(out, reader(23), std::string(100000, 'x'));
  EXPECT_LT(s.message().size(), 200u);
}

TEST(JdbcSourceTypes, TypesWithoutAFixedOidComeFromTheLookup) {
  // An enum (text), an array of that enum, and an unknown oid (text).
  static const std::map<unsigned, PgTypeInfo> types = {{90001, {'e', 'E', 0}}, {90002, {'b', 'A', 90001}}};
  auto lookup = [](unsigned oid, const void* state) -> std::optional<PgTypeInfo> {
    const auto& m = *static_cast<const std::map<unsigned, PgTypeInfo>*>(state);
    auto it = m.find(oid);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
  auto e = pgColumnReader("mood", 90001, -1, true, NumericMapping::kNone, lookup, &types);
  ASSERT_TRUE(e.isOk());
  EXPECT_EQ(e->schema->type(), SchemaType::kString);
  auto a = pgColumnReader("moods", 90002, -1, true, NumericMapping::kNone, lookup, &types);
  ASSERT_TRUE(a.isOk());
  EXPECT_EQ(a->schema->type(), SchemaType::kArray);
  EXPECT_EQ(payload(*a, "{happy,sad}"), "[\"happy\",\"sad\"]");
  auto u = pgColumnReader("x", 77777, -1, true, NumericMapping::kNone, lookup, &types);
  ASSERT_TRUE(u.isOk());
  EXPECT_EQ(u->schema->type(), SchemaType::kString);
}

}  // namespace
}  // namespace ferry::connectors::jdbc
