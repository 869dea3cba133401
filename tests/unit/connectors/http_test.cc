// The pure parts of the HTTP connectors (connectors/http): the webhook body parser, JSON paths,
// Retry-After, URL cleanup and answer descriptions. The connectors against real servers are
// tested in tests/http.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "connectors/http/http_client.h"
#include "connectors/http/webhook_body.h"

namespace ferry::connectors::httpc {
namespace {

std::vector<std::string> values(const std::vector<WebhookEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.value);
  return out;
}

TEST(WebhookBody, KindFollowsContentType) {
  EXPECT_EQ(bodyKindOf("application/json"), BodyKind::kJson);
  EXPECT_EQ(bodyKindOf("Application/JSON; charset=utf-8"), BodyKind::kJson);
  EXPECT_EQ(bodyKindOf("application/cloudevents+json"), BodyKind::kCloudEvent);
  EXPECT_EQ(bodyKindOf("Application/CloudEvents-Batch+JSON; charset=utf-8"), BodyKind::kCloudEventsBatch);
  EXPECT_EQ(bodyKindOf("application/vnd.x+json"), BodyKind::kJson);
  EXPECT_EQ(bodyKindOf("application/x-ndjson"), BodyKind::kNdjson);
  EXPECT_EQ(bodyKindOf("application/jsonl"), BodyKind::kNdjson);
  EXPECT_EQ(bodyKindOf("text/plain"), BodyKind::kRaw);
  EXPECT_EQ(bodyKindOf(""), BodyKind::kRaw);
}

std::string headerOf(const WebhookEvent& e, const std::string& key) {
  const ferry::Header* h = e.headers.last(key);
  return h == nullptr ? std::string("<none>") : h->value.str();
}

TEST(WebhookBody, CloudEventsBecomeDataAndCeHeaders) {
  auto one = parseWebhookBody("application/cloudevents+json",
                              R"({"specversion":"1.0","id":"e1","source":"/s","type":"t","subject":"x",)"
                              R"("datacontenttype":"application/json","data":{"seq":1}})",
                              {});
  ASSERT_TRUE(one.isOk()) << one.status().toString();
  ASSERT_EQ(one->size(), 1u);
  const WebhookEvent& e = (*one)[0];
  EXPECT_EQ(e.value, R"({"seq":1})");
  EXPECT_EQ(headerOf(e, "ce_specversion"), "1.0");
  EXPECT_EQ(headerOf(e, "ce_id"), "e1");
  EXPECT_EQ(headerOf(e, "ce_source"), "/s");
  EXPECT_EQ(headerOf(e, "ce_type"), "t");
  EXPECT_EQ(headerOf(e, "ce_subject"), "x");
  EXPECT_EQ(headerOf(e, "content-type"), "application/json");
  // A batch: one event per element; data-less events have no value; keys from the event object.
  auto path = JsonPath::parse("$.subject");
  ASSERT_TRUE(path.isOk());
  BodyOptions options;
  options.keyPath = &*path;
  auto batch = parseWebhookBody("application/cloudevents-batch+json",
                                R"([{"specversion":"1.0","id":"a","source":"/s","type":"t","subject":"k1","data":"x"},)"
                                R"({"specversion":"1.0","id":"b","source":"/s","type":"t"}])",
                                options);
  ASSERT_TRUE(batch.isOk()) << batch.status().toString();
  ASSERT_EQ(batch->size(), 2u);
  EXPECT_EQ((*batch)[0].value, "\"x\"");
  EXPECT_EQ((*batch)[0].key, "k1");
  EXPECT_FALSE((*batch)[1].hasValue);
  EXPECT_EQ(headerOf((*batch)[1], "ce_id"), "b");
  EXPECT_EQ(headerOf((*batch)[1], "content-type"), "<none>");
  EXPECT_TRUE(parseWebhookBody("application/cloudevents-batch+json", "[]", {})->empty());
}

TEST(WebhookBody, BadCloudEventsFailTheWholeBodyNamingTheEvent) {
  const std::pair<const char*, const char*> cases[] = {
      {R"([{"specversion":"1.0","id":"a","source":"/s","type":"t"},{"specversion":"1.0","source":"/s","type":"t"}])",
       "event 1: required attribute 'id' is missing"},
      {R"([{"specversion":"0.3","id":"a","source":"/s","type":"t"}])", "event 0: attribute 'specversion'"},
      {R"({"specversion":"1.0"})", "must be a JSON array"},
      {R"([{"specversion":"1.0",)", "malformed JSON"},
  };
  for (const auto& [body, want] : cases) {
    auto r = parseWebhookBody("application/cloudevents-batch+json", body, {});
    ASSERT_FALSE(r.isOk()) << body;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << body << " -> " << r.status().message();
  }
  auto one = parseWebhookBody("application/cloudevents+json", R"({"specversion":"1.0","id":"a","source":"/s"})", {});
  ASSERT_FALSE(one.isOk());
  EXPECT_NE(one.status().message().find("'type'"), std::string::npos) << one.status().message();
}

TEST(WebhookBody, BinaryModeRequestsAreChecked) {
  std::map<std::string, std::string> h{{"ce-specversion", "1.0"}, {"ce-id", "e%201"}, {"ce-source", "/s"},
                                       {"ce-type", "t"}, {"ce-tenant", "acme"}, {"x-other", "1"}};
  EXPECT_TRUE(isBinaryCloudEvent(h, "application/json"));
  EXPECT_FALSE(isBinaryCloudEvent(h, "application/cloudevents+json"));  // structured wins
  EXPECT_FALSE(isBinaryCloudEvent({{"x-other", "1"}}, "application/json"));
  auto e = parseBinaryCloudEvent(h, "application/json", R"({"seq":5})", {});
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_EQ(e->value, R"({"seq":5})");
  EXPECT_EQ(headerOf(*e, "ce_id"), "e 1");  // percent-decoded
  EXPECT_EQ(headerOf(*e, "ce_tenant"), "acme");
  EXPECT_EQ(headerOf(*e, "content-type"), "application/json");
  EXPECT_EQ(headerOf(*e, "x-other"), "<none>");
  auto empty = parseBinaryCloudEvent(h, "", "", {});
  ASSERT_TRUE(empty.isOk());
  EXPECT_FALSE(empty->hasValue);
  for (const char* drop : {"ce-specversion", "ce-id", "ce-source", "ce-type"}) {
    auto missing = h;
    missing.erase(drop);
    auto r = parseBinaryCloudEvent(missing, "application/json", "{}", {});
    ASSERT_FALSE(r.isOk()) << drop;
    EXPECT_NE(r.status().message().find(std::string(drop).substr(3)), std::string::npos) << r.status().message();
  }
  auto wrong = h;
  wrong["ce-specversion"] = "0.3";
  EXPECT_FALSE(parseBinaryCloudEvent(wrong, "application/json", "{}", {}).isOk());
}

TEST(WebhookBody, OneJsonEventKeepsItsBytes) {
  auto events = parseWebhookBody("application/json", "  {\"a\": 1}\n", {});
  ASSERT_TRUE(events.isOk()) << events.status().toString();
  EXPECT_EQ(values(*events), std::vector<std::string>{"{\"a\": 1}"});
}

TEST(WebhookBody, ArrayIsOneEventPerElement) {
  auto events = parseWebhookBody("application/json", "[{\"a\": 1}, 2, \"x\", null]", {});
  ASSERT_TRUE(events.isOk());
  EXPECT_EQ(values(*events), (std::vector<std::string>{"{\"a\":1}", "2", "\"x\"", "null"}));
  auto empty = parseWebhookBody("application/json", "[]", {});
  ASSERT_TRUE(empty.isOk());
  EXPECT_TRUE(empty->empty());
}

TEST(WebhookBody, NdjsonSkipsBlankLinesAndNamesTheBadOne) {
  auto events = parseWebhookBody("application/x-ndjson", "{\"a\":1}\r\n\n  {\"a\":2}  \n", {});
  ASSERT_TRUE(events.isOk());
  EXPECT_EQ(values(*events), (std::vector<std::string>{"{\"a\":1}", "{\"a\":2}"}));
  auto bad = parseWebhookBody("application/x-ndjson", "{\"a\":1}\n\n{\"a\":\n", {});
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("line 3"), std::string::npos) << bad.status().message();
}

