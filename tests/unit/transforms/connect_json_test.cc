// Kafka Connect's JSON schemas (transforms/connect_json.h) and JsonConverter carrying schemas in
// its envelope. Byte compatibility with Kafka Connect itself is proven against its own
// JsonConverter in tests/interop/test_json_schema_compat.py; these pin the layout and the errors.
#include "transforms/connect_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace ferry::transforms {
namespace {

using ::testing::HasSubstr;
using namespace testing;

Result<SchemaPtr> readText(std::string_view text) {
  auto j = parseJson(text);
  EXPECT_TRUE(j.has_value()) << text;
  return readConnectSchema(*j);
}

// Every type, logical type and schema attribute at least once.
SchemaPtr everything() {
  auto str = built(SchemaBuilder::string());
  return built(SchemaBuilder::structure()
                   .name("inventory.Item")
                   .version(2)
                   .doc("one row")
                   .field("i8", built(SchemaBuilder::int8()))
                   .field("i16", built(SchemaBuilder::int16().optional()))
                   .field("i32", built(SchemaBuilder::int32().defaultJson("42")))
                   .field("i64", built(SchemaBuilder::int64()))
                   .field("f32", built(SchemaBuilder::float32()))
                   .field("f64", built(SchemaBuilder::float64().optional()))
                   .field("ok", built(SchemaBuilder::boolean()))
                   .field("name", built(SchemaBuilder::string().doc("say \"hi\"\n").parameter("len", "10")))
                   .field("raw", built(SchemaBuilder::bytes().optional()))
                   .field("price", built(logical::decimal(2)))
                   .field("day", built(logical::date()))
                   .field("at", built(logical::time()))
                   .field("ts", built(logical::timestamp().optional()))
                   .field("id", built(logical::uuid()))
                   .field("doc", built(logical::json().optional()))
                   .field("tags", built(SchemaBuilder::array(str)))
                   .field("attrs", built(SchemaBuilder::map(str, built(SchemaBuilder::int32()))))
                   .field("byId", built(SchemaBuilder::map(built(SchemaBuilder::int32()), str).optional()))
                   .field("nested", built(SchemaBuilder::structure().field("x", str).optional())));
}

TEST(ConnectJson, WritesKafkasLayout) {
  auto s = built(SchemaBuilder::structure()
                     .name("n")
                     .version(1)
                     .doc("d")
                     .parameter("p", "v")
                     .field("a", built(SchemaBuilder::int32()))
                     .field("b", built(SchemaBuilder::array(built(SchemaBuilder::float32())).optional()))
                     .field("c", built(SchemaBuilder::map(built(SchemaBuilder::string()),
                                                          built(SchemaBuilder::float64())))));
  EXPECT_EQ(connectSchemaJson(*s),
            R"({"type":"struct","fields":[{"type":"int32","optional":false,"field":"a"},)"
            R"({"type":"array","items":{"type":"float","optional":false},"optional":true,"field":"b"},)"
            R"({"type":"map","keys":{"type":"string","optional":false},"values":{"type":"double","optional":false},)"
            R"("optional":false,"field":"c"}],"optional":false,"name":"n","version":1,"doc":"d","parameters":{"p":"v"}})");
  EXPECT_EQ(connectSchemaJson(*built(logical::decimal(3).optional().defaultJson("\"AQ==\""))),
            R"({"type":"bytes","optional":true,"default":"AQ==","name":"org.apache.kafka.connect.data.Decimal",)"
            R"("version":1,"parameters":{"scale":"3"}})");
}

TEST(ConnectJson, EscapesStringsAsJacksonDoes) {
  std::string out;
  appendJsonString(out, "q\" b\\ \b\f\n\r\t \x01\x1f\x7f é / \xF0\x9F\x98\x80");
  EXPECT_EQ(out, "\"q\\\" b\\\\ \\b\\f\\n\\r\\t \\u0001\\u001F\x7f é / \\uD83D\\uDE00\"");
  // Broken UTF-8 is copied as it is, not turned into escapes.
  out.clear();
  appendJsonString(out, "\xF0\x9F");
  EXPECT_EQ(out, "\"\xF0\x9F\"");
  // Escapes at both ends, next to each other, and a broken sequence inside a run of plain text.
  out = "[";
  appendJsonString(out, "\nab\xF0" "cd\"\"\xF0\x9F\x98\x80");
  EXPECT_EQ(out, "[\"\\nab\xF0" "cd\\\"\\\"\\uD83D\\uDE00\"");
  EXPECT_EQ(escapeNonBmp("[\"\xF0\x9F\x98\x80\",1]"), "[\"\\uD83D\\uDE00\",1]");
}

TEST(ConnectJson, ReadsBackWhatItWrites) {
  auto s = everything();
  auto back = readText(connectSchemaJson(*s));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(**back, *s);
  EXPECT_EQ(connectSchemaJson(**back), connectSchemaJson(*s));
}

TEST(ConnectJson, ReadsAsKafkaDoes) {
  // "optional" only when it is the JSON true; a version only when integral; unknown members are
  // ignored; an empty parameters object stays an empty one.
  auto s = readText(R"({"type":"int32","optional":"true","version":1.5,"x":1,"parameters":{}})");
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_FALSE((*s)->optional());
  EXPECT_FALSE((*s)->version().has_value());
  EXPECT_TRUE((*s)->parameters().has_value());
  // A null default on an optional schema is no default.
  auto n = readText(R"({"type":"string","optional":true,"default":null})");
  ASSERT_TRUE(n.isOk());
  EXPECT_FALSE((*n)->defaultJson().has_value());
}

TEST(ConnectJson, RefusesBadSchemasNamingWhere) {
  auto msg = [](std::string_view text) {
    auto r = readText(text);
    EXPECT_FALSE(r.isOk()) << text;
    return r.isOk() ? std::string() : r.status().message();
  };
  EXPECT_THAT(msg(R"({"optional":false})"), HasSubstr("'type'"));
  EXPECT_THAT(msg(R"({"type":"int128"})"), HasSubstr("unknown schema type 'int128'"));
  EXPECT_THAT(msg(R"({"type":"array"})"), HasSubstr("'items'"));
  EXPECT_THAT(msg(R"({"type":"map","keys":{"type":"string"}})"), HasSubstr("'keys' and 'values'"));
  EXPECT_THAT(msg(R"({"type":"struct","fields":{}})"), HasSubstr("is an array"));
  EXPECT_THAT(msg(R"({"type":"struct","fields":[{"type":"int8"}]})"), HasSubstr("schema.fields[0]"));
  EXPECT_THAT(msg(R"({"type":"struct","fields":[{"type":"int8","field":"a"},{"type":"int8","field":"a"}]})"),
              HasSubstr("'a' appears twice"));
  EXPECT_THAT(msg(R"({"type":"int8","parameters":{"a":1}})"), HasSubstr("schema.parameters.a"));
  EXPECT_THAT(msg(R"({"type":"int8","default":300})"), HasSubstr("schema.default: out of range for int8"));
  EXPECT_THAT(msg(R"({"type":"int8","default":null})"), HasSubstr("null for a required int8"));
  EXPECT_THAT(msg(R"({"type":"int32","version":4294967296})"), HasSubstr("version"));
  EXPECT_THAT(msg(R"({"type":"bytes","name":"org.apache.kafka.connect.data.Decimal"})"), HasSubstr("'scale'"));
  EXPECT_THAT(msg("[]"), HasSubstr("a schema is an object"));
  // Nested deeper than 64 levels of schemas.
  std::string deep;
  for (int i = 0; i < 70; ++i) deep += R"({"type":"array","items":)";
  deep += R"({"type":"int8"})";
  for (int i = 0; i < 70; ++i) deep += "}";
  EXPECT_THAT(msg(deep), HasSubstr("deeper than 64"));
}

TEST(ConnectJson, ChecksPayloadsAgainstTheirSchema) {
  auto s = everything();
  const char* good = R"({"i8":-128,"i16":null,"i32":1,"i64":9223372036854775807,"f32":1.5,"f64":2,"ok":true,)"
                     R"("name":"n","raw":"AAE=","price":"AMg=","day":19000,"at":1000,"ts":null,)"
                     R"("id":"0f8fad5b-d9cb-469f-a165-70867728950e","doc":"{}","tags":["a"],"attrs":{"k":1},)"
                     R"("byId":[[1,"x"]],"nested":{"x":"y"}})";
  auto j = parseJson(good);
  ASSERT_TRUE(j.has_value());
  EXPECT_TRUE(checkPayload(*s, *j).isOk()) << checkPayload(*s, *j).toString();
  auto fails = [&](const char* member, const char* value, const char* expected) {
    auto bad = *j;
    bad[member] = *parseJson(value);
    Status st = checkPayload(*s, bad);
    EXPECT_FALSE(st.isOk()) << member << "=" << value;
    EXPECT_THAT(st.message(), HasSubstr(expected)) << member << "=" << value;
    // The per-record path (simdjson over the text) says the same.
    bool defaults = false;
    bool json = false;
    Status text = checkPayloadText(*s, dumpJson(bad), defaults, json);
    EXPECT_TRUE(json);
    EXPECT_EQ(text.message(), st.message()) << member << "=" << value;
  };
  fails("i8", "128", "payload.i8: out of range for int8");
  fails("i16", "40000", "out of range for int16");
  fails("i32", "2147483648", "out of range for int32");
  fails("i64", "18446744073709551615", "out of range for int64");
  fails("i8", "1.5", "expected an integer");
  fails("i64", "\"1\"", "expected an integer");
  fails("f32", "\"x\"", "expected a number");
  fails("ok", "1", "expected a boolean");
  fails("name", "null", "payload.name: null for a required string");
  fails("raw", "\"not base64!\"", "payload.raw: not base64");
  fails("price", "\"AMg\"", "not base64");
  fails("tags", "[\"a\",2]", "payload.tags[1]: expected a string");
  fails("attrs", "[[\"k\",1]]", "a map with string keys is an object");
  fails("byId", "{\"1\":\"x\"}", "array of [key, value] pairs");
  fails("byId", "[[1]]", "payload.byId[0]: a map entry is a [key, value] pair");
  fails("nested", "\"x\"", "a struct is an object");
  fails("nested", "{\"x\":5}", "payload.nested.x: expected a string");
  // A missing field is a null: fine where optional or defaulted, refused where required.
  auto missing = *j;
  missing.erase("i32");
  missing.erase("f64");
  EXPECT_TRUE(checkPayload(*s, missing).isOk());
  missing.erase("ok");
  EXPECT_THAT(checkPayload(*s, missing).message(), HasSubstr("payload.ok: null for a required boolean"));
  bool defaults = false;
  bool json = false;
  EXPECT_TRUE(checkPayloadText(*s, good, defaults, json).isOk());
  EXPECT_FALSE(defaults);
  EXPECT_TRUE(checkPayloadText(*s, R"({"i8":1,"i64":2,"f32":1,"ok":true,"name":"","price":"AA==","day":1,"at":1,)"
                                   R"("id":"x","tags":[],"attrs":{}})", defaults, json).isOk());
  EXPECT_TRUE(defaults);  // i32 is missing and has a default
  EXPECT_FALSE(checkPayloadText(*s, "{\"i8\":", defaults, json).isOk());
  EXPECT_FALSE(json);
  // Beyond 64 bits: simdjson refuses the text, the fallback reads it (a double may hold it).
  auto f64 = built(SchemaBuilder::float64());
  EXPECT_TRUE(checkPayloadText(*f64, "123456789012345678901234567890", defaults, json).isOk());
  EXPECT_THAT(checkPayloadText(*built(SchemaBuilder::int64()), "123456789012345678901234567890", defaults, json).message(),
              HasSubstr("payload: expected an integer"));
}

TEST(ConnectJson, SplitsEnvelopesWithoutParsingAndRefusesOthers) {
  auto ok = splitEnvelope(R"( { "schema" : {"type":"int8","x":[1,"]}"]} , "payload" : 5 } )");
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok->schema, R"({"type":"int8","x":[1,"]}"]})");
  EXPECT_EQ(ok->payload, "5");
  auto swapped = splitEnvelope(R"({"payload":"a\"b","schema":null})");
  ASSERT_TRUE(swapped.isOk());
  EXPECT_EQ(swapped->payload, R"("a\"b")");
  EXPECT_EQ(swapped->schema, "null");
  for (const char* bad : {"", "[]", "{}", R"({"schema":null})", R"({"schema":null,"payload":1,"x":2})",
                          R"({"schema":null,"schema":1})", R"({"payload":1,"payload":1})", R"({"schema":null,"payload":1}x)",
                          R"({"schema":null,"payload":})", R"({"schema":{"a":1,"payload":1})", R"({"schema":"x,"payload":1})",
                          R"({"schema" null,"payload":1})", R"({"sch\u0065ma":null,"payload":1})"}) {
    EXPECT_FALSE(splitEnvelope(bad).isOk()) << bad;
  }
  std::string deep = R"({"schema":)" + std::string(200, '[') + std::string(200, ']') + R"(,"payload":1})";
  EXPECT_FALSE(splitEnvelope(deep).isOk());
}

