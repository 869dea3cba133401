// PullConsumer: a clustering-model RocketMQ consumer with group membership (§6.4), built on a
// RocketmqClient. It heartbeats its group to every broker of the subscribed topics, rebalances
// (GET_CONSUMER_LIST_BY_GROUP + the "averagely" allocation) every rebalanceIntervalMs and when a
// broker sends NOTIFY_CONSUMER_IDS_CHANGED, keeps one long-polling PULL_MESSAGE outstanding per
// assigned queue, and buffers what it pulls (bounded; pulling pauses while the buffer is full).
// The owner thread takes messages with poll() and commits explicit positions with commit().
//
// Threading: three kinds of threads touch a consumer.
//  - The owner thread: start(), poll(), commit(), seek(), assignment(), close(). These are meant
//    for ONE thread (like a Kafka consumer); the RebalanceListener runs inside poll() on it.
//  - The membership thread (owned by the consumer): heartbeats, rebalance computation, start
//    offset lookups, delayed (backed-off) pulls, verifying and re-sending the last commit of each
//    assigned queue. Uses the client's synchronous calls.
//  - The client's io thread: pull responses and the NOTIFY handler (never blocks).
// Shared state is guarded by one mutex (commits and re-sends are also serialized by a second
// one, so a re-send never overtakes a newer commit of the same queue); callbacks hold a weak
// reference, so responses arriving after the consumer is gone are dropped.
//
// One PullConsumer per RocketmqClient: the NOTIFY_CONSUMER_IDS_CHANGED handler is per client, and
// the broker identifies a member by its connection (clientId).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rocketmq/client.h"
#include "rocketmq/remoting.h"
#include "rocketmq/routes.h"
#include "ferry/connector.h"
#include "ferry/result.h"

namespace ferry::rocketmq {

// Request / response codes of the consumer flows (§2.1, §3).
inline constexpr std::int32_t kCodePullMessage = 11;
inline constexpr std::int32_t kCodeQueryConsumerOffset = 14;
inline constexpr std::int32_t kCodeUpdateConsumerOffset = 15;
inline constexpr std::int32_t kCodeSearchOffsetByTimestamp = 29;
inline constexpr std::int32_t kCodeGetMaxOffset = 30;
inline constexpr std::int32_t kCodeGetMinOffset = 31;
inline constexpr std::int32_t kCodeHeartBeat = 34;
inline constexpr std::int32_t kCodeUnregisterClient = 35;
inline constexpr std::int32_t kCodeGetConsumerListByGroup = 38;
inline constexpr std::int32_t kRespPullNotFound = 19;
inline constexpr std::int32_t kRespPullRetryImmediately = 20;
inline constexpr std::int32_t kRespPullOffsetMoved = 21;
inline constexpr std::int32_t kRespQueryNotFound = 22;
inline constexpr std::int32_t kRespSubscriptionNotExist = 24;
inline constexpr std::int32_t kRespSubscriptionNotLatest = 25;
// PullSysFlag bits (§2.4).
inline constexpr std::int32_t kPullFlagCommitOffset = 0x1;
inline constexpr std::int32_t kPullFlagSuspend = 0x2;
inline constexpr std::int32_t kPullFlagSubscription = 0x4;

// A topic and its TAG expression: "*" (or empty) for everything, else "TagA || TagB".
struct Subscription {
  std::string topic;
  std::string expression = "*";
};

enum class ConsumeFromWhere { kLastOffset, kFirstOffset, kTimestamp };

struct ConsumerOptions {
  std::string group;
  std::vector<Subscription> subscriptions;
  // Where a queue starts when the group has no committed offset on it (§6.4.4).
  ConsumeFromWhere fromWhere = ConsumeFromWhere::kLastOffset;
  std::int64_t consumeTimestampMs = 0;        // kTimestamp
  std::int32_t pullBatchSize = 32;            // maxMsgNums per pull
  std::int64_t longPollingSuspendMs = 15000;  // broker-side hold of an empty pull
  std::int64_t pullTimeoutMs = 30000;         // client-side RPC timeout; must exceed the above
  std::int64_t heartbeatIntervalMs = 30000;
  std::int64_t rebalanceIntervalMs = 20000;
  std::int64_t pullBackoffMs = 3000;          // after a failed pull / offset lookup
  // After a pull that failed because the broker could not be reached (Unavailable, Timeout):
  // how soon it is tried again. The connectors use 500 ms so that pulling resumes within about
  // a second of the broker coming back (the client's reconnect back-off bounds it too).
  std::int64_t unreachablePullBackoffMs = 3000;
  // A queue whose head message cannot be decoded is pulled again after pullBackoffMs; after
  // this many answers in a row that decode nothing the health listener says kDegraded.
  std::int32_t undecodableReportAfter = 3;
  // How often the membership thread checks the last commit of every assigned queue with
  // QUERY_CONSUMER_OFFSET and re-sends the ones the broker does not hold (the Java client's
  // persistConsumerOffsetInterval, 5 s). Every `persistRecheckEvery`-th round also re-checks
  // queues already confirmed (a broker restart may have lost them).
  std::int64_t persistIntervalMs = 5000;
  std::int32_t persistRecheckEvery = 12;
  std::size_t maxBufferedMessages = 10000;    // pulling pauses at either bound
  std::size_t maxBufferedBytes = 64u << 20;
};

// A pulled message and the broker it came from (a queue is (topic, brokerName, queueId)).
struct PulledMessage {
  StoredMessage message;
  std::string brokerName;
  std::int64_t receivedNs = 0;  // when its pull's answer was handled (steady clock ns)
  MessageQueue queue() const { return {message.topic, brokerName, message.queueId}; }
};

// Called from inside poll() on the owner thread. onRevoked comes first, with queues that have
// already stopped pulling and whose buffered messages were dropped: commit what was processed of
// them there (another member may take them right after). onAssigned gets the new queues (their
// start offsets are resolved in the background afterwards).
class RebalanceListener {
 public:
  virtual ~RebalanceListener() = default;
  virtual void onRevoked(const std::vector<MessageQueue>& queues) = 0;
  virtual void onAssigned(const std::vector<MessageQueue>& queues) = 0;
};

class PullConsumer {
 public:
  // `client` must outlive the consumer; `listener` (optional) must outlive close().
  PullConsumer(RocketmqClient& client, ConsumerOptions options,
               RebalanceListener* listener = nullptr);
  ~PullConsumer();  // close()
  PullConsumer(const PullConsumer&) = delete;
  PullConsumer& operator=(const PullConsumer&) = delete;