TEST(WebhookBody, MalformedOrEmptyJsonFailsAsAWhole) {
  EXPECT_FALSE(parseWebhookBody("application/json", "{\"a\":", {}).isOk());
  EXPECT_FALSE(parseWebhookBody("application/json", "   ", {}).isOk());
  EXPECT_FALSE(parseWebhookBody("application/json", "[1] [2]", {}).isOk());
  BodyOptions shallow;
  shallow.maxDepth = 3;
  EXPECT_FALSE(parseWebhookBody("application/json", "[[[[1]]]]", shallow).isOk());
  BodyOptions few;
  few.maxEvents = 2;
  EXPECT_FALSE(parseWebhookBody("application/json", "[1,2,3]", few).isOk());
  EXPECT_FALSE(parseWebhookBody("application/x-ndjson", "1\n2\n3\n", few).isOk());
}

TEST(WebhookBody, RawBodyIsOneEvent) {
  const std::string body("\x00\xff raw", 6);
  auto events = parseWebhookBody("application/octet-stream", body, {});
  ASSERT_TRUE(events.isOk());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].value, body);
}

TEST(WebhookBody, KeyFromJsonPath) {
  auto path = JsonPath::parse("$.user.id");
  ASSERT_TRUE(path.isOk());
  BodyOptions options;
  options.keyPath = &*path;
  auto events = parseWebhookBody("application/json", R"([{"user":{"id":"u1"}},{"user":{"id":7}},{"x":1}])", options);
  ASSERT_TRUE(events.isOk());
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].key, std::optional<std::string>("u1"));
  EXPECT_EQ((*events)[1].key, std::optional<std::string>("7"));
  EXPECT_FALSE((*events)[2].key.has_value());
}

