// The cluster state machine: membership in log time, fenced handoffs, task configs, snapshots,
// and a randomized run checking that a live owner never loses a unit without releasing it.
#include "cluster/state_machine.h"

#include <gtest/gtest.h>

#include <random>

namespace ferry::cluster {
namespace {

struct Log {
  ClusterState state;
  std::vector<std::pair<std::int64_t, Event>> events;  // (log time, event)
  std::int64_t now = 1'000'000;

  explicit Log(std::string strategy = "sticky-balanced", std::int64_t session = 3000)
      : state(*ClusterState::create(ClusterOptions{session, std::move(strategy)})) {}

  void append(const Event& e, std::int64_t advanceMs = 10) {
    now += advanceMs;
    events.emplace_back(now, e);
    state.apply(static_cast<std::int64_t>(events.size()) - 1, now, e);
  }
  void heartbeat(const std::string& w, const std::string& inc = "1", std::int64_t advanceMs = 10, double cap = 1.0) {
    Event e;
    e.type = EventType::kHeartbeat;
    e.worker = w;
    e.incarnation = inc;
    e.url = "http://" + w;
    e.capacity = cap;
    append(e, advanceMs);
  }
  void put(const std::string& c, const std::string& target = "STARTED", StringMap config = {{"k", "v"}}) {
    Event e;
    e.type = EventType::kConnectorPut;
    e.connector = c;
    e.config = std::move(config);
    e.target = target;
    append(e);
  }
  void tasks(const std::string& c, int n, const std::string& tag = "a") {
    Event e;
    e.type = EventType::kTaskConfigs;
    e.connector = c;
    e.generation = state.connectors().at(c).generation;
    for (int i = 0; i < n; ++i) e.taskConfigs.push_back({{"task", std::to_string(i)}, {"tag", tag}});
    append(e);
  }
  // Every owner with a pending handoff releases it (as a worker does after stopping the unit).
  int releaseAll() {
    std::vector<Event> rel;
    for (const auto& [u, o] : state.assignment())
      if (!o.next.empty()) {
        Event e;
        e.type = EventType::kReleased;
        e.worker = o.owner;
        e.incarnation = o.incarnation;
        e.connector = u.connector;
        e.task = u.task;
        e.epoch = o.epoch;
        rel.push_back(e);
      }
    for (const auto& e : rel) append(e, 1);
    return static_cast<int>(rel.size());
  }
};

std::map<std::string, int> ownerCounts(const ClusterState& s) {
  std::map<std::string, int> n;
  for (const auto& [u, o] : s.assignment()) ++n[o.owner];
  return n;
}

// A member's counters are those of its last heartbeat: replaced, not merged, so a unit it no
// longer runs stops being reported; a heartbeat without them (an earlier version) clears them.
TEST(ClusterState, MemberCountersAreItsLastHeartbeats) {
  Log log;
  Event e;
  e.type = EventType::kHeartbeat;
  e.worker = "a";
  e.incarnation = "1";
  e.counters = {{"c-0", {5, 4, 0, 1}}, {"c-1", {7, 7, 1, 0}}};
  log.append(e);
  EXPECT_EQ(log.state.members().at("a").counters.at("c-1"), (UnitCounters{7, 7, 1, 0}));
  e.counters = {{"c-0", {9, 9, 0, 0}}};
  log.append(e);
  EXPECT_EQ(log.state.members().at("a").counters.size(), 1u);
  EXPECT_EQ(log.state.members().at("a").counters.at("c-0").recordsOut, 9);
  log.heartbeat("a");
  EXPECT_TRUE(log.state.members().at("a").counters.empty());
}

TEST(ClusterState, MembersJoinAndUnitsSpread) {
  Log log;
  for (const char* w : {"a", "b", "c"}) log.heartbeat(w);
  log.put("c1");
  log.tasks("c1", 5);
  ASSERT_EQ(log.state.assignment().size(), 6u);  // instance + 5 tasks
  auto n = ownerCounts(log.state);
  EXPECT_EQ(n.size(), 3u);
  for (const auto& [w, c] : n) EXPECT_EQ(c, 2) << w;
  for (const auto& [u, o] : log.state.assignment()) {
    EXPECT_EQ(o.epoch, 1) << u.toString();
    EXPECT_TRUE(o.next.empty());
  }
  EXPECT_EQ(log.state.unitsOf("a", "1").size(), 2u);
  EXPECT_TRUE(log.state.unitsOf("a", "2").empty()) << "another incarnation owns nothing";
}

TEST(ClusterState, AJoinHandsOffOnlyAfterTheOwnerReleased) {
  Log log;
  for (const char* w : {"a", "b"}) log.heartbeat(w);
  log.put("c1");
  log.tasks("c1", 7);  // 8 units, 4 each
  auto before = log.state.assignment();
  log.heartbeat("c");
  int pending = 0;
  for (const auto& [u, o] : log.state.assignment()) {
    EXPECT_EQ(o.owner, before.at(u).owner) << "nothing moves before it is released";
    EXPECT_EQ(o.epoch, before.at(u).epoch);
    if (!o.next.empty()) {
      EXPECT_EQ(o.next, "c");
      ++pending;
    }
  }
  EXPECT_EQ(pending, 2);
  EXPECT_EQ(log.releaseAll(), 2);
  int moved = 0;
  for (const auto& [u, o] : log.state.assignment()) {
    if (o.owner != before.at(u).owner) {
      ++moved;
      EXPECT_EQ(o.owner, "c");
      EXPECT_EQ(o.epoch, before.at(u).epoch + 1);
    } else {
      EXPECT_EQ(o.epoch, before.at(u).epoch) << u.toString() << " stayed but would be restarted";
    }
    EXPECT_TRUE(o.next.empty());
  }
  EXPECT_EQ(moved, 2);
}

TEST(ClusterState, AStaleOrForeignReleaseChangesNothing) {
  Log log;
  log.heartbeat("a");
  log.put("c1");
  log.tasks("c1", 1);
  log.heartbeat("b");
  const auto snapshot = log.state.toSnapshot();
  Unit moving;
  Ownership o;
  for (const auto& [u, own] : log.state.assignment())
    if (!own.next.empty()) {
      moving = u;
      o = own;
    }
  ASSERT_FALSE(o.next.empty());
  Event e;
  e.type = EventType::kReleased;
  e.connector = moving.connector;
  e.task = moving.task;
  e.worker = o.owner;
  e.incarnation = o.incarnation;
  e.epoch = o.epoch - 1;  // stale epoch
  log.append(e);
  e.epoch = o.epoch;
  e.worker = "b";  // not the owner
  log.append(e);
  EXPECT_EQ(log.state.assignment().at(moving).owner, o.owner);
  EXPECT_EQ(log.state.assignment().at(moving).next, "b");
}

TEST(ClusterState, ADeadMembersUnitsMoveAtOnceInLogTime) {
  Log log("sticky-balanced", 3000);
  for (const char* w : {"a", "b", "c"}) log.heartbeat(w);
  log.put("c1");
  log.tasks("c1", 5);
  auto before = log.state.assignment();
  // a and b keep heartbeating; c stops. After 3 s of log time c is gone for everyone.
  for (int i = 0; i < 10; ++i) {
    log.heartbeat("a", "1", 250);
    log.heartbeat("b", "1", 0);
  }
  EXPECT_EQ(log.state.members().count("c"), 1u) << "2.5 s: still within the session";
  log.heartbeat("a", "1", 600);
  EXPECT_EQ(log.state.members().count("c"), 0u);
  for (const auto& [u, o] : log.state.assignment()) {
    EXPECT_NE(o.owner, "c");
    EXPECT_TRUE(o.next.empty());
    if (before.at(u).owner == "c")
      EXPECT_EQ(o.epoch, before.at(u).epoch + 1) << "moved with a new epoch";
    else
      EXPECT_EQ(o.epoch, before.at(u).epoch) << "unaffected units are not restarted";
  }
}

TEST(ClusterState, ARestartedProcessLosesItsOldUnits) {
  Log log;
  log.heartbeat("a");
  log.put("c1");
  log.tasks("c1", 2);
  ASSERT_EQ(log.state.unitsOf("a", "1").size(), 3u);
  log.heartbeat("a", "2");  // same worker id, new process
  EXPECT_TRUE(log.state.unitsOf("a", "1").empty());
  auto mine = log.state.unitsOf("a", "2");
  ASSERT_EQ(mine.size(), 3u);
  for (const auto& [u, o] : mine) EXPECT_EQ(o.epoch, 2) << "a new epoch: the old incarnation may not resume";
}

TEST(ClusterState, GracefulLeaveMovesUnitsWithoutWaiting) {
  Log log;
  log.heartbeat("a");
  log.heartbeat("b");
  log.put("c1");
  log.tasks("c1", 3);
  Event leave;
  leave.type = EventType::kLeave;
  leave.worker = "a";
  leave.incarnation = "1";
  log.append(leave);
  EXPECT_EQ(log.state.members().count("a"), 0u);
  for (const auto& [u, o] : log.state.assignment()) EXPECT_EQ(o.owner, "b");
}

TEST(ClusterState, TaskConfigsFollowTheConfigGeneration) {
  Log log;
  log.heartbeat("a");
  log.put("c1");
  log.tasks("c1", 2, "x");
  const auto e0 = log.state.assignment().at(Unit{"c1", 0}).epoch;
  // A config change: new generation; task configs of the old generation are stale.
  Event stale;
  stale.type = EventType::kTaskConfigs;
  stale.connector = "c1";
  stale.generation = log.state.connectors().at("c1").generation;
  stale.taskConfigs = {{{"tag", "old"}}};
  log.put("c1", "STARTED", {{"k", "changed"}});
  log.append(stale);
  EXPECT_EQ(log.state.connectors().at("c1").tasks.size(), 2u) << "stale task configs ignored";
  log.tasks("c1", 3, "y");
  EXPECT_EQ(log.state.connectors().at("c1").tasks.size(), 3u);
  EXPECT_EQ(log.state.assignment().at(Unit{"c1", 0}).epoch, e0 + 1) << "a changed task config restarts it";
  EXPECT_EQ(log.state.assignment().count(Unit{"c1", 2}), 1u);
  log.tasks("c1", 1, "y");
  EXPECT_EQ(log.state.assignment().count(Unit{"c1", 2}), 0u) << "removed tasks are unassigned";
  EXPECT_EQ(log.state.assignment().at(Unit{"c1", 0}).epoch, e0 + 1) << "unchanged config: no restart";
}

TEST(ClusterState, StoppedConnectorsRunNothingDeletedOnesVanish) {
  Log log;
  log.heartbeat("a");
  log.put("c1");
  log.tasks("c1", 2);
  log.put("c2");
  Event st;
  st.type = EventType::kTargetState;
  st.connector = "c1";
  st.target = "STOPPED";
  log.append(st);
  EXPECT_EQ(log.state.assignment().count(Unit{"c1", -1}), 0u);
  EXPECT_EQ(log.state.assignment().count(Unit{"c1", 0}), 0u);
  EXPECT_EQ(log.state.assignment().count(Unit{"c2", -1}), 1u);
  Event del;
  del.type = EventType::kConnectorDelete;
  del.connector = "c2";
  log.append(del);
  EXPECT_TRUE(log.state.assignment().empty());
  EXPECT_EQ(log.state.connectors().count("c2"), 0u);
}

// Random membership changes, config changes and releases; after every event: every unit has a
// live owner, a pending taker is live, and a live owner never lost a unit except by releasing
// it. Replaying the same events, or a snapshot plus the rest, gives the same state.
TEST(ClusterState, RandomizedRunKeepsOwnershipFenced) {
  for (const char* strategy : {"sticky-balanced", "consistent-hashing", "load-weighted"}) {
    std::mt19937 rng(20261204);
    Log log(strategy, 3000);
    std::map<std::string, std::string> alive;  // worker -> incarnation (sending heartbeats)
    int incarnations = 0;
    std::string mid;
    std::size_t midAt = 0;
    for (int step = 0; step < 3000; ++step) {
      const auto before = log.state.assignment();
      const int action = static_cast<int>(rng() % 100);
      Event last;
      if (action < 45 && !alive.empty()) {
        auto it = std::next(alive.begin(), static_cast<long>(rng() % alive.size()));
        log.heartbeat(it->first, it->second, static_cast<std::int64_t>(rng() % 400));
      } else if (action < 52) {
        const std::string w = "w" + std::to_string(rng() % 8);
        alive[w] = std::to_string(++incarnations);
        log.heartbeat(w, alive[w], 5, 1.0 + static_cast<double>(rng() % 3));
      } else if (action < 56 && !alive.empty()) {
        alive.erase(std::next(alive.begin(), static_cast<long>(rng() % alive.size())));  // kill -9
      } else if (action < 58 && !alive.empty()) {
        auto it = std::next(alive.begin(), static_cast<long>(rng() % alive.size()));
        Event e;
        e.type = EventType::kLeave;
        e.worker = it->first;
        e.incarnation = it->second;
        alive.erase(it);
        log.append(e);
      } else if (action < 66) {
        const std::string c = "c" + std::to_string(rng() % 6);
        const char* targets[] = {"STARTED", "STARTED", "PAUSED", "STOPPED"};
        log.put(c, targets[rng() % 4], {{"v", std::to_string(rng() % 3)}});
      } else if (action < 76 && !log.state.connectors().empty()) {
        auto it = std::next(log.state.connectors().begin(), static_cast<long>(rng() % log.state.connectors().size()));
        log.tasks(it->first, static_cast<int>(rng() % 6), std::to_string(rng() % 2));
      } else if (action < 78 && !log.state.connectors().empty()) {
        Event e;
        e.type = EventType::kConnectorDelete;
        e.connector = std::next(log.state.connectors().begin(),
                                static_cast<long>(rng() % log.state.connectors().size()))->first;
        log.append(e);
      } else if (action < 95) {
        // Owners release what they were asked to (only live ones do).
        std::vector<Event> rel;
        for (const auto& [u, o] : log.state.assignment())
          if (!o.next.empty() && alive.count(o.owner) && alive[o.owner] == o.incarnation && rng() % 2) {
            Event e;
            e.type = EventType::kReleased;
            e.worker = o.owner;
            e.incarnation = o.incarnation;
            e.connector = u.connector;
            e.task = u.task;
            e.epoch = o.epoch;
            rel.push_back(e);
          }
        if (!rel.empty()) {
          const auto snap = log.state.assignment();
          log.append(rel.front(), 1);
          // Only the released unit may change owner through this event (or units of members
          // that expired at this position).
          for (const auto& [u, o] : log.state.assignment()) {
            auto b = snap.find(u);
            if (b == snap.end() || b->second.owner == o.owner) continue;
            const bool released = u.connector == rel.front().connector && u.task == rel.front().task;
            const bool ownerGone = !log.state.members().count(b->second.owner) ||
                                   log.state.members().at(b->second.owner).incarnation != b->second.incarnation;
            EXPECT_TRUE(released || ownerGone) << strategy << " step " << step << " " << u.toString();
          }
          continue;
        }
      } else {
        log.now += 3500;  // a long silence: everyone who does not heartbeat now expires
        if (!alive.empty()) log.heartbeat(alive.begin()->first, alive.begin()->second, 0);
      }
      if (step == 1500) {
        mid = log.state.toSnapshot();
        midAt = log.events.size();
      }
      // Invariants.
      const auto& members = log.state.members();
      for (const auto& [u, o] : log.state.assignment()) {
        if (members.empty()) {
          EXPECT_TRUE(o.owner.empty()) << strategy << " step " << step;
          continue;
        }
        ASSERT_TRUE(members.count(o.owner) && members.at(o.owner).incarnation == o.incarnation)
            << strategy << " step " << step << ": " << u.toString() << " owned by a non-member " << o.owner;
        if (!o.next.empty()) {
          EXPECT_TRUE(members.count(o.next)) << strategy << " step " << step;
          EXPECT_NE(o.next, o.owner);
        }
        auto b = before.find(u);
        if (b != before.end()) {
          EXPECT_GE(o.epoch, b->second.epoch) << strategy << " step " << step << ": epoch went back";
          if (b->second.owner != o.owner && !b->second.owner.empty()) {
            const bool ownerGone = !members.count(b->second.owner) ||
                                   members.at(b->second.owner).incarnation != b->second.incarnation;
            EXPECT_TRUE(ownerGone) << strategy << " step " << step << ": " << u.toString()
                                   << " taken from live " << b->second.owner << " without a release";
          }
        }
      }
    }
    EXPECT_GT(log.state.moves(), 0) << strategy;
    // Determinism: a second machine fed the same events, and the mid snapshot plus the rest.
    Log replay(strategy, 3000);
    for (std::size_t i = 0; i < log.events.size(); ++i)
      replay.state.apply(static_cast<std::int64_t>(i), log.events[i].first, log.events[i].second);
    EXPECT_EQ(replay.state.toSnapshot(), log.state.toSnapshot()) << strategy;
    auto resumed = ClusterState::fromSnapshot(mid);
    ASSERT_TRUE(resumed.isOk()) << resumed.status().toString();
    for (std::size_t i = midAt; i < log.events.size(); ++i)
      resumed->apply(static_cast<std::int64_t>(i), log.events[i].first, log.events[i].second);
    EXPECT_EQ(resumed->toSnapshot(), log.state.toSnapshot()) << strategy;
  }
}

TEST(ClusterState, OnlyTheCurrentOwnersStatusCounts) {
  Log log;
  log.heartbeat("a");
  log.put("c1");
  log.tasks("c1", 1);
  const Ownership o = log.state.assignment().at(Unit{"c1", 0});
  Event st;
  st.type = EventType::kStatus;
  st.worker = "a";
  st.incarnation = "1";
  st.connector = "c1";
  st.task = 0;
  st.epoch = o.epoch;
  st.state = "RUNNING";
  log.append(st);
  ASSERT_EQ(log.state.statuses().count(Unit{"c1", 0}), 1u);
  EXPECT_EQ(log.state.statuses().at(Unit{"c1", 0}).state, "RUNNING");
  EXPECT_EQ(log.state.statuses().at(Unit{"c1", 0}).worker, "a");
  st.epoch = o.epoch - 1;  // a zombie of an older epoch
  st.state = "FAILED";
  log.append(st);
  st.epoch = o.epoch;
  st.incarnation = "0";  // an older process
  log.append(st);
  EXPECT_EQ(log.state.statuses().at(Unit{"c1", 0}).state, "RUNNING");
  auto back = ClusterState::fromSnapshot(log.state.toSnapshot());
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back->statuses().at(Unit{"c1", 0}).state, "RUNNING");
  log.tasks("c1", 0);
  EXPECT_EQ(log.state.statuses().count(Unit{"c1", 0}), 0u) << "a removed unit's status goes with it";
}

TEST(ClusterState, SnapshotsRefuseGarbage) {
  for (const char* bad : {"", "[]", R"({"version":2})", R"({"version":1,"offset":"x"})"})
    EXPECT_FALSE(ClusterState::fromSnapshot(bad).isOk()) << bad;
  EXPECT_FALSE(ClusterState::create(ClusterOptions{0, "sticky-balanced"}).isOk());
  EXPECT_FALSE(ClusterState::create(ClusterOptions{1000, "nope"}).isOk());
}

}  // namespace
}  // namespace ferry::cluster
