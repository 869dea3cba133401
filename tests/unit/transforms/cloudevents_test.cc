// CloudEvents 1.0: the codec (structured, batch, binary headers), CloudEventsConverter and the
// CloudEvent transform.
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"
#include "transforms/cloudevents.h"

namespace ferry::transforms {
namespace {

using namespace testing;
namespace ce = cloudevents;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string headerOf(const Headers& h, const std::string& key) {
  const Header* x = h.last(key);
  return x == nullptr ? std::string("<none>") : x->value.str();
}

// The JSON format spec's example (CloudEvents 1.0, json-format.md), with an extension.
constexpr const char* kSpecExample = R"({
    "specversion" : "1.0",
    "type" : "com.example.someevent",
    "source" : "/mycontext",
    "subject": null,
    "id" : "C234-1234-1234",
    "time" : "2018-04-05T17:31:00Z",
    "comexampleextension1" : "value",
    "comexampleothervalue" : 5,
    "datacontenttype" : "application/json",
    "data" : {
        "appinfoA" : "abc",
        "appinfoB" : 123,
        "appinfoC" : true
    }
})";

// ----- codec ------------------------------------------------------------------------------------

TEST(CloudEventsCodec, SpecExampleParsesAndRoundTrips) {
  auto e = ce::parseStructured(kSpecExample);
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_EQ(e->specversion, "1.0");
  EXPECT_EQ(e->id, "C234-1234-1234");
  EXPECT_EQ(e->source, "/mycontext");
  EXPECT_EQ(e->type, "com.example.someevent");
  EXPECT_FALSE(e->subject.has_value());  // null is absent
  EXPECT_EQ(e->time, "2018-04-05T17:31:00Z");
  EXPECT_EQ(e->datacontenttype, "application/json");
  EXPECT_EQ(e->dataEncoding, ce::DataEncoding::kJson);
  EXPECT_EQ(e->data.str(), R"({"appinfoA":"abc","appinfoB":123,"appinfoC":true})");
  ASSERT_EQ(e->extensions.size(), 2u);
  EXPECT_EQ(e->extensions.at("comexampleextension1"), (ce::Extension{"value", ce::Extension::Kind::kString}));
  EXPECT_EQ(e->extensions.at("comexampleothervalue"), (ce::Extension{"5", ce::Extension::Kind::kInteger}));

  auto text = ce::renderStructured(*e);
  ASSERT_TRUE(text.isOk()) << text.status().toString();
  EXPECT_EQ(*text,
            R"({"specversion":"1.0","id":"C234-1234-1234","source":"/mycontext","type":"com.example.someevent",)"
            R"("time":"2018-04-05T17:31:00Z","datacontenttype":"application/json","comexampleextension1":"value",)"
            R"("comexampleothervalue":5,"data":{"appinfoA":"abc","appinfoB":123,"appinfoC":true}})");
  auto again = ce::parseStructured(*text);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(*again, *e);
}

TEST(CloudEventsCodec, MinimalEventWithoutData) {
  auto e = ce::parseStructured(R"({"specversion":"1.0","id":"1","source":"s","type":"t"})");
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_TRUE(e->data.isNull());
  EXPECT_EQ(e->dataEncoding, ce::DataEncoding::kNone);
  EXPECT_EQ(*ce::renderStructured(*e), R"({"specversion":"1.0","id":"1","source":"s","type":"t"})");
}

