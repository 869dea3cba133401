// Route and cluster-info parsing from canned NameServer bodies, the derived queue sets, and
// queryRoute / createTopic against a scripted NameServer + broker.
#include <gtest/gtest.h>

#include <set>

#include "rocketmq/client.h"
#include "rocketmq/routes.h"
#include "client_test_peer.h"
#include "producer_fake_broker.h"  // clientFor

namespace ferry::rocketmq {
namespace {

using testing::clientFor;
using testing::PeerConnection;
using testing::ScriptedPeer;

// fastjson default output (bare integer keys), as a < 4.9.4 NameServer writes it.
const char* kFastjsonRoute =
    R"({"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},)"
    R"("brokerName":"broker-b","cluster":"DefaultCluster","enableActingMaster":false},)"
    R"({"brokerAddrs":{0:"127.0.0.1:20911"},"brokerName":"broker-a","cluster":"DefaultCluster"},)"
    R"({"brokerAddrs":{1:"127.0.0.1:30921"},"brokerName":"broker-c","cluster":"DefaultCluster"}],)"
    R"("filterServerTable":{},)"
    R"("queueDatas":[{"brokerName":"broker-b","perm":6,"readQueueNums":2,"topicSysFlag":0,)"
    R"("writeQueueNums":3},)"
    R"({"brokerName":"broker-a","perm":6,"readQueueNums":2,"topicSynFlag":0,"writeQueueNums":2},)"
    R"({"brokerName":"broker-c","perm":6,"readQueueNums":1,"writeQueueNums":1},)"
    R"({"brokerName":"broker-d","perm":4,"readQueueNums":1,"writeQueueNums":"1"}]})";

TEST(RocketmqRoutes, ParsesFastjsonRoute) {
  auto r = parseTopicRoute("T", kFastjsonRoute);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->brokerDatas.size(), 3u);
  EXPECT_EQ(r->brokerDatas[0].brokerName, "broker-b");
  EXPECT_EQ(r->brokerDatas[0].brokerAddrs.at(1), "127.0.0.1:10921");
  EXPECT_EQ(r->masterAddress("broker-b"), std::optional<std::string>("127.0.0.1:10911"));
  EXPECT_EQ(r->masterAddress("broker-c"), std::nullopt);
  ASSERT_EQ(r->queueDatas.size(), 4u);
  EXPECT_EQ(r->queueDatas[3].writeQueueNums, 1);  // number given as a string
  EXPECT_FALSE(r->staticQueueMapping);

  // Publish: writable (perm & 2) with a master, sorted by broker name: a0 a1 b0 b1 b2.
  auto pub = r->publishQueues();
  ASSERT_EQ(pub.size(), 5u);
  EXPECT_EQ(pub[0], (MessageQueue{"T", "broker-a", 0}));
  EXPECT_EQ(pub[1], (MessageQueue{"T", "broker-a", 1}));
  EXPECT_EQ(pub[4], (MessageQueue{"T", "broker-b", 2}));
  // Subscribe: readable, no master needed: a0 a1 b0 b1 c0 d0.
  auto sub = r->subscribeQueues();
  EXPECT_EQ(sub.size(), 6u);
}

TEST(RocketmqRoutes, StandardJsonAndOrderTopicConf) {
  auto r = parseTopicRoute(
      "O", R"({"brokerDatas":[{"brokerAddrs":{"0":"h:1"},"brokerName":"x","cluster":"c"}],)"
           R"("orderTopicConf":"x:2;y:1","queueDatas":[]})");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  auto pub = r->publishQueues();
  ASSERT_EQ(pub.size(), 3u);
  EXPECT_EQ(pub[2], (MessageQueue{"O", "y", 0}));
  EXPECT_EQ(r->masterAddress("x"), std::optional<std::string>("h:1"));
}

TEST(RocketmqRoutes, RejectsGarbage) {
  EXPECT_FALSE(parseTopicRoute("T", "not json").isOk());
  EXPECT_FALSE(parseTopicRoute("T", "[1,2]").isOk());
}

