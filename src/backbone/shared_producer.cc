#include "backbone/shared_producer.h"

#include <condition_variable>
#include <string>

namespace ferry::backbone {
namespace {

class ProducerView final : public Producer {
 public:
  explicit ProducerView(std::shared_ptr<Producer> shared)
      : shared_(std::move(shared)), state_(std::make_shared<State>()) {}
  ~ProducerView() override = default;  // callbacks still in flight hold state_, not this

  Status send(Message message, SendCallback cb) override {
    {
      std::lock_guard lock(state_->mu);
      ++state_->outstanding;
    }
    Status s = shared_->send(std::move(message), [state = state_, cb = std::move(cb)](
                                                     const Status& st, std::int32_t queue, std::int64_t offset) {
      if (cb) cb(st, queue, offset);
      state->done();
    });
    if (!s.isOk()) state_->done();  // refused before queuing: no callback comes
    return s;
  }

  Status flush(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(state_->mu);
    if (!state_->cv.wait_for(lock, timeout, [&] { return state_->outstanding == 0; }))
      return Status::timeout(std::to_string(state_->outstanding) + " message(s) not yet acknowledged by the backbone");
    return Status::ok();
  }

  Status sync() override { return shared_->sync(); }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::int64_t outstanding = 0;
    void done() {
      std::lock_guard lock(mu);
      if (--outstanding == 0) cv.notify_all();
    }
  };
  std::shared_ptr<Producer> shared_;
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
  return std::unique_ptr<Producer>(std::make_unique<ProducerView>(producer_));
}

}  // namespace ferry::backbone
