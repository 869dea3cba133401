// MQTT codec: known byte layouts from the specification, round trips of every packet type in
// both protocol versions, framing, malformed input, topic validation and matching.
#include "mqtt/codec.h"

#include <gtest/gtest.h>

namespace ferry::mqtt {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

Packet roundTrip(const Packet& p, Version v) {
  auto e = encode(p, v);
  EXPECT_TRUE(e.isOk()) << e.status().toString();
  if (!e.isOk()) return {};
  Frame f = frame(*e);
  EXPECT_EQ(f.state, Frame::State::kOk);
  EXPECT_EQ(f.size, e->size());
  auto d = decode(*e, v);
  EXPECT_TRUE(d.isOk()) << d.status().toString();
  return d.isOk() ? *d : Packet{};
}

TEST(MqttVarint, SpecExamples) {
  // §1.5.5: 0, 127 one byte; 128, 16383 two; 16384 three; 268,435,455 four.
  for (auto [v, n] : std::initializer_list<std::pair<std::uint32_t, std::size_t>>{
           {0, 1}, {127, 1}, {128, 2}, {16383, 2}, {16384, 3}, {2097151, 3}, {2097152, 4}, {kMaxVarint, 4}}) {
    std::string s;
    appendVarint(s, v);
    EXPECT_EQ(s.size(), n) << v;
  }
  std::string s;
  appendVarint(s, 321);
  EXPECT_EQ(s, bytes({0xC1, 0x02}));
}

TEST(MqttCodec, ConnectV311MatchesTheSpecLayout) {
  Packet c;
  c.type = PacketType::kConnect;
  c.version = Version::k311;
  c.clientId = "ab";
  c.keepAliveS = 10;
  c.cleanStart = true;
  c.username = "u";
  c.password = std::string("p\0w", 3);
  auto e = encode(c, Version::k311);
  ASSERT_TRUE(e.isOk());
  EXPECT_EQ(*e, bytes({0x10, 22, 0, 4, 'M', 'Q', 'T', 'T', 4, 0xC2, 0, 10, 0, 2, 'a', 'b', 0, 1, 'u', 0, 3,
                       'p', 0, 'w'}));
  EXPECT_EQ(roundTrip(c, Version::k311), c);
}

TEST(MqttCodec, ConnectV5WithPropertiesAndWill) {
  Packet c;
  c.type = PacketType::kConnect;
  c.version = Version::k5;
  c.clientId = "ferry-1";
  c.cleanStart = false;
  c.properties.setNumber(prop::kSessionExpiry, 3600);
  c.properties.setNumber(prop::kReceiveMaximum, 1000);
  c.hasWill = true;
  c.willTopic = "status/ferry";
  c.willPayload = "offline";
  c.willQos = 1;
  c.willRetain = true;
  c.willProperties.setNumber(prop::kWillDelay, 5);
  auto back = roundTrip(c, Version::k311);  // CONNECT carries its own version
  EXPECT_EQ(back, c);
  EXPECT_EQ(back.properties.number(prop::kSessionExpiry), 3600u);
}

TEST(MqttCodec, PublishEveryQosBothVersions) {
  for (Version v : {Version::k311, Version::k5}) {
    for (std::uint8_t q = 0; q <= 2; ++q) {
      Packet p;
      p.type = PacketType::kPublish;
      p.topic = "sensors/1/temp";
      p.payload = std::string("\0\x01\x02{\"t\":21}\xff", 13);
      p.qos = q;
      p.packetId = q ? 777 : 0;
      p.retain = q == 1;
      p.dup = q == 2;
      if (v == Version::k5) {
        p.properties.addUser("trace", "abc");
        p.properties.addUser("trace", "def");  // repeated names are kept in order
        p.properties.setText(prop::kContentType, "application/json");
        p.properties.setNumber(prop::kSubscriptionId, 300);
      }
      EXPECT_EQ(roundTrip(p, v), p) << "v" << static_cast<int>(v) << " qos " << int(q);
    }
  }
  Packet p;
  p.type = PacketType::kPublish;
  p.topic = "a/b";
  p.payload = "x";
  auto e = encode(p, Version::k311);
  ASSERT_TRUE(e.isOk());
  EXPECT_EQ(*e, bytes({0x30, 6, 0, 3, 'a', '/', 'b', 'x'}));
}

TEST(MqttCodec, AcksSubscribeAndTheRest) {
  for (Version v : {Version::k311, Version::k5}) {
    for (PacketType t : {PacketType::kPuback, PacketType::kPubrec, PacketType::kPubrel, PacketType::kPubcomp}) {
      Packet a;
      a.type = t;
      a.packetId = 65535;
      if (v == Version::k5) a.reasonCode = 0x10;
      EXPECT_EQ(roundTrip(a, v), a) << packetTypeName(t);
    }
    Packet s;
    s.type = PacketType::kSubscribe;
    s.packetId = 9;
    s.subscriptions = {{"a/+/c", 1, false, false, 0}, {"$share/g1/d/#", 2, false, false, 0}};
    if (v == Version::k5) {
      s.subscriptions[0].noLocal = true;
      s.subscriptions[1].retainHandling = 2;
      s.properties.setNumber(prop::kSubscriptionId, 42);
    }
    EXPECT_EQ(roundTrip(s, v), s);
    Packet sa;
    sa.type = PacketType::kSuback;
    sa.packetId = 9;
    sa.reasonCodes = {1, 0x80};
    EXPECT_EQ(roundTrip(sa, v), sa);
    Packet u;
    u.type = PacketType::kUnsubscribe;
    u.packetId = 10;
    u.subscriptions = {{"a/+/c"}};
    EXPECT_EQ(roundTrip(u, v), u);
    for (PacketType t : {PacketType::kPingreq, PacketType::kPingresp, PacketType::kDisconnect}) {
      Packet x;
      x.type = t;
      EXPECT_EQ(roundTrip(x, v), x);
    }
    Packet ca;
    ca.type = PacketType::kConnack;
    ca.sessionPresent = true;
    ca.reasonCode = v == Version::k5 ? 0x87 : 5;
    if (v == Version::k5) ca.properties.setText(prop::kReasonString, "not authorized");
    EXPECT_EQ(roundTrip(ca, v), ca);
  }
  Packet ack;
  ack.type = PacketType::kPuback;
  ack.packetId = 0x1234;
  EXPECT_EQ(*encode(ack, Version::k5), bytes({0x40, 2, 0x12, 0x34}));  // reason 0, no props: short form
  Packet rel;
  rel.type = PacketType::kPubrel;
  rel.packetId = 1;
  EXPECT_EQ(*encode(rel, Version::k311), bytes({0x62, 2, 0, 1}));
}

TEST(MqttCodec, EncodeRefusesWhatTheWireCannotCarry) {
  Packet p;
  p.type = PacketType::kPublish;
  p.topic = "t";
  p.qos = 1;  // no packet id
  EXPECT_FALSE(encode(p, Version::k311).isOk());
  p.packetId = 1;
  p.qos = 3;
  EXPECT_FALSE(encode(p, Version::k311).isOk());
  p.qos = 0;
  p.topic = std::string(70000, 'a');
  EXPECT_FALSE(encode(p, Version::k311).isOk());
  Packet s;
  s.type = PacketType::kSubscribe;
  s.packetId = 1;
  EXPECT_FALSE(encode(s, Version::k5).isOk());  // no filter
  Packet auth;
  auth.type = PacketType::kAuth;
  EXPECT_FALSE(encode(auth, Version::k311).isOk());
  Packet c;
  c.type = PacketType::kConnect;
  c.password = "p";  // 3.1.1: password without username
  EXPECT_FALSE(encode(c, Version::k311).isOk());
}

TEST(MqttFrame, NeedMoreOkAndInvalid) {
  EXPECT_EQ(frame("").state, Frame::State::kNeedMore);
  EXPECT_EQ(frame(bytes({0x30})).state, Frame::State::kNeedMore);
  EXPECT_EQ(frame(bytes({0x30, 0x80})).state, Frame::State::kNeedMore);   // length continues
  EXPECT_EQ(frame(bytes({0x30, 3, 0, 1})).state, Frame::State::kNeedMore);  // body short
  auto ok = frame(bytes({0xC0, 0, 0x30}));
  EXPECT_EQ(ok.state, Frame::State::kOk);
  EXPECT_EQ(ok.size, 2u);
  EXPECT_EQ(frame(bytes({0x30, 0xFF, 0xFF, 0xFF, 0xFF, 1})).state, Frame::State::kInvalid);
  auto big = frame(bytes({0x30, 0xFF, 0xFF, 0x7F}), 1024);
  EXPECT_EQ(big.state, Frame::State::kInvalid);
  EXPECT_NE(big.error.find("over the limit"), std::string::npos);
}

TEST(MqttDecode, MalformedPacketsAreRefusedWithAReason) {
  auto expectBad = [](const std::string& b, Version v, const char* needle) {
    auto d = decode(b, v);
    ASSERT_FALSE(d.isOk()) << "accepted " << needle;
    EXPECT_NE(d.status().message().find(needle), std::string::npos) << d.status().toString();
  };
  expectBad(bytes({0x00, 0}), Version::k311, "reserved packet type");
  expectBad(bytes({0x41, 2, 0, 1}), Version::k311, "reserved flags");
  expectBad(bytes({0x36, 3, 0, 1, 'a'}), Version::k311, "QoS 3");
  expectBad(bytes({0x32, 3, 0, 1, 'a'}), Version::k311, "truncated");
  expectBad(bytes({0x32, 5, 0, 1, 'a', 0, 0}), Version::k311, "packet id 0");
  expectBad(bytes({0x30, 4, 0, 2, 'a', '+'}), Version::k311, "wildcard");
  expectBad(bytes({0x30, 4, 0, 3, 'a', '/'}), Version::k311, "runs past");
  expectBad(bytes({0x30, 6, 0, 3, 'a', '/', 'b'}), Version::k311, "length");
  expectBad(bytes({0x30, 4, 0, 1, 'a', 5}), Version::k5, "properties");                 // props run past
  expectBad(bytes({0x30, 6, 0, 1, 'a', 2, 0x7E, 0}), Version::k5, "unknown property");  // id 0x7E
  expectBad(bytes({0x82, 3, 0, 1, 0}), Version::k311, "truncated");
  expectBad(bytes({0x82, 2, 0, 1}), Version::k311, "no topic filter");
  expectBad(bytes({0x82, 6, 0, 1, 0, 1, 'a', 3}), Version::k311, "QoS 3");
  expectBad(bytes({0xF0, 0}), Version::k311, "AUTH");
  expectBad(bytes({0x10, 6, 0, 4, 'M', 'Q', 'T', 'X'}), Version::k311, "truncated");
  expectBad(bytes({0x10, 10, 0, 4, 'M', 'Q', 'T', 'X', 4, 2, 0, 10}), Version::k311, "protocol name");
  expectBad(bytes({0x10, 10, 0, 4, 'M', 'Q', 'T', 'T', 3, 2, 0, 10}), Version::k311, "protocol level");
  expectBad(bytes({0xC0, 1, 0}), Version::k311, "trailing");
}

TEST(MqttTopics, Validation) {
  EXPECT_TRUE(validateTopicName("sensors/1/temp").isOk());
  EXPECT_TRUE(validateTopicName("/").isOk());
  EXPECT_FALSE(validateTopicName("").isOk());
  EXPECT_FALSE(validateTopicName("a/+").isOk());
  EXPECT_FALSE(validateTopicName(std::string("a\0b", 3)).isOk());
  EXPECT_FALSE(validateTopicName("\xC3").isOk());  // truncated UTF-8
  EXPECT_TRUE(validateTopicName("caf\xC3\xA9").isOk());
  for (const char* ok : {"#", "+", "a/#", "+/+/#", "a/+/c", "/+", "+/"}) EXPECT_TRUE(validateTopicFilter(ok).isOk()) << ok;
  for (const char* bad : {"a#", "a/#/b", "a+/b", "a/b+", "##", ""}) EXPECT_FALSE(validateTopicFilter(bad).isOk()) << bad;
}

TEST(MqttTopics, SharedSubscriptions) {
  auto s = parseShared("$share/workers/sensors/+/data");
  ASSERT_TRUE(s.isOk());
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ((*s)->first, "workers");
  EXPECT_EQ((*s)->second, "sensors/+/data");
  auto plain = parseShared("sensors/#");
  ASSERT_TRUE(plain.isOk());
  EXPECT_FALSE(plain->has_value());
  EXPECT_FALSE(parseShared("$share/").isOk());
  EXPECT_FALSE(parseShared("$share/g").isOk());
  EXPECT_FALSE(parseShared("$share/g+/a").isOk());
  EXPECT_FALSE(parseShared("$share/g/a#").isOk());
}

TEST(MqttTopics, MatchingFollowsTheSpecExamples) {
  struct Case { const char* filter; const char* topic; bool match; };
  for (const Case& c : std::initializer_list<Case>{
           {"sport/tennis/player1/#", "sport/tennis/player1", true},
           {"sport/tennis/player1/#", "sport/tennis/player1/ranking", true},
           {"sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", true},
           {"sport/#", "sport", true},
           {"#", "anything/at/all", true},
           {"sport/tennis/+", "sport/tennis/player1", true},
           {"sport/tennis/+", "sport/tennis/player1/ranking", false},
           {"sport/+", "sport", false},
           {"sport/+", "sport/", true},
           {"+/+", "/finance", true},
           {"/+", "/finance", true},
           {"+", "/finance", false},
           {"#", "$SYS/broker/uptime", false},
           {"+/monitor/Clients", "$SYS/monitor/Clients", false},
           {"$SYS/#", "$SYS/monitor/Clients", true},
           {"$SYS/monitor/+", "$SYS/monitor/Clients", true},
           {"a/b", "a/b", true},
           {"a/b", "a/bc", false},
           {"a/b/c", "a/b", false},
           {"$share/g/sensors/+", "sensors/7", true},
       }) {
    EXPECT_EQ(topicMatches(c.filter, c.topic), c.match) << c.filter << " vs " << c.topic;
  }
}

TEST(MqttCodec, UnvalidatedPublishReadsWhatDecodeRefuses) {
  // QoS 1, topic "a/+" (a wildcard: decode refuses it), id 0x0102, v5 properties (none), "hi".
  const std::string pkt("\x32\x0a\x00\x03" "a/+" "\x01\x02\x00" "hi", 12);
  EXPECT_FALSE(decode(pkt, Version::k5).isOk());
  auto p = decodeUnvalidatedPublish(pkt, Version::k5);
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_EQ(p->topic, "a/+");
  EXPECT_EQ(p->qos, 1);
  EXPECT_EQ(p->packetId, 0x0102);
  EXPECT_EQ(p->payload, "hi");
  // Unreadable properties: still acknowledgeable, the payload left empty.
  const std::string badProps("\x32\x09\x00\x03" "a/b" "\x00\x07\x05\x05", 11);
  auto q = decodeUnvalidatedPublish(badProps, Version::k5);
  ASSERT_TRUE(q.isOk()) << q.status().toString();
  EXPECT_EQ(q->packetId, 7);
  EXPECT_TRUE(q->payload.empty());
  // What cannot be taken: QoS 3, a topic length past the end, packet id 0, not a PUBLISH.
  EXPECT_FALSE(decodeUnvalidatedPublish(std::string("\x36\x05\x00\x01" "a\x00\x01", 7), Version::k311).isOk());
  EXPECT_FALSE(decodeUnvalidatedPublish(std::string("\x32\x04\x00\x09" "ab", 6), Version::k311).isOk());
  EXPECT_FALSE(decodeUnvalidatedPublish(std::string("\x32\x05\x00\x01" "a\x00\x00", 7), Version::k311).isOk());
  EXPECT_FALSE(decodeUnvalidatedPublish(std::string("\x40\x02\x00\x01", 4), Version::k311).isOk());
}

}  // namespace
}  // namespace ferry::mqtt
