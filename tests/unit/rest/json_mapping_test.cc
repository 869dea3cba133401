#include "rest/json_mapping.h"

#include "core/private_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ferry::rest {
namespace {

using ::testing::HasSubstr;

TEST(ParseJson, MalformedSaysWhere) {
  auto r = parseJson("{\n  \"name\": x}");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("malformed JSON"));
  EXPECT_THAT(r.status().message(), HasSubstr("line 2"));
  EXPECT_THAT(r.status().message(), ::testing::Not(HasSubstr("[json.exception")));
}

TEST(ParseJson, EmptyBodyIsNamed) {
  auto r = parseJson("  \n");
  ASSERT_FALSE(r.isOk());
  EXPECT_THAT(r.status().message(), HasSubstr("empty"));
}

TEST(ParseJson, TrailingGarbageRejected) { EXPECT_FALSE(parseJson("{} x").isOk()); }

TEST(ParseJson, DeepNestingRejectedNotCrashing) {
  std::string deep(100000, '[');
  auto r = parseJson(deep);
  ASSERT_FALSE(r.isOk());
  EXPECT_THAT(r.status().message(), HasSubstr("nesting deeper"));
  std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(parseJson(ok).isOk());
}

TEST(ParseJson, InvalidUtf8Rejected) { EXPECT_FALSE(parseJson("\"\xff\xfe\"").isOk()); }

TEST(ParseCreateConnector, Good) {
  auto r = parseCreateConnector(
      R"({"name": "src", "config": {"connector.class": "FileStreamSource", "tasks.max": 2,
          "enabled": true, "ratio": 0.5, "big": 18446744073709551615}, "initial_state": "paused"})");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->name, "src");
  EXPECT_EQ(r->config.at("connector.class"), "FileStreamSource");
  EXPECT_EQ(r->config.at("tasks.max"), "2");
  EXPECT_EQ(r->config.at("enabled"), "true");
  EXPECT_EQ(r->config.at("ratio"), "0.5");
  EXPECT_EQ(r->config.at("big"), "18446744073709551615");
  ASSERT_TRUE(r->initialState.has_value());
  EXPECT_EQ(*r->initialState, store::TargetState::kPaused);
}

TEST(ParseCreateConnector, InitialStateOptionalAndValidated) {
  auto r = parseCreateConnector(R"({"name": "a", "config": {}})");
  ASSERT_TRUE(r.isOk());
  EXPECT_FALSE(r->initialState.has_value());
  auto running = parseCreateConnector(R"({"name": "a", "config": {}, "initial_state": "RUNNING"})");
  ASSERT_TRUE(running.isOk());
  EXPECT_EQ(*running->initialState, store::TargetState::kStarted);
  auto bad = parseCreateConnector(R"({"name": "a", "config": {}, "initial_state": "FLYING"})");
  ASSERT_FALSE(bad.isOk());
  EXPECT_THAT(bad.status().message(), HasSubstr("initial_state"));
  EXPECT_FALSE(parseCreateConnector(R"({"name": "a", "config": {}, "initial_state": 3})").isOk());
}

TEST(ParseCreateConnector, WrongShapesNameTheField) {
  struct Case {
    const char* body;
    const char* needle;
  } cases[] = {
      {R"([1, 2])", "JSON object"},
      {R"("text")", "JSON object"},
      {R"({"config": {}})", "'name' is required"},
      {R"({"name": 5, "config": {}})", "'name' must be a string"},
      {R"({"name": "", "config": {}})", "must not be empty"},
      {R"({"name": "   ", "config": {}})", "must not be empty"},
      {R"({"name": "a\nb", "config": {}})", "control characters"},
      {R"({"name": "x"})", "'config' is required"},
      {R"({"name": "x", "config": 5})", "'config' must be a JSON object"},
      {R"({"name": "x", "config": [1]})", "'config' must be a JSON object"},
      {R"({"name": "x", "config": {"a": {"b": 1}}})", "value of 'a'"},
      {R"({"name": "x", "config": {"a": [1]}})", "value of 'a'"},
      {R"({"name": "x", "config": {"a": null}})", "value of 'a'"},
      {R"({"name": "x", "config": {"name": "y"}})", "does not match"},
  };
  for (const auto& c : cases) {
    auto r = parseCreateConnector(c.body);
    ASSERT_FALSE(r.isOk()) << c.body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_THAT(r.status().message(), HasSubstr(c.needle)) << c.body;
  }
}

