// FlushEpochs: what an asynchronous flush (SinkTask::flushAsync) waits for. Sends are counted in
// the epoch current when they start; await() closes that epoch and keeps the flush's callback
// until no send of it or an earlier one is outstanding. Used by MQTTSink (publishes) and
// RocketMQSink's BatchSender (batches). Not thread-safe: the owner guards it with its mutex and
// calls the callback takeIfDone() returns after releasing that mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "ferry/status.h"

namespace ferry::core {

class FlushEpochs {
 public:
  using Callback = std::function<void(Status)>;

  // `n` sends start now; returns their epoch (give it to ended()).
  std::uint64_t started(std::size_t n = 1) {
    outstanding_[current_] += n;
    return current_;
  }
  void ended(std::uint64_t epoch, std::size_t n = 1) {
    auto it = outstanding_.find(epoch);
    if (it == outstanding_.end()) return;
    it->second = it->second > n ? it->second - n : 0;
    if (it->second == 0) outstanding_.erase(it);
  }
  // A flush of everything started so far: later sends belong to the next epoch. At most one
  // outstanding (a second replaces the first).
  void await(Callback done) {
    waitUpTo_ = current_++;
    waiter_ = std::move(done);
  }
  // The awaiting callback once nothing it covers is outstanding (null otherwise, or when none).
  Callback takeIfDone() {
    if (!waiter_ || (!outstanding_.empty() && outstanding_.begin()->first <= waitUpTo_)) return nullptr;
    return std::exchange(waiter_, nullptr);
  }

 private:
  std::uint64_t current_ = 0;
  std::map<std::uint64_t, std::size_t> outstanding_;  // epoch -> sends not ended
  std::uint64_t waitUpTo_ = 0;
  Callback waiter_;
};

}  // namespace ferry::core
