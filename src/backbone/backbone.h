// The backbone: the message queue between source and sink tasks.
//
// Implementations: embedded/ (a durable local log, the standalone default); rocketmq/ and kafka/
// come later. Source tasks write through a Producer; each sink connector reads through a Consumer
// in its own group; queues (partitions) of the subscribed topics are spread over the group's
// members, and offsets are committed in the backbone itself.
//
// Threading: a Backbone and its Admin are thread-safe. A Producer is thread-safe; its callbacks
// run on a backbone thread or inline in send(), never while a lock of the caller is required.
// A Consumer is owned by one thread (its sink task's), including its RebalanceListener calls,
// which are made from inside poll().
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"
#include "ferry/status.h"

namespace ferry::backbone {

// One message as stored in / read from the backbone.
struct Message {
  std::string topic;
  std::int32_t queue = 0;
  std::int64_t offset = -1;       // set by the backbone when read
  Bytes key;
  Bytes value;
  Headers headers;
  std::int64_t timestampMs = 0;   // 0 = stamp with the append time
  // Send side only: when `queue` < 0 and the key is null, messages with the same non-empty hint
  // go to the same queue (a source task sets it from the record's source partition, so one
  // file or one datagen task keeps its order). Not stored.
  std::string routingHint;
};

// Called once per send with the queue and offset the message got, or the error.
using SendCallback = std::function<void(const Status& status, std::int32_t queue, std::int64_t offset)>;

class Producer {
 public:
  virtual ~Producer() = default;
  // Sends asynchronously. `queue` < 0 lets the backbone pick (by key hash when a key is set,
  // by routingHint when set, round-robin otherwise). Returns an error without calling `cb` only when the message is
  // refused before being queued (unknown topic, closed producer). The callback fires once the
  // message is durable according to the backbone's policy.
  virtual Status send(Message message, SendCallback cb) = 0;
  // The same for a message the caller keeps (to send it again after a retriable failure): a
  // backbone that encodes a message while sending it (the embedded log) reads it in place; the
  // default sends a copy.
  virtual Status sendFrom(const Message& message, SendCallback cb) { return send(Message(message), std::move(cb)); }
  // Waits until every message sent so far got its callback, or the timeout passes.
  virtual Status flush(std::chrono::milliseconds timeout) = 0;
  // Makes every message acknowledged so far durable on the backbone's storage, where its
  // acknowledgement does not already mean that (the embedded log with fsync=interval). Called
  // before a position that covers them is committed. The default has nothing to do.
  virtual Status sync() { return Status::ok(); }
  // Drops every message sent so far and not yet acknowledged, whether it still waits in the
  // client's queue or is in flight; each gets its callback with a retriable error (Unavailable,
  // "purged"). A message in flight may still have reached the broker: a purged message is of
  // unknown fate, so its position must not be committed (the runtime resends it or leaves it to
  // be read again). For a worker that lost its cluster lease, which must send nothing more
  // (src/control/README.md). Returns at once; the callbacks follow on the backbone's thread.
  // The default has nothing to drop (a backbone that writes each send at once).
  virtual Status purge() { return Status::ok(); }
  // Waits until every message purge() dropped while it was in flight has been answered or has
  // timed out at the client, i.e. a broker that was going to store it has; kTimeout after
  // `timeout`. Before a worker that regained its lease re-reads what it wrote (its positions), so
  // a write purged on the wire cannot land after the read. The default knows of none.
  virtual Status awaitPurged(std::chrono::milliseconds timeout) {
    (void)timeout;
    return Status::ok();
  }
};

// Damage or loss a backbone found in its own storage (only the embedded log, which keeps its data
// on the worker's disk, reports any). Offsets are inclusive; -1 when not known.
struct StorageIssue {
  std::string topic;
  std::int32_t queue = -1;
  // "damaged": bad bytes between intact records (the records around them stay readable, the bad
  //   ones are skipped); "torn-tail": an incomplete last write (truncated; kept in quarantine/);
  //   "missing": offsets whose records are gone (a deleted segment file, writes lost with a power
  //   failure); "group-ahead": a group committed an offset beyond the log's end (the log continues
  //   from that offset, so no offset is handed out twice); "group-lost": a group's offset file had no
  //   good copy (the group reads again from the earliest records: duplicates, nothing skipped).
  std::string kind;
  std::int64_t firstOffset = -1;
  std::int64_t lastOffset = -1;
  std::int64_t bytes = 0;
  std::string detail;  // one sentence for the log and the operator
};

// Exactly-once writes: every send between beginTransaction() and commitTransaction() becomes
// visible to read_committed readers together, or (abort, crash) never. Creating one fences every
// earlier producer with the same transactional id: the transaction a zombie left open is aborted
// and the zombie's later calls fail. Send callbacks still fire per message; commitTransaction()
// waits for all of them and fails when any send failed (the transaction is then aborted).
class TransactionalProducer : public Producer {
 public:
  virtual Status beginTransaction() = 0;
  virtual Status commitTransaction(std::chrono::milliseconds timeout) = 0;
  virtual Status abortTransaction(std::chrono::milliseconds timeout) = 0;
};

// Told when the queues assigned to a consumer change. Called from inside Consumer::poll().
class RebalanceListener {
 public:
  virtual ~RebalanceListener() = default;
  // Before `queues` are taken away: the last chance to flush and commit their offsets.
  virtual void onRevoked(const std::vector<TopicQueue>& queues) = 0;
  virtual void onAssigned(const std::vector<TopicQueue>& queues) = 0;
};

class Consumer {
 public:
  virtual ~Consumer() = default;
  // Joins the group for `topics` (exact names). Triggers a rebalance in the group.
  virtual Status subscribe(const std::vector<std::string>& topics, RebalanceListener* listener) = 0;
  // Appends up to `maxMessages` messages from the assigned queues, resuming each queue at its
  // committed offset (or at `auto.offset.reset`: earliest by default). Waits up to `maxWait`.
  virtual Result<std::size_t> poll(std::vector<Message>& out, std::size_t maxMessages,
                                   std::chrono::milliseconds maxWait) = 0;
  // Commits next-offsets-to-read for the group, durably.
  virtual Status commit(const OffsetMap& offsets) = 0;
  // Moves the read position of an assigned queue (for retries after a failed put).
  virtual Status seek(const TopicQueue& queue, std::int64_t offset) = 0;
  virtual std::vector<TopicQueue> assignment() const = 0;
  // Leaves the group (revoking its queues first). Idempotent.
  virtual void close() = 0;
  // Ranges of the assigned queues that poll() stepped over since the last call because their
  // records were damaged or missing in storage (the embedded log only). Taken once.
  virtual std::vector<StorageIssue> takeSkipped() { return {}; }
  // Asks to be told when poll() may have something new — messages on a subscribed topic, a
  // rebalance to apply, the backbone closing — so that the caller can poll without waiting and
  // keep no thread blocked in poll(). `wake` is called from any thread, must be quick, may be
  // called spuriously, and is never called once close() has returned. Set before subscribe().
  // False when this consumer cannot (its poll() must then be given a wait).
  virtual bool setWaker(std::function<void()> wake) {
    (void)wake;
    return false;
  }
};

struct TopicInfo {
  std::string name;
  std::int32_t queues = 0;
};

class Admin {
 public:
  virtual ~Admin() = default;
  // Creates `name` with `queues` queues; OK if it exists already (its queue count is kept).
  virtual Status ensureTopic(const std::string& name, std::int32_t queues) = 0;
  virtual Result<std::vector<TopicInfo>> listTopics() = 0;
  virtual Result<TopicInfo> describeTopic(const std::string& name) = 0;
  // Next offset to be written, per queue.
  virtual Result<OffsetMap> endOffsets(const std::string& topic) = 0;
  // Lowest offset still stored, per queue.
  virtual Result<OffsetMap> startOffsets(const std::string& topic) = 0;
  virtual Result<OffsetMap> committedOffsets(const std::string& group) = 0;
  // Overwrites (or, with an empty map, deletes) a group's committed offsets. The group must have
  // no live member.
  virtual Status setCommittedOffsets(const std::string& group, const OffsetMap& offsets) = 0;
  virtual Status deleteGroup(const std::string& group) = 0;
};

// The cluster log of distributed mode: one queue of one topic, totally ordered and durable, read
// by anyone from any offset, each entry stamped with the broker's append time (the log's clock,
// which the cluster's liveness rules use). Thread-safe.
class SharedLog {
 public:
  struct Entry {
    std::int64_t offset = 0;
    std::int64_t timestampMs = 0;  // the broker's append time
    Bytes value;
  };
  virtual ~SharedLog() = default;
  // Appends durably (acknowledged by the broker); returns the entry's offset.
  virtual Result<std::int64_t> append(const Bytes& value, std::chrono::milliseconds timeout) = 0;
  // Appends every value in order, durably, waiting once for all (a worker handing off a thousand
  // tasks appends a thousand events). Returns the last entry's offset; on failure some may have
  // been appended (each event must be safe to apply alone). The default appends one at a time.
  virtual Result<std::int64_t> appendAll(const std::vector<Bytes>& values, std::chrono::milliseconds timeout) {
    std::int64_t last = -1;
    for (const auto& v : values) {
      FERRY_ASSIGN_OR_RETURN(last, append(v, timeout));
    }
    return last;
  }
  // Appends without waiting: `done` runs (on any thread) with the entry's offset once it is
  // durable, or the failure. Entries appended this way from one process keep their order. The
  // default appends on the caller's thread.
  virtual void appendAsync(const Bytes& value, std::function<void(Result<std::int64_t>)> done) {
    done(append(value, std::chrono::seconds(30)));
  }
  // Appends up to `max` entries from offset `from` on, waiting up to `wait` while there are none.
  // An offset below the log's start resumes at the start (the entries' offsets say so).
  virtual Result<std::size_t> read(std::int64_t from, std::vector<Entry>& out, std::size_t max,
                                   std::chrono::milliseconds wait) = 0;
  // The offset the next append will get.
  virtual Result<std::int64_t> endOffset() = 0;
};

class Backbone {
 public:
  virtual ~Backbone() = default;
  virtual std::string kind() const = 0;  // "embedded", "rocketmq", "kafka"
  virtual Result<std::unique_ptr<Producer>> createProducer(const StringMap& overrides) = 0;
  // `memberId` names the member in the group (e.g. "<connector>-<task>").
  virtual Result<std::unique_ptr<Consumer>> createConsumer(const std::string& group,
                                                           const std::string& memberId,
                                                           const StringMap& overrides) = 0;
  virtual Admin& admin() = 0;
  // What the backbone found damaged or missing in its storage since it opened (see
  // StorageIssue); empty for backbones whose storage is a broker's.
  virtual std::vector<StorageIssue> storageIssues() const { return {}; }
  // Checks a topic name against the backbone's rules before anything is created with it.
  virtual Status validateTopicName(const std::string& name) const {
    (void)name;
    return Status::ok();
  }
  // Opens (creating when missing) the shared log `topic`: see SharedLog.
  virtual Result<std::unique_ptr<SharedLog>> openSharedLog(const std::string& topic) {
    (void)topic;
    return Status::failedPrecondition("the " + kind() + " backbone has no shared log");
  }
  // Exactly-once support (kafka only so far): see TransactionalProducer.
  virtual Result<std::unique_ptr<TransactionalProducer>> createTransactionalProducer(
      const std::string& transactionalId, const StringMap& overrides) {
    (void)transactionalId;
    (void)overrides;
    return Status::failedPrecondition("the " + kind() + " backbone has no transactions (exactly-once needs backbone=kafka)");
  }
  // Reads every committed message of `topic` (creating it with `queues` queues when missing)
  // from its start, in queue order, skipping aborted transactions. With `waitForOpen`, reads up
  // to the end as of the call, waiting (up to `timeout`) for transactions open then to finish;
  // without, stops where the first still-open transaction begins. With `cursor`, each queue is
  // read from the offset it holds for it (from the start when it holds none), and it is left
  // holding the offset to read next: a later call reads only what was written in between.
  virtual Status readCommitted(const std::string& topic, std::int32_t queues,
                               const std::function<void(const Message&)>& fn, bool waitForOpen,
                               std::chrono::milliseconds timeout, std::map<std::int32_t, std::int64_t>* cursor = nullptr) {
    (void)cursor;
    (void)waitForOpen;
    (void)topic;
    (void)queues;
    (void)fn;
    (void)timeout;
    return Status::failedPrecondition("the " + kind() + " backbone cannot read a topic whole");
  }
  // A look at what `topic` holds: the last `perQueue` messages of each of its queues (those before
  // its end as of the call), queue by queue, oldest first; nothing is consumed, no group joined,
  // nothing created (NotFound when the topic does not exist). For REST's GET /topics/{name}/records.
  // The default reads through readCommitted() from each queue's end minus `perQueue`.
  virtual Status peek(const std::string& topic, std::size_t perQueue, const std::function<void(const Message&)>& fn,
                      std::chrono::milliseconds timeout) {
    FERRY_ASSIGN_OR_RETURN(TopicInfo info, admin().describeTopic(topic));
    FERRY_ASSIGN_OR_RETURN(OffsetMap starts, admin().startOffsets(topic));
    FERRY_ASSIGN_OR_RETURN(OffsetMap ends, admin().endOffsets(topic));
    std::map<std::int32_t, std::int64_t> cursor;
    for (const auto& [tq, end] : ends) {
      const std::int64_t start = starts.count(tq) ? starts.at(tq) : 0;
      cursor[tq.queue] = std::max(start, end - static_cast<std::int64_t>(perQueue));
    }
    return readCommitted(topic, info.queues, fn, /*waitForOpen=*/false, timeout, &cursor);
  }
  // Stops background work; producers/consumers created earlier fail afterwards.
  virtual void close() = 0;
};

}  // namespace ferry::backbone
