// What Kafka Connect's clients need from config handling, below REST: simple class names resolve,
// undeclared keys are accepted (warnings) unless the worker refuses them, Kafka's framework keys
// (topics.regex, topic.creation.*, *.override.* under the override policy) behave as there.
#include <gtest/gtest.h>

#include <algorithm>

#include "control/herder_common.h"
#include "runtime/connector_config.h"
#include "runtime/plugins.h"

namespace ferry::control {
namespace {

class KafkaCompatTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(runtime::registerBuiltins(registry_).isOk()); }

  StringMap sink(StringMap more = {}) {
    StringMap c{{"connector.class", "FileStreamSink"}, {"file", "/tmp/out"}, {"topics", "t"}};
    for (auto& [k, v] : more) c[k] = v;
    return c;
  }
  bool hasWarning(const ConfigReport& r, const std::string& key) {
    return std::any_of(r.warnings.begin(), r.warnings.end(), [&](const auto& w) { return w.first == key; });
  }
  bool hasError(const ConfigReport& r, const std::string& key) {
    for (const auto& k : r.keys)
      if (k.definition.name == key && !k.errors.empty()) return true;
    return false;
  }

  runtime::PluginRegistry registry_;
};

// FileStreamSinkConnector (the Java simple name) was unknown: 400 at create, 404 for its config.
TEST_F(KafkaCompatTest, SimpleClassNamesResolve) {
  auto simple = registry_.find("FileStreamSinkConnector");
  ASSERT_TRUE(simple.isOk()) << simple.status().toString();
  EXPECT_EQ(simple->className, "FileStreamSink");
  EXPECT_EQ(registry_.find("FileStreamSourceConnector")->className, "FileStreamSource");
  EXPECT_EQ(registry_.find("org.apache.kafka.connect.file.FileStreamSinkConnector")->className, "FileStreamSink");
  EXPECT_TRUE(registry_.isConnector("FileStreamSourceConnector"));
  EXPECT_TRUE(registry_.createConnector("FileStreamSinkConnector").isOk());
  EXPECT_FALSE(registry_.find("NoSuchConnector").isOk());
  EXPECT_FALSE(registry_.find("file").isOk());  // a partial segment is no name
  // Transforms and converters by simple name too (the last segment of their Kafka names).
  EXPECT_TRUE(registry_.createConverter("StringConverter").isOk());
  auto v = runtime::validateConnectorConfig(registry_, sink({{"connector.class", "FileStreamSinkConnector"}}));
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(v->connectorClass, "FileStreamSink");
  auto keys = pluginConfigKeys(registry_, "FileStreamSinkConnector");
  ASSERT_TRUE(keys.isOk()) << keys.status().toString();
}

// Unknown keys made a create 400; Kafka Connect accepts them (stored, passed to the connector).
TEST_F(KafkaCompatTest, UnknownKeysAreAcceptedAsWarnings) {
  const StringMap extra{{"producer.override.linger.ms", "5"}, {"consumer.override.max.poll.records", "10"},
                        {"admin.override.request.timeout.ms", "3000"}, {"config.action.reload", "restart"},
                        {"custom.key", "x"}};
  StringMap config = sink(extra);
  auto shape = checkConnectorConfig(registry_, "s", config, WorkerLimits{});
  ASSERT_TRUE(shape.isOk()) << shape.status().toString();
  EXPECT_EQ(config.at("custom.key"), "x");  // kept, not dropped

  auto report = validationReport(registry_, "FileStreamSinkConnector", sink(extra), WorkerLimits{});
  ASSERT_TRUE(report.isOk());
  EXPECT_EQ(report->errorCount, 0);
  EXPECT_TRUE(hasWarning(*report, "custom.key"));
  EXPECT_TRUE(hasWarning(*report, "config.action.reload"));
  // Override keys are Kafka framework keys: not unknown.
  EXPECT_FALSE(hasWarning(*report, "producer.override.linger.ms"));
  EXPECT_FALSE(hasError(*report, "custom.key"));
}

