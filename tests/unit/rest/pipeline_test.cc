// Pipelines: parsing, materialisation as connectors, and back.
#include "control/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ferry::control {
namespace {

using ::testing::HasSubstr;

const char* kDirect = R"({
  "name": "iot-up",
  "source": {"connector.class": "MQTTSource", "mqtt.server.uri": "tcp://h:1883", "mqtt.topics": "dev/#",
             "tasks.max": 2},
  "transforms": [{"alias": "bridge", "type": "MqttRocketMQBridge", "direction": "mqtt-to-rocketmq",
                  "rules": "r", "rule.r.mqtt.filter": "dev/+", "rule.r.rocketmq.topic": "${level:1}"}],
  "sink": {"connector.class": "RocketMQSink", "rocketmq.namesrv": "h:9876"}
})";

const char* kBackbone = R"({
  "name": "fan",
  "mode": "backbone",
  "source": {"connector.class": "RocketMQSource", "rocketmq.namesrv": "h:9876", "rocketmq.topics": "a"},
  "transforms": [{"type": "InsertHeader", "header": "x", "value.literal": "1"}],
  "sinks": [{"connector.class": "MQTTSink", "mqtt.server.uri": "tcp://h:1883"},
            {"connector.class": "FileStreamSink", "file": "/tmp/out"}]
})";

std::string parseError(std::string_view body, std::optional<std::string> path = std::nullopt) {
  auto p = parsePipeline(body, path);
  EXPECT_FALSE(p.isOk()) << body;
  return p.isOk() ? "" : p.status().message();
}

TEST(Pipeline, DirectIsOneDirectConnectorWithSinkKeysUnderSink) {
  auto spec = parsePipeline(kDirect, std::nullopt);
  ASSERT_TRUE(spec.isOk()) << spec.status().message();
  EXPECT_EQ(spec->mode, PipelineMode::kDirect);
  auto cs = materialisePipeline(*spec);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].name, "iot-up");
  const StringMap& c = cs[0].config;
  EXPECT_EQ(c.at("connector.class"), "MQTTSource");
  EXPECT_EQ(c.at("tasks.max"), "2");
  EXPECT_EQ(c.at("sink.connector.class"), "RocketMQSink");
  EXPECT_EQ(c.at("sink.rocketmq.namesrv"), "h:9876");
  EXPECT_EQ(c.at("transforms"), "bridge");
  EXPECT_EQ(c.at("transforms.bridge.type"), "MqttRocketMQBridge");
  EXPECT_EQ(c.at("transforms.bridge.rule.r.rocketmq.topic"), "${level:1}");
  EXPECT_EQ(c.at("pipeline"), "iot-up");
  EXPECT_EQ(c.at("pipeline.role"), "direct");
  EXPECT_EQ(c.count("topic"), 0u);
}

TEST(Pipeline, BackboneIsASourceAndOneSinkConnectorPerSinkOnTheTopic) {
  auto spec = parsePipeline(kBackbone, std::nullopt);
  ASSERT_TRUE(spec.isOk()) << spec.status().message();
  EXPECT_EQ(spec->topic, "pipeline-fan");
  auto cs = materialisePipeline(*spec);
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_EQ(cs[0].name, "fan-source");
  EXPECT_EQ(cs[0].config.at("topic"), "pipeline-fan");
  EXPECT_EQ(cs[0].config.count("transforms"), 0u);  // the backbone keeps the source's records
  EXPECT_EQ(cs[0].config.at("pipeline.role"), "source");
  EXPECT_EQ(cs[1].name, "fan-sink-1");
  EXPECT_EQ(cs[1].config.at("topics"), "pipeline-fan");
  EXPECT_EQ(cs[1].config.at("transforms"), "t1");  // the alias defaults to t<n>
  EXPECT_EQ(cs[1].config.at("transforms.t1.type"), "InsertHeader");
  EXPECT_EQ(cs[1].config.at("pipeline.role"), "sink:1");
  EXPECT_EQ(cs[2].name, "fan-sink-2");
  EXPECT_EQ(cs[2].config.at("file"), "/tmp/out");
  EXPECT_EQ(cs[2].config.at("transforms.t1.value.literal"), "1");
  EXPECT_EQ(cs[2].config.at("pipeline.role"), "sink:2");
}

