// CloudEvents 1.0 over records: CloudEventsConverter and the CloudEvent transform. The codec's own
// tests: tests/unit/core/cloudevents_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "../core/cloudevents_fixtures.h"
#include "test_util.h"
#include "transforms/cloudevents.h"

namespace ferry::transforms {
namespace {

using namespace testing;
namespace ce = cloudevents;

using namespace ferry::cloudevents_testing;

// ----- CloudEventsConverter -----------------------------------------------------------------

Owned<Converter> converter(const StringMap& config) {
  auto c = create<Converter>("io.ferry.converters.CloudEventsConverter");
  EXPECT_NE(c, nullptr);
  StringMap cfg = config;
  cfg["converter.type"] = "value";
  Status s = c->configure(cfg, false);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return c;
}

TEST(CloudEventsConverter, StructuredWritesTheEnvelopeFromHeadersOrDefaults) {
  auto c = converter({{"cloudevents.source", "/app/${topic}"}, {"cloudevents.type", "order.created"}});
  Headers h;
  h.add("ce_subject", std::string_view("order-7"));
  h.add("ce_tenant", std::string_view("acme"));
  h.add("other", std::string_view("x"));
  const Bytes value(std::string(R"({"id":7})"));
  auto out = c->fromRecordWithHeaders("orders", h, nullptr, value);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  const std::string id = ce::derivedId({"orders", "/app/orders", "order.created", "order-7", value.view()});
  EXPECT_EQ(out->str(), R"({"specversion":"1.0","id":")" + id +
                            R"(","source":"/app/orders","type":"order.created","subject":"order-7","tenant":"acme","data":{"id":7}})");
  EXPECT_EQ(headerOf(h, "ce_subject"), "<none>");
  EXPECT_EQ(headerOf(h, "other"), "x");
  EXPECT_EQ(headerOf(h, "content-type"), "application/cloudevents+json; charset=UTF-8");
  // The same record gives the same id; header attributes win over the defaults.
  Headers h2;
  h2.add("ce_id", std::string_view("given"));
  h2.add("ce_source", std::string_view("/given"));
  auto out2 = c->fromRecordWithHeaders("orders", h2, nullptr, value);
  ASSERT_TRUE(out2.isOk());
  EXPECT_TRUE(contains(out2->str(), R"("id":"given","source":"/given","type":"order.created")")) << out2->str();
  // Back: the data is the value again, the attributes headers.
  auto back = c->toRecordWithHeaders("orders", h, *out);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->data, value);
  EXPECT_EQ(headerOf(h, "ce_id"), id);
  EXPECT_EQ(headerOf(h, "ce_subject"), "order-7");
  EXPECT_EQ(headerOf(h, "ce_tenant"), "acme");
  EXPECT_EQ(headerOf(h, "content-type"), "<none>");  // the event has no datacontenttype
  EXPECT_EQ(headerOf(h, "other"), "x");
}

TEST(CloudEventsConverter, StructuredReadsAnEventWithoutHeadersAndRefusesBadOnes) {
  auto c = converter({});
  Headers h;
  auto r = c->toRecordWithHeaders("t", h, Bytes(std::string(kSpecExample)));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->data.str(), R"({"appinfoA":"abc","appinfoB":123,"appinfoC":true})");
  EXPECT_EQ(r->schema, nullptr);
  EXPECT_EQ(headerOf(h, "content-type"), "application/json");
  EXPECT_EQ(headerOf(h, "ce_comexampleextension1"), "value");
  // Errors are InvalidArgument naming the converter, the topic and what is wrong; headers stay.
  Headers keep;
  keep.add("a", std::string_view("b"));
  const Headers before = keep;
  auto bad = c->toRecordWithHeaders("orders", keep, Bytes(std::string(R"({"specversion":"1.0","id":"1","source":"s"})")));
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(bad.status().message(), "CloudEventsConverter: the value from topic 'orders'")) << bad.status().message();
  EXPECT_TRUE(contains(bad.status().message(), "'type'")) << bad.status().message();
  EXPECT_EQ(keep, before);
  EXPECT_FALSE(c->toRecordWithHeaders("t", keep, Bytes(std::string("not json"))).isOk());
  // A tombstone passes both ways.
  EXPECT_TRUE(c->toRecordWithHeaders("t", keep, Bytes())->data.isNull());
  EXPECT_TRUE(c->fromRecordWithHeaders("t", keep, nullptr, Bytes())->isNull());
  EXPECT_EQ(keep, before);
  // Non-JSON data without a content type travels as data_base64 and comes back exact.
  Headers none;
  auto wire = c->fromRecordWithHeaders("t", none, nullptr, Bytes(std::string("plain\xff")));
  ASSERT_TRUE(wire.isOk());
  EXPECT_TRUE(contains(wire->str(), "\"data_base64\":")) << wire->str();
  EXPECT_EQ(c->toRecordWithHeaders("t", none, *wire)->data.str(), "plain\xff");
  // A batch is not one record.
  Headers batch;
  batch.add("content-type", std::string_view("application/cloudevents-batch+json"));
  EXPECT_FALSE(c->toRecordWithHeaders("t", batch, Bytes(std::string("[]"))).isOk());
}