TEST(ParseCreateConnector, MatchingNameInConfigAccepted) {
  auto r = parseCreateConnector(R"({"name": "x", "config": {"name": "x"}})");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->config.at("name"), "x");
}

TEST(ParseConfigMap, GoodAndBad) {
  auto r = parseConfigMap(R"({"a": "1", "b": 2, "c": false, "d": -3})");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->at("a"), "1");
  EXPECT_EQ(r->at("b"), "2");
  EXPECT_EQ(r->at("c"), "false");
  EXPECT_EQ(r->at("d"), "-3");
  EXPECT_TRUE(parseConfigMap("{}").isOk());
  auto arr = parseConfigMap("[]");
  ASSERT_FALSE(arr.isOk());
  EXPECT_THAT(arr.status().message(), HasSubstr("not array"));
  auto nested = parseConfigMap(R"({"k": {"x": 1}})");
  ASSERT_FALSE(nested.isOk());
  EXPECT_THAT(nested.status().message(), HasSubstr("'k'"));
  EXPECT_FALSE(parseConfigMap("{\"k\": ").isOk());
}

TEST(ParsePatch, NullRemoves) {
  auto r = parsePatch(R"({"a": "1", "b": null, "c": 3})");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->at("a"), std::optional<std::string>("1"));
  EXPECT_EQ(r->at("b"), std::nullopt);
  EXPECT_EQ(r->at("c"), std::optional<std::string>("3"));
  auto bad = parsePatch(R"({"a": [1]})");
  ASSERT_FALSE(bad.isOk());
  EXPECT_THAT(bad.status().message(), HasSubstr("'a'"));
  EXPECT_FALSE(parsePatch("null").isOk());
}

TEST(ParseOffsets, Good) {
  auto r = parseOffsets(R"({"offsets": [
      {"partition": {"file": "/a.log"}, "offset": {"pos": 42}},
      {"partition": {"kafka_topic": "t", "kafka_partition": 3}, "offset": null},
      {"partition": {"file": "/b.log"}}]})");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].partition.at("file"), "/a.log");
  EXPECT_EQ((*r)[0].offset.at("pos"), "42");
  EXPECT_EQ((*r)[1].partition.at("kafka_partition"), "3");
  EXPECT_TRUE((*r)[1].offset.empty());
  EXPECT_TRUE((*r)[2].offset.empty());
}

// Kafka Connect refuses an alter request with nothing to alter (400); it used to be a no-op.
TEST(ParseOffsets, EmptyListIsRefused) {
  auto empty = parseOffsets(R"({"offsets": []})");
  ASSERT_FALSE(empty.isOk());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("need to be provided"), std::string::npos);
}

TEST(ParseOffsets, WrongShapesNameThePlace) {
  struct Case {
    const char* body;
    const char* needle;
  } cases[] = {
      {R"({})", "'offsets' is required"},
      {R"({"offsets": {}})", "must be an array"},
      {R"({"offsets": [5]})", "offsets[0]"},
      {R"({"offsets": [{"offset": {}}]})", "offsets[0].partition' is required"},
      {R"({"offsets": [{"partition": {}}]})", "must not be empty"},
      {R"({"offsets": [{"partition": {"a": "b"}}, {"partition": 7}]})", "offsets[1].partition"},
      {R"({"offsets": [{"partition": {"a": "b"}, "offset": {"x": [1]}}]})", "offsets[0].offset"},
  };
  for (const auto& c : cases) {
    auto r = parseOffsets(c.body);
    ASSERT_FALSE(r.isOk()) << c.body;
    EXPECT_THAT(r.status().message(), HasSubstr(c.needle)) << c.body;
  }
}

TEST(ParseLoggerLevel, GoodAndBad) {
  auto r = parseLoggerLevel(R"({"level": "DEBUG"})");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(*r, "DEBUG");
  EXPECT_FALSE(parseLoggerLevel(R"({})").isOk());
  EXPECT_FALSE(parseLoggerLevel(R"({"level": 1})").isOk());
}

TEST(Render, ConnectorInfoShape) {
  control::ConnectorInfo info{"src", {{"file", "/a"}}, {0, 1}, control::ConnectorType::kSource};
  Json j = connectorInfoJson(info);
  EXPECT_EQ(j["name"], "src");
  EXPECT_EQ(j["config"]["file"], "/a");
  EXPECT_EQ(j["type"], "source");
  ASSERT_EQ(j["tasks"].size(), 2u);
  EXPECT_EQ(j["tasks"][1], (Json{{"connector", "src"}, {"task", 1}}));
}

