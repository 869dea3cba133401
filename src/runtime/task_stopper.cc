// TaskStopper (see task_stopper.h).
#include "runtime/task_stopper.h"

#include <algorithm>

#include "core/logging.h"

namespace ferry::runtime {

std::size_t TaskStopper::stop(std::unique_ptr<TaskRunner> runner) {
  std::vector<std::unique_ptr<TaskRunner>> one;
  one.push_back(std::move(runner));
  return stop(std::move(one));
}

std::size_t TaskStopper::stop(std::vector<std::unique_ptr<TaskRunner>> runners) {
  return stop(std::move(runners), std::chrono::steady_clock::now() + timeout_);
}

std::size_t TaskStopper::stop(std::vector<std::unique_ptr<TaskRunner>> runners,
                              std::chrono::steady_clock::time_point deadline) {
  using Clock = std::chrono::steady_clock;
  for (auto& r : runners)
    if (r) r->requestStop();
  std::size_t abandoned = 0;
  for (auto& r : runners) {
    if (!r) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (r->join(std::max(left, std::chrono::milliseconds(0)))) continue;
    // Read what it is doing before cancelling: the answer is what it was blocked in.
    const std::string doing = r->activity();
    const bool quiet = r->cancel();
    const auto& env = r->env();
    core::logger("runtime")->error(
        "task {}-{} did not stop within task.shutdown.graceful.timeout.ms={} (blocked in {}); abandoned: its "
        "thread is left running, cancelled (nothing it does from now on is sent, committed or reported){}",
        env.connector, env.taskId, timeout_.count(), doing == "runtime" ? std::string("the runtime") : doing + "()",
        quiet ? "" : "; an effect it had begun did not finish within 1 s");
    ++abandoned;
    std::lock_guard lock(mu_);
    abandoned_.push_back(std::move(r));
    ++abandonedTotal_;
  }
  return abandoned;
}

void TaskStopper::reap() {
  std::vector<std::unique_ptr<TaskRunner>> done;
  {
    std::lock_guard lock(mu_);
    auto it = std::stable_partition(abandoned_.begin(), abandoned_.end(), [](const auto& r) { return !r->finished(); });
    for (auto i = it; i != abandoned_.end(); ++i) done.push_back(std::move(*i));
    abandoned_.erase(it, abandoned_.end());
  }
  for (auto& r : done) {
    core::logger("runtime")->info("abandoned task {}-{} has ended; its resources are freed", r->env().connector,
                                  r->env().taskId);
    r->join();  // its thread has left run(): returns at once
  }
}

std::uint64_t TaskStopper::abandonedTotal() const {
  std::lock_guard lock(mu_);
  return abandonedTotal_;
}

std::size_t TaskStopper::abandonedRunning() const {
  std::lock_guard lock(mu_);
  return static_cast<std::size_t>(
      std::count_if(abandoned_.begin(), abandoned_.end(), [](const auto& r) { return !r->finished(); }));
}

TaskStopper::~TaskStopper() {
  reap();
  std::lock_guard lock(mu_);
  if (abandoned_.empty()) return;
  core::logger("runtime")->warn("{} abandoned task thread(s) still running; their runners are left allocated",
                                abandoned_.size());
  for (auto& r : abandoned_) (void)r.release();  // leaked on purpose: a live thread uses it
}

}  // namespace ferry::runtime