TEST_F(KafkaCompatTest, StrictModeRefusesUnknownKeys) {
  WorkerLimits strict;
  strict.refuseUnknownKeys = true;  // config.unknown.keys=refuse
  StringMap config = sink({{"custom.key", "x"}});
  auto shape = checkConnectorConfig(registry_, "s", config, strict);
  ASSERT_FALSE(shape.isOk());
  EXPECT_EQ(shape.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shape.status().message().find("custom.key"), std::string::npos);
  auto report = validationReport(registry_, "FileStreamSink", sink({{"custom.key", "x"}}), strict);
  ASSERT_TRUE(report.isOk());
  EXPECT_EQ(report->errorCount, 1);
  EXPECT_TRUE(hasError(*report, "custom.key"));
  EXPECT_TRUE(report->warnings.empty());
  // Kafka's framework keys stay accepted in strict mode.
  StringMap overrides = sink({{"consumer.override.max.poll.records", "10"}});
  EXPECT_TRUE(checkConnectorConfig(registry_, "s", overrides, strict).isOk());
}

TEST_F(KafkaCompatTest, OverridePolicy) {
  WorkerLimits none;
  none.overridePolicy = "None";
  StringMap c1 = sink({{"consumer.override.max.poll.records", "10"}});
  auto refused = checkConnectorConfig(registry_, "s", c1, none);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("'None' policy"), std::string::npos) << refused.status().message();

  WorkerLimits principal;
  principal.overridePolicy = "Principal";
  StringMap c2 = sink({{"consumer.override.sasl.jaas.config", "x"}, {"consumer.override.security.protocol", "SSL"}});
  EXPECT_TRUE(checkConnectorConfig(registry_, "s", c2, principal).isOk());
  StringMap c3 = sink({{"producer.override.linger.ms", "5"}});
  EXPECT_FALSE(checkConnectorConfig(registry_, "s", c3, principal).isOk());

  StringMap c4 = sink({{"admin.override.anything", "1"}});
  EXPECT_TRUE(checkConnectorConfig(registry_, "s", c4, WorkerLimits{}).isOk());  // All, the default
}

// topics.regex on a sink was an unknown key and `topics` was required.
TEST_F(KafkaCompatTest, TopicsRegexOnSinks) {
  StringMap regex{{"connector.class", "FileStreamSink"}, {"file", "/tmp/o"}, {"topics.regex", "orders-.*"}};
  auto v = runtime::validateConnectorConfig(registry_, regex);
  ASSERT_TRUE(v.isOk());
  EXPECT_TRUE(v->validation.ok()) << v->validation.summary();

  StringMap both = regex;
  both["topics"] = "t";
  auto b = runtime::validateConnectorConfig(registry_, both);
  ASSERT_TRUE(b.isOk());
  ASSERT_TRUE(b->validation.errors.count("topics"));
  EXPECT_NE(b->validation.errors.at("topics")[0].find("not both"), std::string::npos);

  StringMap neither{{"connector.class", "FileStreamSink"}, {"file", "/tmp/o"}};
  auto n = runtime::validateConnectorConfig(registry_, neither);
  ASSERT_TRUE(n.isOk());
  EXPECT_TRUE(n->validation.errors.count("topics"));

  StringMap bad = regex;
  bad["topics.regex"] = "orders-(";
  auto r = runtime::validateConnectorConfig(registry_, bad);
  ASSERT_TRUE(r.isOk());
  EXPECT_TRUE(r->validation.errors.count("topics.regex"));
}

TEST_F(KafkaCompatTest, TopicCreationKeysOnSources) {
  StringMap src{{"connector.class", "FileStreamSource"}, {"file", "/tmp/in"}, {"topic", "t"},
                {"topic.creation.groups", "big"}, {"topic.creation.default.replication.factor", "1"},
                {"topic.creation.default.partitions", "3"}, {"topic.creation.big.include", "t.*"}};
  auto report = validationReport(registry_, "FileStreamSource", src, WorkerLimits{});
  ASSERT_TRUE(report.isOk());
  EXPECT_EQ(report->errorCount, 0);
  EXPECT_TRUE(report->warnings.empty()) << report->warnings.front().first;
  // Kafka's groups for the framework keys, in validate's `groups` too.
  EXPECT_NE(std::find(report->groups.begin(), report->groups.end(), "Topic Creation"), report->groups.end());
  EXPECT_EQ(report->groups.front(), "Common");
  for (const auto& k : report->keys) {
    if (k.definition.name == "errors.tolerance") {
      EXPECT_EQ(k.definition.group, "Error Handling");
    }
  }
}

}  // namespace
}  // namespace ferry::control