TEST(CloudEventsConverter, BinaryModeSetsAndChecksHeaders) {
  auto c = converter({{"cloudevents.mode", "binary"}, {"cloudevents.type", "t1"},
                      {"cloudevents.datacontenttype", "text/plain"}});
  Headers h;
  const Bytes value(std::string("hello"));
  auto out = c->fromRecordWithHeaders("logs", h, nullptr, value);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(out->buffer(), value.buffer());  // the value itself
  EXPECT_EQ(headerOf(h, "ce_specversion"), "1.0");
  EXPECT_EQ(headerOf(h, "ce_source"), "/ferry/logs");
  EXPECT_EQ(headerOf(h, "ce_type"), "t1");
  EXPECT_EQ(headerOf(h, "ce_id").size(), 32u);
  EXPECT_EQ(headerOf(h, "content-type"), "text/plain");
  // Back: headers kept, value kept, required headers checked.
  Headers copy = h;
  auto back = c->toRecordWithHeaders("logs", copy, *out);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->data, value);
  EXPECT_EQ(copy, h);
  Headers noType = h;
  noType.remove("ce_type");
  auto bad = c->toRecordWithHeaders("logs", noType, value);
  ASSERT_FALSE(bad.isOk());
  EXPECT_TRUE(contains(bad.status().message(), "'type'")) << bad.status().message();
  // A structured message (by its content-type) is read as one even in binary mode.
  Headers structured;
  structured.add("content-type", std::string_view("application/cloudevents+json"));
  auto s = c->toRecordWithHeaders("logs", structured, Bytes(std::string(kSpecExample)));
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(headerOf(structured, "ce_id"), "C234-1234-1234");
  // A record that already is a structured event is turned into binary form.
  Headers already;
  already.add("content-type", std::string_view("application/cloudevents+json"));
  auto b = c->fromRecordWithHeaders("logs", already, nullptr, Bytes(std::string(kSpecExample)));
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  EXPECT_EQ(b->str(), R"({"appinfoA":"abc","appinfoB":123,"appinfoC":true})");
  EXPECT_EQ(headerOf(already, "ce_type"), "com.example.someevent");
  EXPECT_EQ(headerOf(already, "content-type"), "application/json");
}

TEST(CloudEventsConverter, ConfigIsChecked) {
  auto c = create<Converter>("CloudEventsConverter");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->configure({{"cloudevents.mode", "sideways"}}, false).isOk());
  EXPECT_FALSE(c->configure({{"converter.type", "header"}}, false).isOk());
  EXPECT_FALSE(c->configure({{"cloudevents.source", ""}}, false).isOk());
  EXPECT_FALSE(c->configure({{"cloudevents.datacontenttype", "application/cloudevents+json"}}, false).isOk());
  EXPECT_TRUE(c->configure({{"converter.type", "key"}}, true).isOk());
  // Without headers (as a key converter): structured works on an empty header list.
  auto k = c->fromRecord("t", Bytes(std::string("\"k\"")));
  ASSERT_TRUE(k.isOk());
  EXPECT_EQ(c->toRecord("t", *k)->str(), "\"k\"");
}

// ----- CloudEvent transform -----------------------------------------------------------------