TEST(Render, StatusOmitsEmptyTrace) {
  control::ConnectorStateInfo s;
  s.name = "src";
  s.state = store::State::kRunning;
  s.workerId = "w1";
  s.type = control::ConnectorType::kSink;
  s.tasks.push_back({0, store::State::kFailed, "w2", "boom", ""});
  s.tasks.push_back({1, store::State::kRunning, "w1", "", "3 record(s) could not be read"});
  Json j = connectorStatusJson(s);
  EXPECT_EQ(j["connector"]["state"], "RUNNING");
  EXPECT_FALSE(j["connector"].contains("trace"));
  EXPECT_EQ(j["tasks"][0]["state"], "FAILED");
  EXPECT_EQ(j["tasks"][0]["trace"], "boom");
  EXPECT_EQ(j["tasks"][0]["worker_id"], "w2");
  EXPECT_FALSE(j["tasks"][0].contains("data_loss"));
  EXPECT_EQ(j["tasks"][1]["state"], "RUNNING");  // Kafka's state, with what was lost beside it
  EXPECT_FALSE(j["tasks"][1].contains("trace"));
  EXPECT_EQ(j["tasks"][1]["data_loss"], "3 record(s) could not be read");
  EXPECT_EQ(j["type"], "sink");
  EXPECT_FALSE(j["tasks"][0].contains("metrics"));  // counters not known: no field
}

TEST(Render, StatusCarriesTaskCounters) {
  control::ConnectorStateInfo s;
  s.name = "src";
  s.state = store::State::kRunning;
  control::TaskStateInfo t;
  t.state = store::State::kRunning;
  t.counters = control::TaskCounters{120, 118, 2, 5};
  s.tasks.push_back(t);
  Json j = connectorStatusJson(s);
  EXPECT_EQ(j["tasks"][0]["metrics"],
            Json::parse(R"({"records_in":120,"records_out":118,"errors":2,"commit_lag_records":5})"));
  EXPECT_EQ(j["tasks"][0]["state"], "RUNNING");
}

TEST(Render, PositionsMakeKafkaNumbersNumeric) {
  control::PositionList p{
      {{{"kafka_topic", "t"}, {"kafka_partition", "3"}}, {{"kafka_offset", "17"}}},
      {{{"file", "/a"}}, {{"pos", "5"}}}};
  Json j = positionsJson(p);
  EXPECT_EQ(j["offsets"][0]["partition"]["kafka_partition"], 3);
  EXPECT_EQ(j["offsets"][0]["partition"]["kafka_topic"], "t");
  EXPECT_EQ(j["offsets"][0]["offset"]["kafka_offset"], 17);
  EXPECT_EQ(j["offsets"][1]["offset"]["pos"], 5);  // a number, as Kafka Connect shows it
  EXPECT_EQ(j["offsets"][1]["partition"]["file"], "/a");
}

// Source offsets went out as strings ("position": "370"), so they could not move back to Kafka
// Connect: offset values that are an integer's canonical text are numbers; anything else stays
// text, and partition values stay text (they name things) except kafka_partition.
TEST(Render, SourceOffsetNumbersStayNumbers) {
  control::PositionList p{{{{"filename", "/in.txt"}, {"shard", "12"}},
                           {{"position", "370"},
                            {"negative", "-4"},
                            {"padded", "0370"},
                            {"plus", "+1"},
                            {"big", "99999999999999999999"},
                            {"lsn", "0/16B3748"},
                            {"empty", ""}}}};
  Json j = positionsJson(p);
  const Json& off = j["offsets"][0]["offset"];
  EXPECT_TRUE(off["position"].is_number_integer());
  EXPECT_EQ(off["position"], 370);
  EXPECT_EQ(off["negative"], -4);
  EXPECT_EQ(off["padded"], "0370");
  EXPECT_EQ(off["plus"], "+1");
  EXPECT_EQ(off["big"], "99999999999999999999");
  EXPECT_EQ(off["lsn"], "0/16B3748");
  EXPECT_EQ(off["empty"], "");
  EXPECT_EQ(j["offsets"][0]["partition"]["shard"], "12");
  // Round trip: what GET shows, PATCH accepts and stores as the same text.
  auto back = parseOffsets(dumpJson(j));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ((*back)[0], p[0]);
}

