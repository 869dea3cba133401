#include "core/record_template.h"

#include <gtest/gtest.h>

namespace ferry::core {
namespace {

Record sample() {
  Record r;
  r.topic = "orders";
  r.key = Bytes::copyOf("k1");
  r.value = Bytes::copyOf(R"({"id":7,"customer":{"name":"Ann","tags":["a","b"]},"ok":true,"none":null})");
  r.headers.add("tenant", "acme");
  r.queue = 3;
  r.offset = 42;
  r.timestampMs = 1700000000000;
  return r;
}

std::string render(std::string_view text, const Record& r) {
  auto t = RecordTemplate::parse(text);
  EXPECT_TRUE(t.isOk()) << t.status().toString();
  if (!t.isOk()) return "<parse error>";
  auto out = t->render(r);
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  return out.isOk() ? *out : "<render error>";
}

TEST(RecordTemplateTest, FillsEveryPlaceholder) {
  const Record r = sample();
  EXPECT_EQ(render("${topic}:${key}", r), "orders:k1");
  EXPECT_EQ(render("q${queue}/o${offset}/t${timestamp}", r), "q3/o42/t1700000000000");
  EXPECT_EQ(render("${header:tenant}-x", r), "acme-x");
  EXPECT_EQ(render("${value:id}", r), "7");
  EXPECT_EQ(render("${value:$.customer.name}", r), "Ann");
  EXPECT_EQ(render("${value:customer.tags[1]}", r), "b");
  EXPECT_EQ(render("${value:customer.tags}", r), R"(["a","b"])");
  EXPECT_EQ(render("${value:ok}", r), "true");
  EXPECT_EQ(render("plain text", r), "plain text");
  EXPECT_EQ(render("$${topic} is ${topic}", r), "${topic} is orders");
  EXPECT_EQ(render("${value}", r).substr(0, 7), R"({"id":7)");
}

TEST(RecordTemplateTest, TellsWhatItReads) {
  auto constant = RecordTemplate::parse("fixed");
  ASSERT_TRUE(constant.isOk());
  EXPECT_TRUE(constant->constant());
  EXPECT_FALSE(constant->readsValue());
  auto v = RecordTemplate::parse("a-${value:x}");
  ASSERT_TRUE(v.isOk());
  EXPECT_FALSE(v->constant());
  EXPECT_TRUE(v->readsValue());
}

TEST(RecordTemplateTest, MissingPartsFailNamingThem) {
  Record r = sample();
  r.key = Bytes::null();
  for (const auto& [text, expect] : std::vector<std::pair<std::string, std::string>>{
           {"${key}", "no key"},
           {"${header:nope}", "no header 'nope'"},
           {"${value:customer.age}", "no field 'customer.age'"},
           {"${value:none}", "no field 'none'"},
           {"${value:customer.tags[9]}", "no field"}}) {
    auto t = RecordTemplate::parse(text);
    ASSERT_TRUE(t.isOk()) << text;
    auto out = t->render(r);
    ASSERT_FALSE(out.isOk()) << text;
    EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find(expect), std::string::npos) << out.status().message();
  }
  r.value = Bytes::copyOf("not json {");
  auto t = RecordTemplate::parse("${value:a}");
  ASSERT_TRUE(t.isOk());
  EXPECT_FALSE(t->render(r).isOk());
  // With missingAsEmpty, the same render as "".
  auto lenient = RecordTemplate::parse("[${key}|${header:nope}|${value:a}]", {.missingAsEmpty = true});
  ASSERT_TRUE(lenient.isOk());
  auto out = lenient->render(r);
  ASSERT_TRUE(out.isOk());
  EXPECT_EQ(*out, "[||]");
}

TEST(RecordTemplateTest, BadTemplatesAreRefused) {
  for (const char* bad : {"${topic", "${nope}", "${header:}", "${value:}", "${value:a..b}", "${value:a[x]}",
                          "${value:a[1}", "${value:a.}"}) {
    auto t = RecordTemplate::parse(bad);
    EXPECT_FALSE(t.isOk()) << bad;
    if (!t.isOk()) {
      EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(RecordTemplateTest, RenderToAppendsNothingOnError) {
  auto t = RecordTemplate::parse("x${header:nope}");
  ASSERT_TRUE(t.isOk());
  std::string out = "keep";
  EXPECT_FALSE(t->renderTo(sample(), out).isOk());
  EXPECT_EQ(out, "keep");
}

}  // namespace
}  // namespace ferry::core