TEST(CloudEventTransform, StructuredFromTemplates) {
  auto t = transform("io.ferry.transforms.CloudEvent",
                     {{"id", "${topic}-${queue}-${offset}"},
                      {"source", "/devices/${header:device}"},
                      {"event.type", "reading.${value:kind}"},
                      {"subject", "${value:$.sensor.name}"},
                      {"extensions", "partitionkey:${key},tenant:${header:tenant},ms:${timestamp}"}});
  Record r = record("readings", std::string(R"({"kind":"temp","sensor":{"name":"s1"},"v":21.5})"), std::string("k1"));
  r.queue = 2;
  r.offset = 40;
  r.timestampMs = 1'700'000'000'123;
  r.headers.add("device", std::string_view("d9"));
  r.headers.add("ce_old", std::string_view("x"));
  r.valueSchema = SchemaBuilder::string().build().value();
  auto kept = t->apply(r);
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  EXPECT_TRUE(*kept);
  // time: ${timestamp} (epoch ms) written as RFC 3339; the missing tenant header leaves that out.
  EXPECT_EQ(r.value.str(),
            R"({"specversion":"1.0","id":"readings-2-40","source":"/devices/d9","type":"reading.temp",)"
            R"("subject":"s1","time":"2023-11-14T22:13:20.123Z","ms":"1700000000123","partitionkey":"k1",)"
            R"("data":{"kind":"temp","sensor":{"name":"s1"},"v":21.5}})");
  EXPECT_EQ(r.valueSchema, nullptr);
  EXPECT_EQ(headerOf(r.headers, "content-type"), "application/cloudevents+json; charset=UTF-8");
  EXPECT_EQ(headerOf(r.headers, "ce_old"), "<none>");
  EXPECT_EQ(headerOf(r.headers, "device"), "d9");
  EXPECT_TRUE(ce::parseStructured(r.value.view()).isOk());
}

TEST(CloudEventTransform, BinaryWithDefaults) {
  auto t = transform("CloudEvent", {{"mode", "binary"}, {"datacontenttype", "text/plain"}});
  Record r = record("logs", std::string("line 1"));
  auto kept = t->apply(r);
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  EXPECT_EQ(r.value.str(), "line 1");
  EXPECT_EQ(headerOf(r.headers, "ce_source"), "/ferry/logs");
  EXPECT_EQ(headerOf(r.headers, "ce_type"), "io.ferry.record");
  EXPECT_EQ(headerOf(r.headers, "ce_time"), "<none>");  // no timestamp
  EXPECT_EQ(headerOf(r.headers, "content-type"), "text/plain");
  const std::string id = headerOf(r.headers, "ce_id");
  EXPECT_EQ(id.size(), 32u);
  // The same record gives the same id; another value another.
  Record same = record("logs", std::string("line 1"));
  ASSERT_TRUE(t->apply(same).isOk());
  EXPECT_EQ(headerOf(same.headers, "ce_id"), id);
  Record other = record("logs", std::string("line 2"));
  ASSERT_TRUE(t->apply(other).isOk());
  EXPECT_NE(headerOf(other.headers, "ce_id"), id);
  // A time template that gives RFC 3339 is kept as it is.
  auto at = transform("CloudEvent", {{"mode", "binary"}, {"time", "${header:at}"}});
  Record timed = record("logs", std::string("x"));
  timed.headers.add("at", std::string_view("2024-03-05T10:20:30+01:00"));
  ASSERT_TRUE(at->apply(timed).isOk());
  EXPECT_EQ(headerOf(timed.headers, "ce_time"), "2024-03-05T10:20:30+01:00");
  timed.headers.set("at", Bytes(std::string("soon")));
  auto badTime = at->apply(timed);
  ASSERT_FALSE(badTime.isOk());
  EXPECT_TRUE(contains(badTime.status().message(), "RFC 3339")) << badTime.status().message();
  // A tombstone passes.
  Record tomb = record("logs", std::nullopt);
  ASSERT_TRUE(t->apply(tomb).isOk());
  EXPECT_TRUE(tomb.headers.empty());
}

