// Producer: sends messages to a topic's brokers (§2.2, §4.6, §6.3) over a RocketmqClient.
// Single messages go with SEND_MESSAGE_V2 (310, one-letter header), batches with
// SEND_BATCH_MESSAGE (320). Every message gets a UNIQ_KEY (returned as msgId) and WAIT=true; a
// batch's wrapper carries WAIT only (as the Java client's MessageBatch), so each message keeps
// its own id. A client that signs (ACL) sends a batch to a 4.x broker as single SEND_MESSAGE_V2s
// one after the other (that broker checks no PUB permission for batches); the result is the same
// (ids, first offset, comma-joined offset ids), and a retry resends only what was not stored.
//
// Queue choice: round-robin over the writable queues of the route (default), a hash of a key
// (same key -> same queue while the route is unchanged), or an explicit (brokerName, queueId).
// Retries: up to `retries` more attempts on transport errors and on the codes the Java producer
// retries (1, 2, 14, 16, 17, 204, 205, 1500) except ACL refusals (isAclRefusal); round-robin moves to a queue of another broker when
// there is one, key-hash and explicit selections keep their queue (ordering). Codes 10/11/12
// (stored, not fully durable) are returned as errors without retry. A 2 SYSTEM_BUSY (the
// broker's flow control, e.g. "[TIMEOUT_CLEAN_QUEUE]": the request was not run, nothing stored)
// is retried after a pause instead, for up to `busyRetryMs` (see ProducerOptions).
//
// Threading: thread-safe; send()/sendBatch() block the caller; sendAsync() callbacks run on the
// client's io thread and must not block. The client must outlive the producer, and the producer
// must outlive its pending async sends (the destructor does not wait for them).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rocketmq/client.h"
#include "rocketmq/remoting.h"
#include "rocketmq/routes.h"
#include "ferry/result.h"

namespace ferry::rocketmq {

// sysFlag of a zlib-compressed body: COMPRESSED (0x1) | compression type ZLIB (3 << 8).
inline constexpr std::int32_t kSysFlagCompressedZlib = 0x1 | (3 << 8);

// Property keys (§4.2).
inline constexpr const char* kPropTags = "TAGS";
inline constexpr const char* kPropKeys = "KEYS";
inline constexpr const char* kPropUniqKey = "UNIQ_KEY";
inline constexpr const char* kPropWait = "WAIT";

struct QueueSelection {
  enum class Kind { kDefault, kRoundRobin, kKeyHash, kExplicit };
  Kind kind = Kind::kDefault;
  std::string key;         // kKeyHash
  std::string brokerName;  // kExplicit
  std::int32_t queueId = 0;

  static QueueSelection roundRobin() { return {Kind::kRoundRobin, {}, {}, 0}; }
  static QueueSelection byKey(std::string k) { return {Kind::kKeyHash, std::move(k), {}, 0}; }
  static QueueSelection queue(std::string broker, std::int32_t id) {
    return {Kind::kExplicit, {}, std::move(broker), id};
  }
};

struct ProducerOptions {
  std::string group = "ferry_producer";
  int retries = 2;                   // extra attempts after the first
  std::int64_t sendTimeoutMs = -1;   // per attempt; < 0: the client's requestTimeoutMs
  // A broker that answers SYSTEM_BUSY is busy now (its send queue waited too long): trying again
  // at once adds to the queue it is clearing. Such a send is retried after a pause (10 ms
  // doubling to 400 ms, each ±50 % at random) for up to this long after the first busy answer,
  // without using up `retries`. 0: a busy answer is an ordinary retry (at once, counted).
  std::int64_t busyRetryMs = 5000;
  // What QueueSelection::kDefault means: round-robin, or a hash of the message's KEYS property
  // (round-robin when the message has no KEYS).
  enum class Selector { kRoundRobin, kKeyHash } selector = Selector::kRoundRobin;
  bool useV1Header = false;          // SEND_MESSAGE (10, long header names) instead of 310
  // Single messages with a body of at least this many bytes are sent zlib-compressed (the Java
  // producer's compressMsgBodyOverHowmuch); 0 disables. Batches are never compressed.
  std::int64_t compressOverBytes = 4096;
  // Bodies (a batch: their sum) over this are refused locally with InvalidArgument, before any
  // compression, as the Java producer does (its maxMessageSize, 4 MiB); 0 leaves it to the broker.
  std::int64_t maxMessageBytes = 4 << 20;
};

struct SendResult {
  std::string brokerName;
  std::int32_t queueId = 0;
  std::int64_t queueOffset = 0;  // of the first message for a batch
  // A batch sent as single messages (a signing client and a 4.x broker): the offset of each
  // message, which need not be consecutive when other producers write the queue meanwhile.
  // Empty for a real batch: its messages sit at queueOffset, queueOffset + 1, ...
  std::vector<std::int64_t> queueOffsets;
  std::string msgId;             // UNIQ_KEY (comma-joined for a batch)
  std::string offsetMsgId;       // the broker's msgId (comma-joined for a batch)
};

using SendCallback = std::function<void(Result<SendResult>)>;

class Producer {
 public:
  Producer(RocketmqClient& client, ProducerOptions options = {});
  ~Producer();
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  struct Attempt;  // one send's encoded request and retry state (producer.cc)