TEST(Pipeline, RoundTripsThroughItsConnectors) {
  for (const char* body : {kDirect, kBackbone}) {
    auto spec = parsePipeline(body, std::nullopt);
    ASSERT_TRUE(spec.isOk());
    auto cs = materialisePipeline(*spec);
    for (auto& c : cs) c.config["name"] = c.name;  // the herder adds the name
    auto back = pipelineFromConnectors(spec->name, cs);
    ASSERT_TRUE(back.isOk()) << back.status().message();
    EXPECT_EQ(pipelineJson(*back), pipelineJson(*spec)) << body;
  }
}

TEST(Pipeline, ConnectorsThatNoLongerFormAPipelineAreAFailedPrecondition) {
  auto spec = parsePipeline(kBackbone, std::nullopt);
  ASSERT_TRUE(spec.isOk());
  auto cs = materialisePipeline(*spec);
  cs.erase(cs.begin());  // the source was deleted by hand
  auto back = pipelineFromConnectors("fan", cs);
  ASSERT_FALSE(back.isOk());
  EXPECT_EQ(back.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(back.status().message(), HasSubstr("missing its source connector"));
  cs[0].config["pipeline.role"] = "sink:x";
  EXPECT_THAT(pipelineFromConnectors("fan", cs).status().message(), HasSubstr("role 'sink:x'"));
}

TEST(Pipeline, ErrorsNameTheField) {
  EXPECT_THAT(parseError("[1]"), HasSubstr("JSON object"));
  EXPECT_THAT(parseError("{"), HasSubstr("malformed JSON"));
  EXPECT_THAT(parseError(R"({"source": {"connector.class": "A"}, "sink": {"connector.class": "B"}})"),
              HasSubstr("name: required"));
  EXPECT_THAT(parseError(R"({"name": "a b", "source": {"connector.class": "A"}, "sink": {"connector.class": "B"}})"),
              HasSubstr("may hold only letters"));
  EXPECT_THAT(parseError(R"({"name": "p", "sink": {"connector.class": "B"}})"), HasSubstr("source: required"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"x": "1"}, "sink": {"connector.class": "B"}})"),
              HasSubstr("source.connector.class: required"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A"}})"), HasSubstr("sinks: required"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A"}, "sinks": [{"connector.class": "B"},
              {"connector.class": "C"}]})"),
              HasSubstr("a direct pipeline has exactly one sink"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A"}, "sinks": [{"file": "x"}]})"),
              HasSubstr("sinks[0].connector.class: required"));
  EXPECT_THAT(parseError(R"({"name": "p", "mode": "fast", "source": {"connector.class": "A"},
              "sink": {"connector.class": "B"}})"),
              HasSubstr("mode: must be"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A"}, "sink": {"connector.class": "B"},
              "topic": "t"})"),
              HasSubstr("only a backbone pipeline has a topic"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A", "transforms": "x"},
              "sink": {"connector.class": "B"}})"),
              HasSubstr("source.transforms: is set by the pipeline"));
  EXPECT_THAT(parseError(R"({"name": "p", "mode": "backbone", "source": {"connector.class": "A"},
              "sink": {"connector.class": "B", "topics": "x"}})"),
              HasSubstr("sinks[0].topics: is set by the pipeline"));
  EXPECT_THAT(parseError(R"({"name": "p", "mode": "backbone", "source": {"connector.class": "A", "topic": "x"},
              "sink": {"connector.class": "B"}})"),
              HasSubstr("source.topic"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A", "sink.x": "1"},
              "sink": {"connector.class": "B"}})"),
              HasSubstr("source.sink.x"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A"}, "sink": {"connector.class": "B"},
              "transforms": [{"alias": "a"}]})"),
              HasSubstr("transforms[0].type: required"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A"}, "sink": {"connector.class": "B"},
              "transforms": [{"alias": "a", "type": "X"}, {"alias": "a", "type": "Y"}]})"),
              HasSubstr("'a' is used twice"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A"}, "sink": {"connector.class": "B"},
              "transforms": [{"alias": "a.b", "type": "X"}]})"),
              HasSubstr("transforms[0].alias"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A"}, "sink": {"connector.class": "B"},
              "sinks": [{"connector.class": "C"}]})"),
              HasSubstr("either \"sink\" or \"sinks\""));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A"}, "sink": {"connector.class": "B"},
              "extra": 1})"),
              HasSubstr("extra: unknown pipeline field"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": "A"}, "sink": {"connector.class": "B"}})", "q"),
              HasSubstr("differs from the name in the path"));
  EXPECT_THAT(parseError(R"({"name": "p", "source": {"connector.class": {"x": 1}}, "sink": {"connector.class": "B"}})"),
              HasSubstr("must be a string, number or boolean"));
}

