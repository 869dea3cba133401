// Connector configuration: shapes, framework + connector + transform keys validated at once.
#include "runtime/connector_config.h"

#include <gtest/gtest.h>

namespace ferry::runtime {
namespace {

class ConnectorConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(registerBuiltins(registry_).isOk()); }
  PluginRegistry registry_;
};

bool hasError(const ConnectorValidation& v, const std::string& key) { return v.validation.errors.count(key) != 0; }

TEST_F(ConnectorConfigTest, ValidSourceSinkAndDirect) {
  auto src = validateConnectorConfig(registry_, {{"connector.class", "FileStreamSource"}, {"file", "/tmp/a"},
                                                 {"topic", "t"}});
  ASSERT_TRUE(src.isOk()) << src.status().toString();
  EXPECT_EQ(src->shape, ConnectorShape::kSource);
  EXPECT_TRUE(src->validation.ok()) << src->validation.summary();

  auto sink = validateConnectorConfig(registry_, {{"connector.class", "org.apache.kafka.connect.file.FileStreamSinkConnector"},
                                                  {"file", "/tmp/b"}, {"topics", "t"}});
  ASSERT_TRUE(sink.isOk());
  EXPECT_EQ(sink->shape, ConnectorShape::kSink);
  EXPECT_EQ(sink->connectorClass, "FileStreamSink");
  EXPECT_TRUE(sink->validation.ok()) << sink->validation.summary();

  auto direct = validateConnectorConfig(registry_, {{"connector.class", "DatagenSource"}, {"topic", "g"},
                                                    {"sink.connector.class", "FileStreamSink"}, {"sink.file", "/tmp/c"}});
  ASSERT_TRUE(direct.isOk());
  EXPECT_EQ(direct->shape, ConnectorShape::kDirect);
  EXPECT_TRUE(direct->validation.ok()) << direct->validation.summary();
}

TEST_F(ConnectorConfigTest, PairedSourceBecomesDirectWithTheSameKeys) {
  const StringMap given{{"connector.class", "rocketmq-replicator"}, {"source.namesrv", "a:1"},
                        {"target.namesrv", "b:2"}, {"topics", "t1,t2"}, {"tasks.max", "2"}};
  const StringMap full = expandDirectPair(registry_, given);
  EXPECT_EQ(full.at("sink.connector.class"), "RocketMQReplicatorSink");
  EXPECT_EQ(full.at("sink.source.namesrv"), "a:1");
  EXPECT_EQ(full.at("sink.target.namesrv"), "b:2");
  EXPECT_EQ(full.at("sink.topics"), "t1,t2");
  EXPECT_EQ(full.count("sink.tasks.max"), 0u);  // framework keys stay on the connector
  EXPECT_EQ(expandDirectPair(registry_, full), full);  // idempotent
  // Edited after a read-back: the plain key wins over the stale sink.* copy.
  StringMap edited = full;
  edited["topics"] = "t3";
  EXPECT_EQ(expandDirectPair(registry_, edited).at("sink.topics"), "t3");
  // Unpaired classes are untouched.
  const StringMap plain{{"connector.class", "DatagenSource"}, {"topic", "g"}};
  EXPECT_EQ(expandDirectPair(registry_, plain), plain);

  auto v = validateConnectorConfig(registry_, given);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(v->shape, ConnectorShape::kDirect);
  EXPECT_EQ(v->sinkClass, "RocketMQReplicatorSink");
  EXPECT_TRUE(v->validation.ok()) << v->validation.summary();
}

TEST_F(ConnectorConfigTest, ReplicatorCrossFieldErrors) {
  auto v = validateConnectorConfig(registry_, {{"connector.class", "RocketMQReplicator"}, {"source.namesrv", "a:1"},
                                               {"target.namesrv", "a:1"}, {"topics.regex", "(unclosed"},
                                               {"checkpoint.groups", "g"}, {"placement", "hash"}});
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_TRUE(hasError(*v, "topics.regex")) << v->validation.summary();
  EXPECT_TRUE(hasError(*v, "topic.rename")) << v->validation.summary();   // same cluster, no rename
  EXPECT_TRUE(hasError(*v, "target.alias")) << v->validation.summary();   // same alias
  EXPECT_TRUE(hasError(*v, "checkpoint.groups")) << v->validation.summary();
  auto none = validateConnectorConfig(registry_, {{"connector.class", "RocketMQReplicator"}, {"source.namesrv", "a:1"},
                                                  {"target.namesrv", "b:1"}, {"topic.rename", "x"}});
  ASSERT_TRUE(none.isOk());
  EXPECT_TRUE(hasError(*none, "topics")) << none->validation.summary();
  EXPECT_TRUE(hasError(*none, "topic.rename")) << none->validation.summary();
}

