// ByteArrayConverter, StringConverter, JsonConverter, SimpleHeaderConverter and the numeric
// converters: round trips, envelopes, Kafka byte layouts, errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::transforms {
namespace {

using ::testing::HasSubstr;
using namespace testing;

Owned<Converter> converter(const std::string& name, const StringMap& config, bool isKey = false) {
  auto c = create<Converter>(name);
  EXPECT_NE(c, nullptr) << name;
  Status s = c->configure(config, isKey);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return c;
}

TEST(ByteArrayConverter, PassesBytesThroughWithoutCopying) {
  auto c = converter("org.apache.kafka.connect.converters.ByteArrayConverter", {});
  Bytes in(std::string("\x00\xff raw", 6));
  auto out = c->fromRecord("t", in);
  ASSERT_TRUE(out.isOk());
  EXPECT_EQ(out->buffer(), in.buffer());
  auto back = c->toRecord("t", *out);
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(*back, in);
  EXPECT_TRUE(c->fromRecord("t", Bytes::null())->isNull());
}

TEST(StringConverter, IdentityAndOnlyUtf8) {
  auto c = converter("StringConverter", {{"encoding", "utf-8"}});
  Bytes in(std::string("héllo"));
  EXPECT_EQ(*c->toRecord("t", *c->fromRecord("t", in)), in);
  auto bad = create<Converter>("org.apache.kafka.connect.storage.StringConverter");
  Status s = bad->configure({{"encoding", "ISO-8859-1"}}, true);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("encoding"));
}

