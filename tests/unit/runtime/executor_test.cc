// The shared task executor: many sleeping jobs on few threads, wake() hand-over, blocked steps
// moved off the shared threads, fairness, no step running twice at once, and destruction.
// No sleep synchronises anything: steps report through latches and condition variables that the
// test waits on with generous timeouts. Where the test waits for the pool to shrink back after a
// blocked step (a thread leaves on its own, nothing signals it) it polls the gauge until a deadline.
#include "runtime/executor.h"

#include <spdlog/sinks/ringbuffer_sink.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/logging.h"

namespace ferry::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kPatience = 30s;  // generous: a loaded CI machine must not fail these

// A gate steps wait at until the test opens it; `entered` counts steps waiting at it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;
  void pass() {
    std::unique_lock l(mu);
    ++entered;
    cv.notify_all();
    cv.wait(l, [&] { return open; });
  }
  void release() {
    std::lock_guard l(mu);
    open = true;
    cv.notify_all();
  }
  bool waitEntered(int n) {
    std::unique_lock l(mu);
    return cv.wait_for(l, kPatience, [&] { return entered >= n; });
  }
};

// Counts up to a target; the test waits for it.
struct Countdown {
  std::mutex mu;
  std::condition_variable cv;
  long left;
  explicit Countdown(long n) : left(n) {}
  void down() {
    std::lock_guard l(mu);
    if (--left <= 0) cv.notify_all();
  }
  bool wait(std::chrono::milliseconds d = std::chrono::duration_cast<std::chrono::milliseconds>(kPatience)) {
    std::unique_lock l(mu);
    return cv.wait_for(l, d, [&] { return left <= 0; });
  }
};

// The number of threads of this process, as the kernel counts them.
int processThreads() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