TEST(ConnectJson, DefaultsFillNulls) {
  auto s = everything();
  // A null where the schema has a default is reported by the check (the caller then fills it in).
  bool defaults = false;
  bool isJson = false;
  ASSERT_TRUE(checkPayloadText(*s, R"({"i8":1,"i32":null,"i64":2,"f32":1,"ok":true,"name":"","price":"AA==",)"
                                   R"("day":1,"at":1,"id":"x","tags":[],"attrs":{}})", defaults, isJson).isOk());
  EXPECT_TRUE(defaults);
  ASSERT_TRUE(checkPayloadText(*built(SchemaBuilder::int8().optional()), "null", defaults, isJson).isOk());
  EXPECT_FALSE(defaults);
  auto j = *parseJson(R"({"i32":null})");
  ASSERT_TRUE(applyDefaults(*s, j).isOk());
  EXPECT_EQ(j["i32"], 42);
  auto k = *parseJson(R"({})");
  ASSERT_TRUE(applyDefaults(*s, k).isOk());
  EXPECT_EQ(k["i32"], 42);
  EXPECT_FALSE(k.contains("i16"));  // no default: left out
}

Owned<Converter> jsonConverter(const StringMap& config = {}) {
  auto c = create<Converter>("org.apache.kafka.connect.json.JsonConverter");
  EXPECT_NE(c, nullptr);
  Status s = c->configure(config, false);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return c;
}

