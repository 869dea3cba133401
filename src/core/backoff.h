// The one exponential backoff (initial delay, doubling, capped, reset) and the one retry budget
// (errors.retry.timeout semantics) of the worker. Every delay that grows after a failure uses
// these: task calls retried within a task (start, poll, put, backbone resends), the herders'
// automatic restarts of failed tasks and connectors, the MQTT and RocketMQ clients' reconnects,
// and the RocketMQ producer's pauses for a busy broker.
//
// Threading: a Backoff or a RetryBudget belongs to one thread (or is guarded by its owner); they
// read time only through the Clock they were given, so tests drive them without sleeping.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "core/clock.h"

namespace ferry::core {

// The delay after `failures` earlier failures in a row: initial * 2^failures, at most max.
// initial < 1 counts as 1 and max < initial as initial, so a misconfiguration never spins.
inline std::int64_t backoffDelay(std::int64_t initialMs, std::int64_t maxMs, int failures) {
  const std::int64_t first = std::max<std::int64_t>(initialMs, 1);
  const std::int64_t cap = std::max(maxMs, first);
  std::int64_t d = first;
  for (int i = 0; i < failures && d < cap; ++i) d = d > cap / 2 ? cap : d * 2;
  return std::min(d, cap);
}

class Backoff {
 public:
  Backoff(std::int64_t initialMs, std::int64_t maxMs) : initialMs_(initialMs), maxMs_(maxMs) {}

  // The delay to wait now; the next call returns twice as much (up to max).
  std::int64_t next() { return backoffDelay(initialMs_, maxMs_, failures_ < kMaxExp ? failures_++ : failures_); }
  // What next() would return, without counting.
  std::int64_t peek() const { return backoffDelay(initialMs_, maxMs_, failures_); }
  // Back to the initial delay (after a success, or a healthy run).
  void reset() { failures_ = 0; }
  // Failures counted since the last reset (capped where the delay no longer grows).
  int failures() const { return failures_; }

 private:
  static constexpr int kMaxExp = 62;
  std::int64_t initialMs_;
  std::int64_t maxMs_;
  int failures_ = 0;
};

// errors.retry.timeout for one kind of call (Kafka Connect's key): retriable failures in a row are
// retried until `timeoutMs` has passed since the first of them; timeoutMs 0 retries nothing, a
// negative one retries for ever. Delays: 100 ms doubling up to errors.retry.delay.max.ms. A success
// (reset()) starts the next run of failures afresh: a new deadline and the initial delay.
class RetryBudget {
 public:
  static constexpr std::int64_t kInitialDelayMs = 100;

  RetryBudget(std::int64_t timeoutMs, std::int64_t delayMaxMs, const Clock& clock = Clock::system(),
              std::int64_t initialDelayMs = kInitialDelayMs)
      : timeoutMs_(timeoutMs), backoff_(initialDelayMs, std::max<std::int64_t>(delayMaxMs, 1)), clock_(&clock) {}

  // A retriable failure happened now. The delay to wait before the next attempt, or nullopt when
  // the budget is spent (the caller fails, naming errors.retry.timeout). The delay never runs past
  // the deadline by more than one step: the attempt after it is the last one.
  std::optional<std::int64_t> onFailure() {
    const std::int64_t now = clock_->steadyMs();
    if (firstFailureMs_ < 0) firstFailureMs_ = now;
    if (timeoutMs_ == 0) return std::nullopt;
    if (timeoutMs_ > 0 && now - firstFailureMs_ >= timeoutMs_) return std::nullopt;
    ++retries_;
    return backoff_.next();
  }
  // The call passed: the next failure starts a new budget.
  void reset() {
    firstFailureMs_ = -1;
    backoff_.reset();
  }
  bool forever() const { return timeoutMs_ < 0; }
  std::int64_t timeoutMs() const { return timeoutMs_; }
  // Retries granted since the last reset.
  std::int64_t retries() const { return retries_; }
  // Milliseconds since the first failure of the current run (0 when none).
  std::int64_t failingForMs() const { return firstFailureMs_ < 0 ? 0 : clock_->steadyMs() - firstFailureMs_; }

 private:
  std::int64_t timeoutMs_;
  Backoff backoff_;
  const Clock* clock_;
  std::int64_t firstFailureMs_ = -1;
  std::int64_t retries_ = 0;
};

// The automatic restart of a failed task or connector (worker keys task.restart.backoff.initial.ms
// and .max.ms): each failure in a row doubles the wait; a run that stayed healthy longer than the
// maximum wait counts as a success, so a task that fails once a day restarts after the initial
// delay, not after the maximum.
class RestartBackoff {
 public:
  RestartBackoff(std::int64_t initialMs, std::int64_t maxMs) : backoff_(initialMs, maxMs), maxMs_(maxMs) {}

  // The unit failed at `nowMs` after running `ranForMs`: when to restart it (steady ms).
  std::int64_t onFailure(std::int64_t nowMs, std::int64_t ranForMs) {
    if (ranForMs > maxMs_) backoff_.reset();
    return nowMs + backoff_.next();
  }
  void reset() { backoff_.reset(); }
  int failures() const { return backoff_.failures(); }

 private:
  Backoff backoff_;
  std::int64_t maxMs_;
};

}  // namespace ferry::core
