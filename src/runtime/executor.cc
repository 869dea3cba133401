// Executor (see executor.h).
//
// One mutex guards the whole pool: a step takes it once when it ends (to requeue its job) and
// once more to take the next job, so with a few threads it is rarely contended, and one lock keeps
// the wake/step hand-over simple to prove (a job is in exactly one of: run queue, timer heap,
// asleep without deadline, running, done).
#include "runtime/executor.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <limits>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/logging.h"

namespace ferry::runtime {

namespace {

using Clock = std::chrono::steady_clock;

enum class JobState : std::uint8_t { kQueued, kRunning, kSleeping, kDone };

constexpr std::size_t kNotInHeap = std::numeric_limits<std::size_t>::max();

// "<base>-<n>" within the kernel's 15 characters: the number is what tells threads apart in top
// and perf, so the base is cut, not the number.
std::string threadName(const std::string& base, const std::string& n) {
  const std::string suffix = "-" + n;
  const std::size_t room = suffix.size() >= 15 ? 0 : 15 - suffix.size();
  return base.substr(0, room) + suffix;
}

}  // namespace

class Executor::Job {
 public:
  Job(std::shared_ptr<Pool> pool, std::function<StepResult()> step, std::string name,
      const std::atomic<const char*>* activity)
      : pool_(std::move(pool)), step_(std::move(step)), name_(std::move(name)), activity_(activity) {}

 private:
  friend class Executor;
  friend struct Executor::Pool;

  const std::shared_ptr<Pool> pool_;  // keeps wake() valid after the Executor is gone
  // Guarded by Pool::mu, except during a step: the thread running it owns it then.
  std::function<StepResult()> step_;
  const std::string name_;
  const std::atomic<const char*>* const activity_;  // what a step is doing (read in the blocked log), or null
  // Written under Pool::mu; read without it by done() and by wake()'s fast path for done jobs.
  std::atomic<JobState> state_{JobState::kQueued};
  // A wake not yet taken by a step: set by wake() (an atomic exchange, so that a burst of wakes
  // costs one lock, not one each), cleared when a step starts. A step ending with it set runs
  // again.
  std::atomic<bool> wakePending_{false};
  Job* next_ = nullptr;               // GUARDED_BY(Pool::mu): run queue link
  std::size_t heapIndex_ = kNotInHeap;  // GUARDED_BY(Pool::mu)
  Clock::time_point until_{};         // GUARDED_BY(Pool::mu): its deadline while in the heap
};

struct Executor::Pool {
  // One pool thread. Nodes of a std::list: their addresses stay put while threads come and go.
  struct Worker {
    std::thread thread;
    int id = 0;
    // GUARDED_BY(mu), all of them:
    std::uint64_t seq = 0;   // steps started on this thread; the monitor compares it across ticks
    bool inStep = false;
    bool blocked = false;    // counted in blockedCount
    bool exited = false;     // left the pool; the monitor joins it
    Job* current = nullptr;  // the job in the step (for the log)
    std::uint64_t seenSeq = 0;  // the monitor's view
    int seenTicks = 0;
  };

  explicit Pool(const Options& o)
      : target(o.threads),
        maxThreads(o.maxThreads),
        blockedAfter(o.blockedAfter),
        tick(std::max(o.blockedAfter / 2, std::chrono::milliseconds(1))),
        linger(10 * tick),
        name(o.name) {}

  void start() {
    {
      std::lock_guard lk(mu);
      for (int i = 0; i < target; ++i) spawnLocked();
    }
    try {
      monitor = std::thread([this] { monitorLoop(); });
    } catch (...) {
      stop();  // join the pool threads: a joinable std::thread must not be destroyed
      throw;
    }
  }

  void stop();

  // --- run queue (intrusive FIFO) and timer heap (min on until_), all under mu ---