TEST(JsonConverterSchemas, WritesTheSchemaInTheEnvelopeAndReadsItBack) {
  auto c = jsonConverter();
  auto s = built(SchemaBuilder::structure()
                     .name("t.V")
                     .field("id", built(SchemaBuilder::int64()))
                     .field("price", built(logical::decimal(2).optional())));
  Bytes value(std::string(R"({"id":7,"price":"AMg="})"));
  auto wire = c->fromRecordWithSchema("t", s, value);
  ASSERT_TRUE(wire.isOk()) << wire.status().toString();
  EXPECT_EQ(wire->str(),
            R"({"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},)"
            R"({"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,)"
            R"("parameters":{"scale":"2"},"field":"price"}],"optional":false,"name":"t.V"},)"
            R"("payload":{"id":7,"price":"AMg="}})");
  auto back = c->toRecordWithSchema("t", *wire);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  ASSERT_NE(back->schema, nullptr);
  EXPECT_EQ(*back->schema, *s);
  EXPECT_EQ(back->data.str(), value.str());
  // The same schema text gives the same parsed schema object (the read cache).
  auto again = c->toRecordWithSchema("t", *wire);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again->schema.get(), back->schema.get());
  // Without a schema: the schemaless envelope, as before.
  EXPECT_EQ(c->fromRecordWithSchema("t", nullptr, Bytes(std::string("1")))->str(), R"({"schema":null,"payload":1})");
  EXPECT_EQ(c->toRecordWithSchema("t", Bytes(std::string(R"({"schema":null,"payload":1})")))->schema, nullptr);
}

