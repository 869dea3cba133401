// SetSchemaMetadata ($Key/$Value): a JsonConverter envelope gets the name/version in its schema;
// anything else gets them as headers; configuration errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::transforms {
namespace {

using ::testing::HasSubstr;
using namespace testing;
using J = nlohmann::json;

std::string header(const Record& r, const std::string& name) {
  const Header* h = r.headers.last(name);
  return h ? h->value.str() : "<none>";
}

TEST(SetSchemaMetadata, SetsNameAndVersionInsideAJsonConverterEnvelope) {
  auto t = transform("org.apache.kafka.connect.transforms.SetSchemaMetadata$Value",
                     {{"schema.name", "com.acme.Reading"}, {"schema.version", "3"}});
  Record r = record("t", R"({"schema":{"type":"struct","fields":[{"field":"a","type":"int32"}],"optional":false,)"
                         R"("name":"old","version":1},"payload":{"a":1}})");
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(json(r.value),
            J::parse(R"({"schema":{"type":"struct","fields":[{"field":"a","type":"int32"}],"optional":false,)"
                     R"("name":"com.acme.Reading","version":3},"payload":{"a":1}})"));
  EXPECT_TRUE(r.headers.empty()) << "the envelope carries the metadata; no headers";
  // Only the name: a schema without a version stays without one.
  auto nameOnly = transform("SetSchemaMetadata$Value", {{"schema.name", "n"}});
  Record s = record("t", R"({"payload":[1,2],"schema":{"type":"array","items":{"type":"int8"}}})");
  ASSERT_TRUE(*nameOnly->apply(s));
  EXPECT_EQ(s.value.str(), R"({"payload":[1,2],"schema":{"type":"array","items":{"type":"int8"},"name":"n"}})");
}

TEST(SetSchemaMetadata, WithoutAnEnvelopeWritesHeaders) {
  auto t = transform("SetSchemaMetadata$Value", {{"schema.name", "com.acme.Reading"}, {"schema.version", "2"}});
  const std::string plain = R"({"temp": 21.5, "schema": "not an envelope"})";
  Record r = record("t", plain);
  r.headers.add("schema.name", std::string_view("earlier"));
  ASSERT_TRUE(*t->apply(r));
  EXPECT_EQ(r.value.str(), plain) << "the value's bytes are untouched";
  EXPECT_EQ(header(r, "schema.name"), "com.acme.Reading");
  EXPECT_EQ(header(r, "schema.version"), "2");
  EXPECT_EQ(r.headers.size(), 2u) << "an earlier schema.name header is replaced, not repeated";
  // Not envelopes: a null schema, a third field, text, a tombstone.
  for (std::optional<std::string> v :
       {std::optional<std::string>(R"({"schema":null,"payload":{"a":1}})"),
        std::optional<std::string>(R"({"schema":{"type":"int32"},"payload":1,"extra":true})"),
        std::optional<std::string>("payload text {"), std::optional<std::string>()}) {
    SCOPED_TRACE(v.value_or("<null>"));
    Record x = record("t", v);
    ASSERT_TRUE(*t->apply(x));
    EXPECT_EQ(x.value.isNull(), !v.has_value());
    if (v) {
      EXPECT_EQ(x.value.str(), *v);
    }
    EXPECT_EQ(header(x, "schema.name"), "com.acme.Reading");
    EXPECT_EQ(header(x, "schema.version"), "2");
  }
  auto versionOnly = transform("SetSchemaMetadata$Value", {{"schema.version", "0"}});
  Record y = record("t", "1");
  ASSERT_TRUE(*versionOnly->apply(y));
  EXPECT_EQ(header(y, "schema.version"), "0");
  EXPECT_EQ(header(y, "schema.name"), "<none>");
}

TEST(SetSchemaMetadata, KeySide) {
  auto t = transform("org.apache.kafka.connect.transforms.SetSchemaMetadata$Key", {{"schema.name", "Key"}});
  Record env = record("t", R"({"schema":{"type":"string"},"payload":"v"})",
                      R"({"schema":{"type":"string"},"payload":"k"})");
  ASSERT_TRUE(*t->apply(env));
  EXPECT_EQ(json(env.key), J::parse(R"({"schema":{"type":"string","name":"Key"},"payload":"k"})"));
  EXPECT_EQ(json(env.value), J::parse(R"({"schema":{"type":"string"},"payload":"v"})")) << "value untouched";
  Record plain = record("t", "v", "k-1");
  ASSERT_TRUE(*t->apply(plain));
  EXPECT_EQ(header(plain, "key.schema.name"), "Key");
  EXPECT_EQ(header(plain, "schema.name"), "<none>") << "the key's headers never collide with the value's";
}

TEST(SetSchemaMetadata, ConfigurationErrors) {
  auto t = create<Transform>("SetSchemaMetadata$Value");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->configure({}).message(),
            "SetSchemaMetadata$Value: neither schema.name nor schema.version is configured; set one or both");
  EXPECT_THAT(t->configure({{"schema.version", "-2"}}).message(),
              HasSubstr("schema.version must be a version (>= 0), or -1 for none; got -2"));
  EXPECT_FALSE(t->configure({{"schema.version", "v1"}}).isOk());
  EXPECT_FALSE(t->configure({{"schema.name", "n"}, {"replace.null.with.default", "perhaps"}}).isOk());
  EXPECT_TRUE(t->configure({{"schema.name", "n"}, {"replace.null.with.default", "false"}}).isOk())
      << "Kafka's KIP-1040 key is accepted";
}

}  // namespace
}  // namespace ferry::transforms
