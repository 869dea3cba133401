// RocketMQSourceTask against the scripted broker of fake_broker.h: records polled before their
// queue was revoked and acknowledged afterwards (commitRecord) must not put the group's offset of
// that queue back. No sleeps: waits are blocking polls and condition variables.
#include <gtest/gtest.h>

#include "connectors/rocketmq/rocketmq_source.h"
#include "fake_broker.h"

namespace ferry::rocketmq {
namespace {

using namespace testing;  // FakeBroker and its helpers

class NoOffsetsContext : public SourceTaskContext {
 public:
  const std::string& connectorName() const override { return name_; }
  int taskId() const override { return 0; }
  std::optional<StringMap> committedOffset(const StringMap&) override { return std::nullopt; }

 private:
  std::string name_ = "src";
};

// Records the queues revoked, then does what the task does.
struct ObservedTask : connectors::RocketMQSourceTask {
  std::vector<MessageQueue> revoked;
  void onRevoked(const std::vector<MessageQueue>& queues) override {
    revoked.insert(revoked.end(), queues.begin(), queues.end());
    RocketMQSourceTask::onRevoked(queues);
  }
};

// Polls the task until `n` records arrived (or 10 s passed).
std::vector<Record> pollRecords(connectors::RocketMQSourceTask& task, std::size_t n) {
  std::vector<Record> all;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (all.size() < n && std::chrono::steady_clock::now() < deadline) {
    std::vector<Record> out;
    auto r = task.poll(out, 100, std::chrono::milliseconds(20));
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    if (!r.isOk()) break;
    for (auto& rec : out) all.push_back(std::move(rec));
  }
  return all;
}

TEST(RocketmqSourceTask, AnAcknowledgementAfterTheRevokeDoesNotPutTheQueueBack) {
  FakeBroker fake;
  fake.queues = 2;
  fake.heartbeatersAreMembers = true;  // the task's client id is generated
  fake.pullScript[0].push_back(found(storedMessage(0, 0, "zero", {}), 1));
  fake.pullScript[1].push_back(found(storedMessage(1, 0, "one", {}), 1));
  NoOffsetsContext context;
  ObservedTask task;
  ASSERT_TRUE(task.start({{"rocketmq.namesrv", fake.peer->address()},
                          {"rocketmq.topics", kTopic},
                          {"rocketmq.group", "g1"},
                          {"rocketmq.from", "first"}},
                         context)
                  .isOk());
  auto records = pollRecords(task, 2);
  ASSERT_EQ(records.size(), 2u);
  // A second member (sorted after the task's ip@instance id) takes queue 1, commits 50 there.
  {
    std::lock_guard lock(fake.mu);
    fake.members = {"zzz@other-member"};
    fake.committed[1] = 50;
  }
  fake.notifyIdsChanged("g1");
  std::size_t before = 0;
  {
    std::lock_guard lock(fake.mu);
    before = fake.commits.size();
  }
  // Polling applies the revoke (the consumer's own rebalance result) ...
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (task.revoked.empty() && std::chrono::steady_clock::now() < deadline) {
    std::vector<Record> out;
    ASSERT_TRUE(task.poll(out, 10, std::chrono::milliseconds(20)).isOk());
  }
  ASSERT_EQ(task.revoked, (std::vector<MessageQueue>{{kTopic, kBroker, 1}}));
  // ... then the runtime acknowledges both records read before it.
  for (const auto& r : records) task.commitRecord(r);
  ASSERT_TRUE(task.commit().isOk());
  ASSERT_TRUE(task.commit().isOk());
  task.stop();
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.committed[1], 50) << "queue 1 was put back by a stale acknowledgement";
  EXPECT_EQ(fake.committed[0], 1);
  for (std::size_t i = before; i < fake.commits.size(); ++i) {
    EXPECT_NE(fake.commits[i].ext("queueId"), std::optional<std::string>("1"));
  }
}

}  // namespace
}  // namespace ferry::rocketmq