// Kafka's StringConverter writes a String as its text and its ByteArrayConverter a byte[] as its
// bytes: a record typed string/bytes (a Java connector's, say) is written the same way, not as
// the quoted / base64 JSON form ferry keeps typed data in.
TEST(StringConverter, WritesATypedStringAsItsText) {
  auto c = converter("StringConverter", {});
  auto str = SchemaBuilder::string().build();
  ASSERT_TRUE(str.isOk());
  auto out = c->fromRecordWithSchema("t", *str, Bytes(std::string(R"("caf\u00e9 \"q\"")")));
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(out->str(), "café \"q\"");
  EXPECT_TRUE(c->fromRecordWithSchema("t", *str, Bytes::null())->isNull());
  // Other types: as before (their JSON form).
  auto i32 = SchemaBuilder::int32().build();
  EXPECT_EQ(c->fromRecordWithSchema("t", *i32, Bytes(std::string("42")))->str(), "42");
  auto bad = c->fromRecordWithSchema("t", *str, Bytes(std::string("not json")));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(ByteArrayConverter, WritesTypedBytesAsTheBytes) {
  auto c = converter("ByteArrayConverter", {});
  auto bytes = SchemaBuilder::bytes().optional().build();
  ASSERT_TRUE(bytes.isOk());
  auto out = c->fromRecordWithSchema("t", *bytes, Bytes(std::string(R"("AP8gcmF3")")));
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(out->str(), std::string("\x00\xff raw", 6));
  auto notBase64 = c->fromRecordWithSchema("t", *bytes, Bytes(std::string(R"("%%%")")));
  EXPECT_EQ(notBase64.status().code(), StatusCode::kInvalidArgument);
  // A Decimal is bytes too, but not a byte[] in Kafka: left in its JSON form.
  auto dec = logical::decimal(2).build();
  EXPECT_EQ(c->fromRecordWithSchema("t", *dec, Bytes(std::string(R"("AQ==")")))->str(), R"("AQ==")");
}

TEST(JsonConverter, WrapsAndUnwrapsTheEnvelopeByDefault) {
  auto c = converter("org.apache.kafka.connect.json.JsonConverter", {});
  Bytes in(std::string(R"({"a":[1,2],"b":"x"})"));
  auto wire = c->fromRecord("t", in);
  ASSERT_TRUE(wire.isOk()) << wire.status().toString();
  EXPECT_EQ(wire->str(), R"({"schema":null,"payload":{"a":[1,2],"b":"x"}})");
  auto back = c->toRecord("t", *wire);
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(*back, in);
  // A Kafka-written envelope with a payload of null is a tombstone.
  auto tomb = c->toRecord("t", Bytes(std::string(R"({"schema":null,"payload":null})")));
  ASSERT_TRUE(tomb.isOk());
  EXPECT_TRUE(tomb->isNull());
  EXPECT_TRUE(c->fromRecord("t", Bytes::null())->isNull());
  EXPECT_TRUE(c->toRecord("t", Bytes::null())->isNull());
}

TEST(JsonConverter, MissingEnvelopeIsAnError) {
  auto c = converter("JsonConverter", {{"schemas.enable", "true"}});
  auto r = c->toRecord("orders", Bytes(std::string(R"({"a":1})")));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("orders"));
  EXPECT_THAT(r.status().message(), HasSubstr("schemas.enable"));
}

TEST(JsonConverter, PlainModeValidatesAndKeepsBytes) {
  auto c = converter("JsonConverter", {{"schemas.enable", "false"}});
  Bytes in(std::string("[1, 2,  3]"));
  auto wire = c->fromRecord("t", in);
  ASSERT_TRUE(wire.isOk());
  EXPECT_EQ(wire->buffer(), in.buffer());
  EXPECT_EQ(*c->toRecord("t", *wire), in);
}

TEST(JsonConverter, InvalidJsonIsAnErrorNamingTheTopic) {
  for (const char* enable : {"true", "false"}) {
    auto c = converter("JsonConverter", {{"schemas.enable", enable}}, /*isKey=*/true);
    for (const char* bad : {"hello", "{\"a\":", ""}) {
      auto r = c->fromRecord("orders", Bytes(std::string(bad)));
      ASSERT_FALSE(r.isOk()) << bad;
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      EXPECT_THAT(r.status().message(), HasSubstr("'orders'"));
      EXPECT_THAT(r.status().message(), HasSubstr("key"));
      EXPECT_FALSE(c->toRecord("orders", Bytes(std::string(bad))).isOk()) << bad;
    }
  }
  auto bad = create<Converter>("JsonConverter");
  EXPECT_FALSE(bad->configure({{"schemas.enable", "yes"}}, false).isOk());
}

TEST(JsonConverter, HeaderRoleIsNamedInErrors) {
  auto c = converter("JsonConverter", {{"schemas.enable", "false"}, {"converter.type", "header"}});
  auto r = c->fromRecord("orders", Bytes(std::string("not json")));
  ASSERT_FALSE(r.isOk());
  EXPECT_THAT(r.status().message(), HasSubstr("the header for topic 'orders'"));
  auto bad = create<Converter>("JsonConverter");
  EXPECT_FALSE(bad->configure({{"converter.type", "body"}}, false).isOk());
}

TEST(SimpleHeaderConverter, IdentityWithoutCopying) {
  auto c = converter("org.apache.kafka.connect.storage.SimpleHeaderConverter", {{"converter.type", "header"}});
  Bytes in(std::string("any text \x01"));
  auto out = c->fromRecord("t", in);
  ASSERT_TRUE(out.isOk());
  EXPECT_EQ(out->buffer(), in.buffer());
  auto back = c->toRecord("t", in);
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back->buffer(), in.buffer());
  EXPECT_TRUE(c->fromRecord("t", Bytes::null())->isNull());
}

// ----- numeric converters ---------------------------------------------------------------------

std::string bytes(std::initializer_list<unsigned> octets) {
  std::string s;
  for (unsigned o : octets) s.push_back(static_cast<char>(o));
  return s;
}

// `text` -> exactly `wire` (Kafka's serializer layout) -> `canonical` text.
void expectLayout(Converter& c, const std::string& text, const std::string& wire, const std::string& canonical) {
  SCOPED_TRACE(text);
  auto out = c.fromRecord("t", Bytes(text));
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(out->str(), wire);
  auto back = c.toRecord("t", *out);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->str(), canonical);
}
void expectLayout(Converter& c, const std::string& text, const std::string& wire) {
  expectLayout(c, text, wire, text);
}