TEST(CloudEventTransform, MissingRequiredAttributeFailsTheRecordOptionalOnesAreLeftOut) {
  auto t = transform("CloudEvent", {{"source", "/x/${header:origin}"}, {"subject", "${header:subject}"}});
  Record r = record("t", std::string("{}"));
  auto res = t->apply(r);
  ASSERT_FALSE(res.isOk());
  EXPECT_EQ(res.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(res.status().message(), "a record in topic 't': source")) << res.status().message();
  EXPECT_TRUE(contains(res.status().message(), "origin")) << res.status().message();
  r.headers.add("origin", std::string_view("o"));
  ASSERT_TRUE(t->apply(r).isOk());
  auto e = ce::parseStructured(r.value.view());
  ASSERT_TRUE(e.isOk());
  EXPECT_EQ(e->source, "/x/o");
  EXPECT_FALSE(e->subject.has_value());
  // ${value:...} of a value that is not JSON gives nothing.
  auto v = transform("CloudEvent", {{"event.type", "${value:kind}"}});
  Record text = record("t", std::string("not json"));
  auto nj = v->apply(text);
  ASSERT_FALSE(nj.isOk());
  EXPECT_TRUE(contains(nj.status().message(), "not JSON")) << nj.status().message();
}

// The Kafka protocol binding's `partitionkey` (the message key) from the record key: the
// `extensions` list does it (`partitionkey:${key}`), off unless listed; a record without a key gets
// no partitionkey rather than a failure. HttpSource maps it back to the key (webhook_body).
TEST(CloudEventTransform, PartitionKeyFromTheRecordKey) {
  auto t = transform("CloudEvent", {{"mode", "binary"}, {"extensions", "partitionkey:${key}"}});
  Record r = record("devices", std::string(R"({"t":1})"), std::string("dev-7"));
  ASSERT_TRUE(t->apply(r).isOk());
  EXPECT_EQ(headerOf(r.headers, "ce_partitionkey"), "dev-7");
  auto e = ce::fromHeaders(r.headers, r.value);
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_EQ(e->extensions.at("partitionkey").value, "dev-7");
  Record keyless = record("devices", std::string(R"({"t":2})"));
  ASSERT_TRUE(t->apply(keyless).isOk());
  EXPECT_EQ(headerOf(keyless.headers, "ce_partitionkey"), "<none>");
  // Not listed: no partitionkey.
  auto plain = transform("CloudEvent", {{"mode", "binary"}});
  Record other = record("devices", std::string(R"({"t":3})"), std::string("dev-7"));
  ASSERT_TRUE(plain->apply(other).isOk());
  EXPECT_EQ(headerOf(other.headers, "ce_partitionkey"), "<none>");
  // Structured: a member of the event's JSON.
  auto structured = transform("CloudEvent", {{"extensions", "partitionkey:${key}"}});
  Record s = record("devices", std::string(R"({"t":4})"), std::string("dev-8"));
  ASSERT_TRUE(structured->apply(s).isOk());
  auto se = ce::parseStructured(s.value.view());
  ASSERT_TRUE(se.isOk());
  EXPECT_EQ(se->extensions.at("partitionkey").value, "dev-8");
}

// Regression: the event type was the key `type`, which in a connector config
// (`transforms.<name>.type`) is the transform's class and never reaches the transform, so every
// event had the default type.
TEST(CloudEventTransform, EventTypeKeyIsNotTheClassKey) {
  EXPECT_EQ(CloudEvent::definition().find("type"), nullptr);
  ASSERT_NE(CloudEvent::definition().find("event.type"), nullptr);
  auto t = transform("CloudEvent", {{"event.type", "io.example.seq"}, {"source", "/s"}});
  Record r = record("t", std::string(R"({"seq":1})"));
  ASSERT_TRUE(t->apply(r).isOk());
  auto e = ce::parseStructured(r.value.view());
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_EQ(e->type, "io.example.seq");
}

TEST(CloudEventTransform, ConfigIsChecked) {
  auto t = create<Transform>("CloudEvent");
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->configure({{"id", "${nope}"}}).isOk());
  EXPECT_FALSE(t->configure({{"id", "${topic"}}).isOk());
  EXPECT_FALSE(t->configure({{"event.type", "${value:a[}"}}).isOk());
  EXPECT_FALSE(t->configure({{"event.type", ""}}).isOk());
  EXPECT_FALSE(t->configure({{"extensions", "Bad:x"}}).isOk());
  EXPECT_FALSE(t->configure({{"extensions", "id:x"}}).isOk());
  EXPECT_FALSE(t->configure({{"mode", "both"}}).isOk());
  EXPECT_FALSE(t->configure({{"datacontenttype", "application/cloudevents+json"}}).isOk());
  EXPECT_TRUE(t->configure({{"event.type", "a.${topic}"}, {"extensions", "k:${key}"}}).isOk());
}

}  // namespace
}  // namespace ferry::transforms
