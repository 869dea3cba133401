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
  Status s = appendValue(out, col, text);
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
  Status s = appendValue(out, reader(23), "12abc");
  EXPECT_THAT(s.message(), HasSubstr("column 'c'"));
  EXPECT_FALSE(appendValue(out, reader(23), "1.5").isOk());
  EXPECT_FALSE(appendValue(out, reader(701), "1.").isOk());
  EXPECT_FALSE(appendValue(out, reader(16), "yes").isOk());
  EXPECT_FALSE(appendValue(out, reader(17), "\\x0").isOk());
  EXPECT_FALSE(appendValue(out, reader(17), "\\xzz").isOk());
  EXPECT_FALSE(appendValue(out, reader(1082), "infinity").isOk());
  EXPECT_FALSE(appendValue(out, reader(1700, numericMod(5, 1)), "NaN").isOk());
  EXPECT_FALSE(appendValue(out, reader(1007), "{{1,2},{3,4}}").isOk());
  EXPECT_FALSE(appendValue(out, reader(1007), "{1,2").isOk());
  EXPECT_FALSE(appendValue(out, reader(1009), "{\"unterminated}").isOk());
  // A huge text is shortened in the message.
  s = appendValue(out, reader(23), std::string(100000, 'x'));
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

// MySQL/MariaDB: a column as Connector/C describes it (protocol type, flags, length, decimals,
// character set, MariaDB's extended type name and format).
MariaDbConnection::Column my(int type, unsigned long length = 11, unsigned flags = 0, unsigned decimals = 0,
                             unsigned charsetnr = 45, std::string typeName = "", std::string format = "") {
  return MariaDbConnection::Column{"c", type, flags, decimals, length, charsetnr, std::move(typeName),
                                   std::move(format)};
}
ColumnReader myReader(const MariaDbConnection::Column& c, NumericMapping m = NumericMapping::kNone) {
  auto r = mysqlColumnReader(c, (c.flags & 1) == 0, m);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return r.isOk() ? *r : ColumnReader{};
}
constexpr unsigned kNotNull = 1, kUnsigned = 32, kEnum = 256;

