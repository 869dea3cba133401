// Records across the JVM host channel (src/jvm/java_records.h): a source batch as the host writes
// it is read into ferry records with their schemas, headers and positions; a sink batch sends each
// schema once; a malformed or hostile batch is refused, never read past its end.
#include "jvm/java_records.h"

#include <gtest/gtest.h>

namespace ferry::jvm {
namespace {

constexpr const char* kSeqSchema =
    R"({"type":"struct","fields":[{"type":"string","optional":false,"field":"stream"},)"
    R"({"type":"int64","optional":false,"field":"seq"}],"optional":false,"name":"io.ferry.test.Seq","version":1})";

// A source batch's payload: `schemas` then the records `fill` writes.
std::string sourceBatch(const std::vector<std::pair<int, std::string>>& schemas, int records,
                        const std::function<void(Writer&)>& fill) {
  Writer w(1, kSourcePoll | 0x80);
  w.i32(static_cast<std::int32_t>(schemas.size()));
  for (const auto& [id, json] : schemas) w.i32(id).str(json);
  w.i32(records);
  fill(w);
  return std::move(w).finish().substr(9);
}

void typedRecord(Writer& w) {
  w.str("orders").i32(2).i64(1700000000123);
  w.u8(2).i32(2).str("7");                                  // key: int64 7
  w.u8(2).i32(1).str(R"({"stream":"s-0","seq":7})");        // value: the struct
  w.i32(1).str("stream").str("s-0");                        // headers
  w.map({{"stream", "s-0"}});                               // source partition
  w.map({{"seq", "7"}, {"ferry.types", R"({"seq":"l"})"}}); // source offset
}

void rawRecord(Writer& w) {
  w.str("lines").i32(-1).i64(-1);
  w.u8(0);                   // key: null
  w.u8(1).str("line one");   // value: raw bytes
  w.i32(1).str("h").nullStr();
  w.i32(-1);                 // no source partition
  w.i32(-1);                 // no source offset
}

TEST(JvmRecords, ReadsASourceBatchWithSchemasHeadersAndPositions) {
  SchemasIn schemas;
  std::vector<Record> out;
  const auto payload = sourceBatch({{1, kSeqSchema}, {2, R"({"type":"int64","optional":false})"}}, 2, [](Writer& w) {
    typedRecord(w);
    rawRecord(w);
  });
  auto n = readSourceBatch(payload, schemas, out);
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  ASSERT_EQ(*n, 2u);
  ASSERT_EQ(out.size(), 2u);
  const Record& a = out[0];
  EXPECT_EQ(a.topic, "orders");
  EXPECT_EQ(a.queue, 2);
  EXPECT_EQ(a.timestampMs, 1700000000123);
  ASSERT_TRUE(a.keySchema && a.valueSchema);
  EXPECT_EQ(a.keySchema->type(), SchemaType::kInt64);
  EXPECT_EQ(a.valueSchema->describe(), "struct{stream:string,seq:int64}");
  EXPECT_EQ(a.valueSchema->name(), "io.ferry.test.Seq");
  EXPECT_EQ(a.value.str(), R"({"stream":"s-0","seq":7})");
  EXPECT_EQ(a.key.str(), "7");
  ASSERT_NE(a.headers.last("stream"), nullptr);
  EXPECT_EQ(a.headers.last("stream")->value.str(), "s-0");
  EXPECT_EQ(a.position.partition, (StringMap{{"stream", "s-0"}}));
  EXPECT_EQ(a.position.offset.at("seq"), "7");
  const Record& b = out[1];
  EXPECT_FALSE(b.queue.has_value());
  EXPECT_EQ(b.timestampMs, 0);  // none: the runtime stamps it
  EXPECT_TRUE(b.key.isNull());
  EXPECT_EQ(b.keySchema, nullptr);
  EXPECT_EQ(b.value.str(), "line one");
  EXPECT_TRUE(b.headers.last("h")->value.isNull());
  EXPECT_TRUE(b.position.empty());

  // A later batch names the schemas by id only.
  const auto later = sourceBatch({}, 1, typedRecord);
  out.clear();
  ASSERT_TRUE(readSourceBatch(later, schemas, out).isOk());
  EXPECT_EQ(out[0].valueSchema->name(), "io.ferry.test.Seq");
}

TEST(JvmRecords, RefusesWhatTheHostMustNotSend) {
  SchemasIn schemas;
  std::vector<Record> out;
  // A schema id never sent.
  auto unknown = readSourceBatch(sourceBatch({}, 1, typedRecord), schemas, out);
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("never sent"), std::string::npos);
  // A schema that is not JSON, or not a schema.
  EXPECT_FALSE(readSourceBatch(sourceBatch({{1, "{nope"}}, 0, [](Writer&) {}), schemas, out).isOk());
  EXPECT_FALSE(readSourceBatch(sourceBatch({{1, R"({"type":"decimal"})"}}, 0, [](Writer&) {}), schemas, out).isOk());
  // A record without a topic; an unknown data kind; bytes after the records.
  EXPECT_FALSE(readSourceBatch(sourceBatch({}, 1, [](Writer& w) { w.str("").i32(-1).i64(-1).u8(0).u8(0).i32(0).i32(-1).i32(-1); }),
                               schemas, out).isOk());
  EXPECT_FALSE(readSourceBatch(sourceBatch({}, 1, [](Writer& w) { w.str("t").i32(-1).i64(-1).u8(9); }), schemas, out).isOk());
  EXPECT_FALSE(readSourceBatch(sourceBatch({}, 1, [](Writer& w) {
                                 rawRecord(w);
                                 w.u8(0);
                               }),
                               schemas, out).isOk());
  // A count of records the payload cannot hold.
  EXPECT_FALSE(readSourceBatch(sourceBatch({}, 1 << 30, [](Writer&) {}), schemas, out).isOk());
  EXPECT_TRUE(out.empty());
}

TEST(JvmRecords, EveryTruncationIsRefused) {
  const auto payload = sourceBatch({{1, kSeqSchema}, {2, R"({"type":"int64","optional":false})"}}, 2, [](Writer& w) {
    typedRecord(w);
    rawRecord(w);
  });
  for (std::size_t n = 0; n < payload.size(); ++n) {
    SchemasIn schemas;
    std::vector<Record> out;
    EXPECT_FALSE(readSourceBatch(std::string_view(payload).substr(0, n), schemas, out).isOk()) << "cut at " << n;
  }
}

TEST(JvmRecords, ASinkBatchSendsEachSchemaOnce) {
  auto seq = SchemaBuilder::structure().name("io.ferry.test.Seq").field("seq", *SchemaBuilder::int64().build()).build();
  ASSERT_TRUE(seq.isOk());
  // An equal schema built separately (another pointer) is the same schema.
  auto again = SchemaBuilder::structure().name("io.ferry.test.Seq").field("seq", *SchemaBuilder::int64().build()).build();
  std::vector<Record> records(3);
  for (int i = 0; i < 3; ++i) {
    records[i].topic = "t";
    records[i].queue = 1;
    records[i].offset = 40 + i;
    records[i].value = Bytes(R"({"seq":)" + std::to_string(i) + "}");
    records[i].valueSchema = i == 2 ? *again : *seq;
  }
  records[1].key = Bytes(std::string("k"));
  records[1].headers.add("h", std::string_view("v"));
  SchemasOut schemas;
  auto read = [&](const std::vector<Record>& batch) {
    Writer w(1, kSinkPut);
    writeSinkBatch(w, batch, schemas);
    return std::move(w).finish().substr(9);
  };
  const auto first = read(records);
  Reader r(first);
  EXPECT_EQ(*r.i32(), 1);  // one schema
  EXPECT_EQ(*r.i32(), 1);
  EXPECT_NE(r.str("schema")->find(R"("name":"io.ferry.test.Seq")"), std::string::npos);
  EXPECT_EQ(*r.i32(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(*r.str("topic"), "t");
    EXPECT_EQ(*r.i32(), 1);
    EXPECT_EQ(*r.i64(), 40 + i);
    EXPECT_EQ(*r.i64(), -1);  // no timestamp
    const auto keyKind = *r.u8();
    EXPECT_EQ(keyKind, i == 1 ? 1 : 0);
    if (keyKind == 1) EXPECT_EQ(r.bytes()->str(), "k");
    EXPECT_EQ(*r.u8(), 2);
    EXPECT_EQ(*r.i32(), 1);
    EXPECT_EQ(r.bytes()->str(), R"({"seq":)" + std::to_string(i) + "}");
    const auto headers = *r.i32();
    EXPECT_EQ(headers, i == 1 ? 1 : 0);
    if (headers == 1) {
      EXPECT_EQ(*r.str("key"), "h");
      EXPECT_EQ(r.bytes()->str(), "v");
    }
  }
  EXPECT_EQ(r.left(), 0u);
  // The next batch names it by id.
  const auto second = read(records);
  Reader r2(second);
  EXPECT_EQ(*r2.i32(), 0);
}

// A sink context that writes down what it is asked.
class RecordingContext final : public SinkTaskContext {
 public:
  const std::string& connectorName() const override { return name_; }
  int taskId() const override { return 0; }
  void requestCommit() override {}
  Status reportBadRecord(const Record&, const Status&) override { return Status::ok(); }
  Status seek(const OffsetMap& offsets) override {
    for (const auto& [q, o] : offsets) asked.push_back("seek " + q.toString() + " " + std::to_string(o));
    return Status::ok();
  }
  Status pause(const std::vector<TopicQueue>& queues) override {
    for (const auto& q : queues) asked.push_back("pause " + q.toString());
    return Status::ok();
  }
  Status resume(const std::vector<TopicQueue>& queues) override {
    for (const auto& q : queues) asked.push_back("resume " + q.toString());
    return Status::ok();
  }
  std::vector<std::string> asked;

 private:
  std::string name_ = "c";
};

std::string requests(const std::function<void(Writer&)>& fill) {
  Writer w(1, kSinkPut | 0x80);
  fill(w);
  return std::move(w).finish().substr(9);
}

TEST(JvmRecords, ASinkTasksContextRequestsAreAppliedInOrder) {
  const auto payload = requests([](Writer& w) {
    w.i32(3);
    w.u8(1).str("orders").i32(2).i64(-1);   // pause orders-2
    w.u8(0).str("orders").i32(2).i64(40);   // rewind it to 40
    w.u8(2).str("orders").i32(2).i64(-1);   // resume it
  });
  Reader r(payload);
  auto got = readSinkContextRequests(r);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  RecordingContext ctx;
  ASSERT_TRUE(applySinkContextRequests(*got, ctx).isOk());
  const TopicQueue q{"orders", 2};
  EXPECT_EQ(ctx.asked, (std::vector<std::string>{"pause " + q.toString(), "seek " + q.toString() + " 40",
                                                 "resume " + q.toString()}));
}

TEST(JvmRecords, MalformedContextRequestsAreRefused) {
  const std::vector<std::string> bad = {
      requests([](Writer& w) { w.i32(1).u8(3).str("t").i32(0).i64(0); }),     // no such kind
      requests([](Writer& w) { w.i32(1).u8(0).str("t").i32(0).i64(-5); }),    // a seek before the start
      requests([](Writer& w) { w.i32(1).u8(1).str("t").i32(-1).i64(-1); }),   // no such queue
      requests([](Writer& w) { w.i32(1 << 30); }),                              // a count it was not sent
      requests([](Writer& w) { w.i32(-2); }),
  };
  for (const auto& payload : bad) {
    Reader r(payload);
    EXPECT_FALSE(readSinkContextRequests(r).isOk());
  }
  const auto good = requests([](Writer& w) { w.i32(1).u8(0).str("t").i32(0).i64(9); });
  for (std::size_t n = 0; n < good.size(); ++n) {
    Reader r(std::string_view(good).substr(0, n));
    EXPECT_FALSE(readSinkContextRequests(r).isOk()) << "cut at " << n;
  }
}

}  // namespace
}  // namespace ferry::jvm