  void pushQueue(Job* j) {
    j->state_.store(JobState::kQueued, std::memory_order_release);
    j->next_ = nullptr;
    if (tail) tail->next_ = j;
    else head = j;
    tail = j;
  }
  Job* popQueue() {
    Job* j = head;
    if (!j) return nullptr;
    head = j->next_;
    if (!head) tail = nullptr;
    j->next_ = nullptr;
    return j;
  }
  void heapSwap(std::size_t a, std::size_t b) {
    std::swap(heap[a], heap[b]);
    heap[a]->heapIndex_ = a;
    heap[b]->heapIndex_ = b;
  }
  void siftUp(std::size_t i) {
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!(heap[i]->until_ < heap[parent]->until_)) break;
      heapSwap(i, parent);
      i = parent;
    }
  }
  void siftDown(std::size_t i) {
    for (;;) {
      const std::size_t l = 2 * i + 1, r = l + 1;
      std::size_t m = i;
      if (l < heap.size() && heap[l]->until_ < heap[m]->until_) m = l;
      if (r < heap.size() && heap[r]->until_ < heap[m]->until_) m = r;
      if (m == i) return;
      heapSwap(i, m);
      i = m;
    }
  }
  void heapPush(Job* j) {
    j->heapIndex_ = heap.size();
    heap.push_back(j);  // grows only to the largest number of sleepers: no allocation per sleep
    siftUp(j->heapIndex_);
  }
  void heapRemove(Job* j) {
    const std::size_t i = j->heapIndex_;
    const std::size_t last = heap.size() - 1;
    if (i != last) heapSwap(i, last);
    heap.pop_back();
    j->heapIndex_ = kNotInHeap;
    if (i < heap.size()) {
      siftUp(i);
      siftDown(i);
    }
  }

  // --- waking threads ---

  // A job became runnable from outside the pool's loop (submit, wake): one thread that waits
  // should take it. `signaled` counts notified waiters not yet awake, so that a burst of wakes
  // wakes as many threads as there are jobs, not the same sleeping thread over and over.
  void notifyOne() {
    if (idle > signaled) {
      ++signaled;
      workCv.notify_one();
    } else if (timerWaiter && !timerSignaled) {
      timerSignaled = true;
      timerCv.notify_one();
    }
  }
  // After this thread took a job: if more are runnable, or the timers have no thread watching
  // them now, wake a waiting thread (each woken thread repeats this, so a burst fans out).
  void handOn() {
    if ((head || (!heap.empty() && !timerWaiter)) && idle > signaled) {
      ++signaled;
      workCv.notify_one();
    }
  }

  // Moves the jobs whose deadline passed to the run queue, then takes the first runnable job.
  Job* takeRunnable() {
    if (!heap.empty()) {
      const auto now = Clock::now();
      while (!heap.empty() && heap.front()->until_ <= now) {
        Job* j = heap.front();
        heapRemove(j);
        pushQueue(j);
      }
    }
    return popQueue();
  }

  void waitIdle(std::unique_lock<std::mutex>& lk) {
    if (!heap.empty() && !timerWaiter) {
      // This thread watches the earliest deadline; the others wait untimed, so a due timer wakes
      // one thread, not the whole pool.
      timerWaiter = true;
      timerSignaled = false;
      timerDeadline = heap.front()->until_;
      timerCv.wait_until(lk, timerDeadline);
      timerWaiter = false;
      timerSignaled = false;
    } else {
      ++idle;
      workCv.wait(lk);
      --idle;
      if (signaled > 0) --signaled;
    }
  }

  void workerLoop(Worker* w);
  void runStep(std::unique_lock<std::mutex>& lk, Worker* w, Job* j);
  void finishLocked(std::unique_lock<std::mutex>& lk, Job* j);
  void spawnLocked();
  void monitorLoop();
  std::vector<std::pair<spdlog::level::level_enum, std::string>> checkBlockedLocked();

  // Options, fixed.
  const int target;  // the shared threads: unblocked threads the pool keeps
  const int maxThreads;
  const std::chrono::milliseconds blockedAfter;
  const std::chrono::milliseconds tick;    // the monitor's period while steps run: blockedAfter/2
  const std::chrono::milliseconds linger;  // how long it keeps ticking after the last step
  const std::string name;

  mutable std::mutex mu;
  std::condition_variable workCv;     // idle threads without timer duty
  std::condition_variable timerCv;    // the one idle thread watching the earliest deadline
  std::condition_variable monitorCv;  // the monitor
  // GUARDED_BY(mu), all below except the atomics.
  Job* head = nullptr;
  Job* tail = nullptr;
  std::vector<Job*> heap;
  std::unordered_map<Job*, JobPtr> live;  // every job not done: the executor's reference
  std::list<Worker> workers;
  int alive = 0;         // workers not exited
  int blockedCount = 0;  // workers in a blocked step
  int running = 0;       // workers in a step
  int idle = 0;          // waiting on workCv
  int signaled = 0;      // of those, notified and not yet awake
  bool timerWaiter = false;
  bool timerSignaled = false;
  Clock::time_point timerDeadline{};
  bool monitorSleeping = false;
  bool stopping = false;
  bool capWarned = false;
  int nextId = 0;
  std::thread monitor;
  std::atomic<std::uint64_t> stepsTotal{0};
  std::atomic<std::uint64_t> blockedTotal{0};
};