// The names of this process's threads that start with `prefix`, as the kernel has them.
std::vector<std::string> namedThreads(const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(e.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Polls `pred` until it holds or the patience runs out (see the file comment).
template <class Pred>
bool eventually(Pred pred) {
  const auto end = Clock::now() + kPatience;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

TEST(Executor, TenThousandSleepingJobsRunOnTwoThreads) {
  constexpr int kJobs = 10'000;
  constexpr int kSteps = 5;
  const int before = processThreads();
  Countdown finished(kJobs);
  std::atomic<int> maxThreads{0};
  std::atomic<int> maxProcessThreads{0};
  std::atomic<int> maxNamedThreads{0};
  std::atomic<long> stepsTaken{0};
  std::vector<Executor::JobPtr> jobs;
  jobs.reserve(kJobs);
  Executor ex({.threads = 2, .name = "sleepers"});
  for (int i = 0; i < kJobs; ++i) {
    auto state = std::make_shared<int>(0);
    auto rng = std::make_shared<std::minstd_rand>(i + 1);
    jobs.push_back(ex.submit(
        [&, state, rng]() -> StepResult {
          stepsTaken.fetch_add(1);
          int t = ex.threads();
          int m = maxThreads.load();
          while (t > m && !maxThreads.compare_exchange_weak(m, t)) {
          }
          if (++*state == kSteps) {
            finished.down();
            return StepResult::done();
          }
          return StepResult::sleepFor(std::chrono::milliseconds(1 + (*rng)() % 20));
        },
        "sleeper-" + std::to_string(i)));
  }
  // Sample the kernel's count while the jobs sleep and run.
  std::promise<void> stopSampling;
  auto sampler = std::async(std::launch::async, [&, f = stopSampling.get_future()] {
    do {
      for (auto [n, max] : {std::pair{processThreads(), &maxProcessThreads},
                            std::pair{static_cast<int>(namedThreads("sleepers").size()), &maxNamedThreads}}) {
        int m = max->load();
        while (n > m && !max->compare_exchange_weak(m, n)) {
        }
      }
    } while (f.wait_for(2ms) != std::future_status::ready);
  });
  ASSERT_TRUE(finished.wait()) << "jobs left: " << finished.left;
  stopSampling.set_value();
  sampler.get();
  EXPECT_EQ(stepsTaken.load(), long{kJobs} * kSteps);
  EXPECT_LE(maxThreads.load(), 2);
  EXPECT_EQ(ex.threads(), 2);
  // The last step counted down just before it returned: its job ends a moment later.
  ASSERT_TRUE(eventually([&] { return ex.jobs() == 0; })) << ex.jobs() << " jobs left";
  for (const auto& j : jobs) EXPECT_TRUE(ex.done(j));
  // As the kernel sees it: 2 pool threads and the monitor, named after the executor.
  EXPECT_EQ(namedThreads("sleepers"), (std::vector<std::string>{"sleepers-1", "sleepers-2", "sleepers-mon"}));
  EXPECT_LE(maxNamedThreads.load(), 3);
  std::cout << "10,000 sleeping jobs x " << kSteps << " steps: threads() at most " << maxThreads.load()
            << ", executor threads seen by the kernel at most " << maxNamedThreads.load()
            << " (2 + the monitor), process threads at most " << maxProcessThreads.load()
            << " (before the executor: " << before << ", +1 sampler), steps " << ex.steps() << "\n";
}

TEST(Executor, WakeRunsASleepingJobPromptly) {
  std::mutex mu;
  std::condition_variable cv;
  int steps = 0;
  Clock::time_point ranAt;
  Executor ex({.threads = 2});
  auto job = ex.submit([&] {
    std::lock_guard l(mu);
    ranAt = Clock::now();
    ++steps;
    cv.notify_all();
    return steps == 1 ? StepResult::sleepFor(1h) : StepResult::done();
  });
  {
    std::unique_lock l(mu);
    ASSERT_TRUE(cv.wait_for(l, kPatience, [&] { return steps == 1; }));
  }
  // Let the first step's result land in the timer heap (a deadline an hour away).
  ASSERT_TRUE(eventually([&] { return !ex.done(job) && ex.steps() == 1; }));
  std::this_thread::sleep_for(1ms);  // not synchronisation: the job sleeps for an hour either way
  const auto wokeAt = Clock::now();
  Executor::wake(job);
  std::unique_lock l(mu);
  ASSERT_TRUE(cv.wait_for(l, kPatience, [&] { return steps == 2; }));
  const auto latency = ranAt - wokeAt;
  EXPECT_LT(latency, 1s) << "the wake did not run the job; its deadline did";
  std::cout << "wake -> step: " << std::chrono::duration_cast<std::chrono::microseconds>(latency).count() << " us\n";
  l.unlock();
  ASSERT_TRUE(eventually([&] { return ex.done(job); }));
  // A done job: waking it does nothing.
  Executor::wake(job);
  Executor::wake(job);
  EXPECT_TRUE(ex.done(job));
  EXPECT_EQ(ex.steps(), 2u);
  Executor::wake(nullptr);
}

TEST(Executor, WakeDuringARunningStepIsNotLost) {
  Gate gate;
  std::atomic<int> steps{0};
  std::promise<void> second;
  Executor ex({.threads = 2});
  auto job = ex.submit([&] {
    const int n = ++steps;
    if (n == 1) {
      gate.pass();  // the test wakes the job while this step runs
      return StepResult::sleepUntilWoken();
    }
    second.set_value();
    return StepResult::done();
  });
  ASSERT_TRUE(gate.waitEntered(1));
  Executor::wake(job);
  gate.release();
  // The step asked to sleep until woken; the wake came during it, so the job runs again.
  EXPECT_EQ(second.get_future().wait_for(kPatience), std::future_status::ready);
  ASSERT_TRUE(eventually([&] { return ex.done(job); }));
  EXPECT_EQ(steps.load(), 2);
}

TEST(Executor, ConcurrentWakesFromEightThreadsNeverRunAStepTwiceAtOnce) {
  // Eight threads wake one job for as long as it takes it to run 20,000 steps; each step parks
  // it until woken, so every step after the first comes from a wake.
  constexpr int kWakers = 8;
  constexpr long kSteps = 20'000;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<long> steps{0};
  std::atomic<long> wakes{0};
  std::atomic<bool> stop{false};
  std::promise<void> ended;
  Executor ex({.threads = 4});
  auto job = ex.submit([&] {
    if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
    const long n = ++steps;
    std::this_thread::yield();  // widen the window in which a second entry would show
    inside.fetch_sub(1);
    if (n == kSteps) {
      ended.set_value();
      return StepResult::done();
    }
    return StepResult::sleepUntilWoken();
  });
  std::vector<std::thread> wakers;
  for (int t = 0; t < kWakers; ++t)
    wakers.emplace_back([&] {
      while (!stop.load()) {
        Executor::wake(job);
        wakes.fetch_add(1, std::memory_order_relaxed);
        // Eight spinning wakers on a small machine would starve the pool of CPU, not test it.
        std::this_thread::yield();
      }
    });
  const bool ok = ended.get_future().wait_for(kPatience) == std::future_status::ready;
  stop = true;
  for (auto& t : wakers) t.join();
  ASSERT_TRUE(ok) << "steps " << steps.load();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(steps.load(), kSteps);
  ASSERT_TRUE(eventually([&] { return ex.done(job); }));
  Executor::wake(job);  // done: nothing happens
  EXPECT_EQ(steps.load(), kSteps);
  std::cout << wakes.load() << " wakes from " << kWakers << " threads -> " << steps.load() << " steps, overlaps "
            << overlaps.load() << "\n";
}

TEST(Executor, ProducersWakingAConsumerLoseNothing) {
  // The hand-off a task gets from its I/O threads: producers append to a queue and wake the job;
  // the job drains the queue and sleeps until woken. No wake may be lost: after the last item's
  // wake nothing else wakes the job, yet every item is consumed, each producer's in order.
  constexpr int kProducers = 4;
  constexpr int kItems = 50'000;
  std::mutex mu;
  std::vector<std::pair<int, int>> inbox;  // (producer, sequence number)
  std::vector<int> next(kProducers, 0);
  std::atomic<long> consumed{0};
  std::atomic<int> outOfOrder{0};
  std::promise<void> all;
  Executor ex({.threads = 2});
  auto job = ex.submit([&] {
    std::vector<std::pair<int, int>> batch;
    {
      std::lock_guard l(mu);
      batch.swap(inbox);
    }
    for (auto [p, n] : batch)
      if (next[p]++ != n) outOfOrder.fetch_add(1);
    if ((consumed += static_cast<long>(batch.size())) == long{kProducers} * kItems) {
      all.set_value();
      return StepResult::done();
    }
    return StepResult::sleepUntilWoken();
  });
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&, p] {
      for (int n = 0; n < kItems; ++n) {
        {
          std::lock_guard l(mu);
          inbox.emplace_back(p, n);
        }
        Executor::wake(job);
        if (n % 16 == 0) std::this_thread::yield();  // spread the items over many steps
      }
    });
  for (auto& t : producers) t.join();
  ASSERT_EQ(all.get_future().wait_for(kPatience), std::future_status::ready)
      << "consumed " << consumed.load() << " of " << kProducers * kItems << ": a wake was lost";
  EXPECT_EQ(outOfOrder.load(), 0);
  std::cout << kProducers * kItems << " items, one wake each, consumed in " << ex.steps() << " steps\n";
}

TEST(Executor, ManyJobsUnderWakesEachRunSingly) {
  // Several jobs, each woken from everywhere and re-running itself: every job's step is entered
  // by one thread at a time.
  constexpr int kJobs = 16;
  struct Probe {
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    std::atomic<int> steps{0};
  };
  std::vector<Probe> probes(kJobs);
  Countdown finished(kJobs);
  std::vector<Executor::JobPtr> jobs;
  Executor ex({.threads = 3});
  for (int i = 0; i < kJobs; ++i) {
    Probe* p = &probes[i];
    jobs.push_back(ex.submit([p, &finished, i] {
      if (p->inside.fetch_add(1) != 0) p->overlaps.fetch_add(1);
      const int n = ++p->steps;
      p->inside.fetch_sub(1);
      if (n >= 2000) {
        finished.down();
        return StepResult::done();
      }
      return (n + i) % 3 == 0 ? StepResult::again() : StepResult::sleepFor(std::chrono::milliseconds(n % 2));
    }));
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> wakers;
  for (int t = 0; t < 4; ++t)
    wakers.emplace_back([&, t] {
      for (int k = 0; !stop.load(); ++k) Executor::wake(jobs[(k + t) % kJobs]);
    });
  const bool ok = finished.wait();
  stop = true;
  for (auto& t : wakers) t.join();
  ASSERT_TRUE(ok);
  for (const auto& p : probes) EXPECT_EQ(p.overlaps.load(), 0);
}

TEST(Executor, BlockedStepsDoNotStopOtherJobs) {
  Gate gate;
  Countdown progressed(100);
  std::atomic<int> blockedDone{0};
  Executor ex({.threads = 2, .blockedAfter = 20ms, .name = "blk"});
  auto blocker = [&] {
    gate.pass();
    blockedDone.fetch_add(1);
    return StepResult::done();
  };
  auto b1 = ex.submit(blocker, "blocker-1");
  auto b2 = ex.submit(blocker, "blocker-2");
  ASSERT_TRUE(gate.waitEntered(2));  // both shared threads are now inside a blocked step
  auto third = ex.submit([&] {
    progressed.down();
    return StepResult::again();
  }, "runner");
  // The third job runs although both shared threads are blocked: the monitor added threads.
  ASSERT_TRUE(progressed.wait()) << "threads " << ex.threads() << ", blocked " << ex.blockedThreads();
  ASSERT_TRUE(eventually([&] { return ex.blockedThreads() == 2 && ex.threads() == 4; }))
      << "threads " << ex.threads() << ", blocked " << ex.blockedThreads();
  EXPECT_EQ(ex.blockedSteps(), 2u);
  std::cout << "2 blocked steps: pool threads " << ex.threads() << " (blocked " << ex.blockedThreads() << ")\n";
  gate.release();
  ASSERT_TRUE(eventually([&] { return blockedDone.load() == 2 && ex.done(b1) && ex.done(b2); }));
  // The blocked threads leave: two remain for the third job, which keeps running.
  ASSERT_TRUE(eventually([&] { return ex.threads() == 2; })) << "threads " << ex.threads();
  EXPECT_EQ(ex.blockedThreads(), 0);
  const auto s = ex.steps();
  ASSERT_TRUE(eventually([&] { return ex.steps() > s + 100; }));
  EXPECT_FALSE(ex.done(third));
}

// The blocked-step log names what the step is doing (a task's activity: put, flush, poll...).
TEST(Executor, TheBlockedStepLogNamesTheJobsActivity) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto log = core::logger("runtime");
  const auto level = log->level();
  log->sinks().push_back(sink);
  log->set_level(spdlog::level::debug);
  Gate gate;
  std::atomic<const char*> activity{"put"};
  {
    Executor ex({.threads = 2, .blockedAfter = 5ms, .name = "act"});
    ex.submit([&] {
      gate.pass();
      return StepResult::done();
    }, "sink-task-0", &activity);
    ASSERT_TRUE(gate.waitEntered(1));
    EXPECT_TRUE(eventually([&] { return ex.blockedSteps() == 1; }));
    gate.release();
  }
  log->sinks().pop_back();
  log->set_level(level);
  bool named = false;
  for (const auto& line : sink->last_formatted())
    if (line.find("job 'sink-task-0' has been in one step for more than 5 ms (in put)") != std::string::npos) named = true;
  EXPECT_TRUE(named) << "no blocked-step line naming the activity";
}

TEST(Executor, AJobBlockingInEveryStepGetsAThreadOfItsOwn) {
  // A legacy task whose every step blocks: the others still run on the two shared threads.
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::atomic<int> legacySteps{0};
  Countdown others(2 * 2000);
  Executor ex({.threads = 2, .blockedAfter = 5ms, .name = "legacy"});
  auto legacy = ex.submit([&] {
    legacySteps.fetch_add(1);
    std::unique_lock l(mu);
    cv.wait_for(l, 30ms, [&] { return stop; });  // "a blocking poll" of 30 ms
    return stop ? StepResult::done() : StepResult::again();
  });
  for (int k = 0; k < 2; ++k)
    ex.submit([&] {
      others.down();
      return StepResult::again();
    });
  ASSERT_TRUE(others.wait());
  ASSERT_TRUE(eventually([&] { return legacySteps.load() >= 3; }));
  {
    std::lock_guard l(mu);
    stop = true;
    cv.notify_all();
  }
  ASSERT_TRUE(eventually([&] { return ex.done(legacy); }));
  EXPECT_LE(ex.threads(), 3);
  EXPECT_GE(ex.blockedSteps(), 1u);
}

TEST(Executor, MaxThreadsBoundsTheThreadsStartedForBlockedSteps) {
  Gate gate;
  Executor ex({.threads = 2, .blockedAfter = 5ms, .maxThreads = 3});
  for (int i = 0; i < 3; ++i)
    ex.submit([&] {
      gate.pass();
      return StepResult::done();
    });
  ASSERT_TRUE(gate.waitEntered(3));  // two shared threads, then a third one started for them
  ASSERT_TRUE(eventually([&] { return ex.blockedThreads() == 3; }));
  EXPECT_EQ(ex.threads(), 3);
  gate.release();
  ASSERT_TRUE(eventually([&] { return ex.threads() == 2 && ex.jobs() == 0; }));
}

TEST(Executor, RunAgainJobsTakeTurns) {
  std::mutex mu;
  std::vector<int> order;
  Gate start;
  Countdown finished(2);
  // The first job holds the only thread until both are submitted, so the order is decided by
  // the queue alone.
  Executor ex({.threads = 1});
  auto make = [&](int id) {
    return [&, id, n = 0]() mutable {
      if (id == 0 && n == 0) start.pass();
      {
        std::lock_guard l(mu);
        order.push_back(id);
      }
      if (++n == 1000) {
        finished.down();
        return StepResult::done();
      }
      return StepResult::again();
    };
  };
  ex.submit(make(0));
  ASSERT_TRUE(start.waitEntered(1));
  ex.submit(make(1));
  start.release();
  ASSERT_TRUE(finished.wait());
  ASSERT_EQ(order.size(), 2000u);
  for (std::size_t i = 0; i < order.size(); ++i) ASSERT_EQ(order[i], static_cast<int>(i % 2)) << "at step " << i;
}

TEST(Executor, RunAgainJobsBothProgressOnTwoThreads) {
  std::atomic<long> a{0}, b{0};
  std::atomic<bool> stop{false};
  Countdown finished(2);
  Executor ex({.threads = 2});
  auto make = [&](std::atomic<long>& c) {
    return [&] {
      ++c;
      if (stop.load()) {
        finished.down();
        return StepResult::done();
      }
      return StepResult::again();
    };
  };
  ex.submit(make(a));
  ex.submit(make(b));
  ASSERT_TRUE(eventually([&] { return a.load() > 10'000 && b.load() > 10'000; }));
  stop = true;
  ASSERT_TRUE(finished.wait());
}

TEST(Executor, SleepersRunAtTheirDeadlinesInOrder) {
  std::mutex mu;
  std::vector<int> order;
  Countdown finished(3);
  Executor ex({.threads = 2});
  const auto base = Clock::now() + 30ms;
  for (int id : {2, 0, 1}) {
    ex.submit([&, id, first = true]() mutable {
      if (first) {
        first = false;
        return StepResult::sleepUntil(base + std::chrono::milliseconds(15 * id));
      }
      EXPECT_GE(Clock::now(), base + std::chrono::milliseconds(15 * id)) << "job " << id << " ran early";
      std::lock_guard l(mu);
      order.push_back(id);
      finished.down();
      return StepResult::done();
    });
  }
  ASSERT_TRUE(finished.wait());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST(Executor, AStepThatThrowsEndsItsJobOnly) {
  Executor ex({.threads = 2});
  auto bad = ex.submit([]() -> StepResult { throw std::runtime_error("boom"); }, "thrower");
  auto odd = ex.submit([]() -> StepResult { throw 42; }, "odd-thrower");
  std::promise<void> ran;
  auto good = ex.submit([&] {
    ran.set_value();
    return StepResult::done();
  });
  EXPECT_EQ(ran.get_future().wait_for(kPatience), std::future_status::ready);
  ASSERT_TRUE(eventually([&] { return ex.done(bad) && ex.done(odd) && ex.done(good); }));
  EXPECT_EQ(ex.jobs(), 0u);
}

TEST(Executor, StepFunctionIsDestroyedWhenTheJobEnds) {
  auto token = std::make_shared<int>(1);
  std::weak_ptr<int> watch = token;
  std::promise<void> ran;
  Executor ex({.threads = 2});
  auto job = ex.submit([t = std::move(token), &ran] {
    ran.set_value();
    return StepResult::done();
  });
  ASSERT_EQ(ran.get_future().wait_for(kPatience), std::future_status::ready);
  ASSERT_TRUE(eventually([&] { return watch.expired(); }));
  EXPECT_TRUE(ex.done(job));
}

TEST(Executor, DestructionWithSleepingAndRunningJobsReturns) {
  Executor::JobPtr sleeping, forever, running, queued;
  auto captured = std::make_shared<int>(7);
  std::weak_ptr<int> watch = captured;
  Gate gate;
  std::atomic<bool> runningReturned{false};
  std::future<void> destroyed;
  {
    auto ex = std::make_unique<Executor>(Executor::Options{.threads = 2});
    sleeping = ex->submit([c = captured] { return StepResult::sleepFor(1h); });
    forever = ex->submit([] { return StepResult::sleepUntilWoken(); });
    running = ex->submit([&] {
      gate.pass();
      runningReturned = true;
      return StepResult::again();
    });
    captured.reset();
    ASSERT_TRUE(gate.waitEntered(1));
    // The destructor waits for the running step; the test opens its gate once the destructor is
    // under way (no more submits count then).
    destroyed = std::async(std::launch::async, [e = std::move(ex)]() mutable { e.reset(); });
    gate.release();
    ASSERT_EQ(destroyed.wait_for(kPatience), std::future_status::ready);
  }
  EXPECT_TRUE(runningReturned.load());
  EXPECT_TRUE(Executor::done(sleeping));
  EXPECT_TRUE(Executor::done(forever));
  EXPECT_TRUE(Executor::done(running));
  EXPECT_TRUE(watch.expired()) << "a dropped job's step function was not destroyed";
  // Handles outlive the executor: waking them is harmless.
  Executor::wake(sleeping);
  Executor::wake(forever);
  Executor::wake(running);
}

TEST(Executor, SubmitAndWakeFromInsideSteps) {
  std::promise<void> childRan, parkedWoke;
  std::atomic<int> parkedSteps{0};
  Executor ex({.threads = 2});
  Executor::JobPtr parked = ex.submit([&] {
    if (++parkedSteps == 1) return StepResult::sleepUntilWoken();
    parkedWoke.set_value();
    return StepResult::done();
  });
  ASSERT_TRUE(eventually([&] { return parkedSteps.load() == 1 && ex.steps() == 1; }));
  ex.submit([&] {
    ex.submit([&] {
      childRan.set_value();
      return StepResult::done();
    });
    Executor::wake(parked);
    return StepResult::done();
  });
  EXPECT_EQ(childRan.get_future().wait_for(kPatience), std::future_status::ready);
  EXPECT_EQ(parkedWoke.get_future().wait_for(kPatience), std::future_status::ready);
  ASSERT_TRUE(eventually([&] { return ex.jobs() == 0; }));
}

// Context switches of this process's threads whose name starts with `prefix`.
long contextSwitches(const std::string& prefix) {
  long total = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(e.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind(prefix, 0) != 0) continue;
    std::ifstream st(e.path() / "status");
    std::string line;
    while (std::getline(st, line))
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0 || line.rfind("nonvoluntary_ctxt_switches:", 0) == 0)
        total += std::stol(line.substr(line.find(':') + 1));
  }
  return total;
}

