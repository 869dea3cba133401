// TimestampConverter ($Key/$Value): unix/string/ISO-8601 input, every target type, precisions,
// UTC day arithmetic before 1970, nulls, and every error (configure and per record).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::transforms {
namespace {

using ::testing::HasSubstr;
using namespace testing;
using J = nlohmann::json;

constexpr const char* kValue = "org.apache.kafka.connect.transforms.TimestampConverter$Value";

// The value after one apply (the test fails if the record fails or is dropped).
std::string convertValue(const StringMap& config, const std::string& value) {
  auto t = transform(kValue, config);
  if (!t) return "<no transform>";
  Record r = record("t", value);
  auto kept = t->apply(r);
  EXPECT_TRUE(kept.isOk()) << kept.status().toString();
  if (!kept.isOk()) return "<error>";
  EXPECT_TRUE(*kept);
  return r.value.isNull() ? "<null>" : r.value.str();
}

// The error message of one apply (empty when it did not fail).
std::string failure(const StringMap& config, const std::string& value, const std::string& topic = "sensors") {
  auto t = transform(kValue, config);
  if (!t) return "<no transform>";
  Record r = record(topic, value);
  auto kept = t->apply(r);
  return kept.isOk() ? std::string() : kept.status().message();
}

TEST(TimestampConverter, UnixSecondsToFormattedStringAsKafkasExample) {
  // Kafka's documented example: 1696521093 (seconds) with yyyy-MM-dd becomes 2023-10-05.
  EXPECT_EQ(convertValue({{"target.type", "string"}, {"format", "yyyy-MM-dd"}, {"unix.precision", "seconds"}},
                         "1696521093"),
            "2023-10-05");
  EXPECT_EQ(convertValue({{"target.type", "string"}, {"format", "yyyy-MM-dd HH:mm:ss"}, {"unix.precision", "seconds"}},
                         "1696521093"),
            "2023-10-05 15:51:33");
}

TEST(TimestampConverter, FieldStringToEveryTargetType) {
  const std::string in = R"({"ts":"2024-03-05 10:20:30.123","x":1})";
  const StringMap base{{"field", "ts"}, {"format", "yyyy-MM-dd HH:mm:ss.SSS"}};
  auto with = [&](StringMap extra) {
    StringMap c = base;
    c.insert(extra.begin(), extra.end());
    return json(Bytes(convertValue(c, in)));
  };
  EXPECT_EQ(with({{"target.type", "Timestamp"}}), J::parse(R"({"ts":1709634030123,"x":1})"));
  EXPECT_EQ(with({{"target.type", "Date"}}), J::parse(R"({"ts":1709596800000,"x":1})")) << "the UTC day";
  EXPECT_EQ(with({{"target.type", "Time"}}), J::parse(R"({"ts":37230123,"x":1})")) << "millis within the day";
  EXPECT_EQ(with({{"target.type", "unix"}}), J::parse(R"({"ts":1709634030123,"x":1})"));
  EXPECT_EQ(with({{"target.type", "unix"}, {"unix.precision", "seconds"}}), J::parse(R"({"ts":1709634030,"x":1})"));
  EXPECT_EQ(with({{"target.type", "unix"}, {"unix.precision", "microseconds"}}),
            J::parse(R"({"ts":1709634030123000,"x":1})"));
  EXPECT_EQ(with({{"target.type", "unix"}, {"unix.precision", "nanoseconds"}}),
            J::parse(R"({"ts":1709634030123000000,"x":1})"));
  EXPECT_EQ(with({{"target.type", "string"}}), J::parse(R"({"ts":"2024-03-05 10:20:30.123","x":1})"))
      << "string to string with the same pattern round-trips";
  // Field order is kept.
  EXPECT_EQ(convertValue({{"field", "ts"}, {"format", "yyyy-MM-dd HH:mm:ss.SSS"}, {"target.type", "Timestamp"}}, in),
            R"({"ts":1709634030123,"x":1})");
}

TEST(TimestampConverter, PatternLettersParseAndFormat) {
  // Adjacent numeric fields take their pattern width (as SimpleDateFormat); digits-only text in a
  // field that is a JSON string is parsed with the format.
  EXPECT_EQ(json(Bytes(convertValue({{"field", "d"}, {"format", "yyyyMMddHHmm"}, {"target.type", "Timestamp"}},
                                    R"({"d":"202403051020"})"))),
            J::parse(R"({"d":1709634000000})"));
  // yy is 2000 + yy; MMM parses and prints month names (any case); 'quoted' text is literal.
  EXPECT_EQ(convertValue({{"format", "dd/MM/yy"}, {"target.type", "Timestamp"}}, "05/03/24"), "1709596800000");
  EXPECT_EQ(convertValue({{"format", "dd MMM yyyy"}, {"target.type", "Timestamp"}}, "05 mar 2024"), "1709596800000");
  EXPECT_EQ(convertValue({{"format", "MMMM d, yyyy"}, {"target.type", "Timestamp"}}, "March 5, 2024"),
            "1709596800000");
  EXPECT_EQ(convertValue({{"format", "yyyy-MM-dd'T'HH:mm:ss'Z'"}, {"target.type", "string"}}, "1709634030123"),
            "2024-03-05T10:20:30Z");
  EXPECT_EQ(convertValue({{"format", "d MMM yyyy"}, {"target.type", "string"}}, "1709634030123"), "5 Mar 2024");
  // A single-letter number field not followed by another number takes all its digits.
  EXPECT_EQ(convertValue({{"format", "yyyy-M-d"}, {"target.type", "Timestamp"}}, "2024-3-5"), "1709596800000");
  EXPECT_EQ(convertValue({{"format", "yyyy-MM-dd"}, {"target.type", "Timestamp"}}, "2024-02-29"), "1709164800000");
}

TEST(TimestampConverter, Iso8601WhenNoFormat) {
  const StringMap ts{{"target.type", "Timestamp"}};
  EXPECT_EQ(convertValue(ts, "2024-03-05T10:20:30.123Z"), "1709634030123") << "raw text (not JSON) value";
  EXPECT_EQ(convertValue(ts, R"("2024-03-05T10:20:30.123Z")"), "1709634030123") << "a JSON string value";
  EXPECT_EQ(convertValue(ts, "2024-03-05T12:20:30.123456+02:00"), "1709634030123") << "offset, sub-ms dropped";
  EXPECT_EQ(convertValue(ts, "2024-03-05T05:20:30.123-0500"), "1709634030123");
  EXPECT_EQ(convertValue(ts, "2024-03-05 10:20:30.1"), "1709634030100") << "space for T, no zone = UTC";
  EXPECT_EQ(convertValue(ts, "2024-03-05T10:20"), "1709634000000");
  EXPECT_EQ(convertValue(ts, "2024-03-05"), "1709596800000");
  // ISO-8601 output with milliseconds and Z; a JSON string input stays a JSON string, a number
  // input gives raw text.
  EXPECT_EQ(convertValue({{"target.type", "string"}}, "1709634030123"), "2024-03-05T10:20:30.123Z");
  EXPECT_EQ(convertValue({{"target.type", "string"}}, R"("2024-03-05T12:20:30+02:00")"),
            R"("2024-03-05T10:20:30.000Z")");
}

TEST(TimestampConverter, UnixInputPrecisions) {
  EXPECT_EQ(convertValue({{"target.type", "Timestamp"}, {"unix.precision", "microseconds"}}, "1709634030123456"),
            "1709634030123");
  EXPECT_EQ(convertValue({{"target.type", "Timestamp"}, {"unix.precision", "nanoseconds"}}, "1709634030123456789"),
            "1709634030123");
  EXPECT_EQ(convertValue({{"target.type", "Timestamp"}, {"unix.precision", "seconds"}}, "1709634030.1234"),
            "1709634030123")
      << "a fractional number is rounded to the millisecond";
  EXPECT_EQ(convertValue({{"target.type", "Timestamp"}, {"unix.precision", "microseconds"}}, "-1500"), "-1")
      << "toward zero, as Kafka's TimeUnit";
  EXPECT_EQ(convertValue({{"target.type", "unix"}, {"unix.precision", "seconds"}}, "-1.5"), "-1")
      << "-1500 ms written as seconds, toward zero";
}

TEST(TimestampConverter, DateAndTimeBefore1970UseTheUtcDay) {
  EXPECT_EQ(convertValue({{"target.type", "Date"}}, "-1000"), "-86400000");
  EXPECT_EQ(convertValue({{"target.type", "Time"}}, "-1000"), "86399000");
  EXPECT_EQ(convertValue({{"target.type", "string"}}, "-1000"), "1969-12-31T23:59:59.000Z");
}

TEST(TimestampConverter, NullsAndMissingFieldsPass) {
  auto t = transform(kValue, {{"field", "ts"}, {"target.type", "Timestamp"}});
  Record tomb = record("t", std::nullopt);
  EXPECT_TRUE(*t->apply(tomb));
  EXPECT_TRUE(tomb.value.isNull());
  Record nullField = record("t", R"({"ts": null, "a": 1})");
  EXPECT_TRUE(*t->apply(nullField));
  EXPECT_EQ(json(nullField.value), J::parse(R"({"ts": null, "a": 1})"));
  Record missing = record("t", R"({"a": 1})");
  EXPECT_TRUE(*t->apply(missing));
  EXPECT_EQ(missing.value.str(), R"({"a": 1})") << "no field is invented, the bytes are untouched";
  EXPECT_EQ(convertValue({{"target.type", "Timestamp"}}, "null"), "null");
  EXPECT_TRUE(transform(kValue, {{"target.type", "Date"}, {"replace.null.with.default", "false"}}) != nullptr);
}

TEST(TimestampConverter, KeySide) {
  auto t = transform("TimestampConverter$Key", {{"target.type", "Date"}});
  Record r = record("t", "2024-03-05T10:20:30Z", "2024-03-05T10:20:30Z");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.key.str(), "1709596800000");
  EXPECT_EQ(r.value.str(), "2024-03-05T10:20:30Z") << "the value is not touched";
}

