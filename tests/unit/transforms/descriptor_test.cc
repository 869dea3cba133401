// The transforms' plugin descriptor: ABI fields, every class present with a unique name, every
// alias resolves to its entry, every entry creates its kind with documented keys.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "test_util.h"

namespace ferry::transforms {
namespace {

using namespace testing;

TEST(TransformDescriptor, ListsEveryClassOnce) {
  const PluginDescriptor& d = builtinPlugins();
  EXPECT_EQ(d.abiVersion, kAbiVersion);
  EXPECT_EQ(d.descriptorSize, sizeof(PluginDescriptor));
  EXPECT_EQ(d.entrySize, sizeof(PluginEntry));
  std::multiset<std::string> classes;
  for (std::size_t i = 0; i < d.entryCount; ++i) classes.insert(d.entries[i].className);
  const std::set<std::string> expected{
      "HoistField$Value", "HoistField$Key", "InsertField$Value", "InsertField$Key",
      "ReplaceField$Value", "ReplaceField$Key", "MaskField$Value", "MaskField$Key",
      "ExtractField$Value", "ExtractField$Key", "ValueToKey", "RegexRouter", "TimestampRouter",
      "InsertHeader", "DropHeaders", "Filter", "TopicNameMatches", "HasHeaderKey",
      "RecordIsTombstone", "ByteArrayConverter", "StringConverter", "JsonConverter", "Rule",
      "Flatten$Value", "Flatten$Key", "Cast$Value", "Cast$Key", "HeaderFrom$Value", "HeaderFrom$Key",
      "DecodePayload$Value", "DecodePayload$Key", "TopicLevelRouter", "Sample",
      "SimpleHeaderConverter", "ShortConverter", "IntegerConverter", "LongConverter",
      "FloatConverter", "DoubleConverter", "BooleanConverter",
      "TimestampConverter$Value", "TimestampConverter$Key", "SetSchemaMetadata$Value",
      "SetSchemaMetadata$Key", "JsonPathExtract$Value", "JsonPathExtract$Key", "CloudEvent",
      "CloudEventsConverter"};
  EXPECT_EQ(std::set<std::string>(classes.begin(), classes.end()), expected);
  EXPECT_EQ(classes.size(), expected.size());
}

TEST(TransformDescriptor, AliasesAreUniqueAndResolve) {
  const PluginDescriptor& d = builtinPlugins();
  std::set<std::string> names;
  for (std::size_t i = 0; i < d.entryCount; ++i) {
    const PluginEntry& e = d.entries[i];
    EXPECT_TRUE(names.insert(e.className).second) << e.className;
    int aliases = 0;
    for (const char* const* a = e.aliases; a && *a; ++a, ++aliases) {
      EXPECT_TRUE(names.insert(*a).second) << *a;
      EXPECT_EQ(findEntry(*a), &e) << *a;
      // The Kafka name ends with the class name.
      const std::string alias = *a;
      EXPECT_TRUE(alias.size() > std::string(e.className).size() &&
                  alias.compare(alias.size() - std::string(e.className).size(), std::string::npos,
                                e.className) == 0)
          << alias;
    }
    EXPECT_EQ(aliases, 1) << e.className;
  }
}

TEST(TransformDescriptor, EveryEntryCreatesItsKindWithDocumentedKeys) {
  const PluginDescriptor& d = builtinPlugins();
  for (std::size_t i = 0; i < d.entryCount; ++i) {
    const PluginEntry& e = d.entries[i];
    SCOPED_TRACE(e.className);
    const ConfigDef* def = nullptr;
    Owned<Transform> t(nullptr, [](Transform*) {});
    Owned<Predicate> p(nullptr, [](Predicate*) {});
    Owned<Converter> c(nullptr, [](Converter*) {});
    switch (e.kind) {
      case PluginKind::kTransform: t = create<Transform>(e.className); ASSERT_NE(t, nullptr); def = &t->configDef(); break;
      case PluginKind::kPredicate: p = create<Predicate>(e.className); ASSERT_NE(p, nullptr); def = &p->configDef(); break;
      case PluginKind::kConverter: c = create<Converter>(e.className); ASSERT_NE(c, nullptr); def = &c->configDef(); break;
      default: FAIL() << "unexpected kind";
    }
    for (const auto& k : def->keys()) EXPECT_FALSE(k.documentation.empty()) << k.name;
  }
}

}  // namespace
}  // namespace ferry::transforms