void Executor::Pool::spawnLocked() {
  Worker& w = workers.emplace_back();
  w.id = ++nextId;
  try {
    w.thread = std::thread([this, &w] { workerLoop(&w); });
  } catch (const std::exception& e) {
    // Out of threads (ulimit -u, memory): the pool carries on with those it has.
    workers.pop_back();
    core::logger("runtime")->error("executor '{}': cannot start a thread: {}", name, e.what());
    return;
  }
  ++alive;
}

void Executor::Pool::workerLoop(Worker* w) {
  const std::string tn = threadName(name, std::to_string(w->id));
  pthread_setname_np(pthread_self(), tn.c_str());
  std::unique_lock lk(mu);
  while (!stopping) {
    Job* j = takeRunnable();
    if (!j) {
      waitIdle(lk);
      continue;
    }
    handOn();
    runStep(lk, w, j);
    if (stopping) break;
    // A thread started for a blocked step stays; the blocked one, now free, goes (any thread
    // would do: the pool only keeps `target` unblocked threads).
    if (alive - blockedCount > target) {
      --alive;
      w->exited = true;
      handOn();
      monitorCv.notify_one();  // to join this thread
      return;                  // w is not touched after the lock is released
    }
  }
}

void Executor::Pool::runStep(std::unique_lock<std::mutex>& lk, Worker* w, Job* j) {
  j->state_.store(JobState::kRunning, std::memory_order_release);
  // An exchange, not a store: it reads the wakers' writes, so what they published before their
  // wake() is visible to this step.
  j->wakePending_.exchange(false, std::memory_order_acq_rel);
  w->inStep = true;
  w->current = j;
  ++w->seq;
  ++running;
  if (monitorSleeping) {
    // The pool was idle for a while (the monitor's linger); from now on a step may block.
    monitorSleeping = false;
    monitorCv.notify_one();
  }
  lk.unlock();

  StepResult r;
  std::string error;
  try {
    r = j->step_();
  } catch (const std::exception& e) {
    error = e.what();
    r = StepResult::done();
  } catch (...) {
    error = "an exception that is not a std::exception";
    r = StepResult::done();
  }
  stepsTotal.fetch_add(1, std::memory_order_relaxed);
  if (!error.empty())
    core::logger("runtime")->error("executor '{}': job '{}' threw: {}; the job is done", name,
                                   j->name_.empty() ? std::string("(unnamed)") : j->name_, error);

  lk.lock();
  w->inStep = false;
  w->current = nullptr;
  --running;
  if (w->blocked) {
    w->blocked = false;
    --blockedCount;
  }
  if (stopping) return;  // the job is dropped by stop()
  switch (r.kind) {
    case StepResult::Kind::kDone:
      finishLocked(lk, j);
      break;
    case StepResult::Kind::kRunAgain:
      pushQueue(j);  // behind every runnable job: fair; never through the heap
      break;
    case StepResult::Kind::kSleep:
      if (j->wakePending_.load(std::memory_order_acquire) ||
          (r.until != Clock::time_point::max() && r.until <= Clock::now())) {
        pushQueue(j);
      } else {
        j->state_.store(JobState::kSleeping, std::memory_order_release);
        if (r.until != Clock::time_point::max()) {
          j->until_ = r.until;
          heapPush(j);
          if (timerWaiter && r.until < timerDeadline && !timerSignaled) {
            timerSignaled = true;
            timerCv.notify_one();  // the watcher waits for a later deadline
          }
        }
      }
      break;
  }
}

