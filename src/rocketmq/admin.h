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
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "rocketmq/client.h"
#include "rocketmq/routes.h"

namespace ferry::rocketmq {

inline constexpr std::int32_t kCodeGetAllTopicListFromNamesrv = 206;
inline constexpr std::int32_t kCodeDeleteSubscriptionGroup = 207;
inline constexpr std::int32_t kCodeGetConsumeStats = 208;
inline constexpr std::int32_t kCodeUpdateAndCreateSubscriptionGroup = 200;
inline constexpr std::int32_t kRespSubscriptionGroupNotExist = 26;

// Every topic the NameServer knows (GET_ALL_TOPIC_LIST_FROM_NAMESERVER 206), system topics
// included; sorted.
Result<std::vector<std::string>> listTopics(RocketmqClient& client);

// True for topics RocketMQ itself uses (retry/DLQ topics, RMQ_SYS_*, rmq_sys_*, TBW102,
// SCHEDULE_TOPIC_XXXX, ...) and for cluster / broker names (which the NameServer lists as
// topics). `clusterAndBrokerNames` may be empty.
bool isSystemTopic(const std::string& topic,
                   const std::vector<std::string>& clusterAndBrokerNames = {});

// The group's committed (next-to-consume) offset of `queue` (QUERY_CONSUMER_OFFSET 14), nullopt
// when the broker has none (22 QUERY_NOT_FOUND). To 5.x it sends setZeroIfNotFound=false: without
// it a broker answers 0 for a queue the group never committed whose first message is still in
// memory. 4.x has no such field and answers 0 there: that 0 is returned as an offset, as the 4.x
// Java client takes it (the dialect follows RocketmqClient::brokerVersion).
Result<std::optional<std::int64_t>> queryGroupOffset(RocketmqClient& client, const std::string& group,
                                                     const MessageQueue& queue);
// Sets the group's offset of `queue` (UPDATE_CONSUMER_OFFSET 15) without being a member.
// A 5.x broker refuses it for a group it does not know (26 SUBSCRIPTION_GROUP_NOT_EXIST: a group
// that never heartbeated there, or one deleted): FailedPrecondition; see setGroupOffset.
Status updateGroupOffset(RocketmqClient& client, const std::string& group, const MessageQueue& queue,
                         std::int64_t offset);
// updateGroupOffset that, when the broker answers 26, creates the group on that broker with the
// broker's default settings (createGroup) and tries once more.
Status setGroupOffset(RocketmqClient& client, const std::string& group, const MessageQueue& queue,
                      std::int64_t offset);

// GET_MAX_OFFSET (30) / GET_MIN_OFFSET (31) of a queue.
Result<std::int64_t> maxOffset(RocketmqClient& client, const MessageQueue& queue);
Result<std::int64_t> minOffset(RocketmqClient& client, const MessageQueue& queue);

// Every readable queue of `topic`, sorted by (brokerName, queueId) (master brokers only).
Result<std::vector<MessageQueue>> topicQueues(RocketmqClient& client, const std::string& topic,
                                              bool refresh = false);

// ----- consume stats (GET_CONSUME_STATS 208) and groups

// One queue's line of a broker's ConsumeStats.offsetTable (Java OffsetWrapper).
struct QueueConsumeStats {
  MessageQueue queue;
  std::int64_t brokerOffset = 0;    // the queue's max offset (next to be written)
  std::int64_t consumerOffset = 0;  // committed offset; the broker writes 0 when there is none
  std::int64_t pullOffset = 0;
  std::int64_t lastTimestamp = 0;   // store time of the last consumed message, 0 when unknown
};

struct ConsumeStats {
  std::vector<QueueConsumeStats> queues;  // sorted by queue (topic, brokerName, queueId)
  double consumeTps = 0;                  // summed over the brokers asked
};

// Parses a GET_CONSUME_STATS body, fastjson's `{"consumeTps":0.0,"offsetTable":{{"brokerName":..,
// "queueId":..,"topic":..}:{"brokerOffset":..,...},...}}` (MessageQueue objects as keys).
// InvalidArgument for anything else. Pure.
Result<ConsumeStats> parseConsumeStats(std::string_view body);

// The group's consume stats (GET_CONSUME_STATS 208). With a topic: from the master of every
// broker in the topic's route (kNotFound when the NameServer does not know it), every readable
// queue of it listed. With an empty topic: from every master of every cluster, the topics the
// group holds offsets for on each broker (that is how to find the topics of a group that is not
// running). A queue the group never committed shows consumerOffset 0 (broker behaviour); use
// queryGroupOffset to tell 0 from none.
Result<ConsumeStats> consumeStats(RocketmqClient& client, const std::string& group,
                                  const std::string& topic = {});

// The requests above as sent to a broker of `brokerVersion` (pure; also used by PullConsumer).
RemotingCommand updateGroupOffsetRequest(const std::string& group, const MessageQueue& queue,
                                         std::int64_t offset);
RemotingCommand queryGroupOffsetRequest(const std::string& group, const MessageQueue& queue,
                                        std::int32_t brokerVersion);
RemotingCommand deleteGroupRequest(const std::string& group, std::int32_t brokerVersion);

// DELETE_SUBSCRIPTIONGROUP (207) with cleanOffset=true (5.x; removeOffset=true to 4.x) on the master of every broker of the given
// clusters or broker names (empty: every broker of every cluster): the group's settings and all
// its committed offsets are gone. A group that does not exist is not an error. A broker with
// autoCreateSubscriptionGroup=true (the default) recreates the group at its next heartbeat.
Status deleteGroup(RocketmqClient& client, const std::string& group,
                   const std::vector<std::string>& clusterOrBrokerNames = {});

// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) with only the group name, i.e. the broker's defaults,
// on the master of every broker of the given clusters or broker names (empty: every broker).
// Overwrites the settings of an existing group with the defaults.
Status createGroup(RocketmqClient& client, const std::string& group,
                   const std::vector<std::string>& clusterOrBrokerNames = {});

// Client ids of the group's live members (GET_CONSUMER_LIST_BY_GROUP 38) over the master of every
// broker of the given clusters or broker names, de-duplicated and sorted; empty when no broker
// knows a member (the broker answers 1 "no consumer for this group").
Result<std::vector<std::string>> groupMembers(RocketmqClient& client, const std::string& group,
                                              const std::vector<std::string>& clusterOrBrokerNames = {});

}  // namespace ferry::rocketmq
