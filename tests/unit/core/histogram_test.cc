// core::LatencyHistogram: buckets by upper bound (le), cumulative snapshot, sum.
#include "core/histogram.h"

#include <gtest/gtest.h>

namespace ferry::core {
namespace {

TEST(LatencyHistogram, CountsEachObservationInTheFirstBucketThatHoldsIt) {
  LatencyHistogram h;
  h.observeNs(10'000);         // 10 µs   -> le 0.00005
  h.observeNs(50'000);         // 50 µs   -> le 0.00005 (bounds are inclusive)
  h.observeNs(50'001);         //         -> le 0.0001
  h.observeNs(900'000);        // 0.9 ms  -> le 0.001
  h.observeNs(20'000'000'000); // 20 s    -> +Inf
  h.observeNs(-5);             // clocks of two threads: counted as 0
  const auto s = h.snapshot();
  ASSERT_EQ(LatencyHistogram::kBoundsSeconds[0], 0.00005);
  EXPECT_EQ(s.cumulative[0], 3u);  // 10 µs, 50 µs, 0
  EXPECT_EQ(s.cumulative[1], 4u);
  EXPECT_EQ(s.cumulative[3], 4u);  // le 0.0005
  EXPECT_EQ(s.cumulative[4], 5u);  // le 0.001
  EXPECT_EQ(s.cumulative[LatencyHistogram::kBounds - 1], 5u);  // le 10
  EXPECT_EQ(s.cumulative[LatencyHistogram::kBounds], 6u);      // +Inf
  EXPECT_EQ(s.count, 6u);
  EXPECT_NEAR(s.sumSeconds, 20.001010001, 1e-9);  // 10 + 50 + 50.001 + 900 µs + 20 s
}

TEST(LatencyHistogram, BoundsAscend) {
  for (std::size_t i = 1; i < LatencyHistogram::kBounds; ++i)
    EXPECT_LT(LatencyHistogram::kBoundsSeconds[i - 1], LatencyHistogram::kBoundsSeconds[i]);
}

}  // namespace
}  // namespace ferry::core
