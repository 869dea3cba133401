// RocketMQ topic routes and cluster info (§5.3, §5.5, §6.2): value types, the parsers of the
// NameServer's fastjson bodies, and the queue sets derived from a route.
//
// Thread-safety: values and pure functions.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

namespace ferry::rocketmq {

// Permission bits of a QueueData (§4.3).
inline constexpr std::int32_t kPermPriority = 0x8;
inline constexpr std::int32_t kPermRead = 0x4;
inline constexpr std::int32_t kPermWrite = 0x2;
inline constexpr std::int32_t kPermInherit = 0x1;

struct MessageQueue {
  std::string topic;
  std::string brokerName;
  std::int32_t queueId = 0;
  auto operator<=>(const MessageQueue&) const = default;
  std::string toString() const;  // "topic@broker#id"
};

struct QueueData {
  std::string brokerName;
  std::int32_t readQueueNums = 0;
  std::int32_t writeQueueNums = 0;
  std::int32_t perm = 0;
  std::int32_t topicSysFlag = 0;
};

struct BrokerData {
  std::string cluster;
  std::string brokerName;
  std::map<std::int64_t, std::string> brokerAddrs;  // brokerId -> "ip:port"; 0 = master
  // The master's address (brokerId 0), if any.
  std::optional<std::string> master() const;
};

struct TopicRoute {
  std::string topic;
  std::vector<QueueData> queueDatas;
  std::vector<BrokerData> brokerDatas;
  std::string orderTopicConf;      // "broker:n;broker:n" when present
  bool staticQueueMapping = false; // 5.x static topic (logical queues): not supported

  // Queues to send to (§6.2 step 3), ordered by broker name then queue id.
  std::vector<MessageQueue> publishQueues() const;
  // Queues to consume from (§6.2 step 4).
  std::vector<MessageQueue> subscribeQueues() const;
  // Master address of `brokerName` according to this route.
  std::optional<std::string> masterAddress(const std::string& brokerName) const;
};

// Parses a TopicRouteData body (standard JSON or fastjson's bare integer keys).
Result<TopicRoute> parseTopicRoute(std::string_view topic, std::string_view body);

// GET_BROKER_CLUSTER_INFO (106) body.
struct ClusterInfo {
  std::map<std::string, BrokerData> brokers;                    // brokerName -> data
  std::map<std::string, std::vector<std::string>> clusters;     // cluster -> broker names
};
Result<ClusterInfo> parseClusterInfo(std::string_view body);

}  // namespace ferry::rocketmq