TEST(JsonConverterSchemas, NullsFollowOptionalAndDefault) {
  auto c = jsonConverter();
  auto opt = built(SchemaBuilder::string().optional());
  auto req = built(SchemaBuilder::string());
  auto def = built(SchemaBuilder::int32().defaultJson("5"));
  EXPECT_EQ(c->fromRecordWithSchema("t", opt, Bytes())->str(),
            R"({"schema":{"type":"string","optional":true},"payload":null})");
  EXPECT_EQ(c->fromRecordWithSchema("t", def, Bytes())->str(),
            R"({"schema":{"type":"int32","optional":false,"default":5},"payload":5})");
  auto r = c->fromRecordWithSchema("orders", req, Bytes());
  ASSERT_FALSE(r.isOk());
  EXPECT_THAT(r.status().message(), HasSubstr("topic 'orders' does not match its schema: payload: null for a required"));
  auto tomb = c->toRecordWithSchema("t", Bytes(std::string(R"({"schema":{"type":"string","optional":true},"payload":null})")));
  ASSERT_TRUE(tomb.isOk());
  EXPECT_TRUE(tomb->data.isNull());
  EXPECT_NE(tomb->schema, nullptr);
  auto filled = c->toRecordWithSchema(
      "t", Bytes(std::string(R"({"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"default":5,"field":"n"}],"optional":false},"payload":{"n":null}})")));
  ASSERT_TRUE(filled.isOk()) << filled.status().toString();
  EXPECT_EQ(filled->data.str(), R"({"n":5})");
  // replace.null.with.default=false keeps the null.
  auto keep = jsonConverter({{"replace.null.with.default", "false"}});
  auto s = built(SchemaBuilder::structure().field("n", def));
  EXPECT_EQ(keep->fromRecordWithSchema("t", s, Bytes(std::string(R"({"n":null})")))->str(),
            R"({"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"default":5,"field":"n"}],"optional":false},"payload":{"n":null}})");
  EXPECT_EQ(c->fromRecordWithSchema("t", s, Bytes(std::string(R"({"n":null})")))->str(),
            R"({"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"default":5,"field":"n"}],"optional":false},"payload":{"n":5}})");
}