TEST(JdbcSourceTypes, MySqlTypesHaveTheirSchemas) {
  EXPECT_EQ(myReader(my(1, 4)).schema->describe(), "int8?");                // TINYINT
  EXPECT_EQ(myReader(my(1, 3, kUnsigned)).schema->type(), SchemaType::kInt16);  // TINYINT UNSIGNED
  EXPECT_EQ(myReader(my(1, 1)).schema->type(), SchemaType::kBoolean);      // TINYINT(1), BOOLEAN
  EXPECT_EQ(myReader(my(2, 6, kNotNull)).schema->describe(), "int16");     // SMALLINT NOT NULL
  EXPECT_EQ(myReader(my(2, 5, kUnsigned)).schema->type(), SchemaType::kInt32);
  EXPECT_EQ(myReader(my(9, 9)).schema->type(), SchemaType::kInt32);        // MEDIUMINT
  EXPECT_EQ(myReader(my(3, 11)).schema->type(), SchemaType::kInt32);       // INT
  EXPECT_EQ(myReader(my(3, 10, kUnsigned)).schema->type(), SchemaType::kInt64);
  EXPECT_EQ(myReader(my(8, 20)).schema->type(), SchemaType::kInt64);       // BIGINT
  auto ubig = myReader(my(8, 20, kUnsigned));                               // BIGINT UNSIGNED: exact
  EXPECT_EQ(ubig.schema->logicalName(), logical::kDecimal);
  EXPECT_EQ(payload(ubig, "18446744073709551615"), "\"" + core::base64Encode(std::string("\x00\xff\xff\xff\xff\xff\xff\xff\xff", 9)) + "\"");
  EXPECT_EQ(myReader(my(13, 4)).schema->type(), SchemaType::kInt32);       // YEAR
  EXPECT_EQ(myReader(my(4, 12)).schema->type(), SchemaType::kFloat32);
  EXPECT_EQ(myReader(my(5, 22)).schema->type(), SchemaType::kFloat64);
  auto dec = myReader(my(246, 14, 0, 3));                                   // DECIMAL(12,3): 12 + point + sign
  EXPECT_EQ(dec.kind, ValueKind::kDecimal);
  EXPECT_EQ(dec.schema->decimalScale(), 3);
  EXPECT_EQ(myReader(my(10, 10)).schema->logicalName(), logical::kDate);
  EXPECT_EQ(myReader(my(11, 10)).schema->logicalName(), logical::kTime);
  EXPECT_EQ(myReader(my(12, 26, 0, 6)).schema->logicalName(), logical::kTimestamp);  // DATETIME(6)
  EXPECT_EQ(myReader(my(7, 19)).schema->logicalName(), logical::kTimestamp);         // TIMESTAMP
  EXPECT_EQ(myReader(my(253, 80)).schema->type(), SchemaType::kString);              // VARCHAR(20) utf8mb4
  EXPECT_EQ(myReader(my(252, 65535)).schema->type(), SchemaType::kString);           // TEXT
  EXPECT_EQ(myReader(my(254, 4, kEnum)).schema->type(), SchemaType::kString);        // ENUM
  EXPECT_EQ(myReader(my(252, 65535, 128, 0, 63)).schema->type(), SchemaType::kBytes);  // BLOB
  EXPECT_EQ(myReader(my(253, 16, 128, 0, 63)).schema->type(), SchemaType::kBytes);     // VARBINARY
  EXPECT_EQ(myReader(my(16, 1)).schema->type(), SchemaType::kBoolean);               // BIT(1)
  EXPECT_EQ(myReader(my(16, 12)).schema->type(), SchemaType::kBytes);                // BIT(12)
  EXPECT_EQ(myReader(my(254, 144, 0, 0, 45, "uuid")).schema->logicalName(), logical::kUuid);
  EXPECT_EQ(myReader(my(252, 4294967295, 0, 0, 45, "", "json")).schema->logicalName(), logical::kJson);
  EXPECT_EQ(myReader(my(245, 4294967295)).schema->logicalName(), logical::kJson);    // MySQL's JSON
}

TEST(JdbcSourceTypes, MySqlNumericMappingFollowsKafkaConnectJdbc) {
  EXPECT_EQ(myReader(my(246, 6, 0, 0), NumericMapping::kPrecisionOnly).schema->type(), SchemaType::kInt32);  // DECIMAL(5)
  EXPECT_EQ(myReader(my(246, 19, 0, 0), NumericMapping::kPrecisionOnly).schema->type(), SchemaType::kInt64);  // DECIMAL(18)
  EXPECT_EQ(myReader(my(246, 20, 0, 0), NumericMapping::kPrecisionOnly).kind, ValueKind::kDecimal);         // DECIMAL(19)
  EXPECT_EQ(myReader(my(246, 7, 0, 2), NumericMapping::kBestFit).schema->type(), SchemaType::kFloat64);     // DECIMAL(5,2)
  EXPECT_EQ(myReader(my(246, 7, 0, 2), NumericMapping::kPrecisionOnly).kind, ValueKind::kDecimal);
}