TEST(Render, ConfigReportShape) {
  control::ConfigReport r;
  r.className = "FileStreamSource";
  r.groups = {"Common"};
  control::ConfigKeyReport k;
  k.definition.name = "topic";
  k.definition.importance = Importance::kHigh;
  k.definition.group = "Common";
  k.errors = {"required"};
  r.keys.push_back(k);
  r.errorCount = 1;
  Json j = configReportJson(r);
  EXPECT_EQ(j["name"], "FileStreamSource");
  EXPECT_EQ(j["error_count"], 1);
  EXPECT_EQ(j["groups"][0], "Common");
  const Json& c = j["configs"][0];
  EXPECT_EQ(c["definition"]["name"], "topic");
  EXPECT_EQ(c["definition"]["required"], true);
  EXPECT_EQ(c["definition"]["order"], 0);  // Kafka Connect 4.x's name
  EXPECT_FALSE(c["definition"].contains("order_in_group"));
  EXPECT_TRUE(c["definition"]["default_value"].is_null());
  EXPECT_EQ(c["value"]["name"], "topic");
  EXPECT_TRUE(c["value"]["value"].is_null());
  EXPECT_EQ(c["value"]["errors"][0], "required");
  EXPECT_EQ(c["value"]["visible"], true);
}

// ConfigKeyInfo said "" where Kafka Connect 4.x says null (no default), and order_in_group.
TEST(Render, ConfigKeyInfoAsKafkaConnect4) {
  auto key = [](std::string name, ConfigType type, std::string def) {
    ConfigKey k;
    k.name = std::move(name);
    k.type = type;
    k.defaultValue = std::move(def);
    k.importance = Importance::kHigh;
    return k;
  };
  ConfigKey none = key("file", ConfigType::kString, "");
  Json j = configKeyJson(none, -1);
  EXPECT_TRUE(j["default_value"].is_null());
  EXPECT_EQ(j["order"], -1);
  EXPECT_TRUE(j["group"].is_null());
  ConfigKey list = key("transforms", ConfigType::kList, "");
  EXPECT_EQ(configKeyJson(list, 0)["default_value"], "");  // Kafka shows "" for an empty list
  ConfigKey withDefault = key("tasks.max", ConfigType::kInt, "1");
  withDefault.group = "Common";
  Json d = configKeyJson(withDefault, 3);
  EXPECT_EQ(d["default_value"], "1");
  EXPECT_EQ(d["group"], "Common");
  EXPECT_EQ(d["order"], 3);
  for (const char* k : {"name", "type", "required", "default_value", "importance", "documentation",
                        "group", "order", "width", "display_name", "dependents"})
    EXPECT_TRUE(d.contains(k)) << k;
  EXPECT_EQ(d.size(), 11u);
}

// Kafka Connect 4.x carries the plugin version in connector and task status.
TEST(Render, StatusCarriesVersion) {
  control::ConnectorStateInfo s;
  s.name = "c";
  s.state = store::State::kRunning;
  s.type = control::ConnectorType::kSource;
  s.tasks.push_back({0, store::State::kRunning, "w1", "", ""});
  Json j = connectorStatusJson(s, "0.1.0");
  EXPECT_EQ(j["connector"]["version"], "0.1.0");
  EXPECT_EQ(j["tasks"][0]["version"], "0.1.0");
  EXPECT_EQ(taskStatusJson(s.tasks[0], "2.0")["version"], "2.0");
  EXPECT_FALSE(j.contains("ferry_type"));
}

// "type": "direct" broke clients generated from Kafka's API (source|sink only).
TEST(Render, DirectConnectorIsASourceWithFerryType) {
  control::ConnectorInfo info{"d", {{"connector.class", "MQTTSource"}}, {0}, control::ConnectorType::kDirect};
  Json i = connectorInfoJson(info);
  EXPECT_EQ(i["type"], "source");
  EXPECT_EQ(i["ferry_type"], "direct");
  control::ConnectorStateInfo s;
  s.name = "d";
  s.type = control::ConnectorType::kDirect;
  Json st = connectorStatusJson(s);
  EXPECT_EQ(st["type"], "source");
  EXPECT_EQ(st["ferry_type"], "direct");
  EXPECT_STREQ(connectorTypeText(control::ConnectorType::kSink), "sink");
}

// /connector-plugins listed ferry's short names; Kafka's clients look for the Java class name.
TEST(Render, PluginListedByKafkaClassName) {
  runtime::PluginInfo file{"FileStreamSink",
                           {"org.apache.kafka.connect.file.FileStreamSinkConnector", "file-sink"},
                           PluginKind::kSinkConnector, "0.1.0", "", "builtin"};
  EXPECT_EQ(pluginJson(file)["class"], "org.apache.kafka.connect.file.FileStreamSinkConnector");
  EXPECT_EQ(pluginJson(file, /*detailed=*/true)["class"], "FileStreamSink");  // RocketMQ's list
  runtime::PluginInfo own{"MQTTSource", {"mqtt-source"}, PluginKind::kSourceConnector, "0.1.0", "", "builtin"};
  EXPECT_EQ(pluginJson(own)["class"], "MQTTSource");
}