void Executor::Pool::finishLocked(std::unique_lock<std::mutex>& lk, Job* j) {
  j->state_.store(JobState::kDone, std::memory_order_release);
  std::function<StepResult()> step = std::move(j->step_);
  JobPtr self;
  if (auto it = live.find(j); it != live.end()) {
    self = std::move(it->second);
    live.erase(it);
  }
  // The step function's captures (a task, its connector) may do anything when destroyed,
  // including wake() or submit() on this executor: never under the lock.
  lk.unlock();
  step = nullptr;
  self.reset();
  lk.lock();
}

std::vector<std::pair<spdlog::level::level_enum, std::string>> Executor::Pool::checkBlockedLocked() {
  std::vector<std::pair<spdlog::level::level_enum, std::string>> news;
  const bool say = core::logger("runtime")->should_log(spdlog::level::debug);
  for (Worker& w : workers) {
    if (w.exited) continue;
    if (!w.inStep) {
      w.seenTicks = 0;
      continue;
    }
    if (w.seq != w.seenSeq) {
      w.seenSeq = w.seq;
      w.seenTicks = 0;
      continue;
    }
    // Seen in the same step at 3 ticks half a blockedAfter apart: it has run for blockedAfter.
    if (++w.seenTicks >= 2 && !w.blocked) {
      w.blocked = true;
      ++blockedCount;
      blockedTotal.fetch_add(1, std::memory_order_relaxed);
      if (say)
        news.emplace_back(spdlog::level::debug,
                          fmt::format("executor '{}': job '{}' has been in one step for more than {} ms{}; "
                                      "its thread {} is moved off the shared threads",
                                      name, w.current ? w.current->name_ : std::string(), blockedAfter.count(),
                                      w.current && w.current->activity_
                                          ? std::string(" (in ") + w.current->activity_->load() + ")"
                                          : std::string(),
                                      threadName(name, std::to_string(w.id))));
    }
  }
  while (alive - blockedCount < target && alive < maxThreads) {
    const int before = alive;
    spawnLocked();
    if (alive == before) break;
  }
  if (alive - blockedCount < target && !capWarned) {
    capWarned = true;
    news.emplace_back(spdlog::level::warn,
                      fmt::format("executor '{}': {} threads are blocked in steps and the pool is at "
                                  "its maximum of {} threads; other jobs wait until a blocked step returns",
                                  name, blockedCount, maxThreads));
  }
  if (blockedCount == 0) capWarned = false;
  return news;
}

void Executor::Pool::monitorLoop() {
  pthread_setname_np(pthread_self(), threadName(name, "mon").c_str());
  std::unique_lock lk(mu);
  auto nextTick = Clock::now() + tick;
  std::uint64_t lastSteps = stepsTotal.load(std::memory_order_relaxed);
  auto lastActive = Clock::now();  // when a step was last seen running or done
  while (!stopping) {
    // Join the threads that left the pool.
    std::vector<std::thread> gone;
    for (auto it = workers.begin(); it != workers.end();) {
      if (it->exited) {
        gone.push_back(std::move(it->thread));
        it = workers.erase(it);
      } else {
        ++it;
      }
    }
    if (!gone.empty()) {
      lk.unlock();
      for (auto& t : gone) t.join();
      lk.lock();
      continue;
    }
    const auto now = Clock::now();
    if (now >= nextTick) {
      const std::uint64_t steps = stepsTotal.load(std::memory_order_relaxed);
      if (running > 0 || steps != lastSteps) lastActive = now;
      if (running == 0 && now - lastActive >= linger) {
        // No step for a while: sleep untimed until one starts, so an idle pool costs nothing.
        // The linger spares a pool woken now and then a monitor wake-up (a notify, a context
        // switch) at the start of every step: measured, that doubled the CPU a lone wake costs.
        monitorSleeping = true;
        monitorCv.wait(lk);
        monitorSleeping = false;
        lastSteps = stepsTotal.load(std::memory_order_relaxed);
        lastActive = Clock::now();
        nextTick = lastActive;  // look at the step that woke us at once: its first sighting
        continue;
      }
      lastSteps = steps;
      auto news = checkBlockedLocked();
      nextTick = now + tick;
      if (!news.empty()) {
        lk.unlock();
        auto log = core::logger("runtime");
        for (const auto& [level, m] : news) log->log(level, "{}", m);
        lk.lock();
        continue;
      }
    }
    monitorCv.wait_until(lk, nextTick);
  }
}

