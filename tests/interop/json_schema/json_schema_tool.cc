// The ferry side of tests/interop/test_json_schema_compat.py: ferry's JsonConverter
// (schemas.enable=true) on the same fixed list of typed records as JsonSchemaCompat.java, built
// with ferry's SDK (schemas from SchemaBuilder, data in the payload form of ferry/schema.h).
//
//   json_schema_tool write      prints fromRecordWithSchema of each record, one envelope a line
//   json_schema_tool roundtrip  reads envelopes a line from stdin; prints
//                               fromRecordWithSchema(toRecordWithSchema(line))
//
// Exit 1 with the converter's message on stderr when a record fails.
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "ferry/schema.h"
#include "transforms/converters.h"

namespace {

using ferry::Bytes;
using ferry::SchemaBuilder;
using ferry::SchemaPtr;
namespace logical = ferry::logical;

SchemaPtr b(const SchemaBuilder& builder) {
  auto r = builder.build();
  if (!r.isOk()) {
    std::cerr << "schema: " << r.status().toString() << "\n";
    std::exit(1);
  }
  return *r;
}

std::vector<std::pair<SchemaPtr, Bytes>> records() {
  std::vector<std::pair<SchemaPtr, Bytes>> out;
  auto str = b(SchemaBuilder::string());
  auto nested = b(SchemaBuilder::structure()
                      .name("inventory.Dims")
                      .field("w", b(SchemaBuilder::int32()))
                      .field("h", b(SchemaBuilder::int32().optional()))
                      .optional());
  auto item = b(SchemaBuilder::structure()
                    .name("inventory.Item")
                    .version(2)
                    .doc("one row")
                    .field("i8", b(SchemaBuilder::int8()))
                    .field("i16", b(SchemaBuilder::int16().optional()))
                    .field("i32", b(SchemaBuilder::int32().defaultJson("42")))
                    .field("i64", b(SchemaBuilder::int64()))
                    .field("f32", b(SchemaBuilder::float32()))
                    .field("f64", b(SchemaBuilder::float64().optional()))
                    .field("ok", b(SchemaBuilder::boolean()))
                    .field("name", b(SchemaBuilder::string().doc("say \"hi\"\n").parameter("len", "10")))
                    .field("raw", b(SchemaBuilder::bytes().optional()))
                    .field("price", b(logical::decimal(2)))
                    .field("day", b(logical::date()))
                    .field("at", b(logical::time()))
                    .field("ts", b(logical::timestamp().optional()))
                    .field("id", b(logical::uuid()))
                    .field("doc", b(logical::json().optional()))
                    .field("tags", b(SchemaBuilder::array(str)))
                    .field("attrs", b(SchemaBuilder::map(str, b(SchemaBuilder::int32()))))
                    .field("byId", b(SchemaBuilder::map(b(SchemaBuilder::int32()), str).optional()))
                    .field("dims", nested));
  out.emplace_back(item, Bytes(std::string(
      R"({"i8":-128,"i16":null,"i32":7,"i64":9223372036854775807,"f32":1.5,"f64":0.1,"ok":true,)"
      "\"name\":\"\xC3\xA9 \\u0001 tab\\t \\\"q\\\" \\\\ \xF0\x9F\x98\x80\","
      R"("raw":"AAH/","price":"BNI=","day":19000,"at":3723000,"ts":1700000000123,)"
      R"("id":"0f8fad5b-d9cb-469f-a165-70867728950e","doc":"{\"k\":[1,2]}","tags":["x","y"],)"
      R"("attrs":{"b":2,"a":1},"byId":[[7,"seven"],[-1,"minus one"]],"dims":{"w":3,"h":null}})")));
  // i32 is null here: written as its default (42), as Kafka does.
  out.emplace_back(item, Bytes(std::string(
      R"({"i8":1,"i16":null,"i32":null,"i64":0,"f32":-0.25,"f64":null,"ok":false,"name":"","raw":null,)"
      R"("price":"/2o=","day":0,"at":0,"ts":null,"id":"00000000-0000-0000-0000-000000000000","doc":null,)"
      R"("tags":[],"attrs":{},"byId":null,"dims":null})")));
  out.emplace_back(b(SchemaBuilder::int64().name("counter").version(5)), Bytes(std::string("123456789012")));
  out.emplace_back(b(SchemaBuilder::string().optional()), Bytes());
  out.emplace_back(b(SchemaBuilder::int32().defaultJson("5")), Bytes());
  out.emplace_back(b(SchemaBuilder::bytes()), Bytes(std::string(R"("aGk=")")));
  out.emplace_back(b(SchemaBuilder::array(b(logical::decimal(0).optional()))),
                   Bytes(std::string(R"(["AQ==",null,"/38="])")));
  out.emplace_back(b(SchemaBuilder::string().parameter("a", "1").parameter("b", "")), Bytes(std::string(R"("x")")));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode != "write" && mode != "roundtrip") {
    std::cerr << "usage: json_schema_tool write|roundtrip\n";
    return 2;
  }
  ferry::transforms::JsonConverter c;
  if (auto st = c.configure({{"schemas.enable", "true"}}, false); !st.isOk()) {
    std::cerr << st.toString() << "\n";
    return 1;
  }
  auto emit = [](const ferry::Result<Bytes>& r) {
    if (!r.isOk()) {
      std::cerr << r.status().toString() << "\n";
      std::exit(1);
    }
    std::cout << (r->isNull() ? std::string("<null>") : r->str()) << "\n";
  };
  if (mode == "write") {
    for (const auto& [schema, value] : records()) emit(c.fromRecordWithSchema("compat", schema, value));
  } else {
    std::string line;
    while (std::getline(std::cin, line)) {
      auto in = c.toRecordWithSchema("compat", Bytes(line));
      if (!in.isOk()) {
        std::cerr << in.status().toString() << "\n";
        return 1;
      }
      emit(c.fromRecordWithSchema("compat", in->schema, in->data));
    }
  }
  return 0;
}
