// kafkaSafeName: the names the kafka backbone gives ferry topics and groups in Kafka.
#include <gtest/gtest.h>

#include "backbone/kafka/kafka_backbone.h"

namespace ferry::backbone {
namespace {

TEST(KafkaSafeName, KeepsLegalNamesAndReplacesTheRest) {
  EXPECT_EQ(kafkaSafeName("orders.v1_eu-west"), "orders.v1_eu-west");
  EXPECT_EQ(kafkaSafeName("connect-my sink/2"), "connect-my_sink_2");
  EXPECT_EQ(kafkaSafeName("tópico"), "t__pico");  // each byte of a multi-byte character
  EXPECT_EQ(kafkaSafeName(std::string(300, 'a')).size(), 249u);
}

TEST(KafkaBackbone, UnreachableBrokerIsNamedAndTimesOut) {
  KafkaBackboneOptions o;
  o.bootstrapServers = "127.0.0.1:1";
  o.requestTimeoutMs = 300;
  auto b = openKafkaBackbone(o);
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(b.status().message().find("127.0.0.1:1"), std::string::npos) << b.status().message();
}

TEST(KafkaBackbone, RefusedClientPropertyIsNamed) {
  KafkaBackboneOptions o;
  o.clientOverrides["no.such.property"] = "1";
  auto b = openKafkaBackbone(o);
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("backbone.kafka.client.no.such.property"), std::string::npos)
      << b.status().message();
}

}  // namespace
}  // namespace ferry::backbone
