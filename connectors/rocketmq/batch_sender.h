// BatchSender: asynchronous batch sends through a rocketmq::Producer with a bound on messages in
// flight, optional per-key ordering (at most one batch of a key outstanding at a time, other keys
// in parallel), and keep-and-resend of retriable failures (resent as first prepared: the same
// message ids). Shared by RocketMQSink (key = record
// key) and the Replicator's sink (key = target queue).
//
// In ordered mode a key whose batch failed queues its later batches behind the failed one until
// flush() resends them in order, so a key's messages are stored in the order sent even across
// retries. flush() waits until every send was answered, sends the retriable failures again once, and
// answers a retriable Status while any remain (so the runtime never commits past an unsent
// message); a non-retriable failure is returned by every later call.
//
// Threading: send()/flush()/waitIdle() from one owner thread; the producer's callbacks (io thread)
// touch only the mutex-guarded state and call Batch::onSent outside the lock.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <optional>
#include <thread>
#include <vector>

#include "core/flush_epochs.h"
#include "ferry/connector.h"
#include "ferry/result.h"
#include "rocketmq/producer.h"

namespace ferry::connectors::rmq {

class BatchSender {
 public:
  struct Batch {
    std::vector<rocketmq::OutgoingMessage> messages;  // one topic; one queue when > 1
    // Set by send(): the messages as prepared for the producer (they are moved into it). A
    // failed batch is resent from this, with the same message ids, without a copy kept.
    rocketmq::Producer::PreparedSend prepared;
    rocketmq::QueueSelection selection;
    std::string orderKey;  // ordered mode: batches of one key go one at a time
    // Called (io thread) once the batch is stored, with the broker's answer.
    std::function<void(const rocketmq::SendResult&)> onSent;
    std::string topic;  // set by send() (the messages are moved into `prepared`)
  };

  BatchSender(rocketmq::Producer& producer, bool ordered, std::size_t maxInFlight);
  ~BatchSender();  // waitIdle()
  BatchSender(const BatchSender&) = delete;
  BatchSender& operator=(const BatchSender&) = delete;

  // Blocks until there is room (and, ordered, until the key has no batch outstanding).
  void send(Batch batch);
  // The first non-retriable failure so far (ok if none).
  Status fatal() const;
  Status flush(const std::string& who);
  // flush() without blocking, for SinkTask::flushAsync: `done` is called once (any thread,
  // possibly at once) when every batch sent before the call was answered: OK, the first
  // non-retriable failure, or a retriable error while failed sends wait in `retry` (flush()
  // resends them; flushAsync does not, it never blocks). At most one outstanding at a time.
  void flushAsync(const std::string& who, std::function<void(Status)> done);
  void waitIdle();
  std::size_t inFlight() const;

  // How the sends reach RocketMQ, told to `report` (io thread, the caller's thread or the probe
  // thread; quickly; on changes): kReconnecting with the error when a send fails because a
  // broker or the NameServer cannot be reached (Unavailable, Timeout: kept for flush()),
  // kConnected when a send succeeds again — or, while failed sends wait for flush(), when a
  // probe (a thread started here, every `probeMs`: the route of the failed batch's topic, then
  // a GET_BROKER_RUNTIME_INFO to each of its masters) finds every master answering (the kept
  // sends still go out at the runtime's next flush()). `client` is the producer's and must
  // outlive this sender. Call once, before the first send().
  void watchHealth(rocketmq::RocketmqClient& client,
                   std::function<void(const ConnectionHealth&)> report, std::int64_t probeMs = 500);

 private:
  struct Shared {
    mutable std::mutex mu;
    std::condition_variable cv;
    std::size_t inFlight = 0;                 // messages
    std::map<std::string, int> keysInFlight;  // ordered: batches per key
    std::vector<Batch> retry;                 // retriable failures, resent by flush()
    std::set<std::string> retryKeys;          // ordered: keys with a batch in `retry`
    Status retryError;
    Status fatal;
    core::FlushEpochs epochs;  // flushAsync: batches in flight by epoch
    std::string waiterWho;
    // The waiting flushAsync callback to call (outside the lock) with `result`, if nothing it
    // waits for is in flight.
    core::FlushEpochs::Callback takeWaiterIfDoneLocked(Status& result);
    // A batch that failed with `s`: kept for flush() when `s` is retriable, else `s` is fatal.
    void failedLocked(Batch&& batch, const Status& s, bool ordered);
    // watchHealth(): the report, whether the last news was a loss, the topic to probe.
    std::function<void(const ConnectionHealth&)> health;
    bool lost = false;
    bool stopping = false;
    std::string probeTopic;
    std::condition_variable probeCv;
    // Under mu: what to report (outside mu) for the outcome `s` of a send of `topic`, if any.
    std::optional<ConnectionHealth> outcomeLocked(const Status& s, const std::string& topic);
  };
  void probeLoop(rocketmq::RocketmqClient& client, std::int64_t probeMs);
  // Sends the kept (retriable) failures again, in order (flush()); false when there were none
  // (or a fatal failure stops everything).
  bool resendKept();

  rocketmq::Producer& producer_;
  const bool ordered_;
  const std::size_t maxInFlight_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::thread probe_;  // watchHealth(); joined by the destructor
};

}  // namespace ferry::connectors::rmq
