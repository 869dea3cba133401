// The per-connector history behind GET /connectors/{name}/metrics/history (metrics_history.h):
// rates from successive samples summed over a connector's tasks, restarts, bounds, forgetting.
#include <gtest/gtest.h>

#include "rest/metrics_history.h"

namespace ferry::rest {
namespace {

control::MetricSample m(const std::string& name, const std::string& connector, int task, double v) {
  return {name, {{"connector", connector}, {"task", std::to_string(task)}}, v, "", "counter"};
}

std::vector<control::MetricSample> tasks(double in0, double in1, double out, double errors, double lag) {
  return {m("ferry_task_records_in_total", "c", 0, in0), m("ferry_task_records_in_total", "c", 1, in1),
          m("ferry_task_records_out_total", "c", 0, out), m("ferry_task_errors_total", "c", 1, errors),
          m("ferry_task_commit_lag_records", "c", 0, lag), m("ferry_worker_tasks", "", 0, 2),
          m("ferry_task_records_in_total", "d", 0, 7)};
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
  h.sample({m("ferry_task_records_in_total", "d", 0, 9)}, 35'000);
  EXPECT_FALSE(h.history("c").has_value());
  EXPECT_TRUE(h.history("d").has_value());
  // A clock that did not move adds no point (no division by zero).
  const auto before = h.history("d")->back().timeMs;
  h.sample({m("ferry_task_records_in_total", "d", 0, 9)}, 35'000);
  EXPECT_EQ(h.history("d")->back().timeMs, before);
  EXPECT_EQ(before, 35'000);
}

}  // namespace
}  // namespace ferry::rest