TEST(JdbcSourceTypes, MySqlTextsBecomeThePayloadForm) {
  EXPECT_EQ(payload(myReader(my(1, 1)), "1"), "true");
  EXPECT_EQ(payload(myReader(my(1, 1)), "0"), "false");
  EXPECT_EQ(payload(myReader(my(1, 1)), "-7"), "true");  // TINYINT(1) holding another value, as Connector/J
  EXPECT_EQ(payload(myReader(my(16, 1)), std::string(1, '\1')), "true");
  EXPECT_EQ(payload(myReader(my(16, 1)), std::string(1, '\0')), "false");
  EXPECT_EQ(payload(myReader(my(16, 12)), std::string("\x0f\xff", 2)), "\"D/8=\"");
  EXPECT_EQ(payload(myReader(my(252, 65535, 128, 0, 63)), std::string("\0\xff", 2)), "\"AP8=\"");
  EXPECT_EQ(payload(myReader(my(246, 14, 0, 3)), "-123456789.125"), payload(reader(1700, numericMod(12, 3)), "-123456789.125"));
  EXPECT_EQ(payload(myReader(my(12, 26, 0, 6)), "2026-12-06 15:00:00.123456"), "1796569200123");
  EXPECT_EQ(payload(myReader(my(10, 10)), "1969-12-31"), "-1");
  EXPECT_EQ(payload(myReader(my(11, 15, 0, 3)), "13:14:15.678"), "47655678");
  EXPECT_EQ(payload(myReader(my(5, 22)), "-2.25e-300"), "-2.25e-300");
  std::string out;
  EXPECT_FALSE(appendValue(out, myReader(my(16, 1)), "\x02").isOk());
  EXPECT_FALSE(appendValue(out, myReader(my(1, 1)), "yes").isOk());
  // TIME beyond a day (MySQL's TIME is an interval up to 838:59:59) has no Time form: refused.
  Status s = appendValue(out, myReader(my(11, 10)), "-12:00:00");
  EXPECT_THAT(s.message(), HasSubstr("column 'c'"));
  EXPECT_FALSE(appendValue(out, myReader(my(11, 10)), "100:00:00").isOk());
  EXPECT_FALSE(appendValue(out, myReader(my(10, 10)), "0000-00-00").isOk());
}

TEST(JdbcSourceTypes, TimestampsWithoutAZoneAreReadInDbTimezone) {
  auto paris = core::TimeZone::load("Europe/Paris");
  ASSERT_TRUE(paris.isOk());
  // PostgreSQL timestamp: the wall clock in Paris; timestamptz: an instant, untouched.
  auto local = pgColumnReader("c", 1114, -1, true, NumericMapping::kNone, nullptr, nullptr, *paris);
  auto zoned = pgColumnReader("c", 1184, -1, true, NumericMapping::kNone, nullptr, nullptr, *paris);
  ASSERT_TRUE(local.isOk() && zoned.isOk());
  EXPECT_EQ(payload(*local, "2026-07-15 14:00:00.5"), "1784116800500");  // 12:00:00.5 UTC (CEST)
  EXPECT_EQ(payload(*local, "2026-12-06 16:00:00"), "1796569200000");    // 15:00 UTC (CET)
  EXPECT_EQ(payload(*zoned, "2026-12-06 15:00:00+00"), "1796569200000");
  // Arrays of timestamps too.
  auto arr = pgColumnReader("c", 1115, -1, true, NumericMapping::kNone, nullptr, nullptr, *paris);
  ASSERT_TRUE(arr.isOk());
  EXPECT_EQ(payload(*arr, "{\"2026-12-06 16:00:00\"}"), "[1796569200000]");
  // MySQL: DATETIME is a wall clock, TIMESTAMP an instant (the session is in UTC).
  EXPECT_EQ(payload(*mysqlColumnReader(my(12, 19), true, NumericMapping::kNone, *paris), "2026-12-06 16:00:00"),
            "1796569200000");
  EXPECT_EQ(payload(*mysqlColumnReader(my(7, 19), true, NumericMapping::kNone, *paris), "2026-12-06 16:00:00"),
            "1796572800000");
  // UTC as a zone reads as no zone at all.
  auto utc = core::TimeZone::load("UTC");
  EXPECT_FALSE(pgColumnReader("c", 1114, -1, true, NumericMapping::kNone, nullptr, nullptr, *utc)->zone);
  // Positions: an instant to the wall clock and back.
  const std::int64_t us = 1796569200123456;
  EXPECT_EQ(localMicrosOfUtc(**paris, us), us + 3600000000LL);
  EXPECT_EQ(utcMicrosOfLocal(**paris, localMicrosOfUtc(**paris, us)), us);
  EXPECT_EQ(utcMicrosOfLocal(**paris, localMicrosOfUtc(**paris, -1)), -1);
}

}  // namespace
}  // namespace ferry::connectors::jdbc