TEST(JsonConverterSchemas, RefusesDataThatDoesNotMatchAndHostileEnvelopes) {
  auto c = jsonConverter();
  auto s = built(SchemaBuilder::structure().field("id", built(SchemaBuilder::int32())));
  auto r = c->fromRecordWithSchema("t", s, Bytes(std::string(R"({"id":"x"})")));
  ASSERT_FALSE(r.isOk());
  EXPECT_THAT(r.status().message(), HasSubstr("payload.id: expected an integer (int32), found a string"));
  auto read = [&](const char* text) {
    auto x = c->toRecordWithSchema("in", Bytes(std::string(text)));
    EXPECT_FALSE(x.isOk()) << text;
    return x.isOk() ? std::string() : x.status().message();
  };
  EXPECT_THAT(read(R"({"schema":{"type":"int32","optional":false},"payload":1,"extra":0})"),
              HasSubstr("exactly those two members"));
  EXPECT_THAT(read(R"({"schema":{"type":"int32","optional":false},"payload":"1"})"),
              HasSubstr("topic 'in' does not match its schema: payload: expected an integer"));
  EXPECT_THAT(read(R"({"schema":{"type":"nope"},"payload":1})"), HasSubstr("invalid schema: schema: unknown schema type"));
  EXPECT_THAT(read(R"({"schema":5,"payload":1})"), HasSubstr("a schema is an object"));
  // The converter refuses decimal.format=NUMERIC rather than writing what Kafka would not read.
  auto numeric = create<Converter>("JsonConverter");
  EXPECT_FALSE(numeric->configure({{"decimal.format", "NUMERIC"}}, false).isOk());
}

TEST(JsonConverterSchemas, PayloadsTooDeepForTheEnvelopeAreRefusedWhateverTheSchema) {
  // The nesting scan is left out when the schema bounds a matching payload below the limit (128):
  // a deep payload under a shallow schema is refused by the schema check instead.
  auto c = jsonConverter();
  auto shallow = built(SchemaBuilder::structure().field("id", built(SchemaBuilder::int32())));
  const std::string deep = R"({"id":)" + std::string(1000, '[') + std::string(1000, ']') + "}";
  auto r = c->fromRecordWithSchema("t", shallow, Bytes(deep));
  ASSERT_FALSE(r.isOk());
  EXPECT_THAT(r.status().message(), HasSubstr("nesting deeper than 128 levels"));
  // A schema as deep as the limit: a payload that matches it is refused for its depth.
  SchemaPtr s = built(SchemaBuilder::int32());
  std::string payload = "1";
  for (int i = 0; i < 128; ++i) {
    s = built(SchemaBuilder::array(s));
    payload = "[" + payload + "]";
  }
  auto at = c->fromRecordWithSchema("t", s, Bytes(payload));
  ASSERT_FALSE(at.isOk());
  EXPECT_THAT(at.status().message(), HasSubstr("nested 128 levels deep"));
  // One level less fits.
  SchemaPtr fits = built(SchemaBuilder::int32());
  std::string under = "1";
  for (int i = 0; i < 127; ++i) {
    fits = built(SchemaBuilder::array(fits));
    under = "[" + under + "]";
  }
  auto ok = c->fromRecordWithSchema("t", fits, Bytes(under));
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_THAT(ok->str(), HasSubstr(R"("payload":)" + under + "}"));
}

