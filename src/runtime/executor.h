// Executor: the worker's shared task threads. Every task's loop is a *job*: a step function that
// does one bounded iteration and says what it wants next (run again, sleep until a time or a
// wake(), or done). A small pool of threads takes runnable jobs first in, first out; so 10,000
// tasks that mostly wait cost a few threads, not 10,000.
//
//  runnable  a FIFO queue (intrusive, no allocation). kRunAgain puts the job at the back, so
//            busy jobs take turns and none starves another.
//  sleeping  a min-heap of deadlines (kSleep). One idle pool thread waits for the earliest
//            deadline; the others wait on a condition variable. With no job runnable and no
//            deadline the pool makes no system call at all.
//  wake()    makes a sleeping job runnable now (O(log n): it leaves the heap), or marks a running
//            one to run once more when its step returns, behind the runnable jobs (a wake is
//            never lost).
//  blocking  a step may block (a legacy connector's poll), but not at the others' expense: a
//            monitor thread, awake only while steps run, looks every blockedAfter/2 at which
//            steps are still the same ones; a step seen running for blockedAfter is "blocked"
//            and a new thread is started, so `threads` unblocked threads remain for everyone
//            else. The blocked thread finishes its step, then leaves the pool if more than
//            `threads` unblocked threads are left. A job that blocks in every step thus has a
//            thread of its own while it blocks; the pool never exceeds maxThreads threads.
//
// Ownership: the Executor owns its threads and joins them all in its destructor. A JobPtr is a
// handle; it stays valid (wake() and done() are harmless) after the job is done and after the
// Executor is gone. The executor keeps each job until its step returns kDone (or throws); the step
// function is destroyed then, on the thread that ran it, never under the executor's lock.
//
// Threading: submit, wake, done and the gauges are thread-safe and may be called from steps. A
// job's step never runs concurrently with itself; consecutive steps may run on different threads
// (each step sees everything the previous one wrote). The destructor must not run on a pool
// thread (from a step), and no submit() may race with it.
//
// Failure: a step that throws is logged (logger "runtime") and its job is done. When maxThreads
// is reached no more threads are started for blocked steps (logged once per episode), and the
// remaining jobs wait for the blocked steps.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace ferry::runtime {

// What a job's step asks for next.
struct StepResult {
  enum class Kind { kRunAgain, kSleep, kDone };
  Kind kind = Kind::kRunAgain;
  std::chrono::steady_clock::time_point until{};  // kSleep: wake at this time at the latest

  // Runnable again at once, behind every job already runnable.
  static StepResult again() { return {Kind::kRunAgain, {}}; }
  // Runnable at `t` or at the next wake(), whichever is first. A time already past runs the job
  // again at once (behind the runnable ones).
  static StepResult sleepUntil(std::chrono::steady_clock::time_point t) { return {Kind::kSleep, t}; }
  static StepResult sleepFor(std::chrono::milliseconds d) {
    return sleepUntil(std::chrono::steady_clock::now() + d);
  }
  // Runnable only at the next wake() (no deadline; the job takes no place in the timer heap).
  static StepResult sleepUntilWoken() { return sleepUntil(std::chrono::steady_clock::time_point::max()); }
  // The job ends; its step function is destroyed.
  static StepResult done() { return {Kind::kDone, {}}; }
};

struct ExecutorOptions {
  int threads = 0;                             // 0: hardware_concurrency() (at least 2)
  std::chrono::milliseconds blockedAfter{50};  // a step running longer is "blocked" (>= 1 ms)
  int maxThreads = 4096;                       // shared + moved-off threads (>= threads)
  // Pool threads are "<name>-N", the monitor "<name>-mon" (cut to the kernel's 15 characters).
  std::string name = "task";
};

class Executor {
 public:
  using Options = ExecutorOptions;
  class Job;  // opaque handle
  using JobPtr = std::shared_ptr<Job>;

  explicit Executor(Options o = {});
  // Stops taking steps, waits for the steps under way to return (they are bounded by their own
  // code), joins every thread. Jobs not done are dropped: their step functions are destroyed and
  // done() says true for them.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `step` on the pool until it returns kDone; its first step is runnable at once. `name`
  // appears in logs, and so does `*activity` (optional: what a step is doing, a static string the
  // step keeps up to date; it must outlive every step) when a step is found blocked. After the
  // destructor began, the job is done at once and never runs.
  JobPtr submit(std::function<StepResult()> step, std::string name = {},
                const std::atomic<const char*>* activity = nullptr);
  // Run the job's step soon. Cheap (a lock, no allocation, O(log n) for a sleeping job) and
  // idempotent: a sleeping job becomes runnable now; a runnable one stays as it is; a job whose
  // step is running is runnable again when the step returns, whatever the step asked for; a done
  // job (or null): nothing. What the caller wrote before wake() is visible to the step it causes.
  static void wake(const JobPtr& job);
  // True once the job's step returned kDone or threw, or the executor dropped it.
  static bool done(const JobPtr& job);

  // Gauges, for /metrics and tests.
  int threads() const;           // pool threads alive now (shared and moved-off; not the monitor)
  int blockedThreads() const;    // threads inside a step that has run longer than blockedAfter
  std::uint64_t steps() const;   // steps taken since start (a counter)
  std::uint64_t blockedSteps() const;  // steps that were found blocked (a counter)
  std::size_t jobs() const;      // jobs not done
  const Options& options() const { return options_; }

  struct Pool;  // the shared state; jobs hold it so that wake() outlives the Executor

 private:
  Options options_;
  std::shared_ptr<Pool> pool_;
};

}  // namespace ferry::runtime
