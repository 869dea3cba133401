// The per-connector history behind GET /connectors/{name}/metrics/history (metrics_history.h):
// rates from successive samples summed over a connector's tasks, restarts, bounds, forgetting.
#include <gtest/gtest.h>

#include "rest/metrics_history.h"

namespace ferry::rest {
namespace {

using Counters = std::map<std::string, control::TaskCounters>;

// Connector c's tasks 0 and 1 summed (what Herder::connectorCounters() answers), and d's one task.
Counters tasks(std::int64_t in0, std::int64_t in1, std::int64_t out, std::int64_t errors, std::int64_t lag) {
  return {{"c", {in0 + in1, out, errors, lag}}, {"d", {7, 0, 0, 0}}};
}

TEST(MetricsHistoryTest, RatesPerConnectorFromSuccessiveSamples) {
  MetricsHistory h(3);
  EXPECT_FALSE(h.history("c").has_value());
  h.sample(tasks(100, 50, 100, 0, 5), 10'000);
  ASSERT_TRUE(h.history("c").has_value());
  EXPECT_TRUE(h.history("c")->empty());  // one sample: no rate yet
  h.sample(tasks(200, 150, 180, 10, 7), 15'000);  // 5 s later
  auto p = *h.history("c");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].timeMs, 15'000);
  EXPECT_DOUBLE_EQ(p[0].recordsInPerSecond, 40);  // (350 - 150) / 5, both tasks
  EXPECT_DOUBLE_EQ(p[0].recordsOutPerSecond, 16);
  EXPECT_DOUBLE_EQ(p[0].errorsPerSecond, 2);
  EXPECT_DOUBLE_EQ(p[0].commitLagRecords, 7);
  // A task restarted (its counter from zero): its new count is taken as the rate, never negative.
  h.sample(tasks(10, 160, 190, 10, 0), 20'000);
  p = *h.history("c");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_DOUBLE_EQ(p[1].recordsInPerSecond, 170.0 / 5);
  // At most `points` are kept, the newest.
  h.sample(tasks(20, 170, 200, 10, 0), 25'000);
  h.sample(tasks(30, 180, 210, 10, 0), 30'000);
  p = *h.history("c");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p.front().timeMs, 20'000);
  EXPECT_EQ(p.back().timeMs, 30'000);
  // A connector with no task here any more is forgotten.
  h.sample(Counters{{"d", {9, 0, 0, 0}}}, 35'000);
  EXPECT_FALSE(h.history("c").has_value());
  EXPECT_TRUE(h.history("d").has_value());
  // A clock that did not move adds no point (no division by zero).
  const auto before = h.history("d")->back().timeMs;
  h.sample(Counters{{"d", {9, 0, 0, 0}}}, 35'000);
  EXPECT_EQ(h.history("d")->back().timeMs, before);
  EXPECT_EQ(before, 35'000);
}

}  // namespace
}  // namespace ferry::rest