void expectFromError(Converter& c, const std::string& text, const std::string& name, const std::string& detail) {
  SCOPED_TRACE("'" + text + "'");
  auto r = c.fromRecord("orders", Bytes(text));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(name + ": the value for topic 'orders'"));
  EXPECT_THAT(r.status().message(), HasSubstr(detail));
}

void expectToError(Converter& c, const std::string& wire, const std::string& name, const std::string& detail) {
  SCOPED_TRACE(wire.size());
  auto r = c.toRecord("orders", Bytes(wire));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(name + ": the value from topic 'orders'"));
  EXPECT_THAT(r.status().message(), HasSubstr(detail));
}

TEST(ShortConverter, BigEndianTwoBytes) {
  auto c = converter("org.apache.kafka.connect.converters.ShortConverter", {});
  expectLayout(*c, "0", bytes({0x00, 0x00}));
  expectLayout(*c, "42", bytes({0x00, 0x2a}));
  expectLayout(*c, "-2", bytes({0xff, 0xfe}));
  expectLayout(*c, "258", bytes({0x01, 0x02}));
  expectLayout(*c, "32767", bytes({0x7f, 0xff}));
  expectLayout(*c, "-32768", bytes({0x80, 0x00}));
  expectLayout(*c, " +7\n", bytes({0x00, 0x07}), "7");
}

TEST(ShortConverter, Errors) {
  auto c = converter("ShortConverter", {});
  for (const char* t : {"32768", "-32769", "99999999999999999999"})
    expectFromError(*c, t, "ShortConverter", "out of range for a 16-bit integer");
  for (const char* t : {"", " ", "abc", "4x2", "1.5", "1e3", "--1", "+-1", "0x10", "+"})
    expectFromError(*c, t, "ShortConverter", "is not a 16-bit integer");
  expectToError(*c, bytes({0x01}), "ShortConverter", "has 1 bytes; ShortConverter reads exactly 2");
  expectToError(*c, bytes({0, 0, 0, 1}), "ShortConverter", "has 4 bytes");
  expectToError(*c, "", "ShortConverter", "has 0 bytes");
}

TEST(IntegerConverter, BigEndianFourBytes) {
  auto c = converter("org.apache.kafka.connect.converters.IntegerConverter", {});
  expectLayout(*c, "42", bytes({0x00, 0x00, 0x00, 0x2a}));
  expectLayout(*c, "-1", bytes({0xff, 0xff, 0xff, 0xff}));
  expectLayout(*c, "16909060", bytes({0x01, 0x02, 0x03, 0x04}));
  expectLayout(*c, "2147483647", bytes({0x7f, 0xff, 0xff, 0xff}));
  expectLayout(*c, "-2147483648", bytes({0x80, 0x00, 0x00, 0x00}));
  expectLayout(*c, "007", bytes({0, 0, 0, 7}), "7");
}

TEST(IntegerConverter, Errors) {
  auto c = converter("IntegerConverter", {});
  for (const char* t : {"2147483648", "-2147483649"})
    expectFromError(*c, t, "IntegerConverter", "out of range for a 32-bit integer");
  for (const char* t : {"", "forty-two", "42abc", "4 2", "42.0", "true", "NaN"})
    expectFromError(*c, t, "IntegerConverter", "is not a 32-bit integer");
  expectToError(*c, bytes({0, 0, 1}), "IntegerConverter", "has 3 bytes; IntegerConverter reads exactly 4");
  expectToError(*c, bytes({0, 0, 0, 0, 1}), "IntegerConverter", "has 5 bytes");
}

