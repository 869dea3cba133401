// Administrative calls on a RocketMQ cluster that need no group membership: the NameServer's
// topic list, a group's committed offset of a queue read or written from outside the group, a
// queue's min/max offsets, consume stats and group deletion. Used by the Replicator (topic
// discovery, offset checkpoints) and the rocketmq backbone (offsets of sink groups).
//
// Thread-safety: free functions over a RocketmqClient; synchronous (never call them on the
// client's io thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ferry/result.h"
#include "rocketmq/client.h"
#include "rocketmq/routes.h"

namespace ferry::rocketmq {

inline constexpr std::int32_t kCodeGetAllTopicListFromNamesrv = 206;
inline constexpr std::int32_t kCodeDeleteSubscriptionGroup = 207;
inline constexpr std::int32_t kCodeGetConsumeStats = 208;

// Every topic the NameServer knows (GET_ALL_TOPIC_LIST_FROM_NAMESERVER 206), system topics
// included; sorted.
Result<std::vector<std::string>> listTopics(RocketmqClient& client);

// True for topics RocketMQ itself uses (retry/DLQ topics, RMQ_SYS_*, rmq_sys_*, TBW102,
// SCHEDULE_TOPIC_XXXX, ...) and for cluster / broker names (which the NameServer lists as
// topics). `clusterAndBrokerNames` may be empty.
bool isSystemTopic(const std::string& topic,
                   const std::vector<std::string>& clusterAndBrokerNames = {});

// The group's committed (next-to-consume) offset of `queue` (QUERY_CONSUMER_OFFSET 14), nullopt
// when the broker has none (22 QUERY_NOT_FOUND).
Result<std::optional<std::int64_t>> queryGroupOffset(RocketmqClient& client, const std::string& group,
                                                     const MessageQueue& queue);
// Sets the group's offset of `queue` (UPDATE_CONSUMER_OFFSET 15) without being a member.
Status updateGroupOffset(RocketmqClient& client, const std::string& group, const MessageQueue& queue,
                         std::int64_t offset);

// GET_MAX_OFFSET (30) / GET_MIN_OFFSET (31) of a queue.
Result<std::int64_t> maxOffset(RocketmqClient& client, const MessageQueue& queue);
Result<std::int64_t> minOffset(RocketmqClient& client, const MessageQueue& queue);

// Every readable queue of `topic`, sorted by (brokerName, queueId) (master brokers only).
Result<std::vector<MessageQueue>> topicQueues(RocketmqClient& client, const std::string& topic,
                                              bool refresh = false);

}  // namespace ferry::rocketmq
