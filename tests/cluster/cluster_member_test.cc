// ClusterMember on a real backbone (argv[1]: embedded | kafka | rocketmq), several members in
// one process, each with its own SharedLog handle: joins agree on one assignment; a member that
// stops heartbeating (as after kill -9) loses its units within the session timeout; its own lease
// ends before anyone else takes its units; a joiner gets units only through releases; a late
// joiner bootstraps from a snapshot.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "backbone/embedded/embedded.h"
#include "backbone/kafka/kafka_backbone.h"
#include "backbone/rocketmq/rocketmq_backbone.h"
#include "control/cluster_member.h"
#include "core/clock.h"

namespace ferry::control {
namespace {

std::string g_kind = "embedded";

std::string env(const char* name, const char* def) {
  const char* v = std::getenv(name);
  return v && *v ? v : def;
}

std::unique_ptr<backbone::Backbone> openBackbone() {
  if (g_kind == "kafka") {
    backbone::KafkaBackboneOptions k;
    k.bootstrapServers = env("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092");
    auto b = backbone::openKafkaBackbone(k);
    EXPECT_TRUE(b.isOk()) << b.status().toString();
    return b.isOk() ? std::move(*b) : nullptr;
  }
  if (g_kind == "rocketmq") {
    backbone::RocketmqBackboneOptions r;
    r.namesrv = env("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876");
    auto b = backbone::openRocketmqBackbone(r);
    EXPECT_TRUE(b.isOk()) << b.status().toString();
    return b.isOk() ? std::move(*b) : nullptr;
  }
  backbone::EmbeddedOptions e;
  e.dir = (std::filesystem::temp_directory_path() / ("ferry-cluster-member-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(e.dir);
  auto b = backbone::openEmbeddedBackbone(e);
  EXPECT_TRUE(b.isOk()) << b.status().toString();
  return b.isOk() ? std::move(*b) : nullptr;
}

constexpr std::int64_t kSession = 2000;

// One member with its own log handles, releasing what it is asked to hand off (as the herder will).
struct Node {
  std::unique_ptr<backbone::SharedLog> log, snaps;
  std::unique_ptr<ClusterMember> member;
  std::atomic<std::int64_t> leaseLostAtMs{-1};
  std::mutex mu;
  std::set<std::pair<std::string, std::int64_t>> released;  // (unit, epoch) already released

  Node(backbone::Backbone& b, const std::string& topic, const std::string& id, std::int64_t snapshotEvery = 2000) {
    auto l = b.openSharedLog(topic);
    auto s = b.openSharedLog(topic + "-snapshots");
    EXPECT_TRUE(l.isOk() && s.isOk()) << l.status().toString() << s.status().toString();
    log = std::move(*l);
    snaps = std::move(*s);
    ClusterMemberOptions o;
    o.workerId = id;
    o.url = "http://" + id;
    o.heartbeatIntervalMs = 250;
    o.leaseMarginMs = 500;
    o.cluster.sessionTimeoutMs = kSession;
    o.snapshotEveryEvents = snapshotEvery;
    member = std::make_unique<ClusterMember>(*log, *snaps, o, [this](const ClusterMember::StateRef& st, bool lease) {
      if (!lease && leaseLostAtMs.load() < 0) leaseLostAtMs = core::nowMs();
      if (!lease) return;
      for (const auto& [u, own] : st->unitsOf(member->workerId(), member->incarnation())) {
        if (own.next.empty()) continue;
        std::lock_guard lock(mu);
        if (!released.insert({u.toString(), own.epoch}).second) continue;
        cluster::Event e;
        e.type = cluster::EventType::kReleased;
        e.worker = member->workerId();
        e.incarnation = member->incarnation();
        e.connector = u.connector;
        e.task = u.task;
        e.epoch = own.epoch;
        (void)member->append(e);
      }
    });
  }
};

template <typename F>
bool waitFor(F f, std::int64_t ms) {
  const std::int64_t deadline = core::monotonicMs() + ms;
  while (core::monotonicMs() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return f();
}

std::map<std::string, int> owners(const cluster::ClusterState& s) {
  std::map<std::string, int> n;
  for (const auto& [u, o] : s.assignment()) ++n[o.owner];
  return n;
}

TEST(ClusterMember, JoinFailoverLeaseHandoffAndSnapshotBootstrap) {
  auto backbone = openBackbone();
  ASSERT_TRUE(backbone);
  std::random_device rd;
  const std::string topic = "ferry-cluster-test-" + std::to_string(rd() % 1000000000);
  std::map<std::string, std::unique_ptr<Node>> nodes;
  for (const char* id : {"a", "b", "c"}) {
    nodes[id] = std::make_unique<Node>(*backbone, topic, id, 10);
    ASSERT_TRUE(nodes[id]->member->start().isOk());
  }
  // A connector with 5 tasks: 6 units.
  cluster::Event put;
  put.type = cluster::EventType::kConnectorPut;
  put.connector = "c1";
  put.config = {{"connector.class", "X"}};
  put.target = "STARTED";
  ASSERT_TRUE(nodes["a"]->member->append(put).isOk());
  ASSERT_TRUE(waitFor([&] { return nodes["b"]->member->state()->connectors().count("c1") == 1; }, 10000));
  cluster::Event tasks;
  tasks.type = cluster::EventType::kTaskConfigs;
  tasks.connector = "c1";
  tasks.generation = nodes["b"]->member->state()->connectors().at("c1").generation;
  for (int i = 0; i < 5; ++i) tasks.taskConfigs.push_back({{"task", std::to_string(i)}});
  auto off = nodes["b"]->member->append(tasks);
  ASSERT_TRUE(off.isOk());
  for (auto& [id, n] : nodes) ASSERT_TRUE(n->member->waitApplied(*off, std::chrono::seconds(10))) << id;
  ASSERT_TRUE(waitFor([&] {
    auto ref = nodes["a"]->member->state();
    const auto& s = *ref;
    auto n = owners(s);
    return s.assignment().size() == 6 && n.size() == 3 && n["a"] == 2 && n["b"] == 2 && n["c"] == 2;
  }, 10000)) << "three members, two units each";
  // Every member computed the same assignment at the same offset: compare at a common offset.
  for (auto& [id, n] : nodes) EXPECT_TRUE(n->member->leaseValid()) << id;

  // c stops heartbeating and tailing (kill -9 of its process).
  const auto cUnits = nodes["a"]->member->state()->unitsOf("c", nodes["c"]->member->incarnation());
  ASSERT_EQ(cUnits.size(), 2u);
  const std::int64_t killedAt = core::nowMs();
  nodes["c"]->member->stop(false);
  ASSERT_TRUE(waitFor([&] {
    auto ref = nodes["a"]->member->state();
    const auto& s = *ref;
    return s.members().count("c") == 0 && owners(s).count("c") == 0;
  }, kSession + 3000)) << "c's units moved";
  const std::int64_t failoverMs = core::nowMs() - killedAt;
  std::printf("{\"test\":\"failover\",\"backbone\":\"%s\",\"session_ms\":%lld,\"moved_after_ms\":%lld}\n",
              g_kind.c_str(), static_cast<long long>(kSession), static_cast<long long>(failoverMs));
  EXPECT_LE(failoverMs, kSession + 1500);
  for (const auto& [u, o] : cUnits) EXPECT_GT(nodes["a"]->member->state()->assignment().at(u).epoch, o.epoch);

  // b is cut off from the broker (its heartbeats stop, it still reads): its lease ends before
  // the others drop it.
  std::int64_t bGoneAt = -1;
  nodes["b"]->member->pauseHeartbeats(true);
  ASSERT_TRUE(waitFor([&] {
    if (bGoneAt < 0 && nodes["a"]->member->state()->members().count("b") == 0) bGoneAt = core::nowMs();
    return bGoneAt >= 0 && nodes["b"]->leaseLostAtMs.load() >= 0;
  }, kSession + 5000));
  std::printf("{\"test\":\"lease\",\"backbone\":\"%s\",\"lease_lost_before_removal_ms\":%lld}\n", g_kind.c_str(),
              static_cast<long long>(bGoneAt - nodes["b"]->leaseLostAtMs.load()));
  EXPECT_LT(nodes["b"]->leaseLostAtMs.load(), bGoneAt) << "b stopped its units before anyone else could start them";
  EXPECT_FALSE(nodes["b"]->member->leaseValid());
  nodes["b"]->member->pauseHeartbeats(false);
  ASSERT_TRUE(waitFor([&] { return nodes["b"]->member->leaseValid(); }, 5000)) << "b rejoins";

  // d joins: units move to it only through their owners' releases (the nodes release them).
  nodes["d"] = std::make_unique<Node>(*backbone, topic, "d", 10);
  ASSERT_TRUE(nodes["d"]->member->start().isOk());
  ASSERT_TRUE(waitFor([&] {
    auto ref = nodes["d"]->member->state();
    const auto& s = *ref;
    auto n = owners(s);
    bool pending = false;
    for (const auto& [u, o] : s.assignment()) pending = pending || !o.next.empty();
    return n["d"] >= 1 && !pending && s.members().size() == 3;
  }, 10000)) << "d took its share by handoff: " << [&] {
    auto ref = nodes["d"]->member->state();
    std::string out = "a: lease " + std::to_string(nodes["a"]->member->leaseValid()) + " offset " +
                      std::to_string(nodes["a"]->member->state()->offset()) + "; log offset " + std::to_string(ref->offset()) + ", members";
    for (const auto& [id, m] : ref->members()) out += " " + id;
    out += "; units";
    for (const auto& [u, o] : ref->assignment()) out += " " + u.toString() + "@" + o.owner + (o.next.empty() ? "" : "->" + o.next);
    return out;
  }();
  EXPECT_GT(nodes["d"]->snaps->endOffset().valueOr(0), 0) << "snapshots were written";

  for (auto& [id, n] : nodes) n->member->stop(true);
  EXPECT_EQ(nodes["a"]->member->skippedEvents(), 0);
}

// A state larger than one broker message (Kafka's default limit is 1 MB) is snapshotted in
// parts; a joining member bootstraps from them, not from the whole log.
TEST(ClusterMember, LargeSnapshotsAreWrittenInPartsAndReadBack) {
  auto backbone = openBackbone();
  ASSERT_TRUE(backbone);
  std::random_device rd;
  const std::string topic = "ferry-cluster-test-" + std::to_string(rd() % 1000000000);
  Node a(*backbone, topic, "a", 3);
  ASSERT_TRUE(a.member->start().isOk());
  // Two connectors of 250 task configs of ~2.5 KB: each event stays under Kafka's 1 MB message
  // limit, the state (~1.3 MB) does not.
  for (const std::string name : {"big1", "big2"}) {
    cluster::Event put;
    put.type = cluster::EventType::kConnectorPut;
    put.connector = name;
    put.config = {{"connector.class", "X"}};
    put.target = "STARTED";
    ASSERT_TRUE(a.member->append(put).isOk());
    ASSERT_TRUE(waitFor([&] { return a.member->state()->connectors().count(name) == 1; }, 10000));
    cluster::Event tasks;
    tasks.type = cluster::EventType::kTaskConfigs;
    tasks.connector = name;
    tasks.generation = a.member->state()->connectors().at(name).generation;
    for (int i = 0; i < 250; ++i) tasks.taskConfigs.push_back({{"task", std::to_string(i)}, {"pad", std::string(2500, 'x')}});
    auto off = a.member->append(tasks);
    ASSERT_TRUE(off.isOk()) << off.status().toString();
    ASSERT_TRUE(a.member->waitApplied(*off, std::chrono::seconds(10)));
  }
  // A few more events make the snapshot due (every 3 events); parts are 512 KiB: >= 3 of them.
  ASSERT_TRUE(waitFor([&] { return a.snaps->endOffset().valueOr(0) >= 3; }, 10000)) << "snapshot parts written";
  Node b(*backbone, topic, "b");
  ASSERT_TRUE(b.member->start().isOk());
  auto s = b.member->state();
  for (const std::string name : {"big1", "big2"}) {
    ASSERT_EQ(s->connectors().count(name), 1u);
    ASSERT_EQ(s->connectors().at(name).tasks.size(), 250u);
    EXPECT_EQ(s->connectors().at(name).tasks[249].at("pad").size(), 2500u);
  }
  b.member->stop(true);
  a.member->stop(true);
}

TEST(ClusterMember, ForeignRecordsInTheLogAreSkipped) {
  auto backbone = openBackbone();
  ASSERT_TRUE(backbone);
  std::random_device rd;
  const std::string topic = "ferry-cluster-test-" + std::to_string(rd() % 1000000000);
  Node a(*backbone, topic, "a");
  ASSERT_TRUE(a.log->append(Bytes("not an event"), std::chrono::seconds(10)).isOk());
  ASSERT_TRUE(a.log->append(Bytes(R"({"type":"heartbeat"})"), std::chrono::seconds(10)).isOk());
  ASSERT_TRUE(a.member->start().isOk());
  // Skipped at bootstrap, or by the tailer when the broker had not yet made them readable.
  EXPECT_TRUE(waitFor([&] { return a.member->skippedEvents() == 2; }, 5000)) << a.member->skippedEvents();
  ASSERT_TRUE(waitFor([&] { return a.member->leaseValid(); }, 5000));
  EXPECT_EQ(a.member->state()->members().count("a"), 1u);
  a.member->stop(true);
}

}  // namespace
}  // namespace ferry::control

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc > 1) ferry::control::g_kind = argv[1];
  return RUN_ALL_TESTS();
}
