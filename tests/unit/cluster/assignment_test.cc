// Assignment strategies: balance, stickiness (what moves on a join or leave), determinism.
#include "cluster/assignment.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ferry::cluster {
namespace {

AssignmentInput input(int workers, int connectors, int tasksEach) {
  AssignmentInput in;
  for (int w = 0; w < workers; ++w) in.workers.push_back(WorkerInfo{"w" + std::to_string(w), 1.0});
  for (int c = 0; c < connectors; ++c)
    for (int t = -1; t < tasksEach; ++t) in.units[Unit{"c" + std::to_string(c), t}] = 1.0;
  return in;
}

std::map<std::string, int> counts(const std::map<Unit, std::string>& a) {
  std::map<std::string, int> n;
  for (const auto& [u, w] : a) ++n[w];
  return n;
}

int moved(const std::map<Unit, std::string>& before, const std::map<Unit, std::string>& after) {
  int n = 0;
  for (const auto& [u, w] : after)
    if (auto it = before.find(u); it != before.end() && it->second != w) ++n;
  return n;
}

TEST(StickyBalanced, BalancedAndEveryUnitOwned) {
  auto s = makeStickyBalanced();
  for (int workers : {1, 2, 3, 5, 7}) {
    auto in = input(workers, 13, 4);
    auto a = s->assign(in);
    ASSERT_EQ(a.size(), in.units.size());
    auto n = counts(a);
    EXPECT_EQ(n.size(), static_cast<std::size_t>(workers));
    auto [lo, hi] = std::minmax_element(n.begin(), n.end(), [](auto& x, auto& y) { return x.second < y.second; });
    EXPECT_LE(hi->second - lo->second, 1) << workers << " workers";
  }
}

TEST(StickyBalanced, AJoinMovesOnlyWhatTheNewcomerTakes) {
  auto s = makeStickyBalanced();
  auto in = input(5, 100, 19);  // 2,000 units on 5 workers
  auto before = s->assign(in);
  in.current = before;
  in.workers.push_back(WorkerInfo{"w5", 1.0});
  auto after = s->assign(in);
  const int taken = counts(after)["w5"];
  EXPECT_EQ(moved(before, after), taken) << "only units going to the new worker move";
  EXPECT_GE(taken, 2000 / 6 - 1);
  EXPECT_LE(taken, 2000 / 6 + 1);
}

TEST(StickyBalanced, ALeaveMovesOnlyTheLeaversUnits) {
  auto s = makeStickyBalanced();
  auto in = input(4, 30, 3);
  auto before = s->assign(in);
  const int lost = counts(before)["w2"];
  in.workers.erase(in.workers.begin() + 2);
  in.current.clear();
  for (const auto& [u, w] : before)
    if (w != "w2") in.current[u] = w;
  auto after = s->assign(in);
  EXPECT_EQ(moved(before, after), lost);
  for (const auto& [u, w] : after) EXPECT_NE(w, "w2");
}

TEST(StickyBalanced, Deterministic) {
  auto s = makeStickyBalanced();
  auto in = input(3, 10, 5);
  EXPECT_EQ(s->assign(in), s->assign(in));
  in.current = s->assign(in);
  EXPECT_EQ(s->assign(in), in.current) << "a balanced assignment is a fixed point";
}

TEST(ConsistentHashing, JoinAndLeaveMoveOnlyTheirShare) {
  auto s = makeConsistentHashing(64);
  auto in = input(5, 200, 4);  // 1,000 units
  auto before = s->assign(in);
  auto n = counts(before);
  for (const auto& [w, c] : n) {
    EXPECT_GT(c, 1000 / 5 / 2) << w;
    EXPECT_LT(c, 1000 / 5 * 2) << w;
  }
  auto joined = in;
  joined.workers.push_back(WorkerInfo{"w5", 1.0});
  auto afterJoin = s->assign(joined);
  for (const auto& [u, w] : afterJoin) {
    if (w != before.at(u)) {
      EXPECT_EQ(w, "w5") << u.toString() << " moved between two old workers";
    }
  }
  auto left = in;
  left.workers.erase(left.workers.begin());
  auto afterLeave = s->assign(left);
  for (const auto& [u, w] : afterLeave) {
    if (before.at(u) != "w0") {
      EXPECT_EQ(w, before.at(u)) << u.toString() << " moved though its owner stayed";
    }
  }
}

TEST(LoadWeighted, FollowsCapacityAndCost) {
  auto s = makeLoadWeighted(0.1);
  AssignmentInput in;
  in.workers = {WorkerInfo{"big", 2.0}, WorkerInfo{"small", 1.0}};
  for (int t = 0; t < 30; ++t) in.units[Unit{"c", t}] = 1.0;
  auto a = s->assign(in);
  auto n = counts(a);
  EXPECT_EQ(n["big"], 20);
  EXPECT_EQ(n["small"], 10);
  // One heavy unit weighs as much as ten light ones.
  AssignmentInput h;
  h.workers = {WorkerInfo{"a", 1.0}, WorkerInfo{"b", 1.0}};
  h.units[Unit{"heavy", 0}] = 10.0;
  for (int t = 0; t < 10; ++t) h.units[Unit{"light", t}] = 1.0;
  auto b = s->assign(h);
  const std::string heavyOwner = b.at(Unit{"heavy", 0});
  for (int t = 0; t < 10; ++t) EXPECT_NE(b.at(Unit{"light", t}), heavyOwner);
  // Sticky within the tolerance: the same input with current owners changes nothing.
  h.current = b;
  EXPECT_EQ(s->assign(h), b);
}

TEST(Strategies, ByName) {
  for (const char* n : {"sticky-balanced", "consistent-hashing", "load-weighted"}) {
    auto s = makeStrategy(n);
    ASSERT_TRUE(s.isOk()) << n;
    EXPECT_EQ((*s)->name(), n);
  }
  auto bad = makeStrategy("round-robin");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("sticky-balanced, consistent-hashing, load-weighted"), std::string::npos);
}

}  // namespace
}  // namespace ferry::cluster