TEST(LongConverter, BigEndianEightBytes) {
  auto c = converter("org.apache.kafka.connect.converters.LongConverter", {});
  expectLayout(*c, "42", bytes({0, 0, 0, 0, 0, 0, 0, 0x2a}));
  expectLayout(*c, "-1", bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  expectLayout(*c, "72623859790382856", bytes({0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}));
  expectLayout(*c, "9223372036854775807", bytes({0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  expectLayout(*c, "-9223372036854775808", bytes({0x80, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(LongConverter, Errors) {
  auto c = converter("LongConverter", {});
  for (const char* t : {"9223372036854775808", "-9223372036854775809"})
    expectFromError(*c, t, "LongConverter", "out of range for a 64-bit integer");
  for (const char* t : {"", "1.0", "12L", "1_000"})
    expectFromError(*c, t, "LongConverter", "is not a 64-bit integer");
  expectToError(*c, bytes({0, 0, 0, 42}), "LongConverter", "has 4 bytes; LongConverter reads exactly 8");
}

TEST(FloatConverter, Ieee754FourBytes) {
  auto c = converter("org.apache.kafka.connect.converters.FloatConverter", {});
  expectLayout(*c, "1", bytes({0x3f, 0x80, 0x00, 0x00}));
  expectLayout(*c, "-1.5", bytes({0xbf, 0xc0, 0x00, 0x00}));
  expectLayout(*c, "0.1", bytes({0x3d, 0xcc, 0xcc, 0xcd}));  // the nearest float, read back as 0.1
  expectLayout(*c, "0", bytes({0, 0, 0, 0}));
  expectLayout(*c, "-0", bytes({0x80, 0, 0, 0}));
  expectLayout(*c, "1e+20", bytes({0x60, 0xad, 0x78, 0xec}));
  expectLayout(*c, "2.5e-3", bytes({0x3b, 0x23, 0xd7, 0x0a}), "0.0025");
  expectLayout(*c, "+42.0", bytes({0x42, 0x28, 0x00, 0x00}), "42");
  // Java's special values: Float.NaN's canonical bits, +/- infinity.
  expectLayout(*c, "NaN", bytes({0x7f, 0xc0, 0x00, 0x00}));
  expectLayout(*c, "Infinity", bytes({0x7f, 0x80, 0x00, 0x00}));
  expectLayout(*c, "-Infinity", bytes({0xff, 0x80, 0x00, 0x00}));
  // Any NaN payload reads as NaN.
  EXPECT_EQ(c->toRecord("t", Bytes(bytes({0x7f, 0x80, 0x00, 0x01})))->str(), "NaN");
  // Every NaN spelling writes the canonical bits (found by the converters fuzz target: "-NaN"
  // wrote the sign bit, and NaN read back wrote other bytes).
  expectLayout(*c, "-NaN", bytes({0x7f, 0xc0, 0x00, 0x00}), "NaN");
}

TEST(FloatConverter, Errors) {
  auto c = converter("FloatConverter", {});
  for (const char* t : {"1e39", "-3.5e38", "1e-50"})
    expectFromError(*c, t, "FloatConverter", "out of range for a 32-bit float");
  for (const char* t : {"", "one", "1.5f", "0x1p3", "1,5", "1.5.1"})
    expectFromError(*c, t, "FloatConverter", "is not a 32-bit float");
  expectToError(*c, bytes({0x3f, 0x80}), "FloatConverter", "has 2 bytes; FloatConverter reads exactly 4");
  expectToError(*c, bytes({0, 0, 0, 0, 0, 0, 0, 0}), "FloatConverter", "has 8 bytes");
}

TEST(DoubleConverter, Ieee754EightBytes) {
  auto c = converter("org.apache.kafka.connect.converters.DoubleConverter", {});
  expectLayout(*c, "1", bytes({0x3f, 0xf0, 0, 0, 0, 0, 0, 0}));
  expectLayout(*c, "-1.5", bytes({0xbf, 0xf8, 0, 0, 0, 0, 0, 0}));
  expectLayout(*c, "0.1", bytes({0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a}));
  expectLayout(*c, "1e+300", bytes({0x7e, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c}));
  expectLayout(*c, "1e39", bytes({0x48, 0x07, 0x82, 0x87, 0xf4, 0x9c, 0x4a, 0x1d}), "1e+39");  // beyond float, fine here
  expectLayout(*c, "NaN", bytes({0x7f, 0xf8, 0, 0, 0, 0, 0, 0}));
  expectLayout(*c, "Infinity", bytes({0x7f, 0xf0, 0, 0, 0, 0, 0, 0}));
  expectLayout(*c, "-Infinity", bytes({0xff, 0xf0, 0, 0, 0, 0, 0, 0}));
}

TEST(DoubleConverter, Errors) {
  auto c = converter("DoubleConverter", {});
  for (const char* t : {"1e400", "-1e400", "1e-400"})
    expectFromError(*c, t, "DoubleConverter", "out of range for a 64-bit float");
  for (const char* t : {"", "pi", "1.5d", "[1.5]", "\"1.5\""})
    expectFromError(*c, t, "DoubleConverter", "is not a 64-bit float");
  expectToError(*c, bytes({0x3f, 0xf0, 0, 0}), "DoubleConverter", "has 4 bytes; DoubleConverter reads exactly 8");
}

TEST(BooleanConverter, OneByte) {
  auto c = converter("org.apache.kafka.connect.converters.BooleanConverter", {});
  expectLayout(*c, "true", bytes({0x01}));
  expectLayout(*c, "false", bytes({0x00}));
  expectLayout(*c, " TRUE ", bytes({0x01}), "true");
  expectLayout(*c, "False", bytes({0x00}), "false");
}

TEST(BooleanConverter, Errors) {
  auto c = converter("BooleanConverter", {});
  for (const char* t : {"", "yes", "1", "0", "t", "truee"})
    expectFromError(*c, t, "BooleanConverter", "is not a boolean");
  expectToError(*c, bytes({0x02}), "BooleanConverter", "has the byte 2; a boolean is 0 (false) or 1 (true)");
  expectToError(*c, bytes({0x01, 0x00}), "BooleanConverter", "has 2 bytes; BooleanConverter reads exactly 1");
  expectToError(*c, "", "BooleanConverter", "has 0 bytes");
}

TEST(NumberConverters, NullStaysNullAndRolesAreNamed) {
  for (const char* name : {"ShortConverter", "IntegerConverter", "LongConverter", "FloatConverter",
                           "DoubleConverter", "BooleanConverter"}) {
    SCOPED_TRACE(name);
    auto c = converter(name, {});
    EXPECT_TRUE(c->configDef().keys().empty());
    auto in = c->fromRecord("t", Bytes::null());
    ASSERT_TRUE(in.isOk());
    EXPECT_TRUE(in->isNull());
    auto out = c->toRecord("t", Bytes::null());
    ASSERT_TRUE(out.isOk());
    EXPECT_TRUE(out->isNull());
    // The role comes from isKey, or from converter.type when the runtime gives it.
    auto key = converter(name, {}, /*isKey=*/true);
    EXPECT_THAT(key->fromRecord("orders", Bytes(std::string("x"))).status().message(), HasSubstr("the key for topic 'orders'"));
    auto header = converter(name, {{"converter.type", "header"}}, /*isKey=*/false);
    EXPECT_THAT(header->toRecord("orders", Bytes(std::string("xyzxyzxyz"))).status().message(),
                HasSubstr(std::string(name) + ": the header from topic 'orders'"));
    auto bad = create<Converter>(name);
    Status s = bad->configure({{"converter.type", "payload"}}, false);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("converter.type"));
  }
}

}  // namespace
}  // namespace ferry::transforms
