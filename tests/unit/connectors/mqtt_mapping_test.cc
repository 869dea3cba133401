// MQTT connectors' pure mapping: server URIs, client options, message -> record, topic templates,
// record -> message, shared subscription filters.
#include "connectors/mqtt/mqtt_mapping.h"

#include <gtest/gtest.h>

namespace ferry::connectors::mqttc {
namespace {

TEST(MqttMapping, ServerUris) {
  auto a = parseServerUri("tcp://127.0.0.1:18830");
  ASSERT_TRUE(a.isOk());
  EXPECT_FALSE(a->tls);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 18830);
  auto b = parseServerUri("ssl://broker.local");
  ASSERT_TRUE(b.isOk());
  EXPECT_TRUE(b->tls);
  EXPECT_EQ(b->port, 8883);
  EXPECT_EQ(parseServerUri("mqtt://h")->port, 1883);
  EXPECT_FALSE(parseServerUri("127.0.0.1:1883").isOk());
  EXPECT_FALSE(parseServerUri("http://h:1").isOk());
  EXPECT_FALSE(parseServerUri("tcp://h:0").isOk());
  EXPECT_FALSE(parseServerUri("tcp://h:99999").isOk());
  EXPECT_FALSE(parseServerUri("tcp://:1883").isOk());
}

TEST(MqttMapping, ClientOptionsFromKeys) {
  ConfigDef d;
  defineConnectionKeys(d);
  auto p = d.parse({{"mqtt.server.uri", "ssl://localhost:18832"}, {"mqtt.version", "3.1.1"},
                    {"mqtt.username", "ferry"}, {"mqtt.password", "s"}, {"mqtt.ssl.ca.file", "/ca.pem"},
                    {"mqtt.max.inflight", "50"}},
                   false);
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  auto o = clientOptions(*p, "ferry-c", "-3");
  ASSERT_TRUE(o.isOk());
  EXPECT_EQ(o->clientId, "ferry-c-3");
  EXPECT_EQ(o->version, mqtt::Version::k311);
  EXPECT_TRUE(o->tls.enabled);
  EXPECT_EQ(o->tls.caFile, "/ca.pem");
  EXPECT_FALSE(o->cleanStart);  // persistent sessions by default
  EXPECT_EQ(o->username, std::optional<std::string>("ferry"));
  EXPECT_EQ(o->receiveMaximum, 50);
  EXPECT_EQ(o->maxInflight, 50u);
}

TEST(MqttMapping, MessageToRecord) {
  mqtt::IncomingMessage m;
  m.topic = "sensors/7/temp";
  m.payload = std::string("\0{\"t\":1}", 8);
  m.qos = 1;
  m.retain = true;
  m.properties.setText(mqtt::prop::kContentType, "application/json");
  m.properties.addUser("site", "north");
  Record r = recordFromMessage(m, {});
  EXPECT_EQ(r.topic, "sensors/7/temp");
  EXPECT_EQ(r.value.str(), m.payload);
  EXPECT_EQ(r.key.str(), "sensors/7/temp");
  EXPECT_EQ(r.headers.last(kHeaderQos)->value.str(), "1");
  EXPECT_EQ(r.headers.last(kHeaderRetain)->value.str(), "true");
  EXPECT_EQ(r.headers.last(kHeaderContentType)->value.str(), "application/json");
  EXPECT_EQ(r.headers.last("site")->value.str(), "north");
  EXPECT_FALSE(r.headers.has(kHeaderDup));
  Record fixed = recordFromMessage(m, {"iot", false});
  EXPECT_EQ(fixed.topic, "iot");
  EXPECT_TRUE(fixed.key.isNull());
}

TEST(MqttMapping, TopicTemplates) {
  Record r;
  r.topic = "orders";
  r.key = Bytes(std::string("dev-9"));
  r.headers.add("region", std::string_view("eu"));
  auto t = TopicTemplate::parse("out/${header:region}/${key}/${topic}");
  ASSERT_TRUE(t.isOk());
  EXPECT_EQ(*t->render(r), "out/eu/dev-9/orders");
  EXPECT_EQ(*TopicTemplate::parse("fixed/topic")->render(r), "fixed/topic");
  EXPECT_FALSE(TopicTemplate::parse("a/${nope}").isOk());
  EXPECT_FALSE(TopicTemplate::parse("a/${topic").isOk());
  EXPECT_FALSE(TopicTemplate::parse("").isOk());
  Record noKey;
  noKey.topic = "t";
  EXPECT_FALSE(TopicTemplate::parse("${key}")->render(noKey).isOk());
  EXPECT_FALSE(TopicTemplate::parse("${header:missing}")->render(r).isOk());
  Record wild;
  wild.topic = "a/+";
  auto bad = TopicTemplate::parse("${topic}")->render(wild);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("wildcard"), std::string::npos) << bad.status().toString();
}

TEST(MqttMapping, RecordToMessage) {
  Record r;
  r.value = Bytes(std::string("payload"));
  r.headers.add(kHeaderTopic, std::string_view("ignored/as/property"));
  r.headers.add(kHeaderContentType, std::string_view("text/plain"));
  r.headers.add("trace", std::string_view("t-1"));
  auto m = messageFromRecord(r, "dest/1", {2, false, true});
  EXPECT_EQ(m.topic, "dest/1");
  EXPECT_EQ(m.payload, "payload");
  EXPECT_EQ(m.qos, 2);
  EXPECT_FALSE(m.retain);
  EXPECT_EQ(m.properties.text(mqtt::prop::kContentType), std::optional<std::string>("text/plain"));
  auto users = m.properties.userProperties();
  ASSERT_EQ(users.size(), 1u);  // mqtt.* headers are not user properties
  EXPECT_EQ(users[0].first, "trace");
  r.headers.add(kHeaderRetain, std::string_view("true"));
  EXPECT_TRUE(messageFromRecord(r, "d", {}).retain);
  EXPECT_TRUE(messageFromRecord(r, "d", {1, false, false}).properties.userProperties().empty());
}

TEST(MqttMapping, SharedFilters) {
  auto plain = subscriptionFilters({"a/+", "b/#"}, "");
  ASSERT_TRUE(plain.isOk());
  EXPECT_EQ(*plain, (std::vector<std::string>{"a/+", "b/#"}));
  auto shared = subscriptionFilters({"a/+", "$share/x/b/#"}, "g");
  ASSERT_TRUE(shared.isOk());
  EXPECT_EQ(*shared, (std::vector<std::string>{"$share/g/a/+", "$share/x/b/#"}));
  EXPECT_FALSE(subscriptionFilters({"a/#/b"}, "").isOk());
  EXPECT_FALSE(subscriptionFilters({"a"}, "g/h").isOk());
  EXPECT_FALSE(subscriptionFilters({}, "").isOk());
}

}  // namespace
}  // namespace ferry::connectors::mqttc
