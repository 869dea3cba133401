// Per-connector metric history (metrics_history.h).
#include "rest/metrics_history.h"

namespace ferry::rest {

void MetricsHistory::sample(const std::map<std::string, control::TaskCounters>& counters, std::int64_t nowMs) {
  std::lock_guard lock(mu_);
  // Connectors with no task here any more are forgotten.
  for (auto it = series_.begin(); it != series_.end();) it = counters.count(it->first) ? std::next(it) : series_.erase(it);
  for (const auto& [name, t] : counters) {
    Series& s = series_[name];
    if (s.lastMs > 0 && nowMs > s.lastMs) {
      const double secs = static_cast<double>(nowMs - s.lastMs) / 1000.0;
      // A counter that went down: a task restarted and counts from zero; its new count is the rate.
      auto rate = [&](std::int64_t cur, std::int64_t prev) { return static_cast<double>(cur >= prev ? cur - prev : cur) / secs; };
      s.points.push_back({nowMs, rate(t.recordsIn, s.last.recordsIn), rate(t.recordsOut, s.last.recordsOut),
                          rate(t.errors, s.last.errors), static_cast<double>(t.commitLag)});
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
