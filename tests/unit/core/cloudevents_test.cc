// CloudEvents 1.0 codec (src/core/cloudevents.h): structured, batch, binary-mode headers, the HTTP
// binding's header value encoding. The converter and the transform on it:
// tests/unit/transforms/cloudevents_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "cloudevents_fixtures.h"
#include "core/cloudevents.h"

namespace ferry::core {
namespace {

namespace ce = cloudevents;

using namespace cloudevents_testing;

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

TEST(CloudEventsCodec, TimesAreCheckedAsRfc3339) {
  auto withTime = [](const std::string& t) {
    ce::Event e;
    e.id = "1";
    e.source = "s";
    e.type = "t";
    e.time = t;
    return ce::validate(e);
  };
  for (const char* good : {"2018-04-05T17:31:00Z", "2018-04-05t17:31:00z", "2024-02-29T23:59:60.123456+05:30",
                           "1999-12-31T00:00:00-00:00"})
    EXPECT_TRUE(withTime(good).isOk()) << good;
  for (const char* bad : {"2018-04-05", "2018-04-05 17:31:00Z", "2018-04-05T17:31Z", "2018-04-05T17:31:00",
                          "2023-02-29T00:00:00Z", "2018-13-05T17:31:00Z", "2018-04-05T24:00:00Z",
                          "2018-04-05T17:31:00.Z", "2018-04-05T17:31:00+0530", "2018-04-05T17:31:00+24:00"})
    EXPECT_FALSE(withTime(bad).isOk()) << bad;
  EXPECT_EQ(ce::rfc3339(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(ce::rfc3339(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_TRUE(withTime(ce::rfc3339(1'700'000'000'123)).isOk());
}

TEST(CloudEventsCodec, HttpHeaderValuesArePercentEncoded) {
  EXPECT_EQ(ce::encodeHttpHeaderValue("/orders/7"), "/orders/7");
  EXPECT_EQ(ce::encodeHttpHeaderValue("a b\"c%d\xc3\xa9"), "a%20b%22c%25d%C3%A9");
  EXPECT_EQ(ce::decodeHttpHeaderValue("a%20b%22c%25d%C3%A9"), "a b\"c%d\xc3\xa9");
  EXPECT_EQ(ce::decodeHttpHeaderValue("100%"), "100%");      // not a sequence: kept
  EXPECT_EQ(ce::decodeHttpHeaderValue("%zz+1"), "%zz+1");    // '+' is not a space here
  const std::string all = [] {
    std::string s;
    for (int c = 0; c < 256; ++c) s.push_back(static_cast<char>(c));
    return s;
  }();
  const std::string wire = ce::encodeHttpHeaderValue(all);
  for (char c : wire) EXPECT_TRUE(c > 0x20 && c < 0x7f && c != '"') << static_cast<int>(c);
  EXPECT_EQ(ce::decodeHttpHeaderValue(wire), all);
}

}  // namespace
}  // namespace ferry::core
