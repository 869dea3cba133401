// ACL signing: HMAC-SHA1 known answers (RFC 2202) and a request signature computed independently
// (Python's hmac module: values of the sorted extFields, then the body).
#include "rocketmq/acl.h"

#include <gtest/gtest.h>

#include <vector>

#include "rocketmq/client.h"
#include "rocketmq/consumer.h"
#include "client_test_peer.h"

namespace ferry::rocketmq {
namespace {

TEST(Acl, HmacSha1KnownAnswers) {
  EXPECT_EQ(hmacSha1Base64(std::string(20, '\x0b'), "Hi There"), "thcxhlUFcmTii8C2+zeMjvFGvgA=");
  EXPECT_EQ(hmacSha1Base64("Jefe", "what do ya want for nothing?"), "7/zfauXrL6LSdBbV8YTfnCWafHk=");
}

TEST(Acl, SignsSortedValuesAndBody) {
  RemotingCommand req;
  req.code = 14;
  req.extFields = {{"topic", "T"}, {"queueId", "3"}, {"consumerGroup", "g"}};
  req.body = std::string("\0body\x01", 6);
  signRequest(req, AclCredentials{"ferryAdmin", "ferrySecret12345", ""});
  EXPECT_EQ(req.extFields.at("AccessKey"), "ferryAdmin");
  EXPECT_EQ(req.extFields.at("Signature"), "ozdYVlh1VLStj1LKw5t5bb9zcu8=");
  EXPECT_EQ(req.extFields.count("SecurityToken"), 0u);
  // Signing again (a retried request) gives the same signature: the old one is not signed.
  signRequest(req, AclCredentials{"ferryAdmin", "ferrySecret12345", ""});
  EXPECT_EQ(req.extFields.at("Signature"), "ozdYVlh1VLStj1LKw5t5bb9zcu8=");
  // Another secret, another body or a changed field change it.
  RemotingCommand other = req;
  signRequest(other, AclCredentials{"ferryAdmin", "wrong", ""});
  EXPECT_NE(other.extFields.at("Signature"), req.extFields.at("Signature"));
  other = req;
  other.extFields["queueId"] = "4";
  signRequest(other, AclCredentials{"ferryAdmin", "ferrySecret12345", ""});
  EXPECT_NE(other.extFields.at("Signature"), req.extFields.at("Signature"));
}

TEST(Acl, SecurityTokenIsSignedToo) {
  RemotingCommand a, b;
  a.extFields = b.extFields = {{"topic", "T"}};
  signRequest(a, AclCredentials{"ak", "sk", ""});
  signRequest(b, AclCredentials{"ak", "sk", "token"});
  EXPECT_EQ(b.extFields.at("SecurityToken"), "token");
  EXPECT_NE(a.extFields.at("Signature"), b.extFields.at("Signature"));
}

TEST(Acl, DisabledWithoutAccessKey) {
  RemotingCommand req;
  req.extFields = {{"topic", "T"}};
  signRequest(req, AclCredentials{});
  EXPECT_EQ(req.extFields.size(), 1u);
}

// The client signs what it sends (sync and oneway alike) and a NO_PERMISSION refusal names the
// access key next to the broker's reason; without keys nothing is added and the error says so.
TEST(Acl, ClientSignsEveryRequestAndNamesTheKeyOnRefusal) {
  std::vector<RemotingCommand> seen;  // guarded by the peer's update()
  testing::ScriptedPeer peer([&](testing::PeerConnection& conn, const RemotingCommand& req) {
    peer.update([&] { seen.push_back(req); });
    if (!req.isOneway()) conn.reply(req, 16, {}, {});
  });
  auto run = [&](const std::string& ak, const std::string& sk) {
    ClientOptions o;
    o.namesrvAddrs = peer.address();
    o.routeRefreshMs = 0;
    o.accessKey = ak;
    o.secretKey = sk;
    auto c = RocketmqClient::create(o);
    EXPECT_TRUE(c.isOk());
    RemotingCommand req;
    req.code = 17;
    req.extFields = {{"topic", "T"}, {"perm", "6"}};
    req.body = "payload";
    RemotingCommand oneway = req;
    oneway.flag = kFlagOneway;
    (*c)->invokeOneway(peer.address(), oneway);
    return (*c)->invoke(peer.address(), req);
  };

  auto refused = run("ferryAdmin", "ferrySecret12345");
  ASSERT_TRUE(refused.isOk()) << refused.status().toString();
  const std::string msg = responseStatus(*refused, "create topic").toString();
  EXPECT_NE(msg.find("NO_PERMISSION"), std::string::npos) << msg;
  EXPECT_NE(msg.find("access key 'ferryAdmin'"), std::string::npos) << msg;
  ASSERT_TRUE(peer.waitFor([&] { return seen.size() == 2; }));
  for (const RemotingCommand& got : seen) {
    EXPECT_EQ(got.extFields.at("AccessKey"), "ferryAdmin");
    std::map<std::string, std::string> unsigned_ = got.extFields;
    unsigned_.erase("Signature");
    EXPECT_EQ(got.extFields.at("Signature"),
              aclSignature(unsigned_, got.body, "ferrySecret12345"));
  }

  peer.update([&] { seen.clear(); });
  auto anonymous = run("", "");
  ASSERT_TRUE(anonymous.isOk());
  const std::string msg2 = responseStatus(*anonymous, "create topic").toString();
  EXPECT_NE(msg2.find("no access key configured"), std::string::npos) << msg2;
  ASSERT_TRUE(peer.waitFor([&] { return seen.size() == 2; }));
  for (const RemotingCommand& got : seen) {
    EXPECT_EQ(got.extFields.count("AccessKey"), 0u);
    EXPECT_EQ(got.extFields.count("Signature"), 0u);
  }
}

// A consumer whose heartbeat a 4.x broker refuses (1 SYSTEM_ERROR + AclException) fails to start
// with a non-retriable error naming the key and SUB; it was "no broker accepted the heartbeat"
// (Unavailable), so a source task with wrong keys restarted forever.
TEST(Acl, ConsumerStartRefusedByV4AclIsNotRetriable) {
  testing::ScriptedPeer peer([&](testing::PeerConnection& conn, const RemotingCommand& req) {
    conn.version = kVersion4_9_7;
    if (req.code == kCodeGetRouteInfoByTopic) {
      conn.reply(req, 0,
                 R"({"brokerDatas":[{"brokerAddrs":{0:")" + peer.address() +
                     R"("},"brokerName":"fake-a","cluster":"fake"}],"queueDatas":[)"
                     R"({"brokerName":"fake-a","perm":6,"readQueueNums":1,"writeQueueNums":1}]})");
    } else {
      conn.reply(req, 1, {}, {},
                 std::string("org.apache.rocketmq.acl.common.AclException: Check signature failed "
                             "for accessKey=ferryReader, org.apache.rocketmq.acl.plain."
                             "PlainPermissionManager.validate(PlainPermissionManager.java:683)"));
    }
  });
  ClientOptions o;
  o.namesrvAddrs = peer.address();
  o.routeRefreshMs = 0;
  o.accessKey = "ferryReader";
  o.secretKey = "wrong";
  auto client = RocketmqClient::create(o);
  ASSERT_TRUE(client.isOk());
  ConsumerOptions co;
  co.group = "g";
  co.subscriptions = {{"orders", "*"}};
  PullConsumer consumer(**client, co);
  Status s = consumer.start();
  ASSERT_FALSE(s.isOk());
  EXPECT_FALSE(s.isRetriable()) << s.toString();
  EXPECT_NE(s.message().find("access key 'ferryReader'"), std::string::npos) << s.toString();
  EXPECT_NE(s.message().find("needs SUB permission"), std::string::npos) << s.toString();
  consumer.close();
}

}  // namespace
}  // namespace ferry::rocketmq
