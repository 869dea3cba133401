// The connectors' plugin descriptor: ABI fields, unique names, every alias resolves, every entry
// creates an object of its kind whose config definition documents every key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "ferry/transform.h"
#include "test_util.h"

namespace ferry::connectors {
namespace {

using namespace testing;

TEST(ConnectorDescriptor, HasTheAbiFieldsAndEveryClass) {
  const PluginDescriptor& d = builtinPlugins();
  EXPECT_EQ(d.abiVersion, kAbiVersion);
  EXPECT_EQ(d.descriptorSize, sizeof(PluginDescriptor));
  EXPECT_EQ(d.entrySize, sizeof(PluginEntry));
  std::set<std::string> classes;
  for (std::size_t i = 0; i < d.entryCount; ++i) classes.insert(d.entries[i].className);
  EXPECT_EQ(classes, (std::set<std::string>{"FileStreamSource", "FileStreamSink", "DatagenSource", "KafkaReplicator", "KafkaReplicatorSink",
                                            "LogSink", "BlackholeSink", "RocketMQSource",
                                            "RocketMQSink", "RocketMQReplicator",
                                            "RocketMQReplicatorSink", "MQTTSource", "MQTTSink", "KafkaSink", "KafkaSource",
                                            "MqttRocketMQBridge", "JdbcSink", "JdbcSource", "HttpSink", "HttpSource", "RedisSource", "RedisSink"}));
}

TEST(ConnectorDescriptor, NamesAndAliasesAreUniqueAndResolve) {
  const PluginDescriptor& d = builtinPlugins();
  std::set<std::string> names;
  for (std::size_t i = 0; i < d.entryCount; ++i) {
    const PluginEntry& e = d.entries[i];
    EXPECT_TRUE(names.insert(e.className).second) << e.className;
    for (const char* const* a = e.aliases; a && *a; ++a) {
      EXPECT_TRUE(names.insert(*a).second) << *a;
      EXPECT_EQ(findEntry(*a), &e) << *a;
    }
  }
  for (const char* alias : {"org.apache.kafka.connect.file.FileStreamSourceConnector", "file-source",
                            "org.apache.kafka.connect.file.FileStreamSinkConnector", "file-sink",
                            "datagen", "log", "stdout", "StdoutSink", "blackhole"})
    EXPECT_NE(findEntry(alias), nullptr) << alias;
}

TEST(ConnectorDescriptor, EveryEntryCreatesItsKindWithDocumentedKeys) {
  const PluginDescriptor& d = builtinPlugins();
  for (std::size_t i = 0; i < d.entryCount; ++i) {
    const PluginEntry& e = d.entries[i];
    SCOPED_TRACE(e.className);
    EXPECT_NE(std::string(e.summary), "");
    EXPECT_NE(std::string(e.version), "");
    const ConfigDef* def = nullptr;
    if (e.kind == PluginKind::kSourceConnector) {
      auto c = create<SourceConnector>(e.className);
      ASSERT_NE(c, nullptr);
      def = &c->configDef();
      EXPECT_NE(c->createTask(), nullptr);
    } else if (e.kind == PluginKind::kTransform) {
      auto t = create<Transform>(e.className);
      ASSERT_NE(t, nullptr);
      def = &t->configDef();
    } else {
      ASSERT_EQ(e.kind, PluginKind::kSinkConnector);
      auto c = create<SinkConnector>(e.className);
      ASSERT_NE(c, nullptr);
      def = &c->configDef();
      EXPECT_NE(c->createTask(), nullptr);
    }
    for (const auto& k : def->keys()) EXPECT_FALSE(k.documentation.empty()) << k.name;
  }
}

}  // namespace
}  // namespace ferry::connectors
