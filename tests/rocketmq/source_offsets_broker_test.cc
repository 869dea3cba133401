// RocketMQSourceTask's committed offsets against a real NameServer + Broker: records flow while a
// second member joins and leaves the group and a third joins and stays (queues are revoked while
// their records are still being acknowledged, as the runtime acknowledges after delivery); after
// the final commits every queue must be at its end, then the group's offsets are overwritten
// with 0 behind the tasks' back (what a broker does
// when it loses a concurrent first commit of a new group). At the end the group's lag on the
// broker (GET_CONSUME_STATS brokerOffset - consumerOffset) must be 0 on every queue and every
// sequence number must have been read.
// FERRY_ROCKETMQ_NAMESRV (default 127.0.0.1:19876) and FERRY_ROCKETMQ_CLUSTER (default ferry-a)
// name the cluster; an unreachable NameServer fails the test.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "connectors/rocketmq/rocketmq_source.h"
#include "tests/rocketmq/broker_env.h"
#include "rocketmq/admin.h"
#include "rocketmq/client.h"
#include "rocketmq/producer.h"

namespace ferry::rocketmq {
namespace {

using testenv::envOr;
using testenv::randomSuffix;

class Context : public SourceTaskContext {
 public:
  const std::string& connectorName() const override { return name_; }
  int taskId() const override { return 0; }
  std::optional<StringMap> committedOffset(const StringMap&) override { return std::nullopt; }

 private:
  std::string name_ = "offsets-test";
};

// Drives one RocketMQSourceTask as the runtime does: poll, acknowledge a batch only after the
// next poll (so a rebalance can happen in between), commit every 300 ms.
class Member {
 public:
  Member(StringMap config, std::mutex& mu, std::multiset<int>& seen)
      : config_(std::move(config)), mu_(mu), seen_(seen) {}
  ~Member() { leave(); }

  void join() {
    ASSERT_TRUE(task_.start(config_, context_).isOk());
    thread_ = std::thread([this] { run(); });
  }
  // Acknowledges everything, commits and stops (the member leaves the group).
  void leave() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (!stopped_) {
      ackAll();
      (void)task_.commit();
      task_.stop();
      stopped_ = true;
    }
  }
  // Stops the loop only; the last batch is acknowledged and committed, the task stays a member.
  void finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    ackAll();
    ASSERT_TRUE(task_.commit().isOk());
  }
  void pollIdle(std::chrono::milliseconds d) {
    std::vector<Record> out;
    ASSERT_TRUE(task_.poll(out, 100, d).isOk());
    EXPECT_TRUE(out.empty());
  }
  std::size_t read() const { return read_; }

 private:
  void run() {
    auto nextCommit = std::chrono::steady_clock::now();
    while (!stop_) {
      std::vector<Record> out;
      auto r = task_.poll(out, 200, std::chrono::milliseconds(50));
      if (!r.isOk()) {
        ADD_FAILURE() << r.status().toString();
        return;
      }
      ackAll();  // the previous batch, after this poll (which may have applied a revoke)
      {
        std::lock_guard lock(mu_);
        for (const auto& rec : out) seen_.insert(std::stoi(rec.value.str().substr(4)));
      }
      read_ += out.size();
      for (auto& rec : out) unacked_.push_back(std::move(rec));
      if (std::chrono::steady_clock::now() >= nextCommit) {
        (void)task_.commit();
        nextCommit = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
      }
    }
  }
  void ackAll() {
    for (const auto& rec : unacked_) task_.commitRecord(rec);
    unacked_.clear();
  }

  StringMap config_;
  Context context_;
  connectors::RocketMQSourceTask task_;
  std::mutex& mu_;
  std::multiset<int>& seen_;
  std::deque<Record> unacked_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> read_{0};
  bool stopped_ = false;
};