TEST_F(ConnectorConfigTest, EveryProblemReportedAtOnce) {
  auto v = validateConnectorConfig(registry_, {{"connector.class", "FileStreamSource"}, {"tasks.max", "many"},
                                               {"flie", "/tmp/x"}, {"errors.tolerance", "some"}});
  ASSERT_TRUE(v.isOk());
  EXPECT_TRUE(hasError(*v, "tasks.max"));
  EXPECT_TRUE(hasError(*v, "topic"));
  EXPECT_TRUE(hasError(*v, "errors.tolerance"));
  ASSERT_EQ(v->validation.unknownKeys.size(), 1u);
  EXPECT_EQ(v->validation.unknownKeys[0], "flie");
}

TEST_F(ConnectorConfigTest, SinkNeedsTopics) {
  auto v = validateConnectorConfig(registry_, {{"connector.class", "FileStreamSink"}, {"file", "/tmp/x"}});
  ASSERT_TRUE(v.isOk());
  EXPECT_TRUE(hasError(*v, "topics"));
}

TEST_F(ConnectorConfigTest, UnknownClassListsKnownOnes) {
  auto v = validateConnectorConfig(registry_, {{"connector.class", "NoSuchThing"}});
  ASSERT_FALSE(v.isOk());
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_NE(v.status().message().find("FileStreamSource"), std::string::npos) << v.status().message();
}

TEST_F(ConnectorConfigTest, TransformsAndPredicatesAreChecked) {
  auto v = validateConnectorConfig(
      registry_, {{"connector.class", "FileStreamSink"}, {"file", "/tmp/x"}, {"topics", "t"},
                  {"transforms", "a,b,c"}, {"transforms.a.type", "HoistField$Value"},  // missing field
                  {"transforms.b.type", "NoSuchTransform"},
                  {"transforms.c.type", "Filter"}, {"transforms.c.predicate", "p"},  // p not listed
                  {"transforms.zz.type", "Filter"}});                                 // zz not listed
  ASSERT_TRUE(v.isOk());
  EXPECT_TRUE(hasError(*v, "transforms.a.field")) << v->validation.summary();
  EXPECT_TRUE(hasError(*v, "transforms.b.type")) << v->validation.summary();
  EXPECT_TRUE(hasError(*v, "transforms.c.predicate")) << v->validation.summary();
  EXPECT_TRUE(hasError(*v, "transforms.zz.type")) << v->validation.summary();
}

TEST_F(ConnectorConfigTest, DirectSinkSideKeysUseThePrefix) {
  auto v = validateConnectorConfig(registry_, {{"connector.class", "DatagenSource"}, {"topic", "g"},
                                               {"sink.connector.class", "FileStreamSink"}, {"sink.flie", "x"}});
  ASSERT_TRUE(v.isOk());
  EXPECT_TRUE(hasError(*v, "sink.file")) << v->validation.summary();
  ASSERT_EQ(v->validation.unknownKeys.size(), 1u);
  EXPECT_EQ(v->validation.unknownKeys[0], "sink.flie");
  auto wrong = validateConnectorConfig(registry_, {{"connector.class", "DatagenSource"}, {"topic", "g"},
                                                   {"sink.connector.class", "DatagenSource"}});
  ASSERT_TRUE(wrong.isOk());
  EXPECT_TRUE(hasError(*wrong, "sink.connector.class"));
}

TEST(ErrorPolicy, Parses) {
  auto p = parseErrorPolicy({{"connector.class", "X"}, {"errors.tolerance", "all"},
                             {"errors.deadletterqueue.topic.name", "dlq"}, {"errors.retry.timeout", "-1"}});
  EXPECT_TRUE(p.tolerateAll);
  EXPECT_EQ(p.deadLetterTopic, "dlq");
  EXPECT_EQ(p.retryTimeoutMs, -1);
  EXPECT_FALSE(parseErrorPolicy({{"connector.class", "X"}}).tolerateAll);
}

}  // namespace
}  // namespace ferry::runtime