TEST(CloudEventsCodec, MissingOrEmptyRequiredAttributesAreRefusedByName) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"id":"1","source":"s","type":"t"})", "'specversion' is missing"},
      {R"({"specversion":"0.3","id":"1","source":"s","type":"t"})", "only CloudEvents 1.0"},
      {R"({"specversion":"1.0","source":"s","type":"t"})", "'id' is missing"},
      {R"({"specversion":"1.0","id":"","source":"s","type":"t"})", "'id' is missing or empty"},
      {R"({"specversion":"1.0","id":"1","type":"t"})", "'source' is missing"},
      {R"({"specversion":"1.0","id":"1","source":"s"})", "'type' is missing"},
      {R"({"specversion":"1.0","id":"1","source":"s","type":null})", "'type' is missing"},
      {R"({"specversion":"1.0","id":1,"source":"s","type":"t"})", "'id' must be a string"},
      {R"({"specversion":"1.0","id":"1","source":"s","type":"t","subject":""})", "'subject' is empty"},
      {R"({"specversion":"1.0","id":"1","source":"s","type":"t","time":"yesterday"})", "RFC 3339"},
      {R"({"specversion":"1.0","id":"1","source":"s","type":"t","time":"2018-04-05"})", "RFC 3339"},
      {R"({"specversion":"1.0","id":"1","source":"s","type":"t","Bad":"x"})", "not a valid attribute name"},
      {R"({"specversion":"1.0","id":"1","source":"s","type":"t","ext":1.5})", "non-integral number"},
      {R"({"specversion":"1.0","id":"1","source":"s","type":"t","ext":{}})", "must be a string, an integer or a boolean"},
      {R"({"specversion":"1.0","id":"1","source":"s","type":"t","data":1,"data_base64":"AA=="})", "both 'data' and 'data_base64'"},
      {R"({"specversion":"1.0","id":"1","source":"s","type":"t","data_base64":"%%%"})", "not base64"},
      {R"([1])", "must be a JSON object"},
  };
  for (const auto& [body, want] : cases) {
    auto e = ce::parseStructured(body);
    ASSERT_FALSE(e.isOk()) << body;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << body;
    EXPECT_TRUE(contains(e.status().message(), want)) << body << " -> " << e.status().message();
  }
}

TEST(CloudEventsCodec, DataBase64RoundTripsBinaryData) {
  const std::string raw("\x00\xff\x10 binary", 10);
  auto e = ce::parseStructured(R"({"specversion":"1.0","id":"1","source":"s","type":"t",)"
                               R"("datacontenttype":"application/octet-stream","data_base64":"AP8QIGJpbmFyeQ=="})");
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_EQ(e->dataEncoding, ce::DataEncoding::kBase64);
  EXPECT_EQ(e->data.str(), raw);
  auto text = ce::renderStructured(*e);
  ASSERT_TRUE(text.isOk());
  EXPECT_TRUE(contains(*text, R"("data_base64":"AP8QIGJpbmFyeQ==")")) << *text;
  // Bytes from elsewhere without a JSON form choose data_base64 themselves.
  ce::Event fresh = *e;
  fresh.dataEncoding = ce::DataEncoding::kNone;
  EXPECT_EQ(*ce::renderStructured(fresh), *text);
}

TEST(CloudEventsCodec, NonJsonDataTravelsAsStringOrBase64) {
  // text/plain data in `data` is the string's text, not its JSON.
  auto e = ce::parseStructured(
      R"({"specversion":"1.0","id":"1","source":"s","type":"t","datacontenttype":"text/plain","data":"hello \"you\""})");
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_EQ(e->dataEncoding, ce::DataEncoding::kString);
  EXPECT_EQ(e->data.str(), "hello \"you\"");
  EXPECT_EQ(*ce::parseStructured(*ce::renderStructured(*e)), *e);
  // Under a JSON type (or none), a string data is JSON: its text keeps the quotes.
  auto j = ce::parseStructured(R"({"specversion":"1.0","id":"1","source":"s","type":"t","data":"hello"})");
  ASSERT_TRUE(j.isOk());
  EXPECT_EQ(j->data.str(), "\"hello\"");
  // The choice for bytes from elsewhere.
  EXPECT_EQ(ce::dataEncodingFor("", Bytes(std::string("{\"a\":1}"))), ce::DataEncoding::kJson);
  EXPECT_EQ(ce::dataEncodingFor("", Bytes(std::string("plain text"))), ce::DataEncoding::kBase64);
  EXPECT_EQ(ce::dataEncodingFor("text/plain; charset=utf-8", Bytes(std::string("plain"))), ce::DataEncoding::kString);
  EXPECT_EQ(ce::dataEncodingFor("text/plain", Bytes(std::string("\xff\xfe"))), ce::DataEncoding::kBase64);
  EXPECT_EQ(ce::dataEncodingFor("application/vnd.x+json", Bytes(std::string("[1]"))), ce::DataEncoding::kJson);
  EXPECT_EQ(ce::dataEncodingFor("", Bytes()), ce::DataEncoding::kNone);
  // An event whose data claims JSON but is not is refused when written.
  ce::Event bad;
  bad.id = "1";
  bad.source = "s";
  bad.type = "t";
  bad.data = Bytes(std::string("not json"));
  bad.dataEncoding = ce::DataEncoding::kJson;
  auto r = ce::renderStructured(bad);
  ASSERT_FALSE(r.isOk());
  EXPECT_TRUE(contains(r.status().message(), "not JSON")) << r.status().message();
}

