#include "rest/prometheus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ferry::rest {
namespace {

using ::testing::HasSubstr;

TEST(Prometheus, FamiliesGroupedWithHelpAndType) {
  std::vector<control::MetricSample> s = {
      {"ferry_records_total", {{"task", "0"}}, 5, "Records", "counter"},
      {"ferry_lag", {}, 2.5, "Lag", "gauge"},
      {"ferry_records_total", {{"task", "1"}}, 7, "", "counter"},
  };
  std::string text = renderPrometheus(s);
  EXPECT_EQ(text,
            "# HELP ferry_records_total Records\n"
            "# TYPE ferry_records_total counter\n"
            "ferry_records_total{task=\"0\"} 5\n"
            "ferry_records_total{task=\"1\"} 7\n"
            "# HELP ferry_lag Lag\n"
            "# TYPE ferry_lag gauge\n"
            "ferry_lag 2.5\n");
}

TEST(Prometheus, HistogramSamplesFormOneFamily) {
  std::vector<control::MetricSample> s = {
      {"lat_seconds_bucket", {{"le", "0.001"}, {"task", "0"}}, 3, "Latency", "histogram"},
      {"lat_seconds_bucket", {{"le", "+Inf"}, {"task", "0"}}, 4, "Latency", "histogram"},
      {"lat_seconds_sum", {{"task", "0"}}, 0.5, "Latency", "histogram"},
      {"lat_seconds_count", {{"task", "0"}}, 4, "Latency", "histogram"},
  };
  EXPECT_EQ(renderPrometheus(s),
            "# HELP lat_seconds Latency\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{le=\"0.001\",task=\"0\"} 3\n"
            "lat_seconds_bucket{le=\"+Inf\",task=\"0\"} 4\n"
            "lat_seconds_sum{task=\"0\"} 0.5\n"
            "lat_seconds_count{task=\"0\"} 4\n");
}

TEST(Prometheus, EscapesLabelValuesAndHelp) {
  std::vector<control::MetricSample> s = {
      {"m", {{"connector", "a\"b\\c\nd"}}, 1, "line1\nline2 \\ x", "gauge"}};
  std::string text = renderPrometheus(s);
  EXPECT_THAT(text, HasSubstr("m{connector=\"a\\\"b\\\\c\\nd\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# HELP m line1\\nline2 \\\\ x\n"));
}

TEST(Prometheus, SanitizesNamesAndUnknownTypes) {
  EXPECT_EQ(sanitizeMetricName("task.records-in"), "task_records_in");
  EXPECT_EQ(sanitizeMetricName("9lives"), "_lives");
  EXPECT_EQ(sanitizeMetricName("a:b"), "a:b");
  EXPECT_EQ(sanitizeMetricName("a:b", true), "a_b");
  std::string text = renderPrometheus({{"x", {{"bad-label", "v"}}, 1, "", "histogramish"}});
  EXPECT_THAT(text, HasSubstr("# TYPE x untyped\n"));
  EXPECT_THAT(text, HasSubstr("x{bad_label=\"v\"} 1\n"));
}

TEST(Prometheus, SpecialValues) {
  EXPECT_EQ(formatMetricValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(formatMetricValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(formatMetricValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(formatMetricValue(123456789012.0), "123456789012");
  EXPECT_EQ(formatMetricValue(0.25), "0.25");
}

TEST(Prometheus, ProcessMetricsPresent) {
  auto m = processMetrics();
  bool up = false, rss = false, cpu = false;
  for (const auto& s : m) {
    up |= s.name == "ferry_up" && s.value == 1;
    rss |= s.name == "process_resident_memory_bytes" && s.value > 0;
    cpu |= s.name == "process_cpu_seconds_total" && s.value >= 0;
  }
  EXPECT_TRUE(up);
  EXPECT_TRUE(rss);
  EXPECT_TRUE(cpu);
}

}  // namespace
}  // namespace ferry::rest