TEST(JsonConverterSchemas, RepeatedSchemaTextsGiveTheSameAnswers) {
  // After a compact envelope, envelopes with the same head are split by one comparison: every
  // answer must stay the full path's, hostile tails included.
  auto c = jsonConverter();
  const std::string head = R"({"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},)"
                           R"({"type":"int32","optional":false,"default":5,"field":"n"}],"optional":true},"payload":)";
  auto read = [&](const std::string& tail) { return c->toRecordWithSchema("in", Bytes(head + tail)); };
  auto first = read(R"({"id":1,"n":2}})");
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  for (int i = 0; i < 2; ++i) {
    auto again = read(R"({"id":3,"n":4}})");
    ASSERT_TRUE(again.isOk());
    EXPECT_EQ(again->data.str(), R"({"id":3,"n":4})");
    EXPECT_EQ(again->schema.get(), first->schema.get());
  }
  EXPECT_THAT(read(R"({"id":1,"n":2},"extra":0})").status().message(), HasSubstr("exactly those two members"));
  EXPECT_THAT(read(R"({"id":1,"n":2}}})").status().message(), HasSubstr("not valid JSON"));
  EXPECT_THAT(read(R"({"id":"x","n":2}})").status().message(), HasSubstr("payload.id: expected an integer"));
  EXPECT_THAT(read(R"({"id":1,"n":2})").status().message(), HasSubstr("not valid JSON"));
  auto spaced = read("{\"id\":1,\"n\":2} \n}");
  ASSERT_TRUE(spaced.isOk()) << spaced.status().toString();
  EXPECT_EQ(spaced->data.str(), R"({"id":1,"n":2})");
  auto tomb = read("null}");
  ASSERT_TRUE(tomb.isOk());
  EXPECT_TRUE(tomb->data.isNull());
  auto filled = read(R"({"id":1,"n":null}})");  // a default to fill: the full path's answer
  ASSERT_TRUE(filled.isOk()) << filled.status().toString();
  EXPECT_EQ(filled->data.str(), R"({"id":1,"n":5})");
  // Another schema in between, then the first again.
  ASSERT_TRUE(c->toRecordWithSchema("in", Bytes(std::string(R"({"schema":{"type":"int32","optional":false},"payload":1})")))
                  .isOk());
  EXPECT_EQ(read(R"({"id":9,"n":9}})")->data.str(), R"({"id":9,"n":9})");
}

TEST(JsonConverterSchemas, PlainModeDropsTheSchema) {
  auto c = jsonConverter({{"schemas.enable", "false"}});
  auto s = built(SchemaBuilder::int32());
  EXPECT_EQ(c->fromRecordWithSchema("t", s, Bytes(std::string("3")))->str(), "3");
  auto back = c->toRecordWithSchema("t", Bytes(std::string("3")));
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back->schema, nullptr);
}

TEST(JsonConverterSchemas, OtherConvertersDropTheSchema) {
  auto c = create<Converter>("StringConverter");
  ASSERT_TRUE(c->configure({}, false).isOk());
  auto s = built(SchemaBuilder::string());
  // A typed string's payload form is a JSON string: written as its text, as Kafka's StringConverter.
  EXPECT_EQ(c->fromRecordWithSchema("t", s, Bytes(std::string("\"x\"")))->str(), "x");
  EXPECT_EQ(c->toRecordWithSchema("t", Bytes(std::string("x")))->schema, nullptr);
}