TEST(RocketmqRoutes, ParsesClusterInfo) {
  auto c = parseClusterInfo(
      R"({"brokerAddrTable":{"b1":{"brokerAddrs":{0:"127.0.0.1:1"},"brokerName":"b1",)"
      R"("cluster":"c1"},"b2":{"brokerAddrs":{0:"127.0.0.1:2",1:"127.0.0.1:3"},)"
      R"("brokerName":"b2","cluster":"c1"}},"clusterAddrTable":{"c1":["b2","b1"]}})");
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->clusters.at("c1"), (std::vector<std::string>{"b1", "b2"}));
  EXPECT_EQ(c->brokers.at("b2").master(), std::optional<std::string>("127.0.0.1:2"));
}

// A peer that is both NameServer and broker: routes point at itself.
struct FakeCluster {
  std::mutex mu;
  std::set<std::string> topics{"known"};
  std::map<std::string, int> created;
  int routeQueries = 0;
  std::unique_ptr<ScriptedPeer> peer;

  FakeCluster() {
    peer = std::make_unique<ScriptedPeer>([this](PeerConnection& conn, const RemotingCommand& r) {
      std::lock_guard lock(mu);
      const std::string self = peer->address();
      if (r.code == kCodeGetRouteInfoByTopic) {
        ++routeQueries;
        std::string topic = r.ext("topic").value_or("");
        if (topics.count(topic) == 0) {
          RemotingCommand resp;
          resp.code = 17;
          resp.opaque = r.opaque;
          resp.flag = kFlagResponse;
          resp.remark = "No topic route info in name server for the topic: " + topic;
          conn.send(resp);
          return;
        }
        int n = created.count(topic) ? created[topic] : 4;
        conn.reply(r, 0,
                   R"({"brokerDatas":[{"brokerAddrs":{0:")" + self +
                       R"("},"brokerName":"fake-a","cluster":"fake"}],"queueDatas":[)" +
                       R"({"brokerName":"fake-a","perm":6,"readQueueNums":)" + std::to_string(n) +
                       R"(,"writeQueueNums":)" + std::to_string(n) + "}]}");
      } else if (r.code == kCodeGetBrokerClusterInfo) {
        conn.reply(r, 0,
                   R"({"brokerAddrTable":{"fake-a":{"brokerAddrs":{0:")" + self +
                       R"("},"brokerName":"fake-a","cluster":"fake"}},)"
                       R"("clusterAddrTable":{"fake":["fake-a"]}})");
      } else if (r.code == kCodeUpdateAndCreateTopic) {
        std::string topic = r.ext("topic").value_or("");
        topics.insert(topic);
        created[topic] = static_cast<int>(r.extInt("writeQueueNums").value_or(-1));
        conn.reply(r, r.ext("perm") == std::optional<std::string>("6") &&
                              r.ext("defaultTopic") == std::optional<std::string>("TBW102")
                          ? 0
                          : 1);
      } else {
        conn.reply(r, 3);
      }
    });
  }
};

TEST(RocketmqRoutes, QueryRouteCachesAndMapsTopicNotExist) {
  FakeCluster fake;
  auto client = clientFor(fake.peer->address());
  auto r = client->queryRoute("known");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->publishQueues().size(), 4u);
  ASSERT_TRUE(client->queryRoute("known").isOk());
  {
    std::lock_guard lock(fake.mu);
    EXPECT_EQ(fake.routeQueries, 1);  // second answer came from the cache
  }
  auto b = client->brokerAddress("fake-a");
  ASSERT_TRUE(b.isOk());
  EXPECT_EQ(*b, fake.peer->address());
  auto missing = client->queryRoute("missing");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("No topic route"), std::string::npos);
}

TEST(RocketmqRoutes, SecondNameServerIsTriedWhenFirstIsDown) {
  FakeCluster fake;
  std::string dead;
  {
    ScriptedPeer probe([](PeerConnection&, const RemotingCommand&) {});
    dead = probe.address();
  }
  auto client = clientFor(dead + ";" + fake.peer->address());
  auto r = client->queryRoute("known");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
}

TEST(RocketmqRoutes, CreateTopicOnEveryMasterThenWaitsForRoute) {
  FakeCluster fake;
  auto client = clientFor(fake.peer->address());
  ASSERT_TRUE(client->createTopic("t1", 8, {"fake"}).isOk());
  auto r = client->queryRoute("t1");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->publishQueues().size(), 8u);
  EXPECT_EQ(client->createTopic("t2", 2, {"nope"}).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ferry::rocketmq