// The Kafka protocol binding maps the `partitionkey` extension to the message key: without a key
// path a webhook CloudEvent's partitionkey is its record key (and stays an attribute); a key path
// wins, and keyFromPartitionKey=false (HttpSource with http.key.header) turns it off.
TEST(WebhookBody, CloudEventPartitionKeyIsTheKey) {
  const std::string batch =
      R"([{"specversion":"1.0","id":"a","source":"/s","type":"t","subject":"sub-a","partitionkey":"pk-1"},)"
      R"({"specversion":"1.0","id":"b","source":"/s","type":"t","partitionkey":42},)"
      R"({"specversion":"1.0","id":"c","source":"/s","type":"t"}])";
  auto events = parseWebhookBody("application/cloudevents-batch+json", batch, {});
  ASSERT_TRUE(events.isOk()) << events.status().toString();
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].key, std::optional<std::string>("pk-1"));
  EXPECT_EQ(headerOf((*events)[0], "ce_partitionkey"), "pk-1");
  EXPECT_EQ((*events)[1].key, std::optional<std::string>("42"));  // an integer extension: its text
  EXPECT_FALSE((*events)[2].key.has_value());
  auto one = parseWebhookBody("application/cloudevents+json",
                              R"({"specversion":"1.0","id":"a","source":"/s","type":"t","partitionkey":"pk-2"})", {});
  ASSERT_TRUE(one.isOk());
  EXPECT_EQ((*one)[0].key, std::optional<std::string>("pk-2"));

  auto path = JsonPath::parse("$.subject");
  ASSERT_TRUE(path.isOk());
  BodyOptions withPath;
  withPath.keyPath = &*path;
  auto byPath = parseWebhookBody("application/cloudevents-batch+json", batch, withPath);
  ASSERT_TRUE(byPath.isOk());
  EXPECT_EQ((*byPath)[0].key, std::optional<std::string>("sub-a"));
  EXPECT_FALSE((*byPath)[1].key.has_value());  // the path selects nothing: no key, not the partitionkey

  BodyOptions off;
  off.keyFromPartitionKey = false;
  auto none = parseWebhookBody("application/cloudevents-batch+json", batch, off);
  ASSERT_TRUE(none.isOk());
  EXPECT_FALSE((*none)[0].key.has_value());
  EXPECT_EQ(headerOf((*none)[0], "ce_partitionkey"), "pk-1");

  // Binary mode: the ce-partitionkey header.
  std::map<std::string, std::string> h{{"ce-specversion", "1.0"}, {"ce-id", "e1"}, {"ce-source", "/s"},
                                       {"ce-type", "t"}, {"ce-partitionkey", "pk%203"}};
  auto bin = parseBinaryCloudEvent(h, "application/json", R"({"seq":1})", {});
  ASSERT_TRUE(bin.isOk()) << bin.status().toString();
  EXPECT_EQ(bin->key, std::optional<std::string>("pk 3"));
  EXPECT_FALSE(parseBinaryCloudEvent(h, "application/json", R"({"seq":1})", off)->key.has_value());
  // Other bodies have no partitionkey to map.
  auto plain = parseWebhookBody("application/json", R"({"partitionkey":"x"})", {});
  ASSERT_TRUE(plain.isOk());
  EXPECT_FALSE((*plain)[0].key.has_value());
}