// The fast path of checkPayloadText says yes only where the full check says OK with no defaults to
// apply, and takes the compact, in-order payloads sources write.
TEST(ConnectJson, FlatStructPathAgreesWithTheFullCheck) {
  auto s = built(SchemaBuilder::structure()
                     .field("id", built(SchemaBuilder::int64()))
                     .field("at", built(logical::timestamp()))
                     .field("q", built(SchemaBuilder::int8()))
                     .field("f", built(SchemaBuilder::float64()))
                     .field("ok", built(SchemaBuilder::boolean().optional()))
                     .field("note", built(SchemaBuilder::string().optional()))
                     .field("d", built(SchemaBuilder::int32().optional().defaultJson("7"))));
  const auto agrees = [&](const std::string& text, bool fast) {
    bool defaults = true;
    bool json = false;
    Status full = checkPayloadTextInFull(*s, text, defaults, json);
    EXPECT_EQ(flatStructMatches(*s, text), fast) << text;
    if (fast) {
      EXPECT_TRUE(full.isOk() && !defaults && json) << text << ": " << full.toString();
    }
    bool defaults2 = true;
    bool json2 = false;
    Status both = checkPayloadText(*s, text, defaults2, json2);  // the same answer either way
    EXPECT_EQ(both.toString(), full.toString()) << text;
    EXPECT_EQ(defaults2, defaults) << text;
    EXPECT_EQ(json2, json) << text;
  };
  // Taken by the fast path.
  agrees(R"({"id":1,"at":1700000000000,"q":-128,"f":-0.5,"ok":true,"note":"a\"\\\/\b\f\n\r\tü","d":3})", true);
  agrees(R"({"id":-999999999999999999,"at":0,"q":127,"f":12,"ok":null,"note":null,"d":-2147483648})", true);
  agrees(R"({"id":0,"at":0,"q":0,"f":-0,"ok":false,"note":"","d":2147483647})", true);
  // Left to the full check (which may accept or refuse them).
  for (const char* text : {
           R"({"id":1,"at":0,"q":0,"f":0,"ok":true,"note":"","d":null})",        // the default applies
           R"({"id":1,"at":0,"q":0,"f":0,"ok":true,"note":""})",                 // d missing
           R"({"at":0,"id":1,"q":0,"f":0,"ok":true,"note":"","d":1})",           // reordered
           R"({"id":1,"at":0,"q":0,"f":0,"ok":true,"note":"","d":1,"x":1})",     // extra
           R"({"id":1, "at":0,"q":0,"f":0,"ok":true,"note":"","d":1})",          // whitespace
           R"({"id":-0,"at":0,"q":0,"f":0,"ok":true,"note":"","d":1})",          // -0 reads as a double
           R"({"id":1234567890123456789,"at":0,"q":0,"f":0,"ok":true,"note":"","d":1})",  // 19 digits
           R"({"id":01,"at":0,"q":0,"f":0,"ok":true,"note":"","d":1})",          // not JSON
           R"({"id":1.0,"at":0,"q":0,"f":0,"ok":true,"note":"","d":1})",         // a double for an integer
           R"({"id":1,"at":0,"q":128,"f":0,"ok":true,"note":"","d":1})",         // out of range
           R"({"id":1,"at":0,"q":0,"f":1e3,"ok":true,"note":"","d":1})",         // an exponent
           R"({"id":1,"at":0,"q":0,"f":1.,"ok":true,"note":"","d":1})",          // not JSON
           R"({"id":1,"at":0,"q":0,"f":0,"ok":1,"note":"","d":1})",              // not a boolean
           R"({"id":1,"at":0,"q":0,"f":0,"ok":true,"note":"\u00fc","d":1})",     // a \u escape
           R"({"id":1,"at":0,"q":0,"f":0,"ok":true,"note":"\x","d":1})",         // a bad escape
           R"({"id":1,"at":0,"q":0,"f":0,"ok":true,"note":"a)" "\x01" R"(","d":1})",  // a control character
           R"({"id":1,"at":0,"q":0,"f":0,"ok":true,"note":")" "\xff" R"(","d":1})",   // not UTF-8
           R"({"id":null,"at":0,"q":0,"f":0,"ok":true,"note":"","d":1})",        // null for a required field
           R"({"id":1,"at":0,"q":0,"f":0,"ok":true,"note":"","d":1}x)",          // trailing bytes
           R"({"id":1,"at":0,"q":0,"f":0,"ok":true,"note":"","d":1)",            // not closed
           R"({"i\u0064":1,"at":0,"q":0,"f":0,"ok":true,"note":"","d":1})",      // an escaped key
           "null", "[]", ""})
    agrees(text, false);
  // A field name that is not its own JSON text is never matched raw.
  auto odd = built(SchemaBuilder::structure().field("a\\nb", built(SchemaBuilder::int32().optional())));
  EXPECT_FALSE(flatStructMatches(*odd, R"({"a\nb":1})"));
  bool defaults = false;
  bool json = false;
  EXPECT_TRUE(checkPayloadText(*odd, R"({"a\nb":1})", defaults, json).isOk());  // a\nb decodes to another name
  EXPECT_FALSE(flatStructMatches(*built(SchemaBuilder::int32()), "1"));        // not a struct
  EXPECT_TRUE(flatStructMatches(*built(SchemaBuilder::structure()), "{}"));
}

}  // namespace
}  // namespace ferry::transforms