  Result<SendResult> send(OutgoingMessage message, const QueueSelection& selection = {});
  // The callback is called exactly once (on the io thread, or on the caller's thread when the
  // route cannot be resolved).
  void sendAsync(OutgoingMessage message, const QueueSelection& selection, SendCallback callback);
  // All messages must have the same topic; they go to one queue, with consecutive offsets.
  Result<SendResult> sendBatch(std::vector<OutgoingMessage> messages,
                               const QueueSelection& selection = {});
  void sendBatchAsync(std::vector<OutgoingMessage> messages, const QueueSelection& selection,
                      SendCallback callback);

  // A send prepared once (message ids given, properties and body encoded) that can be sent again
  // as it is after a retriable failure: with the same message ids (so a reader can tell a resend
  // of a stored message), and a batch split for a 4.x broker resumes with its first message not
  // yet stored. For callers that keep failed sends to resend them later (BatchSender), without
  // keeping a copy of the messages. More than one message: a batch (as sendBatchAsync).
  class PreparedSend {
   public:
    std::size_t messages() const { return count_; }
    explicit operator bool() const { return attempt_ != nullptr; }

   private:
    friend class Producer;
    std::shared_ptr<Attempt> attempt_;
    std::size_t count_ = 0;
  };
  // Takes `messages` (left empty); when it fails they are left as they were.
  Result<PreparedSend> prepareSend(std::vector<OutgoingMessage>& messages,
                                   const QueueSelection& selection = {});
  // Sends `p` (again: with a fresh retry budget and the route as cached now); `callback` as
  // sendAsync's. Not while an earlier send of `p` is still waiting for its callback.
  void sendPrepared(const PreparedSend& p, SendCallback callback);
  // Sends started before this call are not retried any more: an attempt under way still gets
  // its answer (and its callback), but a failed one reports its error instead of trying again.
  // For a worker that lost its lease (nothing of it may reach a broker later, not even a retry
  // once the broker is back).
  void abandonRetries() { epoch_.fetch_add(1); }

 private:
  // Takes the messages' contents only when it succeeds.
  Result<std::shared_ptr<Attempt>> prepare(std::vector<OutgoingMessage>& messages,
                                           const QueueSelection& selection, bool batch);
  void run(std::shared_ptr<Attempt> attempt);
  void runSplit(std::shared_ptr<Attempt> attempt, const std::string& address);
  // The route of a.topic and the first queue, with a fresh retry budget and the current epoch.
  Status route(Attempt& a);
  // After a failed attempt: runs it again (the queue re-picked; after a pause when the broker
  // was busy), or gives the callback the error.
  void retryOrFail(const std::shared_ptr<Attempt>& attempt, const Result<RemotingCommand>& r);
  bool pickQueue(Attempt& attempt, const std::string& avoidBroker);

  RocketmqClient& client_;
  const ProducerOptions options_;
  std::atomic<std::uint64_t> counter_;
  std::atomic<std::uint64_t> epoch_{0};  // abandonRetries(): attempts of an older epoch are not retried
};

// The hash used for key selection: FNV-1a 32-bit over the key's bytes (stable across processes
// and restarts, so a key keeps its queue while the queue count is unchanged).
std::uint32_t keyHash(std::string_view key);

}  // namespace ferry::rocketmq
