// Prometheus text exposition (format 0.0.4) for GET /metrics.
//
// renderPrometheus groups samples by metric name (first-seen order), writes one HELP and one TYPE
// line per family, escapes HELP text (\\, \n) and label values (\\, ", \n), replaces characters
// that are not allowed in metric and label names with '_', and prints NaN/+Inf/-Inf as Prometheus
// spells them. processMetrics adds what every exporter shows: process_resident_memory_bytes and
// process_virtual_memory_bytes (/proc/self/statm), process_cpu_seconds_total (getrusage), and
// ferry_up (always 1).
//
// Thread-safety: free functions without shared state.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "control/herder.h"

namespace ferry::rest {

std::string renderPrometheus(const std::vector<control::MetricSample>& samples);

// Process-level samples computed on each call.
std::vector<control::MetricSample> processMetrics();

// Exposed for tests.
std::string escapeLabelValue(std::string_view value);
std::string sanitizeMetricName(std::string_view name, bool labelName = false);
std::string formatMetricValue(double value);

}  // namespace ferry::rest
