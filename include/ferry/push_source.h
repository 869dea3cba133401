// ferry connector SDK — push-style sources.
//
// Some systems deliver by callback instead of answering a poll (MQTT, webhooks, CDC streams). A
// PushSourceTask turns that into the poll contract with a bounded hand-off:
//   - the library callback (any thread) calls offer(record, ack): it waits while the hand-off is
//     full (capacity counts records *and* bytes not yet acknowledged), so memory stays bounded
//     and a fast outside system is slowed down rather than buffered without limit;
//   - the task thread's poll() drains the hand-off;
//   - when the runtime reports the record safe (commitRecord), `ack` runs, so the outside system
//     is acknowledged only after the record is in the backbone (or flushed by a direct sink).
//     Capacity is returned only then.
//
// Thread-safety: offer(), close() and the counters are thread-safe; poll() and commitRecord() are
// called from the task thread only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "ferry/connector.h"

namespace ferry {

class PushHandoff {
 public:
  PushHandoff(std::size_t maxRecords, std::size_t maxBytes)
      : maxRecords_(maxRecords == 0 ? 1 : maxRecords), maxBytes_(maxBytes == 0 ? 1 : maxBytes) {}

  // Offers `record`; `onSafe` runs (on the task thread) once it is safe, `onDropped` if it will
  // never be (dropped by a filter, or the task stopped). Waits up to `timeout` for room. Returns
  // Status::resourceExhausted on timeout (the caller should not acknowledge the outside system),
  // Status::cancelled after close().
  Status offer(Record record, std::function<void()> onSafe, std::function<void(bool)> onDropped,
               std::chrono::milliseconds timeout) {
    const std::size_t bytes = record.sizeBytes();
    std::unique_lock lock(mu_);
    const bool room = roomCv_.wait_for(lock, timeout, [&] {
      return closed_ || (inFlightRecords_ < maxRecords_ &&
                         (inFlightBytes_ == 0 || inFlightBytes_ + bytes <= maxBytes_));
    });
    if (closed_) return Status::cancelled("push hand-off closed");
    if (!room) return Status::resourceExhausted("push hand-off full");
    ++inFlightRecords_;
    inFlightBytes_ += bytes;
    record.acknowledger = std::make_shared<Ack>(this, bytes, std::move(onSafe), std::move(onDropped));
    queue_.push_back(std::move(record));
    lock.unlock();
    dataCv_.notify_one();
    return Status::ok();
  }

  // Task thread: moves up to maxRecords queued records into `out`, waiting up to maxWait.
  std::size_t drain(std::vector<Record>& out, std::size_t maxRecords, std::chrono::milliseconds maxWait) {
    std::unique_lock lock(mu_);
    dataCv_.wait_for(lock, maxWait, [&] { return closed_ || !queue_.empty(); });
    std::size_t n = 0;
    while (!queue_.empty() && n < maxRecords) {
      out.push_back(std::move(queue_.front()));
      queue_.pop_front();
      ++n;
    }
    return n;
  }

  // Wakes every waiter; later offers fail. Queued records are released (not delivered).
  void close() {
    std::deque<Record> dropped;
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      dropped.swap(queue_);
    }
    roomCv_.notify_all();
    dataCv_.notify_all();
    for (auto& r : dropped)
      if (r.acknowledger) r.acknowledger->release(false);
  }

  std::size_t inFlightRecords() const { std::lock_guard l(mu_); return inFlightRecords_; }
  std::size_t inFlightBytes() const { std::lock_guard l(mu_); return inFlightBytes_; }

 private:
  class Ack final : public Acknowledger {
   public:
    Ack(PushHandoff* owner, std::size_t bytes, std::function<void()> onSafe, std::function<void(bool)> onDropped)
        : owner_(owner), bytes_(bytes), onSafe_(std::move(onSafe)), onDropped_(std::move(onDropped)) {}
    ~Ack() override { finish(); }  // never acknowledged: give the capacity back
    void ack() noexcept override {
      if (done_) return;
      if (onSafe_) onSafe_();
      finish();
    }
    void release(bool delivered) noexcept override {
      if (done_) return;
      if (onDropped_) onDropped_(delivered);
      finish();
    }

   private:
    void finish() noexcept {
      if (done_) return;
      done_ = true;
      owner_->returnCapacity(bytes_);
    }
    PushHandoff* owner_;
    std::size_t bytes_;
    std::function<void()> onSafe_;
    std::function<void(bool)> onDropped_;
    bool done_ = false;
  };

  void returnCapacity(std::size_t bytes) noexcept {
    {
      std::lock_guard lock(mu_);
      --inFlightRecords_;
      inFlightBytes_ -= bytes;
    }
    roomCv_.notify_all();
  }

  const std::size_t maxRecords_;
  const std::size_t maxBytes_;
  mutable std::mutex mu_;
  std::condition_variable roomCv_;  // waits for capacity
  std::condition_variable dataCv_;  // waits for records
  std::deque<Record> queue_;        // guarded by mu_
  std::size_t inFlightRecords_ = 0; // guarded by mu_: offered and not yet acked/released
  std::size_t inFlightBytes_ = 0;   // guarded by mu_
  bool closed_ = false;             // guarded by mu_
};

// A SourceTask whose records arrive through a PushHandoff. Subclasses start their client in
// startPush() and call handoff().offer(...) from its callbacks; stopPush() stops the client.
// The handoff must outlive every Acknowledger it issued: records still in the runtime hold one,
// so a subclass stops its client, then the runtime drops its records, then the task is destroyed.
class PushSourceTask : public SourceTask {
 public:
  PushSourceTask(std::size_t maxRecords = 10000, std::size_t maxBytes = 64u << 20)
      : handoff_(maxRecords, maxBytes) {}

  Result<std::size_t> poll(std::vector<Record>& out, std::size_t maxRecords,
                           std::chrono::milliseconds maxWait) override {
    return handoff_.drain(out, maxRecords, maxWait);
  }
  void stop() override {
    stopPush();
    handoff_.close();
  }

 protected:
  virtual void stopPush() = 0;
  PushHandoff& handoff() noexcept { return handoff_; }

 private:
  PushHandoff handoff_;
};

}  // namespace ferry
