#pragma once
// One backbone producer for many writers - the source tasks of a worker. Kafka Connect gives every
// task its own producer; at thousands of tasks per worker that is thousands of client instances,
// their threads and their broker connections. Here a worker has one, created on first use, and
// each task writes through a view whose flush() waits for the view's own sends only (a task's
// position commit does not wait for its neighbours' records). Records of one view keep their order
// per queue, as they would on a producer of their own.
#include <atomic>
#include <memory>
#include <mutex>

#include "backbone/backbone.h"

namespace ferry::backbone {

// The fencing state of a SharedProducer, shared with its views (which may outlive it). A send
// counts itself in `sending` before it reads `fenced` (both sequentially consistent), fence()
// sets `fenced` before it waits for `sending` to drain: so every send either sees the fence and
// refuses, or is counted and has handed its message to the client before the final purge.
struct ProducerGate {
  std::atomic<bool> fenced{false};
  std::atomic<int> sending{0};
};

class SharedProducer {
 public:
  explicit SharedProducer(Backbone& backbone) : backbone_(backbone) {}
  // A view for one writer; the shared producer is created on the first call (an error here is the
  // backbone's refusal to create it, returned to every caller until a later call succeeds).
  Result<std::unique_ptr<Producer>> view();

  // Fencing (a distributed worker that lost its lease must send nothing more): fence(true)
  // purges what the producer still holds (Producer::purge: every unacknowledged message gets a
  // retriable error) and makes every view refuse sends (Unavailable) until fence(false). A send
  // under way when fence(true) is called is either refused or queued before the purge, which
  // then drops it: none slips through after it (the wait for sends under way is bounded by 2 s;
  // a send still blocked then is reported in the returned status). Returns the purge's status.
  // Any thread.
  Status fence(bool fenced);
  bool fenced() const;
  // Producer::awaitPurged of the producer (ok when there is none).
  Status awaitPurged(std::chrono::milliseconds timeout);

 private:
  Backbone& backbone_;
  std::mutex mu_;
  std::shared_ptr<Producer> producer_;  // views keep it alive while their callbacks may run
  std::shared_ptr<ProducerGate> gate_ = std::make_shared<ProducerGate>();
};

}  // namespace ferry::backbone