TEST(CloudEventsCodec, ContentTypes) {
  EXPECT_TRUE(ce::isJsonContentType(""));
  EXPECT_TRUE(ce::isJsonContentType("Application/JSON; charset=utf-8"));
  EXPECT_TRUE(ce::isJsonContentType("text/json"));
  EXPECT_TRUE(ce::isJsonContentType("application/cloudevents+json"));
  EXPECT_FALSE(ce::isJsonContentType("text/plain"));
  EXPECT_FALSE(ce::isJsonContentType("application/jsonx"));
  EXPECT_TRUE(ce::isStructuredContentType("application/cloudevents+json; charset=UTF-8"));
  EXPECT_FALSE(ce::isStructuredContentType("application/cloudevents-batch+json"));
  EXPECT_TRUE(ce::isStructuredContentType("application/cloudevents-batch+json", /*orBatch=*/true));
  EXPECT_TRUE(ce::isBatchContentType(" application/cloudevents-batch+json "));
  EXPECT_TRUE(ce::validAttributeName("comexampleothervalu"));
  EXPECT_FALSE(ce::validAttributeName("abcdefghijklmnopqrstu"));  // 21
  EXPECT_FALSE(ce::validAttributeName("a_b"));
  EXPECT_FALSE(ce::validAttributeName(""));
}

TEST(CloudEventsCodec, BatchOfN) {
  std::vector<ce::Event> events;
  for (int i = 0; i < 5; ++i) {
    ce::Event e;
    e.id = "id-" + std::to_string(i);
    e.source = "/batch";
    e.type = "t";
    if (i % 2 == 0) e.data = Bytes("{\"n\":" + std::to_string(i) + "}");
    if (i == 3) {
      e.datacontenttype = "application/octet-stream";
      e.data = Bytes(std::string("\x01\x02", 2));
    }
    e.extensions["seq"] = {std::to_string(i), ce::Extension::Kind::kInteger};
    events.push_back(e);
  }
  auto text = ce::renderBatch(events);
  ASSERT_TRUE(text.isOk()) << text.status().toString();
  auto back = ce::parseBatch(*text);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  ASSERT_EQ(back->size(), 5u);
  for (int i = 0; i < 5; ++i) {
    const ce::Event& b = (*back)[static_cast<std::size_t>(i)];
    EXPECT_EQ(b.id, "id-" + std::to_string(i));
    EXPECT_EQ(b.data, events[static_cast<std::size_t>(i)].data) << i;
    EXPECT_EQ(b.extensions.at("seq").value, std::to_string(i));
  }
  EXPECT_EQ((*back)[3].dataEncoding, ce::DataEncoding::kBase64);
  EXPECT_EQ(*ce::renderBatch(*back), *text);
  // Empty batch; not an array; one bad event named by its index; too many events.
  EXPECT_TRUE(ce::parseBatch("[]")->empty());
  EXPECT_EQ(*ce::renderBatch({}), "[]");
  auto obj = ce::parseBatch(R"({"specversion":"1.0"})");
  ASSERT_FALSE(obj.isOk());
  EXPECT_TRUE(contains(obj.status().message(), "must be a JSON array")) << obj.status().message();
  auto second = ce::parseBatch(R"([{"specversion":"1.0","id":"1","source":"s","type":"t"},{"specversion":"1.0","id":"2","source":"s"}])");
  ASSERT_FALSE(second.isOk());
  EXPECT_TRUE(contains(second.status().message(), "event 1: required attribute 'type'")) << second.status().message();
  ce::ParseOptions few;
  few.maxBatchEvents = 1;
  auto many = ce::parseBatch(*text, few);
  ASSERT_FALSE(many.isOk());
  EXPECT_TRUE(contains(many.status().message(), "holds 5 events, more than the 1 allowed")) << many.status().message();
}

