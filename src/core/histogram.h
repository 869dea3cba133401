// A fixed-bucket latency histogram, exported as a Prometheus `histogram` (cumulative `le` buckets,
// `_sum`, `_count`). Lock-free: an observation is one relaxed atomic add to its bucket and one to
// the sum; readers take a snapshot at any time (a bucket and the sum may be one observation apart).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ferry::core {

class LatencyHistogram {
 public:
  // Upper bounds (`le`) in seconds; +Inf follows. Fine below 1 ms, where a worker's own share of
  // a record's latency should lie, coarse above.
  static constexpr std::size_t kBounds = 17;
  static constexpr std::array<double, kBounds> kBoundsSeconds{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                             0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                                             0.5,     1,      2.5,     5,      10};

  void observeNs(std::int64_t ns) noexcept {
    if (ns < 0) ns = 0;  // clocks of two threads: never a negative time
    std::size_t i = 0;
    while (i < kBounds && ns > kBoundsNs[i]) ++i;
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    sumNs_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
  }

  struct Snapshot {
    std::array<std::uint64_t, kBounds + 1> cumulative{};  // observations <= kBoundsSeconds[i]; last = all
    std::uint64_t count = 0;
    double sumSeconds = 0;
  };
  Snapshot snapshot() const noexcept {
    Snapshot s;
    std::uint64_t running = 0;
    for (std::size_t i = 0; i <= kBounds; ++i) {
      running += buckets_[i].load(std::memory_order_relaxed);
      s.cumulative[i] = running;
    }
    s.count = running;
    s.sumSeconds = static_cast<double>(sumNs_.load(std::memory_order_relaxed)) / 1e9;
    return s;
  }

 private:
  static constexpr std::array<std::int64_t, kBounds> kBoundsNs = [] {
    std::array<std::int64_t, kBounds> ns{};
    for (std::size_t i = 0; i < kBounds; ++i) ns[i] = static_cast<std::int64_t>(kBoundsSeconds[i] * 1e9 + 0.5);
    return ns;
  }();
  std::array<std::atomic<std::uint64_t>, kBounds + 1> buckets_{};
  std::atomic<std::uint64_t> sumNs_{0};
};

}  // namespace ferry::core
