// The pure parts of the HTTP connectors (connectors/http): the webhook body parser, JSON paths,
// Retry-After, URL cleanup and answer descriptions. The connectors against real servers are
// tested in tests/http.
#include <gtest/gtest.h>

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
  EXPECT_EQ(bodyKindOf("application/cloudevents+json"), BodyKind::kJson);
  EXPECT_EQ(bodyKindOf("application/x-ndjson"), BodyKind::kNdjson);
  EXPECT_EQ(bodyKindOf("application/jsonl"), BodyKind::kNdjson);
  EXPECT_EQ(bodyKindOf("text/plain"), BodyKind::kRaw);
  EXPECT_EQ(bodyKindOf(""), BodyKind::kRaw);
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
