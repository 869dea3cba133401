// The transforms that change a value's shape update the record's schema as Kafka Connect's SMTs
// do in their schema'd mode, and the data they write still matches it (checked with the
// converter's own checkPayloadText after every step).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "transforms/connect_json.h"

namespace ferry::transforms {
namespace {

using ::testing::HasSubstr;
using namespace testing;

// struct{id:int64, name:string?, addr:struct{city:string, zip:int32}?, tags:map<string,int32>}
SchemaPtr order() {
  auto addr = built(SchemaBuilder::structure()
                        .name("shop.Addr")
                        .field("city", built(SchemaBuilder::string()))
                        .field("zip", built(SchemaBuilder::int32()))
                        .optional());
  return built(SchemaBuilder::structure()
                   .name("shop.Order")
                   .version(4)
                   .doc("an order")
                   .field("id", built(SchemaBuilder::int64()))
                   .field("name", built(SchemaBuilder::string().optional()))
                   .field("addr", addr)
                   .field("tags", built(SchemaBuilder::map(built(SchemaBuilder::string()),
                                                           built(SchemaBuilder::int32())))));
}

constexpr const char* kOrder = R"({"id":7,"name":"ann","addr":{"city":"Oslo","zip":150},"tags":{"a":1}})";

Record typed(SchemaPtr schema = order(), const char* value = kOrder) {
  Record r = record("orders", std::string(value));
  r.valueSchema = std::move(schema);
  r.queue = 3;
  r.offset = 42;
  r.timestampMs = 1700000000123;
  return r;
}

// Applies `t`, expects success, and checks that the value matches the value schema.
void run(Transform& t, Record& r) {
  auto kept = t.apply(r);
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  ASSERT_TRUE(*kept);
  for (auto [schema, data] : {std::pair{r.valueSchema, r.value}, std::pair{r.keySchema, r.key}}) {
    if (!schema) continue;
    bool defaults = false;
    bool json = false;
    Status st = data.isNull() ? Status::ok() : checkPayloadText(*schema, data.view(), defaults, json);
    EXPECT_TRUE(st.isOk()) << schema->describe() << " vs " << data.str() << ": " << st.toString();
  }
}

TEST(SchemaUpdate, ReplaceFieldKeepsRenamesAndDropsFieldsOfTheSchema) {
  auto t = transform("ReplaceField$Value", {{"exclude", "tags"}, {"renames", "name:customer"}});
  Record r = typed();
  run(*t, r);
  EXPECT_EQ(r.valueSchema->describe(), "struct{id:int64,customer:string?,addr:struct{city:string,zip:int32}?}");
  EXPECT_EQ(*r.valueSchema->name(), "shop.Order");  // basics kept
  EXPECT_EQ(*r.valueSchema->version(), 4);
  EXPECT_EQ(json(r.value), nlohmann::json::parse(R"({"id":7,"customer":"ann","addr":{"city":"Oslo","zip":150}})"));
  // The records of one schema get one derived schema object.
  auto shared = order();
  Record a = typed(shared), b = typed(shared);
  run(*t, a);
  run(*t, b);
  EXPECT_EQ(a.valueSchema.get(), b.valueSchema.get());
  auto include = transform("ReplaceField$Value", {{"include", "id"}});
  Record c = typed();
  run(*include, c);
  EXPECT_EQ(c.valueSchema->describe(), "struct{id:int64}");
}

TEST(SchemaUpdate, InsertFieldAppendsTypedFields) {
  auto t = transform("InsertField$Value", {{"topic.field", "t!"},
                                            {"partition.field", "p"},
                                            {"offset.field", "o"},
                                            {"timestamp.field", "ts"},
                                            {"static.field", "s"},
                                            {"static.value", "v"}});
  Record r = typed();
  run(*t, r);
  EXPECT_EQ(r.valueSchema->describe(),
            "struct{id:int64,name:string?,addr:struct{city:string,zip:int32}?,tags:map<string,int32>,"
            "t:string,p:int32?,o:int64?,ts:int64<Timestamp>?,s:string?}");
  auto v = json(r.value);
  EXPECT_EQ(v["t"], "orders");
  EXPECT_EQ(v["p"], 3);
  EXPECT_EQ(v["ts"], 1700000000123);
  // A field that is already there is refused rather than written twice into the schema.
  auto dup = transform("InsertField$Value", {{"static.field", "id"}, {"static.value", "x"}});
  Record d = typed();
  auto kept = dup->apply(d);
  ASSERT_FALSE(kept.isOk());
  EXPECT_THAT(kept.status().message(), HasSubstr("already has a field 'id'"));
}

TEST(SchemaUpdate, ValueToKeyAndExtractFieldTakeTheFieldsSchemas) {
  auto v2k = transform("ValueToKey", {{"fields", "id,name"}});
  Record r = typed();
  run(*v2k, r);
  ASSERT_NE(r.keySchema, nullptr);
  EXPECT_EQ(r.keySchema->describe(), "struct{id:int64,name:string?}");
  auto extract = transform("ExtractField$Key", {{"field", "name"}});
  run(*extract, r);
  EXPECT_EQ(r.keySchema->describe(), "string?");
  EXPECT_EQ(r.key.str(), "\"ann\"");  // a payload: the string stays quoted
  // Schemaless, ExtractField gives the raw text as before.
  Record plain = record("orders", std::string(kOrder));
  auto name = transform("ExtractField$Value", {{"field", "name"}});
  run(*name, plain);
  EXPECT_EQ(plain.value.str(), "ann");
  // A field the schema does not have is an error naming it.
  auto missing = transform("ExtractField$Value", {{"field", "nope"}});
  Record m = typed();
  auto kept = missing->apply(m);
  ASSERT_FALSE(kept.isOk());
  EXPECT_THAT(kept.status().message(), HasSubstr("no field 'nope'"));
  auto badKey = transform("ValueToKey", {{"fields", "nope"}});
  Record k = typed();
  EXPECT_FALSE(badKey->apply(k).isOk());
}

TEST(SchemaUpdate, HoistFieldWrapsTheSchema) {
  auto t = transform("HoistField$Value", {{"field", "order"}});
  Record r = typed();
  run(*t, r);
  EXPECT_EQ(r.valueSchema->describe(),
            "struct{order:struct{id:int64,name:string?,addr:struct{city:string,zip:int32}?,tags:map<string,int32>}}");
}

TEST(SchemaUpdate, CastChangesTheFieldTypes) {
  auto t = transform("Cast$Value", {{"spec", "id:string,zip:int64"}});
  Record r = typed();
  run(*t, r);
  EXPECT_EQ(r.valueSchema->describe(),
            "struct{id:string,name:string?,addr:struct{city:string,zip:int32}?,tags:map<string,int32>}");
  EXPECT_EQ(json(r.value)["id"], "7");
  auto nested = transform("Cast$Value", {{"spec", "addr:string"}});
  Record n = typed();
  auto kept = nested->apply(n);
  ASSERT_FALSE(kept.isOk());
  EXPECT_THAT(kept.status().message(), HasSubstr("field addr"));  // refused by the data's cast first
  // The whole value: a string stays a JSON string with a schema.
  auto whole = transform("Cast$Value", {{"spec", "string"}});
  Record w = typed(built(SchemaBuilder::int32().optional()), "5");
  run(*whole, w);
  EXPECT_EQ(w.valueSchema->describe(), "string?");
  EXPECT_EQ(w.value.str(), "\"5\"");
}

TEST(SchemaUpdate, FlattenFollowsTheSchemaAndKeepsMaps) {
  auto t = transform("Flatten$Value", {{"delimiter", "_"}});
  Record r = typed();
  run(*t, r);
  // addr is optional, so its fields are too; the map stays a field.
  EXPECT_EQ(r.valueSchema->describe(), "struct{id:int64,name:string?,addr_city:string?,addr_zip:int32?,tags:map<string,int32>}");
  EXPECT_EQ(json(r.value), nlohmann::json::parse(R"({"id":7,"name":"ann","addr_city":"Oslo","addr_zip":150,"tags":{"a":1}})"));
  // A null nested struct: its flattened fields are null.
  Record n = typed(order(), R"({"id":1,"name":null,"addr":null,"tags":{}})");
  run(*t, n);
  EXPECT_TRUE(json(n.value)["addr_city"].is_null());
  // Schemaless, every object is flattened as before.
  Record plain = record("orders", std::string(kOrder));
  run(*t, plain);
  EXPECT_EQ(json(plain.value)["tags_a"], 1);
}

TEST(SchemaUpdate, SetSchemaMetadataRenamesTheRecordsSchema) {
  auto t = transform("SetSchemaMetadata$Value", {{"schema.name", "shop.OrderV5"}, {"schema.version", "5"}});
  Record r = typed();
  run(*t, r);
  EXPECT_EQ(*r.valueSchema->name(), "shop.OrderV5");
  EXPECT_EQ(*r.valueSchema->version(), 5);
  EXPECT_EQ(*r.valueSchema->doc(), "an order");
  EXPECT_EQ(r.valueSchema->fields().size(), 4u);
  EXPECT_FALSE(r.headers.has("schema.name"));  // no header when the record has a schema
  EXPECT_EQ(r.value.str(), kOrder);
}

TEST(SchemaUpdate, TimestampConverterTypesTheFieldItConverts) {
  auto schema = built(SchemaBuilder::structure()
                          .field("id", built(SchemaBuilder::int64()))
                          .field("at", built(SchemaBuilder::string().optional())));
  const char* value = R"({"id":1,"at":"2026-12-06T10:00:00.000Z"})";
  // string -> Timestamp: epoch milliseconds, the field's schema Timestamp (still optional).
  auto toTs = transform("TimestampConverter$Value", {{"field", "at"}, {"target.type", "Timestamp"}});
  Record r = typed(schema, value);
  run(*toTs, r);
  const Schema& at = *r.valueSchema->field("at")->schema;
  EXPECT_EQ(at.logicalName(), logical::kTimestamp);
  EXPECT_TRUE(at.optional());
  EXPECT_EQ(r.valueSchema->field("id")->schema->type(), SchemaType::kInt64);
  EXPECT_EQ(json(r.value)["at"], 1796551200000);
  // Timestamp -> Date: Kafka Connect's payload is the day number, not epoch milliseconds.
  auto toDate = transform("TimestampConverter$Value", {{"field", "at"}, {"target.type", "Date"}});
  run(*toDate, r);
  EXPECT_EQ(r.valueSchema->field("at")->schema->logicalName(), logical::kDate);
  EXPECT_EQ(json(r.value)["at"], 20793);
  // Date -> string: the day read as days.
  auto toText = transform("TimestampConverter$Value", {{"field", "at"}, {"target.type", "string"}, {"format", "yyyy-MM-dd"}});
  run(*toText, r);
  EXPECT_EQ(r.valueSchema->field("at")->schema->type(), SchemaType::kString);
  EXPECT_EQ(json(r.value)["at"], "2026-12-06");
  // A null keeps its place and the schema still changes (Kafka does the same).
  Record n = typed(schema, R"({"id":2,"at":null})");
  run(*toTs, n);
  EXPECT_EQ(n.valueSchema->field("at")->schema->logicalName(), logical::kTimestamp);
  EXPECT_TRUE(json(n.value)["at"].is_null());
  // The whole value, and Time: milliseconds of the day.
  auto whole = transform("TimestampConverter$Value", {{"target.type", "Time"}});
  Record w = typed(built(logical::timestamp()), "1796551200000");
  run(*whole, w);
  EXPECT_EQ(w.valueSchema->logicalName(), logical::kTime);
  EXPECT_EQ(w.value.str(), "36000000");
  // A field the schema does not have is refused, naming it.
  auto missing = transform("TimestampConverter$Value", {{"field", "when"}, {"target.type", "unix"}});
  Record m = typed(schema, value);
  auto kept = missing->apply(m);
  ASSERT_FALSE(kept.isOk());
  EXPECT_THAT(kept.status().message(), HasSubstr("schema has no field 'when'"));
}

TEST(SchemaUpdate, HeaderFromMoveTakesTheFieldsOutOfTheSchema) {
  auto move = transform("HeaderFrom$Value", {{"fields", "name,id"}, {"headers", "n,i"}, {"operation", "move"}});
  Record r = typed();
  run(*move, r);
  EXPECT_EQ(r.valueSchema->describe(), "struct{addr:struct{city:string,zip:int32}?,tags:map<string,int32>}");
  EXPECT_EQ(*r.valueSchema->name(), "shop.Order");
  EXPECT_EQ(r.headers.last("n")->value.str(), "ann");
  EXPECT_EQ(r.headers.last("i")->value.str(), "7");
  // copy leaves value and schema as they are.
  auto copy = transform("HeaderFrom$Value", {{"fields", "name"}, {"headers", "n"}, {"operation", "copy"}});
  Record c = typed();
  const SchemaPtr before = c.valueSchema;
  run(*copy, c);
  EXPECT_EQ(c.valueSchema, before);
  EXPECT_EQ(c.value.str(), kOrder);
}

// JsonPathExtract takes the schema its path selects; a string stays a payload (quoted). (Until
// 2026-12-07 it kept the input schema, and the converter refused the record after it.)
TEST(SchemaUpdate, JsonPathExtractTakesTheSchemaThePathSelects) {
  auto city = transform("JsonPathExtract$Value", {{"path", "$.addr.city"}});
  Record r = typed();
  run(*city, r);
  EXPECT_EQ(r.valueSchema->describe(), "string?");  // under the optional addr: may select nothing
  EXPECT_EQ(r.value.str(), "\"Oslo\"");
  // missing=fail: nothing selected fails the record, so a required field stays required.
  auto id = transform("JsonPathExtract$Value", {{"path", "id"}, {"missing", "fail"}});
  Record i = typed();
  run(*id, i);
  EXPECT_EQ(i.valueSchema->describe(), "int64");
  EXPECT_EQ(i.value.str(), "7");
  // With `field`: struct{<field>: ...}.
  auto zip = transform("JsonPathExtract$Value", {{"path", "addr.zip"}, {"field", "z"}});
  Record z = typed();
  run(*zip, z);
  EXPECT_EQ(z.valueSchema->describe(), "struct{z:int32?}");
  EXPECT_EQ(json(z.value), nlohmann::json::parse(R"({"z":150})"));
  // Array elements by index; an index past the end gives null under an optional schema.
  auto xs = built(SchemaBuilder::structure().field("xs", built(SchemaBuilder::array(built(SchemaBuilder::int32())))));
  auto second = transform("JsonPathExtract$Value", {{"path", "xs[1]"}});
  Record a = typed(xs, R"({"xs":[4,5]})");
  run(*second, a);
  EXPECT_EQ(a.valueSchema->describe(), "int32?");
  EXPECT_EQ(a.value.str(), "5");
  Record past = typed(xs, R"({"xs":[4]})");
  run(*second, past);
  EXPECT_TRUE(past.value.isNull());
  // The records of one schema share one derived schema.
  auto shared = order();
  Record s1 = typed(shared), s2 = typed(shared);
  run(*city, s1);
  run(*city, s2);
  EXPECT_EQ(s1.valueSchema.get(), s2.valueSchema.get());
  // Paths the schema cannot follow fail the record, naming where.
  for (auto [path, why] : {std::pair{"tags.a", "$.tags is map<string,int32> in the value's schema, not a struct"},
                           std::pair{"nope", "the value's schema has no field 'nope' at $"},
                           std::pair{"id[0]", "$.id is int64 in the value's schema, not an array"}}) {
    auto bad = transform("JsonPathExtract$Value", {{"path", path}});
    Record b = typed();
    auto kept = bad->apply(b);
    ASSERT_FALSE(kept.isOk()) << path;
    EXPECT_THAT(kept.status().message(), HasSubstr(why)) << path;
  }
  // Schemaless records are as before: a string as its raw text.
  Record plain = record("orders", std::string(kOrder));
  run(*city, plain);
  EXPECT_EQ(plain.value.str(), "Oslo");
}

// DecodePayload on a string or bytes payload: the decoded bytes, schema bytes, written as bytes'
// payload (base64 in a JSON string). (Until 2026-12-07 it decoded the payload's quotes too and
// failed every such record.)
TEST(SchemaUpdate, DecodePayloadTypesTheDecodedBytes) {
  auto b64 = transform("DecodePayload$Value", {{"encoding", "base64"}});
  Record s = typed(built(SchemaBuilder::string().optional()), R"("aGVsbG8_")");  // URL-safe, unpadded
  run(*b64, s);
  EXPECT_EQ(s.valueSchema->describe(), "bytes?");
  EXPECT_EQ(s.value.str(), R"("aGVsbG8/")");  // "hello?" as Kafka Connect's bytes payload
  auto hex = transform("DecodePayload$Value", {{"encoding", "hex"}});
  Record h = typed(built(SchemaBuilder::string()), R"("68656c6c6f")");
  run(*hex, h);
  EXPECT_EQ(h.valueSchema->describe(), "bytes");
  EXPECT_EQ(h.value.str(), R"("aGVsbG8=")");
  // bytes whose content is the hex text "68656c6c6f" (base64 "Njg2NTZjNmM2Zg==").
  Record raw = typed(built(SchemaBuilder::bytes()), R"("Njg2NTZjNmM2Zg==")");
  run(*hex, raw);
  EXPECT_EQ(raw.value.str(), R"("aGVsbG8=")");
  // Schemaless: the bytes as they are decoded (as before).
  Record plain = record("t", std::string("68656c6c6f"));
  run(*hex, plain);
  EXPECT_EQ(plain.value.str(), "hello");
  // Another schema, or data that is not the schema's JSON string, fails the record.
  Record other = typed();
  auto kept = hex->apply(other);
  ASSERT_FALSE(kept.isOk());
  EXPECT_THAT(kept.status().message(), HasSubstr("not a string or bytes"));
  Record unquoted = typed(built(SchemaBuilder::string()), "68656c6c6f");
  EXPECT_FALSE(hex->apply(unquoted).isOk());
}

// A Rule that writes a new value takes the schema off the record (its result is JSON the old
// schema does not describe); output=unchanged keeps it.
TEST(SchemaUpdate, RuleDropsTheSchemaOfAValueItReplaces) {
  auto select = transform("Rule", {{"sql", R"(SELECT payload.id AS order_id FROM "orders")"}});
  Record r = typed();
  run(*select, r);
  EXPECT_EQ(r.valueSchema, nullptr);
  EXPECT_EQ(json(r.value), nlohmann::json::parse(R"({"order_id":7})"));
  auto filter = transform("Rule", {{"sql", R"(SELECT * FROM "orders" WHERE payload.id = 7)"}, {"output", "unchanged"}});
  Record f = typed();
  const SchemaPtr before = f.valueSchema;
  run(*filter, f);
  EXPECT_EQ(f.valueSchema, before);
  EXPECT_EQ(f.value.str(), kOrder);
}

TEST(SchemaUpdate, AStepThatNeedsAStructRefusesOtherSchemas) {
  auto t = transform("ReplaceField$Value", {{"exclude", "x"}});
  Record r = typed(built(SchemaBuilder::map(built(SchemaBuilder::string()), built(SchemaBuilder::int32()))),
                   R"({"x":1})");
  auto kept = t->apply(r);
  ASSERT_FALSE(kept.isOk());
  EXPECT_THAT(kept.status().message(), HasSubstr("ReplaceField$Value: the value's schema is map<string,int32>, not a struct"));
}

}  // namespace
}  // namespace ferry::transforms
