// TaskStopper: stops task runners within task.shutdown.graceful.timeout.ms, and keeps the ones
// that do not stop in time ("abandoned", as Kafka Connect calls them).
//
// stop() asks every runner given to stop, then waits for all of them up to one deadline (the
// timeout after the call). A runner still running then is cancelled (TaskRunner::cancel: nothing
// it does afterwards takes effect), logged as an error naming the task and the connector call it
// is blocked in, counted, and kept here: its thread still uses the runner and what the runner
// owns, so none of it may be freed while the thread runs. reap() frees those whose threads have
// ended since. A task restarted meanwhile runs as a new runner, independent of the abandoned one.
//
// Ownership: one per herder, owned by it. Threading: every method is thread-safe; stop() blocks
// its caller for at most the timeout (plus, per runner, a bounded wait for an effect under way).
// Failure: none; a thread that never ends stays here, and the destructor leaks it (with its
// runner) instead of freeing memory it uses — a worker with abandoned tasks must leave the
// process without running destructors (apps/ferry/main.cc, src/runtime/README.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/tasks.h"

namespace ferry::runtime {

class TaskStopper {
 public:
  explicit TaskStopper(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  ~TaskStopper();
  TaskStopper(const TaskStopper&) = delete;
  TaskStopper& operator=(const TaskStopper&) = delete;

  // Stops `runners` (null entries are skipped) within the timeout; returns how many were
  // abandoned.
  std::size_t stop(std::vector<std::unique_ptr<TaskRunner>> runners);
  std::size_t stop(std::unique_ptr<TaskRunner> runner);
  // The same with the deadline given: for runners whose stop was requested earlier (queued),
  // so that the wait counts from the request.
  std::size_t stop(std::vector<std::unique_ptr<TaskRunner>> runners, std::chrono::steady_clock::time_point deadline);
  // Frees the abandoned runners whose threads have ended.
  void reap();

  std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  // Tasks abandoned since start (a counter) and those whose threads still run (a gauge).
  std::uint64_t abandonedTotal() const;
  std::size_t abandonedRunning() const;

 private:
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<TaskRunner>> abandoned_;  // guarded by mu_
  std::uint64_t abandonedTotal_ = 0;                    // guarded by mu_
};

}  // namespace ferry::runtime