TEST(CloudEventsCodec, ExtensionsKeepTheirJsonTypes) {
  auto e = ce::parseStructured(
      R"({"specversion":"1.0","id":"1","source":"s","type":"t","b":true,"n":-3,"big":18446744073709551615,"s":"x","u":"http://a/b"})");
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_EQ(e->extensions.at("b").kind, ce::Extension::Kind::kBoolean);
  EXPECT_EQ(e->extensions.at("n").value, "-3");
  EXPECT_EQ(e->extensions.at("big").value, "18446744073709551615");
  EXPECT_EQ(*ce::parseStructured(*ce::renderStructured(*e)), *e);
  // An extension may not take a core attribute's name.
  ce::Event clash = *e;
  clash.extensions["id"] = {"x", ce::Extension::Kind::kString};
  EXPECT_FALSE(ce::validate(clash).isOk());
}

TEST(CloudEventsCodec, BadInputFailsWithBoundedMessages) {
  // Malformed JSON.
  auto m = ce::parseStructured(R"({"specversion":"1.0", "id": )");
  ASSERT_FALSE(m.isOk());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(m.status().message(), "malformed JSON")) << m.status().message();
  // Deep nesting inside data, beyond the record limit (128).
  std::string deep = R"({"specversion":"1.0","id":"1","source":"s","type":"t","data":)" + std::string(200, '[') +
                     std::string(200, ']') + "}";
  auto d = ce::parseStructured(deep);
  ASSERT_FALSE(d.isOk());
  EXPECT_TRUE(contains(d.status().message(), "nesting deeper")) << d.status().message();
  auto db = ce::parseBatch(std::string(100000, '['));
  ASSERT_FALSE(db.isOk());
  // Larger than the caller's size limit.
  ce::ParseOptions small;
  small.limits = {64, 1024};
  std::string huge = R"({"specversion":"1.0","id":"1","source":"s","type":"t","data":")" + std::string(4096, 'x') + "\"}";
  auto h = ce::parseStructured(huge, small);
  ASSERT_FALSE(h.isOk());
  EXPECT_TRUE(contains(h.status().message(), "longer than")) << h.status().message();
  EXPECT_LT(h.status().message().size(), 200u);  // the body is not echoed
  EXPECT_TRUE(ce::parseStructured(huge).isOk());
  // A long bad member name is not echoed whole.
  auto name = ce::parseStructured(R"({"specversion":"1.0","id":"1","source":"s","type":"t",")" + std::string(5000, 'X') + R"(":1})");
  ASSERT_FALSE(name.isOk());
  EXPECT_LT(name.status().message().size(), 200u);
  // Empty and NUL.
  EXPECT_FALSE(ce::parseStructured("").isOk());
  EXPECT_FALSE(ce::parseStructured(std::string("{}\0", 3)).isOk());
}