// Undeclared keys are accepted and reported in a field of their own, outside error_count.
TEST(Render, ConfigReportWarnings) {
  control::ConfigReport r;
  r.className = "FileStreamSinkConnector";
  Json none = configReportJson(r);
  EXPECT_FALSE(none.contains("warnings"));
  r.warnings.emplace_back("custom.key", "unknown configuration key 'custom.key': accepted");
  Json j = configReportJson(r);
  EXPECT_EQ(j["error_count"], 0);
  ASSERT_EQ(j["warnings"].size(), 1u);
  EXPECT_EQ(j["warnings"][0]["name"], "custom.key");
  EXPECT_THAT(j["warnings"][0]["message"].get<std::string>(), HasSubstr("accepted"));
}

TEST(Render, DumpNeverThrowsOnInvalidUtf8) {
  Json j = {{"trace", std::string("bad \xff byte")}};
  std::string s = dumpJson(j);
  EXPECT_THAT(s, HasSubstr("bad "));
}

TEST(Render, StatusCodes) {
  EXPECT_EQ(httpStatusFor(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(httpStatusFor(StatusCode::kNotFound), 404);
  EXPECT_EQ(httpStatusFor(StatusCode::kAlreadyExists), 409);
  EXPECT_EQ(httpStatusFor(StatusCode::kFailedPrecondition), 409);
  EXPECT_EQ(httpStatusFor(StatusCode::kUnavailable), 500);
  EXPECT_EQ(httpStatusFor(StatusCode::kInternal), 500);
}

// Error answers named files by their absolute path (a store's "could not save /abs/data/...").
TEST(Render, ErrorAnswersShowDataDirFilesRelativeToIt) {
  core::registerPrivateFolder("/srv/ferry-json-mapping-test/data");
  Json e = errorJson(500, "could not save /srv/ferry-json-mapping-test/data/store/configs.json: "
                          "create /srv/ferry-json-mapping-test/data/store/configs.json.tmp: EISDIR");
  EXPECT_EQ(e["message"], "could not save store/configs.json: create store/configs.json.tmp: EISDIR");
  control::TaskStateInfo t;
  t.trace = "append to /srv/ferry-json-mapping-test/data/backbone/t-0 failed";
  EXPECT_EQ(taskStatusJson(t)["trace"], "append to backbone/t-0 failed");
}

// A task that lost its peer stays RUNNING (Kafka's values); "connection" says why, and the
// reason is its trace while it is not connected.
TEST(Render, TaskConnectionKeepsRunningAndCarriesTheReason) {
  control::TaskStateInfo t;
  t.state = store::State::kRunning;
  t.connection = control::ConnectionInfo{"reconnecting", "connection refused", 1765152000000, 2};
  Json j = taskStatusJson(t);
  EXPECT_EQ(j["state"], "RUNNING");
  EXPECT_EQ(j["connection"]["state"], "reconnecting");
  EXPECT_EQ(j["connection"]["since"], "2025-12-08T00:00:00.000Z");
  EXPECT_EQ(j["connection"]["since_ms"], 1765152000000);
  EXPECT_EQ(j["connection"]["reconnects"], 2);
  EXPECT_EQ(j["connection"]["error"], "connection refused");
  EXPECT_EQ(j["trace"], "connection refused");
  t.connection = control::ConnectionInfo{"connected", "", 1765152000000, 2};
  j = taskStatusJson(t);
  EXPECT_FALSE(j["connection"].contains("error"));
  EXPECT_FALSE(j.contains("trace"));
}

// A malformed body is not echoed: nlohmann's "last read: '<token>'" quoted whole strings.
TEST(Parse, MalformedBodyIsNotEchoed) {
  auto r = parseCreateConnector(R"({"name": "a", "config": {"password": "hunter2-very-secret-value)");
  ASSERT_FALSE(r.isOk());
  EXPECT_THAT(r.status().message(), HasSubstr("malformed JSON"));
  EXPECT_THAT(r.status().message(), ::testing::Not(HasSubstr("hunter2-very-secret")));
}

}  // namespace
}  // namespace ferry::rest