TEST(RocketmqSourceOffsetsBroker, LagIsZeroAfterARebalanceAndALostCommit) {
  const std::string ns = envOr("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876");
  const std::string cluster = envOr("FERRY_ROCKETMQ_CLUSTER", "ferry-a");
  ClientOptions co;
  co.namesrvAddrs = ns;
  auto admin = RocketmqClient::create(co);
  ASSERT_TRUE(admin.isOk()) << admin.status().toString();
  ASSERT_TRUE((*admin)->clusterInfo().isOk()) << "RocketMQ NameServer " << ns << " is not reachable";
  const std::string suffix = randomSuffix();
  const std::string topic = "ferry-off-" + suffix;
  const std::string group = "ferry-off-g-" + suffix;
  ASSERT_TRUE((*admin)->createTopic(topic, 4, {cluster}).isOk());

  constexpr int kTotal = 6000;
  std::atomic<int> sent{0};
  std::atomic<int> failed{0};
  std::thread producer([&] {
    Producer p(**admin, {});
    for (int i = 0; i < kTotal; ++i) {
      OutgoingMessage m;
      m.topic = topic;
      m.body = "seq-" + std::to_string(i);
      p.sendAsync(m, QueueSelection::roundRobin(), [&](Result<SendResult> r) {
        if (!r.isOk()) ++failed;
        ++sent;
      });
      if (i % 100 == 99) {  // ~1,000 records a second, so the rebalances happen mid-stream
        while (sent.load() < i - 200) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    while (sent.load() < kTotal) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });

  const StringMap config = {{"rocketmq.namesrv", ns},
                            {"rocketmq.topics", topic},
                            {"rocketmq.group", group},
                            {"rocketmq.from", "first"}};
  std::mutex mu;
  std::multiset<int> seen;
  auto distinct = [&] {
    std::lock_guard lock(mu);
    return std::set<int>(seen.begin(), seen.end()).size();
  };
  auto waitUntil = [](auto pred, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!pred() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return pred();
  };

  Member a(config, mu, seen);
  a.join();
  ASSERT_TRUE(waitUntil([&] { return distinct() >= 1500; }, std::chrono::seconds(60)));
  {
    Member b(config, mu, seen);  // joins: a loses half its queues while acknowledging them
    b.join();
    ASSERT_TRUE(waitUntil([&] { return b.read() >= 800; }, std::chrono::seconds(60)));
    b.leave();  // leaves: a gets them back
  }
  ASSERT_TRUE(waitUntil([&] { return distinct() >= 4000; }, std::chrono::seconds(60)));
  Member c(config, mu, seen);  // joins again and stays to the end
  c.join();
  producer.join();
  ASSERT_EQ(failed.load(), 0);
  ASSERT_TRUE(waitUntil([&] { return distinct() == static_cast<std::size_t>(kTotal); },
                        std::chrono::seconds(60)))
      << distinct() << " of " << kTotal << " records read";
  // Let the last batches be acknowledged, then the final commits...
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  c.finish();
  a.finish();  // after c's: a stale offset of a queue c took would be the last word
  auto queues = topicQueues(**admin, topic);
  ASSERT_TRUE(queues.isOk()) << queues.status().toString();
  // Nothing stale came back after the rebalances: the group is at the end of every queue.
  for (const auto& q : *queues) {
    auto committed = queryGroupOffset(**admin, group, q);
    auto end = maxOffset(**admin, q);
    ASSERT_TRUE(committed.isOk() && end.isOk());
    EXPECT_EQ(committed->value_or(-1), *end) << q.toString() << " right after the final commits";
  }
  // ... are lost on the broker (as when it drops a concurrent first commit of a new group).
  for (const auto& q : *queues) ASSERT_TRUE(updateGroupOffset(**admin, group, q, 0).isOk());

  // No new records arrive; the group's offsets must still come back to the end of every queue.
  std::string lagText;
  bool zero = waitUntil(
      [&] {
        a.pollIdle(std::chrono::milliseconds(50));
        c.pollIdle(std::chrono::milliseconds(50));
        auto stats = consumeStats(**admin, group, topic);
        if (!stats.isOk()) return false;
        lagText.clear();
        std::int64_t lag = 0;
        for (const auto& s : stats->queues) {
          lag += s.brokerOffset - s.consumerOffset;
          lagText += s.queue.toString() + " " + std::to_string(s.consumerOffset) + "/" +
                     std::to_string(s.brokerOffset) + "; ";
        }
        return stats->queues.size() == queues->size() && lag == 0;
      },
      std::chrono::seconds(30));
  EXPECT_TRUE(zero) << "lag left (committed/end): " << lagText;
  std::lock_guard lock(mu);
  std::set<int> distinctSeen(seen.begin(), seen.end());
  EXPECT_EQ(distinctSeen.size(), static_cast<std::size_t>(kTotal));
  EXPECT_EQ(*distinctSeen.begin(), 0);
  EXPECT_EQ(*distinctSeen.rbegin(), kTotal - 1);
  RecordProperty("duplicates", static_cast<int>(seen.size() - distinctSeen.size()));
}

}  // namespace
}  // namespace ferry::rocketmq
