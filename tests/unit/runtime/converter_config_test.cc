// key/value/header converters: worker keys, connector keys overriding them, what validation
// reports, and how a header converter is applied to a record's headers.
#include <gtest/gtest.h>

#include "runtime/connector_config.h"
#include "runtime/tasks.h"
#include "runtime/worker_config.h"

namespace ferry::runtime {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class ConverterConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(registerBuiltins(registry_).isOk()); }

  // The record-side text `text` of a header, as `c` writes it to the backbone.
  static std::string toBackbone(Converter& c, const std::string& text) {
    auto out = c.fromRecord("t", Bytes(text));
    EXPECT_TRUE(out.isOk()) << out.status().toString();
    return out.isOk() ? out->str() : std::string();
  }

  PluginRegistry registry_;
};

TEST(WorkerConverterConfig, HeaderConverterDefaultsToSimpleHeaderConverter) {
  auto c = parseWorkerConfig({});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->headerConverter, "SimpleHeaderConverter");
  EXPECT_TRUE(c->headerConverterConfig.empty());
}

TEST(WorkerConverterConfig, HeaderConverterAndItsKeysAreParsed) {
  auto c = parseWorkerConfig({{"header.converter", "org.apache.kafka.connect.json.JsonConverter"},
                              {"header.converter.schemas.enable", "false"},
                              {"value.converter.schemas.enable", "true"}});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->headerConverter, "org.apache.kafka.connect.json.JsonConverter");
  EXPECT_EQ(c->headerConverterConfig, (StringMap{{"schemas.enable", "false"}}));
  EXPECT_EQ(c->valueConverterConfig, (StringMap{{"schemas.enable", "true"}}));
  // A misspelt key is still refused (header.converters is no prefix of ours).
  auto typo = parseWorkerConfig({{"header.converters", "JsonConverter"}});
  ASSERT_FALSE(typo.isOk());
  EXPECT_TRUE(contains(typo.status().message(), "header.converters")) << typo.status().message();
}

TEST_F(ConverterConfigTest, WorkerDefaultsApplyWhenTheConnectorSetsNone) {
  WorkerConfig w;
  w.headerConverter = "JsonConverter";
  w.headerConverterConfig = {{"schemas.enable", "false"}};
  w.valueConverter = "IntegerConverter";
  auto c = makeTaskConverters(registry_, w, {{"connector.class", "X"}});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(toBackbone(*c->header, R"({"a":1})"), R"({"a":1})");  // the worker's schemas.enable=false
  EXPECT_EQ(toBackbone(*c->value, "1"), std::string("\0\0\0\x01", 4));
  EXPECT_EQ(toBackbone(*c->key, "raw"), "raw");  // ByteArrayConverter
  // The header converter is told its role: its errors say "header".
  auto bad = c->header->fromRecord("t", Bytes(std::string("not json")));
  ASSERT_FALSE(bad.isOk());
  EXPECT_TRUE(contains(bad.status().message(), "the header for topic 't'")) << bad.status().message();
}

TEST_F(ConverterConfigTest, ConnectorOverridesTheWorkerWithItsOwnKeysOnly) {
  WorkerConfig w;
  w.headerConverter = "JsonConverter";
  w.headerConverterConfig = {{"schemas.enable", "false"}};
  // The connector names the same class without keys: the worker's keys do not leak in, so
  // schemas.enable is JsonConverter's default (true) and the envelope is written.
  auto same = makeTaskConverters(registry_, w, {{"header.converter", "JsonConverter"}});
  ASSERT_TRUE(same.isOk()) << same.status().toString();
  EXPECT_EQ(toBackbone(*same->header, "1"), R"({"schema":null,"payload":1})");
  auto other = makeTaskConverters(
      registry_, w,
      {{"header.converter", "org.apache.kafka.connect.converters.ShortConverter"},
       {"key.converter", "JsonConverter"}, {"key.converter.schemas.enable", "false"}});
  ASSERT_TRUE(other.isOk()) << other.status().toString();
  EXPECT_EQ(toBackbone(*other->header, "-2"), std::string("\xff\xfe", 2));
  EXPECT_EQ(toBackbone(*other->key, "[1]"), "[1]");
}

TEST_F(ConverterConfigTest, UnknownClassFailsNamingTheSide) {
  auto connector = makeTaskConverters(registry_, WorkerConfig{}, {{"header.converter", "NoSuchConverter"}});
  ASSERT_FALSE(connector.isOk());
  EXPECT_TRUE(contains(connector.status().message(), "header.converter")) << connector.status().message();
  EXPECT_TRUE(contains(connector.status().message(), "NoSuchConverter")) << connector.status().message();
  WorkerConfig w;
  w.headerConverter = "NoSuchConverter";
  auto worker = makeTaskConverters(registry_, w, {});
  ASSERT_FALSE(worker.isOk());
  EXPECT_TRUE(contains(worker.status().message(), "header.converter")) << worker.status().message();
  // A plugin of another kind is not a converter.
  EXPECT_FALSE(makeTaskConverters(registry_, WorkerConfig{}, {{"header.converter", "Filter"}}).isOk());
}

TEST_F(ConverterConfigTest, BadConverterConfigFailsNamingTheSide) {
  auto c = makeTaskConverters(registry_, WorkerConfig{},
                              {{"header.converter", "JsonConverter"}, {"header.converter.schemas.enable", "maybe"}});
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(c.status().message(), "header.converter")) << c.status().message();
  EXPECT_TRUE(contains(c.status().message(), "schemas.enable")) << c.status().message();
  WorkerConfig w;
  w.headerConverter = "StringConverter";
  w.headerConverterConfig = {{"encoding", "UTF-16"}};
  auto worker = makeTaskConverters(registry_, w, {});
  ASSERT_FALSE(worker.isOk());
  EXPECT_TRUE(contains(worker.status().message(), "header.converter")) << worker.status().message();
}

