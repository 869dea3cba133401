// The recent history of each connector's throughput, for charts (the web console's,
// GET /connectors/{name}/metrics/history): every `interval` the connectors' counters (summed over
// their tasks; in distributed mode over the whole cluster, control::Herder::connectorCounters())
// are taken and the rates since the previous sample kept, `points` samples per
// connector (default 120 x 5 s = the last 10 minutes). Pure: the REST server feeds it from a
// sampler thread; tests feed it samples and times.
//
// Thread-safety: sample() and history() may be called from any thread (one mutex).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "control/herder.h"

namespace ferry::rest {

struct HistoryPoint {
  std::int64_t timeMs = 0;
  double recordsInPerSecond = 0;
  double recordsOutPerSecond = 0;
  double errorsPerSecond = 0;
  double commitLagRecords = 0;  // the gauge's sum over the connector's tasks at that time
};

class MetricsHistory {
 public:
  explicit MetricsHistory(std::size_t points = 120) : points_(points) {}
  // One sample of the connectors' counters (control::Herder::connectorCounters()) taken at wall
  // time `nowMs`.
  void sample(const std::map<std::string, control::TaskCounters>& counters, std::int64_t nowMs);
  // The connector's points, oldest first; nullopt when none was sampled (no task of it ran, or
  // none whose counters this worker knows).
  std::optional<std::vector<HistoryPoint>> history(const std::string& connector) const;

 private:
  struct Series {
    control::TaskCounters last;
    std::int64_t lastMs = 0;
    std::deque<HistoryPoint> points;
  };
  const std::size_t points_;
  mutable std::mutex mu_;
  std::map<std::string, Series> series_;
};

}  // namespace ferry::rest