TEST(CloudEventsCodec, BinaryModeHeaders) {
  auto e = ce::parseStructured(kSpecExample);
  ASSERT_TRUE(e.isOk());
  Headers h;
  h.add("keep", std::string_view("me"));
  h.add("ce_stale", std::string_view("gone"));
  ASSERT_TRUE(ce::toHeaders(*e, h).isOk());
  EXPECT_EQ(headerOf(h, "keep"), "me");
  EXPECT_EQ(headerOf(h, "ce_stale"), "<none>");
  EXPECT_EQ(headerOf(h, "ce_specversion"), "1.0");
  EXPECT_EQ(headerOf(h, "ce_id"), "C234-1234-1234");
  EXPECT_EQ(headerOf(h, "ce_source"), "/mycontext");
  EXPECT_EQ(headerOf(h, "ce_type"), "com.example.someevent");
  EXPECT_EQ(headerOf(h, "ce_time"), "2018-04-05T17:31:00Z");
  EXPECT_EQ(headerOf(h, "ce_comexampleothervalue"), "5");
  EXPECT_EQ(headerOf(h, "content-type"), "application/json");
  EXPECT_EQ(headerOf(h, "ce_datacontenttype"), "<none>");
  auto back = ce::fromHeaders(h, e->data);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->id, e->id);
  EXPECT_EQ(back->datacontenttype, "application/json");
  EXPECT_EQ(back->extensions.at("comexampleothervalue").value, "5");  // headers hold text
  EXPECT_EQ(back->data, e->data);
  // Required headers checked, names validated; an invalid event leaves the headers alone.
  Headers missing;
  missing.add("ce_specversion", std::string_view("1.0"));
  missing.add("ce_id", std::string_view("1"));
  missing.add("ce_source", std::string_view("s"));
  auto m = ce::fromHeaders(missing, Bytes());
  ASSERT_FALSE(m.isOk());
  EXPECT_TRUE(contains(m.status().message(), "'type'")) << m.status().message();
  EXPECT_TRUE(contains(ce::fromHeaders({}, Bytes()).status().message(), "'ce_specversion' is missing"));
  Headers badName = missing;
  badName.add("ce_Type", std::string_view("t"));
  EXPECT_TRUE(contains(ce::fromHeaders(badName, Bytes()).status().message(), "does not name a valid attribute"));
  ce::Event invalidEvent;
  Headers untouched = missing;
  EXPECT_FALSE(ce::toHeaders(invalidEvent, untouched).isOk());
  EXPECT_EQ(untouched, missing);
}

TEST(CloudEventsCodec, DerivedIdsAndTimes) {
  EXPECT_EQ(ce::derivedId({"a", "b"}), ce::derivedId({"a", "b"}));
  EXPECT_NE(ce::derivedId({"ab", "c"}), ce::derivedId({"a", "bc"}));
  EXPECT_EQ(ce::derivedId({}).size(), 32u);
  EXPECT_EQ(ce::derivedId({"x"}), "529a64dc8ff592d47030d368c465d921");  // fixed across versions
  EXPECT_EQ(ce::rfc3339(1'700'000'000'123), "2023-11-14T22:13:20.123Z");
}

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
                      {"type", "reading.${value:kind}"},
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
  auto v = transform("CloudEvent", {{"type", "${value:kind}"}});
  Record text = record("t", std::string("not json"));
  auto nj = v->apply(text);
  ASSERT_FALSE(nj.isOk());
  EXPECT_TRUE(contains(nj.status().message(), "not JSON")) << nj.status().message();
}

TEST(CloudEventTransform, ConfigIsChecked) {
  auto t = create<Transform>("CloudEvent");
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->configure({{"id", "${nope}"}}).isOk());
  EXPECT_FALSE(t->configure({{"id", "${topic"}}).isOk());
  EXPECT_FALSE(t->configure({{"type", "${value:a[}"}}).isOk());
  EXPECT_FALSE(t->configure({{"type", ""}}).isOk());
  EXPECT_FALSE(t->configure({{"extensions", "Bad:x"}}).isOk());
  EXPECT_FALSE(t->configure({{"extensions", "id:x"}}).isOk());
  EXPECT_FALSE(t->configure({{"mode", "both"}}).isOk());
  EXPECT_FALSE(t->configure({{"datacontenttype", "application/cloudevents+json"}}).isOk());
  EXPECT_TRUE(t->configure({{"type", "a.${topic}"}, {"extensions", "k:${key}"}}).isOk());
}

}  // namespace
}  // namespace ferry::transforms