TEST(Pipeline, PutTakesTheNameFromThePath) {
  auto spec = parsePipeline(R"({"source": {"connector.class": "A"}, "sink": {"connector.class": "B"}})", "from-path");
  ASSERT_TRUE(spec.isOk()) << spec.status().message();
  EXPECT_EQ(spec->name, "from-path");
}

TEST(Pipeline, FieldsOfConnectorKeys) {
  auto direct = parsePipeline(kDirect, std::nullopt);
  auto backbone = parsePipeline(kBackbone, std::nullopt);
  ASSERT_TRUE(direct.isOk() && backbone.isOk());
  EXPECT_EQ(pipelineField(*direct, "iot-up", "sink.rocketmq.namesrv"), "sinks[0].rocketmq.namesrv");
  EXPECT_EQ(pipelineField(*direct, "iot-up", "mqtt.topics"), "source.mqtt.topics");
  EXPECT_EQ(pipelineField(*direct, "iot-up", "transforms.bridge.rules"), "transforms.bridge.rules");
  EXPECT_EQ(pipelineField(*backbone, "fan-source", "rocketmq.topics"), "source.rocketmq.topics");
  EXPECT_EQ(pipelineField(*backbone, "fan-source", "topic"), "topic");
  EXPECT_EQ(pipelineField(*backbone, "fan-sink-2", "file"), "sinks[1].file");
  EXPECT_EQ(pipelineField(*backbone, "fan-sink-1", "topics"), "topic");
}

const char* kRouted = R"({
  "name": "alarms",
  "mode": "backbone",
  "source": {"connector.class": "MQTTSource", "mqtt.server.uri": "tcp://h:1883", "mqtt.topics": "sensors/#"},
  "filter": "SELECT * FROM \"sensors/#\" WHERE payload.temp > 30",
  "transforms": [{"alias": "tag", "type": "InsertHeader", "header": "x", "value.literal": "1"}],
  "sinks": [{"connector.class": "RocketMQSink", "rocketmq.namesrv": "h:9876",
             "rule": "SELECT payload.temp AS t FROM \"sensors/+/data\""},
            {"connector.class": "FileStreamSink", "file": "/tmp/all"}]
})";