  // Validates the options, resolves the routes of the subscribed topics (kNotFound for an unknown
  // topic), registers the NOTIFY handler, sends the first heartbeat and starts the membership
  // thread (which rebalances right away).
  Status start();
  // Waits up to maxWait for messages and returns at most `max` (empty on timeout). Applies a
  // pending rebalance first (listener callbacks). kCancelled after close().
  Result<std::vector<PulledMessage>> poll(std::size_t max, std::chrono::milliseconds maxWait);
  // UPDATE_CONSUMER_OFFSET (15), synchronously, to the master of each queue's broker: the value
  // is the NEXT offset to consume. On success the broker holds it in memory and persists it with
  // its periodic flush (5 s) — a broker crash inside that window loses the commit (at-least-once).
  // Returns the first failure; later queues are still attempted.
  // Only queues currently assigned (or being revoked, from inside onRevoked) whose start offset
  // is known are committed, and never below the queue's floor: the start offset, the last value
  // committed in this assignment, or the last seek / OFFSET_MOVED position. Other entries are
  // ignored (a stale acknowledgement must not move the group back); a value equal to the last
  // commit is not sent again. The last commit of each assigned queue is then verified and
  // re-sent by the membership thread every persistIntervalMs until the broker holds it.
  Status commit(const std::map<MessageQueue, std::int64_t>& offsets);
  // The queues currently assigned (as the owner thread last applied them).
  std::vector<MessageQueue> assignment() const;
  // Next pull of an assigned queue starts at `offset`; its buffered messages are dropped. The
  // offset becomes the queue's commit floor (it may be below earlier commits).
  Status seek(const MessageQueue& queue, std::int64_t offset);
  // Stops pulling and the membership thread, drops buffered messages and sends UNREGISTER_CLIENT
  // (35) to every broker it heartbeated. Commits nothing (commit before). Idempotent.
  void close();

  // Asks the membership thread for an immediate rebalance (as a NOTIFY would).
  void requestRebalance();
  // `wake` is called (from the client's io thread or the membership thread, quickly) whenever a
  // waiting poll() would return: messages buffered, a rebalance to apply, the consumer closed;
  // never after close() returned. Lets the owner poll without waiting. Set before start().
  void setWaker(std::function<void()> wake);
  // `health` hears how the consumer reaches its brokers, on changes only: kReconnecting with the
  // error when a pull fails because a broker cannot be reached (or no broker accepted a
  // heartbeat, or no route could be read); kConnected when a broker answers again (a pull, a
  // heartbeat to every broker); kDegraded when a queue's head message cannot be decoded
  // undecodableReportAfter times in a row (the queue keeps retrying it, it is not skipped).
  // Called from the client's io thread or the membership thread, quickly, without the
  // consumer's locks held; never after close() returned. Set before start().
  void setHealthListener(std::function<void(const ConnectionHealth&)> health);

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Parses a TAG expression into its tags ("*" / empty -> empty set = everything).
std::vector<std::string> parseTagExpression(const std::string& expression);
// The HEART_BEAT (34) body for one consumer group (§5.2).
std::string heartbeatBody(const std::string& clientId, const ConsumerOptions& options,
                          std::int64_t subVersion);
// Queues of `all` (any order) that `clientId` owns among `members` under the averagely strategy
// (§6.4.3): queues sorted by (topic, brokerName, queueId), members sorted and de-duplicated.
// Empty when clientId is not a member.
std::vector<MessageQueue> allocateQueues(const std::string& clientId,
                                         std::vector<std::string> members,
                                         std::vector<MessageQueue> all);

}  // namespace ferry::rocketmq
