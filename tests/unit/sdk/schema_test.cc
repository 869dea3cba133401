// Schemas (ferry/schema.h): the builder and its checks, logical types, equality, fingerprints.
#include "ferry/schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ferry/record.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;

SchemaPtr built(const SchemaBuilder& b) {
  auto r = b.build();
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return r.isOk() ? *r : nullptr;
}

SchemaPtr person(bool optionalName = true, const char* doc = nullptr) {
  auto name = SchemaBuilder::string();
  if (optionalName) name.optional();
  auto b = SchemaBuilder::structure();
  b.name("shop.Person").version(3).field("id", built(SchemaBuilder::int64())).field("name", built(name));
  if (doc) b.doc(doc);
  return built(b);
}

TEST(Schema, BuilderKeepsEverythingKafkaConnectSchemasHave) {
  auto tags = built(SchemaBuilder::array(built(SchemaBuilder::string())).optional());
  auto attrs = built(SchemaBuilder::map(built(SchemaBuilder::string()), built(SchemaBuilder::float64())));
  auto s = built(SchemaBuilder::structure()
                     .name("n")
                     .version(2)
                     .doc("d")
                     .parameter("a", "1")
                     .parameter("b", "2")
                     .parameter("a", "3")
                     .field("tags", tags)
                     .field("attrs", attrs)
                     .field("n", built(SchemaBuilder::int32().defaultJson("7"))));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->type(), SchemaType::kStruct);
  EXPECT_FALSE(s->optional());
  EXPECT_EQ(*s->name(), "n");
  EXPECT_EQ(*s->version(), 2);
  EXPECT_EQ(*s->doc(), "d");
  // A repeated parameter replaces the value and keeps its first place.
  EXPECT_EQ(*s->parameters(), (SchemaParameters{{"a", "3"}, {"b", "2"}}));
  ASSERT_EQ(s->fields().size(), 3u);
  EXPECT_EQ(s->field("tags")->schema->valueSchema()->type(), SchemaType::kString);
  EXPECT_EQ(s->field("attrs")->schema->keySchema()->type(), SchemaType::kString);
  EXPECT_EQ(*s->field("n")->schema->defaultJson(), "7");
  EXPECT_EQ(s->field("missing"), nullptr);
  EXPECT_EQ(s->describe(), "struct{tags:array<string>?,attrs:map<string,double>,n:int32}");
  EXPECT_FALSE(SchemaBuilder::int8().build().value()->parameters().has_value());
  EXPECT_TRUE(SchemaBuilder::int8().emptyParameters().build().value()->parameters()->empty());
}

TEST(Schema, LogicalTypesAreKafkasNamesWithVersionOne) {
  auto d = built(logical::decimal(2));
  EXPECT_EQ(d->type(), SchemaType::kBytes);
  EXPECT_EQ(*d->name(), "org.apache.kafka.connect.data.Decimal");
  EXPECT_EQ(*d->version(), 1);
  EXPECT_EQ(*d->decimalScale(), 2);
  EXPECT_EQ(d->describe(), "bytes<Decimal scale=2>");
  EXPECT_EQ(built(logical::date())->type(), SchemaType::kInt32);
  EXPECT_EQ(built(logical::time())->type(), SchemaType::kInt32);
  EXPECT_EQ(built(logical::timestamp())->type(), SchemaType::kInt64);
  EXPECT_EQ(built(logical::uuid())->logicalName(), logical::kUuid);
  EXPECT_EQ(built(logical::json().optional())->describe(), "string<Json>?");
  EXPECT_EQ(built(SchemaBuilder::string().name("my.Thing"))->logicalName(), "");
  EXPECT_FALSE(built(SchemaBuilder::int32())->decimalScale().has_value());
}

TEST(Schema, BuildRefusesWhatCannotBeData) {
  auto msg = [](const SchemaBuilder& b) {
    auto r = b.build();
    EXPECT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    return r.status().message();
  };
  auto i = built(SchemaBuilder::int32());
  EXPECT_THAT(msg(SchemaBuilder::structure().field("a", i).field("a", i)), HasSubstr("'a' appears twice"));
  EXPECT_THAT(msg(SchemaBuilder::structure().field("", i)), HasSubstr("without a name"));
  EXPECT_THAT(msg(SchemaBuilder::structure().field("a", nullptr)), HasSubstr("'a' has no schema"));
  EXPECT_THAT(msg(SchemaBuilder::int32().field("a", i)), HasSubstr("only a struct has fields"));
  EXPECT_THAT(msg(SchemaBuilder::array(nullptr)), HasSubstr("elements"));
  EXPECT_THAT(msg(SchemaBuilder::map(i, nullptr)), HasSubstr("key schema and a value schema"));
  EXPECT_THAT(msg(SchemaBuilder::bytes().name(std::string(logical::kDecimal))), HasSubstr("'scale'"));
  EXPECT_THAT(msg(SchemaBuilder::bytes().name(std::string(logical::kDecimal)).parameter("scale", "x")),
              HasSubstr("'scale'"));
  EXPECT_THAT(msg(SchemaBuilder::int64().name(std::string(logical::kDate))), HasSubstr("is based on int32"));
  EXPECT_THAT(msg(SchemaBuilder::int32().name(std::string(logical::kTimestamp))), HasSubstr("is based on int64"));
  EXPECT_THAT(msg(SchemaBuilder::bytes().name(std::string(logical::kUuid))), HasSubstr("is based on string"));
}

TEST(Schema, EqualityIsDeepAndFingerprintsFollowIt) {
  auto a = person();
  auto b = person();
  EXPECT_NE(a.get(), b.get());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->fingerprint(), b->fingerprint());
  for (const auto& other : {person(false), person(true, "docs")}) {
    EXPECT_FALSE(*a == *other);
    EXPECT_NE(a->fingerprint(), other->fingerprint());
  }
  // Field order is part of a struct.
  auto swapped = built(SchemaBuilder::structure()
                           .name("shop.Person")
                           .version(3)
                           .field("name", built(SchemaBuilder::string().optional()))
                           .field("id", built(SchemaBuilder::int64())));
  EXPECT_FALSE(*a == *swapped);
  // Parameters: none differs from empty.
  EXPECT_FALSE(*built(SchemaBuilder::int8()) == *built(SchemaBuilder::int8().emptyParameters()));
  EXPECT_FALSE(*built(SchemaBuilder::int8().defaultJson("1")) == *built(SchemaBuilder::int8()));
}

TEST(Schema, TypeNamesAreThoseOfKafkaConnectJson) {
  EXPECT_STREQ(schemaTypeJsonName(SchemaType::kFloat32), "float");
  EXPECT_STREQ(schemaTypeJsonName(SchemaType::kFloat64), "double");
  EXPECT_EQ(schemaTypeFromJsonName("struct"), SchemaType::kStruct);
  EXPECT_EQ(schemaTypeFromJsonName("int8"), SchemaType::kInt8);
  EXPECT_FALSE(schemaTypeFromJsonName("float32").has_value());
  EXPECT_TRUE(isPrimitive(SchemaType::kBytes));
  EXPECT_FALSE(isPrimitive(SchemaType::kMap));
}

TEST(Schema, ARecordSharesItsSchemaWhenCopied) {
  Record r;
  EXPECT_EQ(r.valueSchema, nullptr);  // schemaless by default
  r.valueSchema = person();
  Record copy = r;
  EXPECT_EQ(copy.valueSchema.get(), r.valueSchema.get());
}

}  // namespace
}  // namespace ferry