TEST(Pipeline, FilterGoesToTheSourceAndEachSinkRuleToItsSink) {
  auto spec = parsePipeline(kRouted, std::nullopt);
  ASSERT_TRUE(spec.isOk()) << spec.status().message();
  auto cs = materialisePipeline(*spec);
  ASSERT_EQ(cs.size(), 3u);
  // The source filters before the backbone: only records passing the filter are stored.
  EXPECT_EQ(cs[0].config.at("transforms"), "pipeline-filter");
  EXPECT_EQ(cs[0].config.at("transforms.pipeline-filter.type"), "Rule");
  EXPECT_EQ(cs[0].config.at("transforms.pipeline-filter.output"), "unchanged");
  EXPECT_EQ(cs[0].config.at("transforms.pipeline-filter.unmatched"), "drop");
  EXPECT_THAT(cs[0].config.at("transforms.pipeline-filter.sql"), HasSubstr("payload.temp > 30"));
  // Sink 1 routes by its rule (ahead of the pipeline's transforms); sink 2 takes everything.
  EXPECT_EQ(cs[1].config.at("transforms"), "pipeline-route,tag");
  EXPECT_EQ(cs[1].config.at("transforms.pipeline-route.sql"), "SELECT payload.temp AS t FROM \"sensors/+/data\"");
  EXPECT_EQ(cs[1].config.at("transforms.pipeline-route.unmatched"), "drop");
  EXPECT_EQ(cs[1].config.count("rule"), 0u);
  EXPECT_EQ(cs[2].config.at("transforms"), "tag");
  // And back: GET /pipelines/{name} shows the filter and the sinks' rules where they were given.
  for (auto& c : cs) c.config["name"] = c.name;
  auto back = pipelineFromConnectors("alarms", cs);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(pipelineJson(*back), pipelineJson(*spec));
  EXPECT_EQ(pipelineJson(*back)["sinks"][0]["rule"], "SELECT payload.temp AS t FROM \"sensors/+/data\"");
  EXPECT_EQ(pipelineJson(*back)["sinks"][1].count("rule"), 0u);
  EXPECT_EQ(pipelineField(*spec, "alarms-sink-1", "transforms.pipeline-route.sql"), "sinks[0].rule");
  EXPECT_EQ(pipelineField(*spec, "alarms-source", "transforms.pipeline-filter.sql"), "filter");
}

TEST(Pipeline, DirectPipelineChainsFilterRuleThenTransforms) {
  const char* body = R"({"name": "d", "source": {"connector.class": "MQTTSource"},
    "filter": "SELECT * FROM \"a/#\"",
    "transforms": [{"alias": "x", "type": "InsertHeader", "header": "h", "value.literal": "v"}],
    "sink": {"connector.class": "FileStreamSink", "file": "/tmp/f", "rule": "SELECT payload FROM \"a/b\""}})";
  auto spec = parsePipeline(body, std::nullopt);
  ASSERT_TRUE(spec.isOk()) << spec.status().message();
  auto cs = materialisePipeline(*spec);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].config.at("transforms"), "pipeline-filter,pipeline-route,x");
  EXPECT_EQ(cs[0].config.count("sink.rule"), 0u);
  EXPECT_EQ(pipelineField(*spec, "d", "transforms.pipeline-route.sql"), "sinks[0].rule");
  cs[0].config["name"] = "d";
  auto back = pipelineFromConnectors("d", cs);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(pipelineJson(*back), pipelineJson(*spec));
}

TEST(Pipeline, BadFilterOrRuleFieldsAreNamed) {
  EXPECT_THAT(parseError(R"({"name":"p","source":{"connector.class":"S"},"sink":{"connector.class":"K"},"filter":7})"),
              HasSubstr("filter: must be a rule"));
  EXPECT_THAT(parseError(R"({"name":"p","source":{"connector.class":"S"},"sink":{"connector.class":"K","rule":""}})"),
              HasSubstr("sinks[0].rule: must be a non-empty rule"));
  EXPECT_THAT(parseError(R"({"name":"p","source":{"connector.class":"S"},"sink":{"connector.class":"K"},
                             "transforms":[{"alias":"pipeline-route","type":"Filter"}]})"),
              HasSubstr("is reserved"));
}

}  // namespace
}  // namespace ferry::control