TEST(TimestampConverter, UnreadableValuesFailTheRecordNamingTransformFieldAndTopic) {
  const StringMap fmt{{"field", "ts"}, {"format", "yyyy-MM-dd"}, {"target.type", "Timestamp"}};
  EXPECT_EQ(failure(fmt, R"({"ts":"2024-13-05"})"),
            "TimestampConverter$Value: cannot convert field 'ts' of the value of a record in topic 'sensors': "
            "'2024-13-05' does not match format 'yyyy-MM-dd' (month 13 is out of range)");
  EXPECT_THAT(failure(fmt, R"({"ts":"2023-02-29"})"), HasSubstr("(day 29 is out of range for month 2)"));
  EXPECT_THAT(failure(fmt, R"({"ts":"2024-03-05 10:00"})"), HasSubstr("(unexpected text at character 11)"));
  EXPECT_THAT(failure(fmt, R"({"ts":"2024/03/05"})"), HasSubstr("(expected '-' at character 5)"));
  EXPECT_THAT(failure(fmt, R"({"ts":"yesterday"})"), HasSubstr("(expected a number for 'yyyy' at character 1)"));
  EXPECT_THAT(failure({{"field", "d"}, {"format", "yyyyMMdd"}, {"target.type", "Date"}}, R"({"d":"20240x05"})"),
              HasSubstr("(expected 2 digit(s) for 'MM' at character 5)"));
  EXPECT_THAT(failure(fmt, R"({"ts":true})"),
              HasSubstr("field 'ts' of the value of a record in topic 'sensors': a JSON boolean is not a timestamp"));
  EXPECT_THAT(failure(fmt, R"([1,2])"),
              HasSubstr("TimestampConverter$Value: the value of a record in topic 'sensors' is not a JSON object (a "
                        "JSON array); field 'ts' needs one"));
  EXPECT_THAT(failure(fmt, "plain text"), HasSubstr("is not a JSON object (not JSON)"));
  const StringMap iso{{"target.type", "Timestamp"}};
  EXPECT_EQ(failure(iso, "2024-03-05T10:20:30+0x:00", "plant/1"),
            "TimestampConverter$Value: cannot convert the value of a record in topic 'plant/1': "
            "'2024-03-05T10:20:30+0x:00' is not ISO-8601 (expected 2 digits for the zone hours at character 21)");
  EXPECT_THAT(failure(iso, "05.03.2024"), HasSubstr("is not ISO-8601 (expected 4 digits for the year at character 1)"));
  EXPECT_THAT(failure(iso, "2024-03-05T25:00"), HasSubstr("(hour 25 is out of range)"));
  EXPECT_THAT(failure(iso, "2024-03-05T10:20:30Q"), HasSubstr("(expected a zone (Z, +hh:mm) at character 20)"));
  EXPECT_THAT(failure(iso, "{}"), HasSubstr("a JSON object is not a timestamp"));
  EXPECT_THAT(failure({{"target.type", "Timestamp"}, {"unix.precision", "seconds"}}, "9223372036854776"),
              HasSubstr("unix time 9223372036854776 s is out of range"));
  EXPECT_THAT(failure({{"target.type", "Timestamp"}}, "18446744073709551615"), HasSubstr("is out of range"));
  EXPECT_THAT(failure({{"target.type", "unix"}, {"unix.precision", "nanoseconds"}}, "2300-01-01"),
              HasSubstr("does not fit a 64-bit unix time in nanoseconds"))
      << "64-bit nanoseconds end in 2262";
  auto key = transform("TimestampConverter$Key", {{"target.type", "Date"}});
  Record r = record("k-topic", "v", "noon");
  EXPECT_THAT(key->apply(r).status().message(),
              HasSubstr("TimestampConverter$Key: cannot convert the key of a record in topic 'k-topic': 'noon' is "
                        "not ISO-8601"));
}

TEST(TimestampConverter, ConfigurationErrors) {
  auto t = create<Transform>(kValue);
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(t->configure({}).message(), HasSubstr("target.type"));
  EXPECT_FALSE(t->configure({{"target.type", "timestamp"}}).isOk()) << "type names are case-sensitive, as in Kafka";
  EXPECT_FALSE(t->configure({{"target.type", "epoch"}}).isOk());
  EXPECT_THAT(t->configure({{"target.type", "string"}, {"format", "yyyy-QQ"}}).message(),
              HasSubstr("pattern letter 'Q' is not supported"));
  EXPECT_THAT(t->configure({{"target.type", "string"}, {"format", "yyyy'T"}}).message(),
              HasSubstr("unterminated quote"));
  EXPECT_FALSE(t->configure({{"target.type", "unix"}, {"unix.precision", "minutes"}}).isOk());
  EXPECT_FALSE(t->configure({{"target.type", "unix"}, {"replace.null.with.default", "maybe"}}).isOk());
  EXPECT_TRUE(t->configure({{"target.type", "string"}}).isOk()) << "no format: ISO-8601";
}

}  // namespace
}  // namespace ferry::transforms