TEST(Executor, AnIdlePoolMakesNoWakeUps) {
  // Jobs parked without deadline: no pool thread and not the monitor may wake up. Measured over a
  // window of time (the sleeps measure; they synchronise nothing).
  std::vector<Executor::JobPtr> jobs;
  Executor ex({.threads = 2, .blockedAfter = 10ms, .name = "idlepool"});
  for (int i = 0; i < 100; ++i) jobs.push_back(ex.submit([] { return StepResult::sleepUntilWoken(); }));
  ASSERT_TRUE(eventually([&] { return ex.steps() == 100; }));
  // The monitor keeps ticking for 10 x 5 ms after the last step; on a loaded machine its ticks
  // may come late, so wait for a quiet 100 ms first.
  ASSERT_TRUE(eventually([&] {
    const long a = contextSwitches("idlepool");
    std::this_thread::sleep_for(100ms);
    return contextSwitches("idlepool") == a;
  })) << "the pool never went quiet";
  const long before = contextSwitches("idlepool");
  std::this_thread::sleep_for(500ms);
  const long after = contextSwitches("idlepool");
  EXPECT_EQ(after - before, 0) << "an idle pool woke up";
  EXPECT_GT(before, 0) << "no pool thread found by name";
  EXPECT_EQ(ex.steps(), 100u);
  EXPECT_EQ(ex.threads(), 2);
  // And it still answers a wake.
  Executor::wake(jobs[0]);
  ASSERT_TRUE(eventually([&] { return ex.steps() == 101; }));
}

}  // namespace
}  // namespace ferry::runtime
