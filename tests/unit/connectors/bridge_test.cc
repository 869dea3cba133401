// The MQTT <-> RocketMQ bridge rules: templates, compile-time checks naming the key, mapping in
// both directions, unmatched records.
#include "connectors/mqtt/bridge.h"

#include <gtest/gtest.h>

namespace ferry::connectors::mqttc {
namespace {

Record mqttRecord(const std::string& topic, const std::string& payload = "p") {
  Record r;
  r.topic = topic;
  r.key = Bytes::copyOf(topic);
  r.value = Bytes::copyOf(payload);
  r.headers.add("mqtt.topic", std::string_view(topic));
  r.headers.add("mqtt.qos", std::string_view("1"));
  return r;
}

std::string header(const Record& r, const std::string& k) {
  const Header* h = r.headers.last(k);
  return h ? h->value.str() : "<none>";
}

StringMap upRules() {
  return {{"direction", "mqtt-to-rocketmq"},
          {"rules", "telemetry,rest"},
          {"rule.telemetry.mqtt.filter", "devices/+/telemetry/#"},
          {"rule.telemetry.rocketmq.topic", "IOT_${level:3}"},
          {"rule.telemetry.rocketmq.tag", "${level:2}"},
          {"rule.rest.mqtt.filter", "#"},
          {"rule.rest.rocketmq.topic", "${level:1}"},
          {"rule.rest.rocketmq.tag", "${levels:2-}"}};
}

TEST(BridgeTemplate, ParsesAndRenders) {
  auto t = BridgeTemplate::parse("a-${level:1}_${levels:2-}/${topic}|${tag}|${key}|${header:h}");
  ASSERT_TRUE(t.isOk()) << t.status().toString();
  Record r;
  r.key = Bytes::copyOf(std::string("K"));
  r.headers.add("h", std::string_view("H"));
  auto s = t->render({"x/y/z", "T", "G", &r});
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(*s, "a-x_y/z/T|G|K|H");
  EXPECT_EQ(t->maxLevel(), 1);
  // A topic with fewer levels than ${levels:N-} asks for renders nothing for it.
  EXPECT_EQ(*BridgeTemplate::parse("${level:1}.${levels:3-}")->render({"one/two", "", "", &r}), "one.");
}

TEST(BridgeTemplate, RejectsBadPlaceholders) {
  for (const char* bad : {"${nope}", "${level:0}", "${level:x}", "${levels:2}", "abc${level:1", "",
                          "${header:}"}) {
    auto t = BridgeTemplate::parse(bad);
    EXPECT_FALSE(t.isOk()) << bad;
  }
  auto missing = BridgeTemplate::parse("${level:4}")->render({"a/b", "", "", nullptr});
  EXPECT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("no level 4"), std::string::npos);
  Record r;
  auto noHeader = BridgeTemplate::parse("${header:x}")->render({"", "", "", &r});
  EXPECT_NE(noHeader.status().message().find("no header 'x'"), std::string::npos);
}

TEST(BridgeRules, MqttToRocketMQFirstMatchingRuleWins) {
  auto rules = BridgeRules::compile(upRules());
  ASSERT_TRUE(rules.isOk()) << rules.status().toString();
  Record a = mqttRecord("devices/d-17/telemetry/temp");
  auto ra = rules->apply(a);
  ASSERT_TRUE(ra.isOk()) << ra.status().toString();
  ASSERT_TRUE(*ra);
  EXPECT_EQ(a.topic, "IOT_telemetry");
  EXPECT_EQ(header(a, "rocketmq.tags"), "d-17");
  EXPECT_EQ(header(a, "mqtt.topic"), "devices/d-17/telemetry/temp");
  EXPECT_EQ(a.value.str(), "p");

  Record b = mqttRecord("factory/line1/press/3");
  ASSERT_TRUE(*rules->apply(b));
  EXPECT_EQ(b.topic, "factory");
  EXPECT_EQ(header(b, "rocketmq.tags"), "line1/press/3");

  // One level only: the tag renders empty and no tag is set.
  Record c = mqttRecord("solo");
  ASSERT_TRUE(*rules->apply(c));
  EXPECT_EQ(c.topic, "solo");
  EXPECT_EQ(header(c, "rocketmq.tags"), "<none>");
}

TEST(BridgeRules, OriginalTopicFromTheRecordWhenNoHeader) {
  auto rules = BridgeRules::compile(upRules());
  Record r;
  r.topic = "plant/x";
  ASSERT_TRUE(*rules->apply(r));
  EXPECT_EQ(r.topic, "plant");
  EXPECT_EQ(header(r, "mqtt.topic"), "plant/x");
}

TEST(BridgeRules, UnmatchedFailsOrDrops) {
  StringMap cfg = {{"direction", "mqtt-to-rocketmq"},
                   {"rules", "only"},
                   {"rule.only.mqtt.filter", "a/+"},
                   {"rule.only.rocketmq.topic", "A"}};
  auto fail = BridgeRules::compile(cfg);
  ASSERT_TRUE(fail.isOk());
  Record r = mqttRecord("b/c");
  auto res = fail->apply(r);
  ASSERT_FALSE(res.isOk());
  EXPECT_NE(res.status().message().find("b/c"), std::string::npos);
  cfg["unmatched"] = "drop";
  auto drop = BridgeRules::compile(cfg);
  Record r2 = mqttRecord("b/c");
  auto res2 = drop->apply(r2);
  ASSERT_TRUE(res2.isOk());
  EXPECT_FALSE(*res2);
}

TEST(BridgeRules, ALevelThatIsNotARocketMQNameFailsTheRecord) {
  auto rules = BridgeRules::compile(upRules());
  Record r = mqttRecord("bad.name/x");
  auto res = rules->apply(r);
  ASSERT_FALSE(res.isOk());
  EXPECT_NE(res.status().message().find("not a RocketMQ topic name"), std::string::npos);
  EXPECT_EQ(r.topic, "bad.name/x");  // untouched
}

TEST(BridgeRules, RocketMQToMqttByTopicAndTag) {
  StringMap cfg = {{"direction", "rocketmq-to-mqtt"},
                   {"rules", "cmd,back"},
                   {"rule.cmd.rocketmq.topic", "COMMANDS"},
                   {"rule.cmd.rocketmq.tags", "reboot||update"},
                   {"rule.cmd.mqtt.topic", "devices/${key}/cmd/${tag}"},
                   {"rule.back.rocketmq.topic", "*"}};
  auto rules = BridgeRules::compile(cfg);
  ASSERT_TRUE(rules.isOk()) << rules.status().toString();
  Record c;
  c.topic = "COMMANDS";
  c.key = Bytes::copyOf(std::string("d-3"));
  c.headers.add("rocketmq.tags", std::string_view("reboot"));
  ASSERT_TRUE(*rules->apply(c));
  EXPECT_EQ(c.topic, "devices/d-3/cmd/reboot");

  // Another tag falls through to the default rule: back to the original MQTT topic.
  Record d;
  d.topic = "COMMANDS";
  d.headers.add("rocketmq.tags", std::string_view("other"));
  d.headers.add("mqtt.topic", std::string_view("devices/d-9/telemetry/temp"));
  ASSERT_TRUE(*rules->apply(d));
  EXPECT_EQ(d.topic, "devices/d-9/telemetry/temp");

  // No original topic: the default template has nothing to render.
  Record e;
  e.topic = "X";
  auto res = rules->apply(e);
  ASSERT_FALSE(res.isOk());
  EXPECT_NE(res.status().message().find("mqtt.topic"), std::string::npos);
}

TEST(BridgeRules, RocketMQTopicFromTheHeaderWhenTheSourceRenamedIt) {
  // Through the backbone, RocketMQSource writes to its `topic` and keeps the RocketMQ topic in
  // the rocketmq.topic header; rules match that, and ${topic} renders it.
  StringMap cfg = {{"direction", "rocketmq-to-mqtt"},
                   {"rules", "r"},
                   {"rule.r.rocketmq.topic", "COMMANDS"},
                   {"rule.r.mqtt.topic", "${topic}/${tag}"}};
  auto rules = BridgeRules::compile(cfg);
  ASSERT_TRUE(rules.isOk()) << rules.status().toString();
  Record r;
  r.topic = "pipeline-x";
  r.headers.add("rocketmq.topic", std::string_view("COMMANDS"));
  r.headers.add("rocketmq.tags", std::string_view("t1"));
  ASSERT_TRUE(*rules->apply(r));
  EXPECT_EQ(r.topic, "COMMANDS/t1");
  Record other;
  other.topic = "COMMANDS";
  other.headers.add("rocketmq.topic", std::string_view("OTHER"));
  auto res = rules->apply(other);
  ASSERT_FALSE(res.isOk());
  EXPECT_NE(res.status().message().find("'OTHER'"), std::string::npos) << res.status().message();
}

TEST(BridgeRules, RenderedMqttTopicMustBeAName) {
  StringMap cfg = {{"direction", "rocketmq-to-mqtt"}, {"rules", "r"}, {"rule.r.mqtt.topic", "x/${key}"}};
  auto rules = BridgeRules::compile(cfg);
  ASSERT_TRUE(rules.isOk());
  Record r;
  r.topic = "T";
  r.key = Bytes::copyOf(std::string("a/#"));
  EXPECT_FALSE(rules->apply(r).isOk());
}

// Every compile-time mistake is refused with the key it concerns.
TEST(BridgeRules, CompileErrorsNameTheKey) {
  struct Case {
    StringMap change;
    std::vector<std::string> drop;
    std::string key;
  };
  const std::vector<Case> cases = {
      {{{"direction", "sideways"}}, {}, "direction"},
      {{{"rules", ""}}, {}, "rules"},
      {{{"rules", "telemetry,telemetry"}}, {}, "rules"},
      {{}, {"rule.rest.mqtt.filter"}, "rule.rest.mqtt.filter"},
      {{{"rule.rest.mqtt.filter", "a/#/b"}}, {}, "rule.rest.mqtt.filter"},
      {{{"rule.rest.mqtt.filter", "$share/g/a"}}, {}, "rule.rest.mqtt.filter"},
      {{}, {"rule.rest.rocketmq.topic"}, "rule.rest.rocketmq.topic"},
      {{{"rule.rest.rocketmq.topic", "a.b"}}, {}, "rule.rest.rocketmq.topic"},
      {{{"rule.rest.rocketmq.topic", "${bogus}"}}, {}, "rule.rest.rocketmq.topic"},
      {{{"rule.rest.rocketmq.topic", "${tag}"}}, {}, "rule.rest.rocketmq.topic"},
      {{{"rule.telemetry.rocketmq.topic", "${level:4}"}}, {}, "rule.telemetry.rocketmq.topic"},
      {{{"rule.telemetry.rocketmq.tag", "${level:5}"}}, {}, "rule.telemetry.rocketmq.tag"},
      {{{"rule.telemetry.rocketmq.tag", "a||b"}}, {}, "rule.telemetry.rocketmq.tag"},
      {{{"rule.telemetry.mqtt.topic", "x"}}, {}, "rule.telemetry.mqtt.topic"},
      {{{"rule.typo.mqtt.filter", "x"}}, {}, "rule.typo.mqtt.filter"},
      {{{"unmatched", "ignore"}}, {}, "unmatched"},
  };
  for (const auto& c : cases) {
    StringMap cfg = upRules();
    for (const auto& [k, v] : c.change) cfg[k] = v;
    for (const auto& k : c.drop) cfg.erase(k);
    auto r = BridgeRules::compile(cfg);
    ASSERT_FALSE(r.isOk()) << c.key;
    EXPECT_EQ(r.status().message().rfind(c.key + ": ", 0), 0u) << r.status().message();
  }
  StringMap down = {{"direction", "rocketmq-to-mqtt"}, {"rules", "r"}};
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"rule.r.rocketmq.topic", "a/b"}, {"rule.r.mqtt.topic", "a/+/b"},
           {"rule.r.mqtt.topic", "${level:1}"}, {"rule.r.mqtt.filter", "#"}, {"rule.r.rocketmq.tags", "||"}}) {
    StringMap cfg = down;
    cfg[k] = v;
    auto r = BridgeRules::compile(cfg);
    ASSERT_FALSE(r.isOk()) << k << "=" << v;
    EXPECT_EQ(r.status().message().rfind(k + ": ", 0), 0u) << r.status().message();
  }
}

TEST(BridgeRules, TransformDeclaresRulePrefix) {
  MqttRocketMQBridge t;
  auto v = t.configDef().validate(upRules());
  EXPECT_TRUE(v.ok()) << v.summary();
  ASSERT_TRUE(t.configure(upRules()).isOk());
  Record r = mqttRecord("devices/a/telemetry/x");
  ASSERT_TRUE(*t.apply(r));
  EXPECT_EQ(r.topic, "IOT_telemetry");
}

}  // namespace
}  // namespace ferry::connectors::mqttc
