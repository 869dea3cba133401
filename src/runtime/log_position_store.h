// Source positions kept in a backbone topic (offset.storage.topic) instead of data.dir, so that
// an exactly-once source can write its positions in the same transaction as its records.
//
// Records use Kafka Connect's offsets-topic format, so its tools read them: key
// ["<connector>", {partition}] (JSON), value {offset} (JSON), a null value deletes the partition.
// Keys hash to partitions, so one source partition's positions stay in order. The store reads
// the topic whole (read_committed) when opened, and on reload() what was written since (a cursor
// per partition), and keeps the positions in memory.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backbone/backbone.h"
#include "backbone/shared_producer.h"
#include "store/store.h"

namespace ferry::runtime {

class LogPositionStore final : public store::PositionStore {
 public:
  // Reads `topic` (created with `partitions` partitions when missing). With readNow=false
  // nothing is read yet: the first reload() reads the topic whole (a distributed worker serves
  // REST before it reads a topic that exactly-once sources write at every transaction).
  static Result<std::unique_ptr<LogPositionStore>> open(backbone::Backbone& backbone, std::string topic,
                                                        std::int32_t partitions, std::chrono::milliseconds timeout,
                                                        bool readNow = true);
  ~LogPositionStore() override;

  // Reads what was written since the last read every `every` on a thread of its own until the
  // store is destroyed, so that a task starting here (which must read the topic to its end
  // first) finds only the last moments' records to read, not everything since the worker
  // started. Failures are logged and retried at the next turn. every <= 0: one read only (the
  // first, off the caller's path).
  void follow(std::chrono::milliseconds every);

  Result<std::optional<StringMap>> get(const std::string& connector, const StringMap& partition) override;
  Result<std::vector<Position>> getAll(const std::string& connector) override;
  // Written outside any transaction (REST offset changes, a non-exactly-once caller).
  Status put(const std::string& connector, const std::vector<Position>& positions) override;
  // Sends at once; `done` runs on the producer's callback thread when the last message of the
  // put is acknowledged (or failed, or purged by fence()).
  void putAsync(const std::string& connector, std::vector<Position> positions,
                std::function<void(Status)> done) override;
  Status removeConnector(const std::string& connector) override;

  // Reads the topic again: a task calls it after fencing its zombies, before it starts, waiting
  // for other transactions open at the call. open() does not wait: the zombies of the tasks
  // that will fence them are still holding theirs.
  Status reload(bool waitForOpen = true);
  // The messages that store `positions` (sent by a transactional producer with the records).
  std::vector<backbone::Message> encode(const std::string& connector, const std::vector<Position>& positions) const;
  // Records positions whose transaction committed.
  void applyCommitted(const std::string& connector, const std::vector<Position>& positions);
  const std::string& topic() const { return topic_; }
  // A distributed worker that lost its lease writes no position more: put() is refused while
  // fenced, and what an earlier put() still has queued in the client is purged (so a put blocked
  // on a broker that went away returns at once, failed). See backbone::SharedProducer::fence.
  Status fence(bool fenced) { return producers_.fence(fenced); }
  // Waits (at most `timeout`) until the position writes a fence purged while they were in flight
  // were answered or timed out (backbone::Producer::awaitPurged): call before reload() after the
  // lease came back, so a write that was still on its way is read.
  Status awaitPurged(std::chrono::milliseconds timeout) { return producers_.awaitPurged(timeout); }

  // The format, exposed for tests: nullopt when the bytes are not a ferry/Kafka Connect position.
  // Records are read from a topic others may write: decoding parses with core::parseJsonBounded.
  // Encoding never throws: invalid UTF-8 in a name or value is replaced by U+FFFD.
  static std::string encodeKey(const std::string& connector, const StringMap& partition);
  static std::optional<std::pair<std::string, StringMap>> decodeKey(std::string_view key);
  static std::string encodeValue(const StringMap& offset);
  static std::optional<StringMap> decodeValue(std::string_view value);

 private:
  LogPositionStore(backbone::Backbone& b, std::string topic, std::int32_t partitions, std::chrono::milliseconds t)
      : backbone_(b), topic_(std::move(topic)), partitions_(partitions), timeout_(t), producers_(b) {}
  void applyLocked(const std::string& connector, const std::vector<Position>& positions);

  backbone::Backbone& backbone_;
  const std::string topic_;
  const std::int32_t partitions_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::map<std::string, std::map<StringMap, StringMap>> positions_;  // guarded by mu_
  std::map<std::int32_t, std::int64_t> cursor_;                       // guarded by mu_: next offsets to read
  std::mutex reloadMu_;                                               // one reload at a time
  backbone::SharedProducer producers_;                                // puts write through views
  std::mutex asyncMu_;
  std::unique_ptr<backbone::Producer> asyncView_;  // guarded by asyncMu_: the view of putAsync(), flushed at close
  std::mutex followMu_;
  std::condition_variable followCv_;
  bool stopFollowing_ = false;  // guarded by followMu_
  std::thread follower_;
};

}  // namespace ferry::runtime
