// backbone::SharedLog on a real backbone (argv[1]: embedded | kafka | rocketmq): appends from
// several threads get distinct increasing offsets; two readers see the same entries in the same
// order with the broker's timestamps; reads resume at any offset; a reader waits for new entries;
// a second handle (another worker) sees what the first appended; a topic with more than one
// queue is refused.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "backbone/embedded/embedded.h"
#include "backbone/kafka/kafka_backbone.h"
#include "backbone/rocketmq/rocketmq_backbone.h"
#include "core/clock.h"

namespace ferry::backbone {
namespace {

std::string g_kind = "embedded";

std::string env(const char* name, const char* def) {
  const char* v = std::getenv(name);
  return v && *v ? v : def;
}

struct Opened {
  std::unique_ptr<Backbone> backbone;
  std::string dir;
};

Opened open() {
  Opened o;
  if (g_kind == "kafka") {
    KafkaBackboneOptions k;
    k.bootstrapServers = env("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092");
    auto b = openKafkaBackbone(k);
    EXPECT_TRUE(b.isOk()) << b.status().toString();
    if (b.isOk()) o.backbone = std::move(*b);
  } else if (g_kind == "rocketmq") {
    RocketmqBackboneOptions r;
    r.namesrv = env("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876");
    auto b = openRocketmqBackbone(r);
    EXPECT_TRUE(b.isOk()) << b.status().toString();
    if (b.isOk()) o.backbone = std::move(*b);
  } else {
    static int n = 0;
    o.dir = (std::filesystem::temp_directory_path() /
             ("ferry-shared-log-" + std::to_string(::getpid()) + "-" + std::to_string(n++))).string();
    EmbeddedOptions e;
    e.dir = o.dir;
    auto b = openEmbeddedBackbone(e);
    EXPECT_TRUE(b.isOk()) << b.status().toString();
    if (b.isOk()) o.backbone = std::move(*b);
  }
  return o;
}

std::string freshTopic() {
  std::random_device rd;
  return "ferry-cluster-log-test-" + std::to_string(rd() % 1000000000);
}

std::vector<SharedLog::Entry> readAll(SharedLog& log, std::int64_t from, std::size_t want) {
  std::vector<SharedLog::Entry> out;
  const std::int64_t deadline = core::monotonicMs() + 30000;
  std::int64_t next = from;
  while (out.size() < want && core::monotonicMs() < deadline) {
    std::vector<SharedLog::Entry> got;
    auto r = log.read(next, got, 500, std::chrono::milliseconds(500));
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    if (!r.isOk()) break;
    for (auto& e : got) {
      next = e.offset + 1;
      out.push_back(std::move(e));
    }
  }
  return out;
}

TEST(SharedLog, TotalOrderSeenAlikeByEveryReader) {
  Opened a = open();
  ASSERT_TRUE(a.backbone);
  const std::string topic = freshTopic();
  auto log = a.backbone->openSharedLog(topic);
  ASSERT_TRUE(log.isOk()) << log.status().toString();
  auto start = (*log)->endOffset();
  ASSERT_TRUE(start.isOk()) << start.status().toString();
  const std::int64_t t0 = core::nowMs();
  // Four threads append 50 entries each.
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<std::int64_t> offsets;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto off = (*log)->append(Bytes("t" + std::to_string(t) + "-" + std::to_string(i)), std::chrono::seconds(30));
        if (!off.isOk()) {
          ++failures;
          continue;
        }
        std::lock_guard lock(mu);
        EXPECT_TRUE(offsets.insert(*off).second) << "offset " << *off << " given twice";
      }
    });
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_EQ(offsets.size(), 200u);
  EXPECT_EQ(*offsets.begin(), *start);
  EXPECT_EQ(*offsets.rbegin(), *start + 199) << "offsets are dense";
  // RocketMQ acknowledges a send before its consume queue (which the end offset and pulls read)
  // caught up: the end may trail the last acknowledged append for a moment.
  auto end = (*log)->endOffset();
  for (int i = 0; i < 100 && end.isOk() && *end < *start + 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    end = (*log)->endOffset();
  }
  ASSERT_TRUE(end.isOk());
  EXPECT_EQ(*end, *start + 200);

  // A second backbone handle (another worker) reads the same sequence.
  Opened b = open();
  ASSERT_TRUE(b.backbone);
  auto other = g_kind == "embedded" ? a.backbone->openSharedLog(topic) : b.backbone->openSharedLog(topic);
  ASSERT_TRUE(other.isOk()) << other.status().toString();
  auto r1 = readAll(**log, *start, 200);
  auto r2 = readAll(**other, *start, 200);
  ASSERT_EQ(r1.size(), 200u);
  ASSERT_EQ(r2.size(), 200u);
  std::map<int, int> perThread;
  for (std::size_t i = 0; i < 200; ++i) {
    EXPECT_EQ(r1[i].offset, *start + static_cast<std::int64_t>(i));
    EXPECT_EQ(r1[i].offset, r2[i].offset);
    EXPECT_EQ(r1[i].value.view(), r2[i].value.view());
    EXPECT_EQ(r1[i].timestampMs, r2[i].timestampMs);
    EXPECT_GE(r1[i].timestampMs, t0 - 5000) << "broker time, close to ours";
    EXPECT_LE(r1[i].timestampMs, core::nowMs() + 5000);
    if (i > 0) {
      EXPECT_GE(r1[i].timestampMs + 1000, r1[i - 1].timestampMs) << "append times follow the order";
    }
    // Each thread's own entries keep its order.
    const std::string v(r1[i].value.view());
    const int t = v[1] - '0';
    const int seq = std::stoi(v.substr(3));
    EXPECT_EQ(seq, perThread[t]) << v;
    perThread[t] = seq + 1;
  }

  // Resume at an arbitrary offset.
  auto mid = readAll(**other, *start + 123, 77);
  ASSERT_EQ(mid.size(), 77u);
  EXPECT_EQ(mid.front().offset, *start + 123);
  EXPECT_EQ(mid.front().value.view(), r1[123].value.view());

  // A reader waiting at the end wakes for a new entry.
  std::atomic<std::int64_t> seen{-1};
  std::thread waiter([&] {
    std::vector<SharedLog::Entry> got;
    const std::int64_t deadline = core::monotonicMs() + 20000;
    while (got.empty() && core::monotonicMs() < deadline) {
      auto r = (*other)->read(*start + 200, got, 10, std::chrono::milliseconds(2000));
      if (!r.isOk()) break;
    }
    if (!got.empty()) seen = got.front().offset;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto late = (*log)->append(Bytes("late"), std::chrono::seconds(30));
  ASSERT_TRUE(late.isOk());
  waiter.join();
  EXPECT_EQ(seen.load(), *late);
  EXPECT_EQ(*late, *start + 200);
}

TEST(SharedLog, ATopicWithSeveralQueuesIsRefused) {
  Opened a = open();
  ASSERT_TRUE(a.backbone);
  const std::string topic = freshTopic() + "-wide";
  ASSERT_TRUE(a.backbone->admin().ensureTopic(topic, 3).isOk());
  for (int i = 0; i < 100 && !a.backbone->admin().describeTopic(topic).isOk(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto log = a.backbone->openSharedLog(topic);
  ASSERT_FALSE(log.isOk());
  EXPECT_NE(log.status().message().find("exactly one"), std::string::npos) << log.status().message();
}

}  // namespace
}  // namespace ferry::backbone

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc > 1) ferry::backbone::g_kind = argv[1];
  return RUN_ALL_TESTS();
}
