// Averaged allocation of queues to group members (what each sink task consumes).
#include "core/allocation.h"

#include <gtest/gtest.h>

namespace ferry::core {
namespace {

std::vector<TopicQueue> queues(int n, const std::string& topic = "t") {
  std::vector<TopicQueue> q;
  for (int i = 0; i < n; ++i) q.push_back(TopicQueue{topic, i});
  return q;
}

TEST(Allocation, EightQueuesOverThreeMembers) {
  auto a = allocateAveragely({"c", "a", "b"}, queues(8));
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a["a"], (std::vector<TopicQueue>{{"t", 0}, {"t", 1}, {"t", 2}}));
  EXPECT_EQ(a["b"], (std::vector<TopicQueue>{{"t", 3}, {"t", 4}, {"t", 5}}));
  EXPECT_EQ(a["c"], (std::vector<TopicQueue>{{"t", 6}, {"t", 7}}));
}

TEST(Allocation, MoreMembersThanQueues) {
  auto a = allocateAveragely({"m1", "m2", "m3"}, queues(2));
  EXPECT_EQ(a["m1"].size(), 1u);
  EXPECT_EQ(a["m2"].size(), 1u);
  EXPECT_TRUE(a["m3"].empty());
}

TEST(Allocation, EveryQueueExactlyOnceAcrossTopics) {
  auto qs = queues(5, "x");
  for (auto& q : queues(3, "y")) qs.push_back(q);
  auto a = allocateAveragely({"a", "b", "c", "d"}, qs);
  std::vector<TopicQueue> all;
  for (auto& [m, mine] : a) {
    EXPECT_GE(mine.size(), 2u);
    EXPECT_LE(mine.size(), 2u);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::sort(all.begin(), all.end());
  std::sort(qs.begin(), qs.end());
  EXPECT_EQ(all, qs);
}

TEST(Allocation, EmptyInputs) {
  EXPECT_TRUE(allocateAveragely({}, queues(4)).empty());
  auto a = allocateAveragely({"only"}, {});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a["only"].empty());
}

}  // namespace
}  // namespace ferry::core
