// RedisSource: reads Redis streams (consumer group), lists (reliable queue) or pub/sub channels.
//
// Exactly one of redis.streams, redis.lists, redis.channels / redis.patterns says what is read.
//
// Streams (at-least-once). Each task reads its share of redis.streams (split over tasks.max) with
// XREADGROUP as consumer redis.stream.consumer (default <connector>-<task>: stable, so a task that
// restarts, on this worker or another, is the same consumer) of group redis.stream.group (created
// with XGROUP CREATE ... MKSTREAM at redis.stream.start.id when missing). An entry is
// acknowledged (XACK) only after its record is safe (commitRecord), so a crash leaves it in the
// consumer's pending list; a task starts by reading its own pending entries (id 0) before new
// ones (>). Every redis.stream.claim.interval.ms the task takes over entries another consumer left
// pending longer than redis.stream.claim.min.idle.ms (XAUTOCLAIM: a consumer that is gone, say
// after tasks.max was lowered), except its own in flight. Record: value = the entry's `value`
// field, key = its `key` field, every other field a header (redis.stream.value=field), or value =
// all fields as a JSON object (=json); headers redis.stream and redis.id; timestamp = the id's
// milliseconds; position {redis.stream: <key>} / {id: <entry id>} (shown in offsets; resuming is
// the group's work).
//
// Lists (at-least-once). LMOVE <list> <processing> RIGHT LEFT takes elements into a processing
// list of the task's own (<list>:ferry-processing:<connector>-<task>, in the list's hash slot),
// BLMOVE waits when the list is empty; an element is removed from the processing list once its
// record is safe (one EVAL per batch: an LTRIM of the list's tail when the acknowledged elements
// are its tail, else LREM each). A task starts by delivering what its processing list still
// holds, and so does a task whose connection was lost.
//
// Standalone, after a full batch the next read (XREADGROUP without BLOCK, or LMOVEs) is written
// ahead with the acknowledgements since the last one; the next poll() takes its replies.
// Record: value = the element, header redis.list.
//
// Pub/sub (at-most-once by nature: Redis keeps nothing for a subscriber that is not connected,
// and a message is gone once sent). SUBSCRIBE redis.channels / PSUBSCRIBE redis.patterns on a
// connection of the task's own; keyspace notifications are channels too (__keyspace@0__:*, with
// the server's notify-keyspace-events set). Messages while ferry is down or reconnecting are
// lost; ferry_... counters: the task logs each reconnect. Record: value = the message, headers
// redis.channel (and redis.pattern).
//
// topic: the record topic, with ${source} replaced by the stream, list or channel name.
//
// Threading: the task thread only (kBlocking: poll() waits in XREADGROUP BLOCK / BLMOVE / a read
// of the subscription, at most maxWait).
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <unordered_set>
#include <string>
#include <vector>

#include "ferry/connector.h"
#include "redis/client.h"

namespace spdlog {
class logger;
}

namespace ferry::connectors {

class RedisSourceConnector final : public SourceConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override;
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SourceTask> createTask() override;

 private:
  StringMap config_;
  std::string connector_;
};

class RedisSourceTask final : public SourceTask {
 public:
  RedisSourceTask();
  ~RedisSourceTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SourceTaskContext& context) override;
  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                           std::chrono::milliseconds maxWait) override;
  Status commit() override;
  void stop() override;

  enum class Mode { kStream, kList, kPubSub };
  struct AckQueue;  // what the runtime acknowledged (redis_source.cc)

 private:
  Status connect();
  // A read written ahead (standalone streams and lists, after a full batch): its replies are
  // the next on the connection.
  struct Ahead {
    std::size_t replies = 0;  // 0: none
    std::size_t max = 0;      // records it may hold
    std::string list;         // lists: the list its LMOVEs take from
    bool full = false;        // the read before it filled its batch
    std::size_t ackReplies = 0;  // acknowledgement commands written just before it
    std::vector<std::pair<std::string, std::string>> acks;  // what they acknowledge
  };
  using Acks = std::vector<std::pair<std::string, std::string>>;  // (stream or list, id or element)

  // XACKs (streams) or processing-list removals (lists) of what the runtime acknowledged since
  // the last call.
  Status flushAcks();
  void ackCommands(const Acks& done, std::vector<redis::Command>& cmds);
  void acknowledged(const Acks& done, const std::vector<redis::Reply>& replies);
  void requeue(Acks& done);
  // Writes a read ahead (standalone), so Redis prepares the next batch while this one is handled.
  void sendAhead(std::size_t max);
  void appendRead(std::string& bytes, std::size_t max, Ahead& ahead);
  Result<std::size_t> takeAhead(std::vector<Record>& out, std::size_t max);
  // Reads and drops a read ahead's replies (stopping).
  void settleAhead();
  bool claimDue() const;
  void emitListElement(const std::string& list, std::string element, std::vector<Record>& out);
  Result<std::size_t> pollStreams(std::vector<Record>& out, std::size_t max, std::chrono::milliseconds wait);
  Result<std::size_t> pollLists(std::vector<Record>& out, std::size_t max, std::chrono::milliseconds wait);
  Result<std::size_t> pollPubSub(std::vector<Record>& out, std::size_t max, std::chrono::milliseconds wait);
  // Appends the records of an XREADGROUP/XAUTOCLAIM entry list of `stream`; returns how many.
  // Entries whose fields are nil (deleted while pending) are acknowledged and skipped.
  // `fresh`: read with ">" (new to this consumer), else pending or claimed entries, of which
  // those still in flight are skipped.
  std::size_t streamEntries(const std::string& stream, redis::Reply& entries, std::vector<Record>& out,
                            bool fresh = true);
  std::string topicFor(const std::string& source) const;
  Status unavailable(const Status& s, const char* what);

  std::shared_ptr<spdlog::logger> log_;
  SourceTaskContext* context_ = nullptr;
  std::shared_ptr<AckQueue> done_;
  Mode mode_ = Mode::kStream;
  redis::ClientOptions options_;
  std::unique_ptr<redis::Client> client_;
  std::vector<std::string> sources_;  // streams, lists or channels of this task
  std::vector<std::string> patterns_;
  std::string topic_;
  std::size_t batch_ = 500;
  Ahead ahead_;

  // Streams.
  std::string group_;
  std::string consumer_;
  std::string startId_;
  bool valueAsJson_ = false;
  std::string valueField_ = "value";
  std::string keyField_ = "key";
  std::map<std::string, std::string> pendingFrom_;       // stream -> next id of our pending list ("" done)
  std::map<std::string, std::deque<std::string>> inFlight_;  // stream -> ids given out, not yet acked, in order
  std::chrono::milliseconds claimMinIdle_{60000};
  std::chrono::milliseconds claimInterval_{10000};
  std::chrono::steady_clock::time_point nextClaim_{};
  std::map<std::string, std::string> claimCursor_;  // stream -> XAUTOCLAIM start
  bool groupsReady_ = false;

  // Lists.
  std::map<std::string, std::string> processing_;          // list -> processing list
  bool recovered_ = false;
  std::size_t nextList_ = 0;

  // Pub/sub.
  std::unique_ptr<redis::Connection> subscription_;
  std::uint64_t reconnects_ = 0;
};

}  // namespace ferry::connectors
