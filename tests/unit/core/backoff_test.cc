// Unit tests of the one backoff and retry budget (src/core/backoff.h), with an injected clock: the
// delays double up to the cap and reset; errors.retry.timeout's 0, -1 and deadline; the restart
// count reset after a healthy run. No sleeps.
#include "core/backoff.h"

#include <gtest/gtest.h>

#include <vector>

namespace ferry::core {
namespace {

class ManualClock : public Clock {
 public:
  std::int64_t wallMs() const override { return now; }
  std::int64_t steadyMs() const override { return now; }
  std::int64_t now = 1'000'000;
};

TEST(Backoff, DoublesFromTheInitialDelayUpToTheMaximumAndStartsOverAfterReset) {
  Backoff b(100, 1000);
  std::vector<std::int64_t> got;
  for (int i = 0; i < 6; ++i) got.push_back(b.next());
  EXPECT_EQ(got, (std::vector<std::int64_t>{100, 200, 400, 800, 1000, 1000}));
  EXPECT_EQ(b.peek(), 1000);
  b.reset();
  EXPECT_EQ(b.failures(), 0);
  EXPECT_EQ(b.next(), 100);
  EXPECT_EQ(b.next(), 200);
}

TEST(Backoff, NeverSpinsOrOverflowsWhateverTheSettings) {
  EXPECT_EQ(backoffDelay(0, 0, 0), 1);           // initial < 1 counts as 1
  EXPECT_EQ(backoffDelay(500, 100, 3), 500);     // max < initial: the initial delay
  EXPECT_GT(backoffDelay(1, INT64_MAX, 10'000), 0);
  Backoff b(1, INT64_MAX);
  for (int i = 0; i < 200; ++i) EXPECT_GT(b.next(), 0);
}

TEST(RetryBudget, ZeroRetriesNothing) {
  ManualClock clock;
  RetryBudget r(0, 60000, clock);
  EXPECT_FALSE(r.onFailure().has_value());
  EXPECT_EQ(r.retries(), 0);
}

TEST(RetryBudget, MinusOneRetriesForEverWithCappedDelays) {
  ManualClock clock;
  RetryBudget r(-1, 400, clock);
  std::int64_t last = 0;
  for (int i = 0; i < 1000; ++i) {
    auto d = r.onFailure();
    ASSERT_TRUE(d.has_value()) << "retry " << i;
    last = *d;
    clock.now += *d;
  }
  EXPECT_EQ(last, 400);  // errors.retry.delay.max.ms caps the delay
  EXPECT_EQ(r.retries(), 1000);
  EXPECT_TRUE(r.forever());
}

TEST(RetryBudget, ADeadlineCountsFromTheFirstFailureInARowAndASuccessStartsANewOne) {
  ManualClock clock;
  RetryBudget r(3000, 400, clock);
  std::vector<std::int64_t> delays;
  while (auto d = r.onFailure()) {
    delays.push_back(*d);
    clock.now += *d;
  }
  // 100 + 200 + 400 * 7 = 3100: the failure at 3100 ms (past 3000) is the last one.
  EXPECT_EQ(delays, (std::vector<std::int64_t>{100, 200, 400, 400, 400, 400, 400, 400, 400}));
  EXPECT_EQ(r.failingForMs(), 3100);
  // Another failure still fails: the budget stays spent until a success.
  EXPECT_FALSE(r.onFailure().has_value());
  r.reset();
  EXPECT_EQ(r.failingForMs(), 0);
  auto d = r.onFailure();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, 100);  // the initial delay again
  clock.now += 2999;
  EXPECT_TRUE(r.onFailure().has_value());
  clock.now += 1;
  EXPECT_FALSE(r.onFailure().has_value());
}

TEST(RestartBackoff, FailuresInARowDoubleAndAHealthyRunResetsTheCount) {
  RestartBackoff r(200, 3000);
  std::int64_t now = 0;
  // Runs of 100 ms (shorter than the maximum): failures in a row.
  std::vector<std::int64_t> waits;
  for (int i = 0; i < 6; ++i) waits.push_back(r.onFailure(now, 100) - now);
  EXPECT_EQ(waits, (std::vector<std::int64_t>{200, 400, 800, 1600, 3000, 3000}));
  // A run longer than task.restart.backoff.max.ms: the next restart waits the initial delay.
  EXPECT_EQ(r.onFailure(now, 3001) - now, 200);
  EXPECT_EQ(r.onFailure(now, 3000) - now, 400);  // exactly the maximum is not "longer"
  EXPECT_EQ(r.onFailure(now, 3500) - now, 200);
  r.reset();
  EXPECT_EQ(r.failures(), 0);
}

}  // namespace
}  // namespace ferry::core
