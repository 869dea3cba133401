#include "backbone/shared_producer.h"

#include <atomic>
#include <condition_variable>
#include <string>
#include <thread>

#include "core/clock.h"

namespace ferry::backbone {
namespace {

class ProducerView final : public Producer {
 public:
  ProducerView(std::shared_ptr<Producer> shared, std::shared_ptr<ProducerGate> gate)
      : shared_(std::move(shared)), gate_(std::move(gate)), state_(std::make_shared<State>()) {}
  ~ProducerView() override = default;  // callbacks still in flight hold state_, not this

  Status send(Message message, SendCallback cb) override {
    return sendVia([&](SendCallback wrapped) { return shared_->send(std::move(message), std::move(wrapped)); },
                   std::move(cb));
  }
  Status sendFrom(const Message& message, SendCallback cb) override {
    return sendVia([&](SendCallback wrapped) { return shared_->sendFrom(message, std::move(wrapped)); }, std::move(cb));
  }

  Status flush(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(state_->mu);
    if (!state_->cv.wait_for(lock, timeout, [&] { return state_->outstanding.load() == 0; }))
      return Status::timeout(std::to_string(state_->outstanding.load()) +
                             " message(s) not yet acknowledged by the backbone");
    return Status::ok();
  }

  Status sync() override { return shared_->sync(); }
  static Status fencedError() {
    return Status::unavailable("not sent: this worker lost its cluster lease (the producer is fenced)");
  }
  // Purges the shared producer: every view's messages, not only this one's (used when the
  // worker lost its lease, when every writer must stop sending).
  Status purge() override { return shared_->purge(); }

 private:
  template <typename Send>
  Status sendVia(Send&& send, SendCallback cb) {
    // Refused before it is counted: writers refused again and again (tasks that have not stopped
    // yet) must not keep the count of sends under way above zero, which fence() waits for. The
    // second look, after counting, pairs with fence()'s store-then-read of `sending` (both
    // sequentially consistent): a send that counted itself either sees the fence or is waited for.
    if (gate_->fenced.load()) return fencedError();
    struct Counted {
      std::atomic<int>& n;
      explicit Counted(std::atomic<int>& c) : n(c) { n.fetch_add(1); }
      ~Counted() { n.fetch_sub(1); }
    } counted(gate_->sending);
    if (gate_->fenced.load()) return fencedError();
    state_->outstanding.fetch_add(1);
    Status s = send([state = state_, cb = std::move(cb)](const Status& st, std::int32_t queue, std::int64_t offset) {
      if (cb) cb(st, queue, offset);
      state->done();
    });
    if (!s.isOk()) state_->done();  // refused before queuing: no callback comes
    return s;
  }

  // Sends under way: counted without the mutex (as the embedded producer's, embedded.cc); the
  // last acknowledgement takes it to wake a flush().
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<std::int64_t> outstanding{0};
    void done() {
      if (outstanding.fetch_sub(1) != 1) return;
      std::lock_guard lock(mu);
      cv.notify_all();
    }
  };
  std::shared_ptr<Producer> shared_;
  std::shared_ptr<ProducerGate> gate_;
  std::shared_ptr<State> state_;
};

}  // namespace

Result<std::unique_ptr<Producer>> SharedProducer::view() {
  std::lock_guard lock(mu_);
  if (!producer_) {
    auto p = backbone_.createProducer({});
    if (!p.isOk()) return p.status();
    producer_ = std::shared_ptr<Producer>(std::move(*p));
  }
  return std::unique_ptr<Producer>(std::make_unique<ProducerView>(producer_, gate_));
}

Status SharedProducer::fence(bool fenced) {
  gate_->fenced.store(fenced);
  if (!fenced) return Status::ok();
  std::shared_ptr<Producer> producer;
  {
    std::lock_guard lock(mu_);
    producer = producer_;
  }
  if (!producer) return Status::ok();
  // A first purge frees the client's queue (a send blocked on a full queue can then finish), the
  // sends that passed the check before the fence end, and a second purge drops what they queued.
  Status first = producer->purge();
  const std::int64_t deadline = core::monotonicMs() + 2000;
  while (gate_->sending.load() > 0 && core::monotonicMs() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int stuck = gate_->sending.load();
  Status second = producer->purge();
  if (!first.isOk()) return first;
  if (!second.isOk()) return second;
  if (stuck > 0)
    return Status::timeout(std::to_string(stuck) + " send(s) still under way 2 s after the fence; what they queue "
                           "later is not purged");
  return Status::ok();
}

bool SharedProducer::fenced() const { return gate_->fenced.load(); }

Status SharedProducer::awaitPurged(std::chrono::milliseconds timeout) {
  std::shared_ptr<Producer> producer;
  {
    std::lock_guard lock(mu_);
    producer = producer_;
  }
  return producer ? producer->awaitPurged(timeout) : Status::ok();
}

}  // namespace ferry::backbone