TEST_F(ConverterConfigTest, ValidationReportsHeaderConverterClassAndKeys) {
  const StringMap base{{"connector.class", "FileStreamSink"}, {"file", "/tmp/x"}, {"topics", "t"}};
  auto withKeys = [&](StringMap extra) {
    StringMap m = base;
    m.insert(extra.begin(), extra.end());
    return validateConnectorConfig(registry_, m);
  };
  auto good = withKeys({{"header.converter", "org.apache.kafka.connect.storage.SimpleHeaderConverter"}});
  ASSERT_TRUE(good.isOk());
  EXPECT_TRUE(good->validation.ok()) << good->validation.summary();
  auto json = withKeys({{"header.converter", "JsonConverter"}, {"header.converter.schemas.enable", "false"}});
  ASSERT_TRUE(json.isOk());
  EXPECT_TRUE(json->validation.ok()) << json->validation.summary();

  auto badClass = withKeys({{"header.converter", "NoSuchConverter"}});
  ASSERT_TRUE(badClass.isOk());
  EXPECT_EQ(badClass->validation.errors.count("header.converter"), 1u) << badClass->validation.summary();

  auto badValue = withKeys({{"header.converter", "JsonConverter"}, {"header.converter.schemas.enable", "maybe"}});
  ASSERT_TRUE(badValue.isOk());
  EXPECT_EQ(badValue->validation.errors.count("header.converter.schemas.enable"), 1u)
      << badValue->validation.summary();

  auto unknownKey = withKeys({{"header.converter", "IntegerConverter"}, {"header.converter.width", "4"}});
  ASSERT_TRUE(unknownKey.isOk());
  ASSERT_EQ(unknownKey->validation.unknownKeys.size(), 1u) << unknownKey->validation.summary();
  EXPECT_EQ(unknownKey->validation.unknownKeys[0], "header.converter.width");

  // The key is declared, so the validate endpoint lists it.
  bool declared = false;
  for (const auto& k : good->keys) declared = declared || k.name == "header.converter";
  EXPECT_TRUE(declared);
}

TEST_F(ConverterConfigTest, HeadersAreConvertedEachWayKeepingNamesOrderAndNulls) {
  auto conv = registry_.createConverter("IntegerConverter");
  ASSERT_TRUE(conv.isOk());
  ASSERT_TRUE((*conv)->configure({{"converter.type", "header"}}, false).isOk());
  Headers h;
  h.add("a", std::string_view("1"));
  h.add("nil", Bytes::null());
  h.add("a", std::string_view("-1"));
  ASSERT_TRUE(convertHeaders(**conv, HeaderDirection::kToBackbone, "t", h).isOk());
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h.items()[0].key, "a");
  EXPECT_EQ(h.items()[0].value.str(), std::string("\0\0\0\x01", 4));
  EXPECT_EQ(h.items()[1].key, "nil");
  EXPECT_TRUE(h.items()[1].value.isNull());
  EXPECT_EQ(h.items()[2].value.str(), std::string("\xff\xff\xff\xff", 4));
  ASSERT_TRUE(convertHeaders(**conv, HeaderDirection::kFromBackbone, "t", h).isOk());
  EXPECT_EQ(h.items()[0].value.str(), "1");
  EXPECT_TRUE(h.items()[1].value.isNull());
  EXPECT_EQ(h.items()[2].value.str(), "-1");
}

TEST_F(ConverterConfigTest, HeaderErrorNamesTheHeaderAndLeavesHeadersUnchanged) {
  auto conv = registry_.createConverter("IntegerConverter");
  ASSERT_TRUE(conv.isOk());
  ASSERT_TRUE((*conv)->configure({{"converter.type", "header"}}, false).isOk());
  Headers h;
  h.add("ok", std::string_view("7"));
  h.add("unit", std::string_view("celsius"));
  const Headers before = h;
  Status s = convertHeaders(**conv, HeaderDirection::kToBackbone, "sensors", h);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(s.message(), "header 'unit'")) << s.message();
  EXPECT_TRUE(contains(s.message(), "IntegerConverter: the header for topic 'sensors'")) << s.message();
  EXPECT_EQ(h, before);
  // From the backbone: a wrong width names the header too.
  Headers wire;
  wire.add("n", std::string_view("abc"));
  Status w = convertHeaders(**conv, HeaderDirection::kFromBackbone, "sensors", wire);
  ASSERT_FALSE(w.isOk());
  EXPECT_TRUE(contains(w.message(), "header 'n'")) << w.message();
  EXPECT_TRUE(contains(w.message(), "has 3 bytes")) << w.message();
}

TEST_F(ConverterConfigTest, IdentityHeaderConverterKeepsTheSameBuffers) {
  auto conv = registry_.createConverter("SimpleHeaderConverter");
  ASSERT_TRUE(conv.isOk());
  ASSERT_TRUE((*conv)->configure({{"converter.type", "header"}}, false).isOk());
  Headers h;
  h.add("a", std::string_view("x"));
  h.add("b", std::string_view("y"));
  const auto* firstBuffer = h.items()[0].value.buffer().get();
  for (auto dir : {HeaderDirection::kToBackbone, HeaderDirection::kFromBackbone})
    ASSERT_TRUE(convertHeaders(**conv, dir, "t", h).isOk());
  EXPECT_EQ(h.items()[0].value.buffer().get(), firstBuffer);
  EXPECT_EQ(h.items()[1].value.str(), "y");
}

}  // namespace
}  // namespace ferry::runtime