TEST(JsonPathTest, ParsesAndFinds) {
  const auto doc = nlohmann::json::parse(R"({"data":{"items":[{"id":1},{"id":2}]},"next":"c2"})");
  for (const char* text : {"$.data.items[1].id", "data.items.1.id", "data.items[1].id"}) {
    auto p = JsonPath::parse(text);
    ASSERT_TRUE(p.isOk()) << text;
    const nlohmann::json* v = p->find(doc);
    ASSERT_NE(v, nullptr) << text;
    EXPECT_EQ(*v, 2) << text;
  }
  auto root = JsonPath::parse("$");
  ASSERT_TRUE(root.isOk());
  EXPECT_TRUE(root->root());
  EXPECT_EQ(root->find(doc), &doc);
  EXPECT_EQ(JsonPath::parse("data.missing")->find(doc), nullptr);
  EXPECT_EQ(JsonPath::parse("data.items[5]")->find(doc), nullptr);
  EXPECT_FALSE(JsonPath::parse("a..b").isOk());
  EXPECT_FALSE(JsonPath::parse("a[1").isOk());
  EXPECT_FALSE(JsonPath::parse("a[x]").isOk());
}

TEST(RetryAfter, SecondsAndDates) {
  EXPECT_EQ(parseRetryAfter("120", 0), std::optional<std::int64_t>(120000));
  EXPECT_EQ(parseRetryAfter(" 0 ", 0), std::optional<std::int64_t>(0));
  // Sun, 06 Nov 1994 08:49:37 GMT = 784111777 s since the epoch (RFC 9110's example).
  EXPECT_EQ(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111777000 - 5000), std::optional<std::int64_t>(5000));
  EXPECT_EQ(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111777000 + 5000), std::optional<std::int64_t>(0));
  EXPECT_FALSE(parseRetryAfter("soon", 0).has_value());
  EXPECT_FALSE(parseRetryAfter("", 0).has_value());
}

TEST(UrlText, CleanAndEncode) {
  EXPECT_EQ(cleanUrl("http://h/a b/\"x\"?q=1&r=é"), "http://h/a%20b/%22x%22?q=1&r=%C3%A9");
  EXPECT_EQ(encodeComponent("a b/c&d=é"), "a%20b%2Fc%26d%3D%C3%A9");
  EXPECT_EQ(describeAnswer(400, "http://h/x", "bad\nthing"), "HTTP 400 from http://h/x: bad thing");
  const std::string big(2000, 'x');
  const std::string d = describeAnswer(500, "u", big);
  EXPECT_LT(d.size(), 600u);
  EXPECT_NE(d.find("(2000 bytes)"), std::string::npos);
}

}  // namespace
}  // namespace ferry::connectors::httpc
