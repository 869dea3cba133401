// Per-connector metric history (metrics_history.h).
#include "rest/metrics_history.h"

namespace ferry::rest {

void MetricsHistory::sample(const std::vector<control::MetricSample>& samples, std::int64_t nowMs) {
  std::map<std::string, Totals> now;
  for (const auto& s : samples) {
    if (s.name.rfind("ferry_task_", 0) != 0) continue;
    auto c = s.labels.find("connector");
    if (c == s.labels.end()) continue;
    Totals& t = now[c->second];  // any task series: the connector has a task here
    if (s.name == "ferry_task_records_in_total") t.in += s.value;
    else if (s.name == "ferry_task_records_out_total") t.out += s.value;
    else if (s.name == "ferry_task_errors_total") t.errors += s.value;
    else if (s.name == "ferry_task_commit_lag_records") t.lag += s.value;
  }
  std::lock_guard lock(mu_);
  // Connectors with no task here any more are forgotten.
  for (auto it = series_.begin(); it != series_.end();) it = now.count(it->first) ? std::next(it) : series_.erase(it);
  for (const auto& [name, t] : now) {
    Series& s = series_[name];
    if (s.lastMs > 0 && nowMs > s.lastMs) {
      const double secs = static_cast<double>(nowMs - s.lastMs) / 1000.0;
      // A counter that went down: a task restarted and counts from zero; its new count is the rate.
      auto rate = [&](double cur, double prev) { return (cur >= prev ? cur - prev : cur) / secs; };
      s.points.push_back({nowMs, rate(t.in, s.last.in), rate(t.out, s.last.out), rate(t.errors, s.last.errors), t.lag});
      while (s.points.size() > points_) s.points.pop_front();
    }
    s.last = t;
    s.lastMs = nowMs;
  }
}

std::optional<std::vector<HistoryPoint>> MetricsHistory::history(const std::string& connector) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(connector);
  if (it == series_.end()) return std::nullopt;
  return std::vector<HistoryPoint>(it->second.points.begin(), it->second.points.end());
}

}  // namespace ferry::rest
