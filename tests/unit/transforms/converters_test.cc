// ByteArrayConverter, StringConverter, JsonConverter: round trips, envelopes, errors.
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

}  // namespace
}  // namespace ferry::transforms
