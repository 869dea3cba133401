// Per-connector metric history (metrics_history.h).
#include "rest/metrics_history.h"

namespace ferry::rest {

void MetricsHistory::sample(const std::map<std::string, control::TaskCounters>& counters, std::int64_t nowMs) {
  std::map<std::string, Totals> now;
  for (const auto& [name, c] : counters)
    now[name] = Totals{static_cast<double>(c.recordsIn), static_cast<double>(c.recordsOut), static_cast<double>(c.errors),
                       static_cast<double>(c.commitLag)};
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