void Executor::Pool::stop() {
  {
    std::lock_guard lk(mu);
    stopping = true;
    workCv.notify_all();
    timerCv.notify_all();
    monitorCv.notify_all();
  }
  if (monitor.joinable()) monitor.join();
  // No thread is started any more. std::list::swap keeps the nodes where they are, so threads
  // still finishing a step keep a valid Worker.
  std::list<Worker> ws;
  {
    std::lock_guard lk(mu);
    ws.swap(workers);
  }
  for (auto& w : ws)
    if (w.thread.joinable()) w.thread.join();

  std::unordered_map<Job*, JobPtr> dropped;
  std::vector<std::function<StepResult()>> steps;
  {
    std::lock_guard lk(mu);
    dropped.swap(live);
    for (auto& [j, ptr] : dropped) {
      j->state_.store(JobState::kDone, std::memory_order_release);
      j->heapIndex_ = kNotInHeap;
      j->next_ = nullptr;
      steps.push_back(std::move(j->step_));
    }
    head = tail = nullptr;
    heap.clear();
    alive = blockedCount = 0;
  }
  steps.clear();  // outside the lock: their destructors may call wake()
  dropped.clear();
}

Executor::Executor(Options o) : options_(std::move(o)) {
  if (options_.threads <= 0) options_.threads = std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  options_.blockedAfter = std::max(options_.blockedAfter, std::chrono::milliseconds(1));
  options_.maxThreads = std::max(options_.maxThreads, options_.threads);
  pool_ = std::make_shared<Pool>(options_);
  pool_->start();
}

Executor::~Executor() { pool_->stop(); }

Executor::JobPtr Executor::submit(std::function<StepResult()> step, std::string name,
                                  const std::atomic<const char*>* activity) {
  auto job = std::make_shared<Job>(pool_, std::move(step), std::move(name), activity);
  std::unique_lock lk(pool_->mu);
  if (pool_->stopping) {
    job->state_.store(JobState::kDone, std::memory_order_release);
    auto fn = std::move(job->step_);
    lk.unlock();
    return job;
  }
  pool_->live.emplace(job.get(), job);
  pool_->pushQueue(job.get());
  pool_->notifyOne();
  return job;
}

void Executor::wake(const JobPtr& job) {
  if (!job || job->state_.load(std::memory_order_acquire) == JobState::kDone) return;
  // Already pending: the step that clears the flag has not started yet, so it will see whatever
  // this caller published. Only the wake that sets the flag needs the lock.
  if (job->wakePending_.exchange(true, std::memory_order_acq_rel)) return;
  Pool& p = *job->pool_;
  std::lock_guard lk(p.mu);
  switch (job->state_.load(std::memory_order_relaxed)) {
    case JobState::kSleeping:
      if (job->heapIndex_ != kNotInHeap) p.heapRemove(job.get());
      p.pushQueue(job.get());
      p.notifyOne();
      break;
    case JobState::kRunning:  // its thread sees the flag when the step returns and requeues it
    case JobState::kQueued:
    case JobState::kDone:
      break;
  }
}

bool Executor::done(const JobPtr& job) {
  return !job || job->state_.load(std::memory_order_acquire) == JobState::kDone;
}

int Executor::threads() const {
  std::lock_guard lk(pool_->mu);
  return pool_->alive;
}

int Executor::blockedThreads() const {
  std::lock_guard lk(pool_->mu);
  return pool_->blockedCount;
}

std::uint64_t Executor::steps() const { return pool_->stepsTotal.load(std::memory_order_relaxed); }

std::uint64_t Executor::blockedSteps() const { return pool_->blockedTotal.load(std::memory_order_relaxed); }

std::size_t Executor::jobs() const {
  std::lock_guard lk(pool_->mu);
  return pool_->live.size();
}

}  // namespace ferry::runtime
