// kafka::ConnectionWatch (src/kafka/rdkafka_util.h): what a Kafka connector reports about its
// connection from librdkafka's error and statistics events, without a broker.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <string>
#include <vector>

#include "kafka/rdkafka_util.h"

namespace ferry::kafka {
namespace {

// librdkafka's statistics JSON, cut to what the watch reads.
std::string stats(const std::string& state, int connects) {
  return R"({"name":"c#consumer-1","type":"consumer","brokers":{"127.0.0.1:9092/1":{"name":"127.0.0.1:9092/1",)"
         R"("nodeid":1,"state":")" + state + R"(","connects":)" + std::to_string(connects) +
         R"(}},"cgrp":{"state":"up","join_state":"steady"}})";
}

struct Reports {
  std::vector<std::pair<bool, std::string>> seen;
  void attach(ConnectionWatch& w) {
    w.setReport([this](bool connected, const std::string& reason) { seen.emplace_back(connected, reason); });
  }
};

TEST(KafkaConnectionWatch, ReadsBrokerStateAndAttempts) {
  EXPECT_TRUE(ConnectionWatch::statsShowBrokerUp(stats("UP", 1)));
  EXPECT_FALSE(ConnectionWatch::statsShowBrokerUp(stats("CONNECT", 3)));  // the group's "up" is not a broker
  EXPECT_FALSE(ConnectionWatch::statsShowBrokerUp("not json"));
  EXPECT_EQ(ConnectionWatch::connectAttempts(stats("DOWN", 7)), 7);
}

TEST(KafkaConnectionWatch, AllBrokersDownThenUpAgain) {
  ConnectionWatch w;
  Reports r;
  r.attach(w);
  w.onError(RD_KAFKA_RESP_ERR__TRANSPORT, "127.0.0.1:9092/1: Connect to ipv4#127.0.0.1:9092 failed: Connection refused");
  EXPECT_TRUE(r.seen.empty()) << "one broker's error is no loss";
  w.onError(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "1/1 brokers are down");
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_FALSE(r.seen[0].first);
  EXPECT_NE(r.seen[0].second.find("brokers are down (1/1 brokers are down)"), std::string::npos) << r.seen[0].second;
  EXPECT_NE(r.seen[0].second.find("Connection refused"), std::string::npos) << r.seen[0].second;
  w.onError(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "1/1 brokers are down");
  w.onStats(stats("CONNECT", 5));
  EXPECT_EQ(r.seen.size(), 1u) << "reported once per change";
  w.onStats(stats("UP", 6));
  ASSERT_EQ(r.seen.size(), 2u);
  EXPECT_TRUE(r.seen[1].first);
  EXPECT_TRUE(w.connected());
}

TEST(KafkaConnectionWatch, LossFromStatisticsNeedsFailingAttemptsTwice) {
  ConnectionWatch w;
  Reports r;
  r.attach(w);
  w.onStats(stats("UP", 1));
  w.onStats(stats("DOWN", 1));  // idle: no attempt, no loss
  w.onStats(stats("DOWN", 1));
  EXPECT_TRUE(r.seen.empty());
  w.onStats(stats("CONNECT", 2));  // one attempt: a handshake in progress is no loss yet
  EXPECT_TRUE(r.seen.empty());
  w.onStats(stats("CONNECT", 3));
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_FALSE(r.seen[0].first);
  EXPECT_NE(r.seen[0].second.find("none reachable"), std::string::npos) << r.seen[0].second;
}

TEST(KafkaConnectionWatch, AcknowledgedDeliveryAndRefusals) {
  ConnectionWatch w;
  Reports r;
  r.attach(w);
  w.onAcknowledged();  // connected already: nothing
  EXPECT_TRUE(r.seen.empty());
  w.onError(RD_KAFKA_RESP_ERR__AUTHENTICATION, "SASL authentication error: bad password");
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_NE(r.seen[0].second.find("refused the client"), std::string::npos);
  w.onAcknowledged();
  ASSERT_EQ(r.seen.size(), 2u);
  EXPECT_TRUE(r.seen[1].first);
}

TEST(KafkaConnectionWatch, ClientDefaults) {
  const StringMap d = connectorClientDefaults();
  EXPECT_EQ(d.at("reconnect.backoff.max.ms"), "500");
  EXPECT_EQ(d.at("statistics.interval.ms"), "1000");
}

}  // namespace
}  // namespace ferry::kafka
