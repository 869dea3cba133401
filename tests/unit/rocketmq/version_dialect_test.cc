// Server versions and the headers that differ between 4.x and 5.x: the MQVersion ordinal ->
// name mapping (ordinals read from MQVersion$Version of the 4.9.7, 5.3.3 and 5.5.0 jars), the
// `version` field read off responses in both header encodings (golden bytes), the client's
// per-connection version cache and probe, and the 4.x / 5.x dialect of DELETE_SUBSCRIPTIONGROUP
// and QUERY_CONSUMER_OFFSET (golden JSON headers, and on the wire through deleteGroup).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "rocketmq/admin.h"
#include "rocketmq/client.h"
#include "rocketmq/remoting.h"
#include "client_test_peer.h"
#include "codec_test_util.h"

namespace ferry::rocketmq {
namespace {

using testing::BeWriter;
using testing::PeerConnection;
using testing::ScriptedPeer;

TEST(RocketmqVersion, OrdinalsNameTheReleases) {
  // Values of MQVersion.Version.X.ordinal() in the Java enum (identical in the three jars).
  EXPECT_EQ(mqVersionName(407), "4.9.7");
  EXPECT_EQ(mqVersionName(479), "5.3.3");
  EXPECT_EQ(mqVersionName(513), "5.5.0");
  EXPECT_EQ(mqVersionName(406), "4.9.7-SNAPSHOT");
  EXPECT_EQ(mqVersionName(409), "4.9.8");
  EXPECT_EQ(mqVersionName(411), "4.9.9");
  EXPECT_EQ(mqVersionName(412), "5.0.0-SNAPSHOT");
  EXPECT_EQ(mqVersionName(413), "5.0.0");
  EXPECT_EQ(mqVersionName(212), "4.0.0-SNAPSHOT");
  EXPECT_EQ(mqVersionName(213), "4.0.0");
  EXPECT_EQ(mqVersionName(611), "5.9.9");
  EXPECT_EQ(mqVersionName(612), "newer than 5.9.9");
  EXPECT_EQ(mqVersionName(15), "3.x");
  EXPECT_EQ(mqVersionName(-1), "unknown");
  EXPECT_EQ(kVersion4_9_7, 407);
  EXPECT_EQ(kVersion5_3_3, 479);
  EXPECT_EQ(kVersion5_5_0, 513);
  EXPECT_TRUE(isV4OrOlder(kVersion4_9_7));
  EXPECT_TRUE(isV4OrOlder(411));
  EXPECT_FALSE(isV4OrOlder(412));
  EXPECT_FALSE(isV4OrOlder(kVersion5_5_0));
}

// A 4.9.7 broker's response as fastjson writes it: version 407.
TEST(RocketmqVersion, ReadOffAJsonResponseHeader) {
  const std::string header =
      R"({"code":0,"extFields":{"offset":"12"},"flag":1,"language":"JAVA","opaque":7,)"
      R"("serializeTypeCurrentRPC":"JSON","version":407})";
  BeWriter frame;
  frame.i32(static_cast<std::int32_t>(4 + header.size())).u32(header.size()).raw(header);
  FrameDecode d = decodeFrame(frame.bytes());
  ASSERT_EQ(d.state, FrameDecode::State::kOk) << d.error;
  EXPECT_EQ(d.command.version, 407);
  EXPECT_EQ(d.command.opaque, 7);
  EXPECT_TRUE(d.command.isResponse());
}

// The same in the ROCKETMQ binary header: version is the int16 after code and language.
TEST(RocketmqVersion, ReadOffABinaryResponseHeader) {
  BeWriter h;
  h.i16(0).u8(0).i16(513).i32(7).i32(1).i32(0).i32(0);  // code, JAVA, version, opaque, flag, remark, ext
  BeWriter frame;
  frame.i32(static_cast<std::int32_t>(4 + h.bytes().size()))
      .u32((1u << 24) | static_cast<std::uint32_t>(h.bytes().size()))
      .raw(h.bytes());
  ASSERT_EQ(h.bytes(),
            testing::fromHex("00 00 00 02 01 00 00 00 07 00 00 00 01 00 00 00 00 00 00 00 00"));
  FrameDecode d = decodeFrame(frame.bytes());
  ASSERT_EQ(d.state, FrameDecode::State::kOk) << d.error;
  EXPECT_EQ(d.type, SerializeType::kRocketmq);
  EXPECT_EQ(d.command.version, 513);
  EXPECT_EQ(encodeBinaryHeader(d.command).substr(0, 5), testing::fromHex("00 00 00 02 01"));
}

std::unique_ptr<RocketmqClient> clientFor(const std::string& ns, SerializeType type) {
  ClientOptions o;
  o.namesrvAddrs = ns;
  o.routeRefreshMs = 0;
  o.serializeType = type;
  auto c = RocketmqClient::create(o);
  EXPECT_TRUE(c.isOk());
  return std::move(c).value();
}

// brokerVersion reads the version off any response on the connection, probes (one
// GET_BROKER_RUNTIME_INFO, whatever it is answered) only when none is known, and forgets it when
// the connection drops.
void checkProbe(SerializeType type) {
  std::int32_t version = kVersion4_9_7;
  std::vector<std::int32_t> codes;
  ScriptedPeer peer([&](PeerConnection& conn, const RemotingCommand& req) {
    peer.update([&] { codes.push_back(req.code); });
    conn.serializeType = type;
    conn.version = version;
    conn.reply(req, req.code == kCodeGetBrokerRuntimeInfo ? 3 : 0);  // "not supported" is fine
  });
  auto client = clientFor(peer.address(), type);
  EXPECT_EQ(client->knownVersion(peer.address()), -1);
  auto v = client->brokerVersion(peer.address());
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(*v, kVersion4_9_7);
  EXPECT_EQ(mqVersionName(*v), "4.9.7");
  ASSERT_TRUE(client->brokerVersion(peer.address()).isOk());  // cached: no second probe
  peer.update([&] { version = kVersion5_5_0; });
  RemotingCommand other;
  other.code = 14;
  ASSERT_TRUE(client->invoke(peer.address(), other).isOk());  // any answer updates it
  EXPECT_EQ(client->knownVersion(peer.address()), kVersion5_5_0);
  client->connection(peer.address())->resetConnection();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (client->knownVersion(peer.address()) != -1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(client->knownVersion(peer.address()), -1);
  auto again = client->brokerVersion(peer.address());
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(*again, kVersion5_5_0);
  ASSERT_TRUE(peer.waitFor([&] { return codes.size() == 3; }));
  EXPECT_EQ(codes, (std::vector<std::int32_t>{kCodeGetBrokerRuntimeInfo, 14, kCodeGetBrokerRuntimeInfo}));
}

TEST(RocketmqVersion, ProbedOncePerConnectionJson) { checkProbe(SerializeType::kJson); }
TEST(RocketmqVersion, ProbedOncePerConnectionBinary) { checkProbe(SerializeType::kRocketmq); }

TEST(RocketmqVersion, UnreachableServerFailsTheProbe) {
  ScriptedPeer peer([](PeerConnection& conn, const RemotingCommand&) { conn.close(); });
  auto client = clientFor(peer.address(), SerializeType::kJson);
  auto v = client->brokerVersion(peer.address());
  EXPECT_FALSE(v.isOk());
}

// Golden headers: what ferry sends to a 4.9.7 and to a 5.x broker.
TEST(RocketmqDialect, DeleteGroupHeaders) {
  RemotingCommand v4 = deleteGroupRequest("billing", kVersion4_9_7);
  EXPECT_EQ(encodeJsonHeader(v4),
            R"({"code":207,"extFields":{"groupName":"billing","removeOffset":"true"},"flag":0,)"
            R"("language":"CPP","opaque":0,"serializeTypeCurrentRPC":"JSON","version":479})");
  RemotingCommand v5 = deleteGroupRequest("billing", kVersion5_5_0);
  EXPECT_EQ(encodeJsonHeader(v5),
            R"({"code":207,"extFields":{"cleanOffset":"true","groupName":"billing"},"flag":0,)"
            R"("language":"CPP","opaque":0,"serializeTypeCurrentRPC":"JSON","version":479})");
  EXPECT_EQ(deleteGroupRequest("g", kVersion5_3_3).extFields,
            (std::map<std::string, std::string>{{"cleanOffset", "true"}, {"groupName", "g"}}));
}

TEST(RocketmqDialect, QueryOffsetHeaders) {
  const MessageQueue q{"orders", "broker-a", 3};
  EXPECT_EQ(encodeJsonHeader(queryGroupOffsetRequest("billing", q, kVersion4_9_7)),
            R"({"code":14,"extFields":{"consumerGroup":"billing","queueId":"3","topic":"orders"},)"
            R"("flag":0,"language":"CPP","opaque":0,"serializeTypeCurrentRPC":"JSON","version":479})");
  EXPECT_EQ(encodeJsonHeader(queryGroupOffsetRequest("billing", q, kVersion5_3_3)),
            R"({"code":14,"extFields":{"consumerGroup":"billing","queueId":"3",)"
            R"("setZeroIfNotFound":"false","topic":"orders"},)"
            R"("flag":0,"language":"CPP","opaque":0,"serializeTypeCurrentRPC":"JSON","version":479})");
}

// Regression: deleteGroup sent 5.x's cleanOffset to every broker; 4.9.7 reads removeOffset and
// kept the group's offsets, so a reset did nothing there.
TEST(RocketmqDialect, DeleteGroupSpeaksTheBrokersVersion) {
  for (std::int32_t brokerVersion : {kVersion4_9_7, kVersion5_5_0}) {
    std::vector<RemotingCommand> deletes;
    ScriptedPeer peer([&](PeerConnection& conn, const RemotingCommand& r) {
      conn.version = brokerVersion;
      const std::string self = peer.address();
      if (r.code == kCodeGetBrokerClusterInfo) {
        conn.reply(r, 0,
                   R"({"brokerAddrTable":{"fake-a":{"brokerAddrs":{0:")" + self +
                       R"("},"brokerName":"fake-a","cluster":"fake"}},)"
                       R"("clusterAddrTable":{"fake":["fake-a"]}})");
      } else if (r.code == kCodeDeleteSubscriptionGroup) {
        peer.update([&] { deletes.push_back(r); });
        conn.reply(r, 0);
      } else {
        conn.reply(r, 3);
      }
    });
    auto client = clientFor(peer.address(), SerializeType::kJson);
    ASSERT_TRUE(deleteGroup(*client, "billing").isOk());
    ASSERT_TRUE(peer.waitFor([&] { return deletes.size() == 1; }));
    const auto& f = deletes[0].extFields;
    const bool v4 = brokerVersion == kVersion4_9_7;
    EXPECT_EQ(f.count("removeOffset"), v4 ? 1u : 0u) << brokerVersion;
    EXPECT_EQ(f.count("cleanOffset"), v4 ? 0u : 1u) << brokerVersion;
    EXPECT_EQ(f.at("groupName"), "billing");
  }
}

}  // namespace
}  // namespace ferry::rocketmq
