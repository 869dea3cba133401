// PullConsumer against a scripted NameServer + broker (one peer): pull FOUND decoded, NO_NEW_MSG
// repull, OFFSET_MOVED, tag re-filter, heartbeat content, NOTIFY-triggered rebalance with the
// listener, commits (code 15), unregister on close, and the allocation function. No sleeps: every
// wait is on a condition variable or a blocking poll().
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "rocketmq/client.h"
#include "rocketmq/consumer.h"
#include "fake_broker.h"

namespace ferry::rocketmq {
namespace {

using namespace testing;  // FakeBroker and its helpers

const std::string kMe = "127.0.0.1@consumer-a";

TEST(RocketmqConsumer, PullFoundIsDecodedAndRequestCarriesTheHeader) {
  FakeBroker fake;
  fake.members = {kMe};
  const std::string body0("bin\0ary", 7);
  fake.pullScript[0].push_back(
      found(storedMessage(0, 0, body0, {{"TAGS", "TagA"}, {"KEYS", "k0"}, {"color", "red"}}) +
                storedMessage(0, 1, "second", {{"TAGS", "TagB"}}),
            2));
  auto client = clientFor(fake.peer->address(), kMe);
  PullConsumer consumer(*client, options());
  ASSERT_TRUE(consumer.start().isOk());

  auto msgs = pollAtLeast(consumer, 2);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].brokerName, kBroker);
  EXPECT_EQ(msgs[0].message.topic, kTopic);
  EXPECT_EQ(msgs[0].message.body, body0);
  EXPECT_EQ(msgs[0].message.queueOffset, 0);
  EXPECT_EQ(msgs[0].message.properties.at("KEYS"), "k0");
  EXPECT_EQ(msgs[0].message.properties.at("color"), "red");
  EXPECT_EQ(msgs[1].message.body, "second");
  EXPECT_EQ(msgs[1].message.queueOffset, 1);
  EXPECT_EQ(msgs[1].queue(), (MessageQueue{kTopic, kBroker, 0}));
  std::vector<MessageQueue> expected{{kTopic, kBroker, 0}};
  EXPECT_EQ(consumer.assignment(), expected);

  // The next pull continues at nextBeginOffset.
  ASSERT_TRUE(fake.waitFor([&] { return fake.pulls.size() >= 2; }));
  std::lock_guard lock(fake.mu);
  const RemotingCommand& p = fake.pulls[0];
  EXPECT_EQ(p.ext("consumerGroup"), std::optional<std::string>("g1"));
  EXPECT_EQ(p.ext("topic"), std::optional<std::string>(kTopic));
  EXPECT_EQ(p.ext("queueId"), std::optional<std::string>("0"));
  EXPECT_EQ(p.ext("queueOffset"), std::optional<std::string>("0"));
  EXPECT_EQ(p.ext("maxMsgNums"), std::optional<std::string>("32"));
  EXPECT_EQ(p.extInt("sysFlag"), std::optional<std::int64_t>(kPullFlagSuspend |
                                                             kPullFlagSubscription));
  EXPECT_EQ(p.ext("commitOffset"), std::optional<std::string>("0"));
  EXPECT_EQ(p.ext("suspendTimeoutMillis"), std::optional<std::string>("15000"));
  EXPECT_EQ(p.ext("subscription"), std::optional<std::string>("*"));
  EXPECT_EQ(p.ext("expressionType"), std::optional<std::string>("TAG"));
  EXPECT_EQ(p.ext("bname"), std::optional<std::string>(kBroker));
  EXPECT_EQ(fake.pulls[1].ext("queueOffset"), std::optional<std::string>("2"));
  // Start offset: QUERY_CONSUMER_OFFSET said 22, FIRST_OFFSET asked GET_MIN_OFFSET.
  ASSERT_GE(fake.offsetCalls.size(), 2u);
  EXPECT_EQ(fake.offsetCalls[0].code, kCodeQueryConsumerOffset);
  EXPECT_EQ(fake.offsetCalls[0].ext("consumerGroup"), std::optional<std::string>("g1"));
  EXPECT_EQ(fake.offsetCalls[1].code, kCodeGetMinOffset);
}

TEST(RocketmqConsumer, NoNewMessageRepullsAtTheSameOffset) {
  FakeBroker fake;
  fake.members = {kMe};
  fake.pullScript[0].push_back(status(kRespPullNotFound, 0));
  fake.pullScript[0].push_back(status(kRespPullRetryImmediately, 0));
  fake.pullScript[0].push_back(found(storedMessage(0, 0, "late", {}), 1));
  auto client = clientFor(fake.peer->address(), kMe);
  PullConsumer consumer(*client, options());
  ASSERT_TRUE(consumer.start().isOk());
  auto msgs = pollAtLeast(consumer, 1);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].message.body, "late");
  ASSERT_TRUE(fake.waitFor([&] { return fake.pulls.size() >= 4; }));
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.pulls[0].ext("queueOffset"), std::optional<std::string>("0"));
  EXPECT_EQ(fake.pulls[1].ext("queueOffset"), std::optional<std::string>("0"));
  EXPECT_EQ(fake.pulls[2].ext("queueOffset"), std::optional<std::string>("0"));
  EXPECT_EQ(fake.pulls[3].ext("queueOffset"), std::optional<std::string>("1"));
}

// A queue whose head message does not decode is retried, never a silent loop: after
// undecodableReportAfter answers in a row the health listener hears kDegraded naming the queue and
// the offset; once the message decodes (or another comes) it hears kConnected.
TEST(RocketmqConsumer, UndecodableHeadMessageIsReportedDegradedAfterABoundedNumberOfAttempts) {
  FakeBroker fake;
  fake.members = {kMe};
  std::string bad = storedMessage(0, 0, "poison", {});
  for (std::size_t i = 4; i < 8; ++i) bad[i] = '\x7f';  // MAGICCODE: neither V1 nor V2
  for (int i = 0; i < 3; ++i) fake.pullScript[0].push_back(found(bad, 1));
  fake.pullScript[0].push_back(found(storedMessage(0, 0, "fine", {}), 1));
  auto client = clientFor(fake.peer->address(), kMe);
  ConsumerOptions o = options();
  o.pullBackoffMs = 10;
  PullConsumer consumer(*client, o);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ConnectionHealth> heard;
  consumer.setHealthListener([&](const ConnectionHealth& h) {
    std::lock_guard lock(mu);
    heard.push_back(h);
    cv.notify_all();
  });
  ASSERT_TRUE(consumer.start().isOk());
  auto msgs = pollAtLeast(consumer, 1);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].message.body, "fine");
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] {
    return !heard.empty() && heard.back().state == ConnectionHealth::State::kConnected &&
           std::any_of(heard.begin(), heard.end(), [](const ConnectionHealth& h) {
             return h.state == ConnectionHealth::State::kDegraded;
           });
  }));
  std::size_t degraded = 0;
  for (const auto& h : heard) {
    if (h.state != ConnectionHealth::State::kDegraded) continue;
    ++degraded;
    EXPECT_NE(h.reason.find("offset 0 of"), std::string::npos) << h.reason;
    EXPECT_NE(h.reason.find("cannot be decoded (3 attempts"), std::string::npos) << h.reason;
  }
  EXPECT_EQ(degraded, 1u);  // the third attempt, not the first two
  {
    std::lock_guard flock(fake.mu);
    EXPECT_EQ(fake.pulls.size() >= 4, true);
  }
}

TEST(RocketmqConsumer, CommittedOffsetThenOffsetMovedAdoptsNextBeginOffset) {
  FakeBroker fake;
  fake.members = {kMe};
  fake.committed[0] = 5;
  fake.pullScript[0].push_back(status(kRespPullOffsetMoved, 100));
  fake.pullScript[0].push_back(found(storedMessage(0, 100, "hundred", {}), 101));
  auto client = clientFor(fake.peer->address(), kMe);
  PullConsumer consumer(*client, options());
  ASSERT_TRUE(consumer.start().isOk());
  auto msgs = pollAtLeast(consumer, 1);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].message.queueOffset, 100);
  ASSERT_TRUE(fake.waitFor([&] { return fake.pulls.size() >= 3; }));
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.pulls[0].ext("queueOffset"), std::optional<std::string>("5"));
  EXPECT_EQ(fake.pulls[1].ext("queueOffset"), std::optional<std::string>("100"));
  EXPECT_EQ(fake.pulls[2].ext("queueOffset"), std::optional<std::string>("101"));
  // A committed offset exists: no GET_MIN/MAX_OFFSET.
  ASSERT_EQ(fake.offsetCalls.size(), 1u);
  EXPECT_EQ(fake.offsetCalls[0].code, kCodeQueryConsumerOffset);
}

TEST(RocketmqConsumer, TagsAreReFilteredOnTheClient) {
  FakeBroker fake;
  fake.members = {kMe};
  // The broker filters by hash only; pretend TagB and an untagged message slipped through.
  fake.pullScript[0].push_back(found(storedMessage(0, 0, "a", {{"TAGS", "TagA"}}) +
                                         storedMessage(0, 1, "b", {{"TAGS", "TagB"}}) +
                                         storedMessage(0, 2, "none", {}) +
                                         storedMessage(0, 3, "c", {{"TAGS", "TagC"}}),
                                     4));
  auto client = clientFor(fake.peer->address(), kMe);
  PullConsumer consumer(*client, options("TagA || TagC"));
  ASSERT_TRUE(consumer.start().isOk());
  auto msgs = pollAtLeast(consumer, 2);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].message.body, "a");
  EXPECT_EQ(msgs[1].message.body, "c");
  ASSERT_TRUE(fake.waitFor([&] { return fake.pulls.size() >= 2; }));
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.pulls[0].ext("subscription"), std::optional<std::string>("TagA || TagC"));
  EXPECT_EQ(fake.pulls[1].ext("queueOffset"), std::optional<std::string>("4"));
}

TEST(RocketmqConsumer, HeartbeatCarriesConsumerDataAndCloseUnregisters) {
  FakeBroker fake;
  fake.members = {kMe};
  auto client = clientFor(fake.peer->address(), kMe);
  auto consumer = std::make_unique<PullConsumer>(*client, options("TagA || TagB"));
  ASSERT_TRUE(consumer->start().isOk());
  {
    std::lock_guard lock(fake.mu);
    ASSERT_EQ(fake.heartbeats.size(), 1u);
    auto hb = nlohmann::json::parse(fake.heartbeats[0].body);
    EXPECT_EQ(hb["clientID"], kMe);
    EXPECT_EQ(hb["heartbeatFingerprint"], 0);
    EXPECT_EQ(hb["producerDataSet"].size(), 0u);
    ASSERT_EQ(hb["consumerDataSet"].size(), 1u);
    const auto& cd = hb["consumerDataSet"][0];
    EXPECT_EQ(cd["groupName"], "g1");
    EXPECT_EQ(cd["consumeType"], "CONSUME_ACTIVELY");
    EXPECT_EQ(cd["messageModel"], "CLUSTERING");
    EXPECT_EQ(cd["consumeFromWhere"], "CONSUME_FROM_FIRST_OFFSET");
    EXPECT_EQ(cd["unitMode"], false);
    ASSERT_EQ(cd["subscriptionDataSet"].size(), 1u);
    const auto& sd = cd["subscriptionDataSet"][0];
    EXPECT_EQ(sd["topic"], kTopic);
    EXPECT_EQ(sd["subString"], "TagA || TagB");
    EXPECT_EQ(sd["tagsSet"], nlohmann::json::array({"TagA", "TagB"}));
    EXPECT_EQ(sd["codeSet"], nlohmann::json::array({2598919, 2598920}));
    EXPECT_EQ(sd["expressionType"], "TAG");
    EXPECT_EQ(sd["classFilterMode"], false);
    EXPECT_GT(sd["subVersion"].get<std::int64_t>(), 0);
  }
  consumer->close();
  std::lock_guard lock(fake.mu);
  ASSERT_EQ(fake.unregisters.size(), 1u);
  EXPECT_EQ(fake.unregisters[0].ext("clientID"), std::optional<std::string>(kMe));
  EXPECT_EQ(fake.unregisters[0].ext("consumerGroup"), std::optional<std::string>("g1"));
  EXPECT_EQ(consumer->poll(1, std::chrono::milliseconds(0)).status().code(),
            StatusCode::kCancelled);
}

struct RecordingListener : RebalanceListener {
  PullConsumer* consumer = nullptr;
  std::vector<std::vector<MessageQueue>> revoked, assigned;
  Status commitStatus;
  void onRevoked(const std::vector<MessageQueue>& qs) override {
    revoked.push_back(qs);
    std::map<MessageQueue, std::int64_t> offsets;
    for (const auto& q : qs) offsets[q] = 7;
    commitStatus = consumer->commit(offsets);  // commit-then-drop from inside poll()
  }
  void onAssigned(const std::vector<MessageQueue>& qs) override { assigned.push_back(qs); }
};

TEST(RocketmqConsumer, NotifyTriggersRebalanceAndListenerRevokesFirst) {
  FakeBroker fake;
  fake.queues = 4;
  fake.members = {kMe};
  auto client = clientFor(fake.peer->address(), kMe);
  RecordingListener listener;
  PullConsumer consumer(*client, options(), &listener);
  listener.consumer = &consumer;
  ASSERT_TRUE(consumer.start().isOk());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (consumer.assignment().size() != 4 && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(consumer.poll(10, std::chrono::milliseconds(100)).isOk());
  }
  ASSERT_EQ(consumer.assignment().size(), 4u);
  ASSERT_EQ(listener.assigned.size(), 1u);
  EXPECT_EQ(listener.assigned[0].size(), 4u);
  {
    std::lock_guard lock(fake.mu);
    fake.members = {"127.0.0.1@consumer-b", kMe};  // sorted: a before b
    EXPECT_EQ(fake.lists.size(), 1u);
  }
  fake.notifyIdsChanged("g1");
  while (consumer.assignment().size() != 2 && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(consumer.poll(10, std::chrono::milliseconds(100)).isOk());
  }
  std::vector<MessageQueue> mine{{kTopic, kBroker, 0}, {kTopic, kBroker, 1}};
  EXPECT_EQ(consumer.assignment(), mine);
  ASSERT_EQ(listener.revoked.size(), 1u);
  std::vector<MessageQueue> gone{{kTopic, kBroker, 2}, {kTopic, kBroker, 3}};
  EXPECT_EQ(listener.revoked[0], gone);
  EXPECT_TRUE(listener.commitStatus.isOk()) << listener.commitStatus.toString();
  EXPECT_EQ(listener.assigned.size(), 1u);  // nothing new to assign
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.lists.size(), 2u);
  EXPECT_EQ(fake.commits.size(), 2u);
  EXPECT_EQ(fake.heartbeats.size(), 1u);
}

TEST(RocketmqConsumer, CommitSendsUpdateConsumerOffsetAndReportsFailures) {
  FakeBroker fake;
  fake.queues = 10;
  fake.members = {kMe};
  auto client = clientFor(fake.peer->address(), kMe);
  PullConsumer consumer(*client, options());
  ASSERT_TRUE(consumer.start().isOk());
  ASSERT_TRUE(waitUntilPulling(consumer, fake, 10));
  Status s = consumer.commit({{{kTopic, kBroker, 0}, 42}, {{kTopic, kBroker, 1}, 7}});
  ASSERT_TRUE(s.isOk()) << s.toString();
  {
    std::lock_guard lock(fake.mu);
    ASSERT_EQ(fake.commits.size(), 2u);
    std::map<std::string, std::string> byQueue;
    for (const auto& c : fake.commits) {
      EXPECT_EQ(c.code, kCodeUpdateConsumerOffset);
      EXPECT_EQ(c.ext("consumerGroup"), std::optional<std::string>("g1"));
      EXPECT_EQ(c.ext("topic"), std::optional<std::string>(kTopic));
      byQueue[c.ext("queueId").value_or("?")] = c.ext("commitOffset").value_or("?");
    }
    EXPECT_EQ(byQueue["0"], "42");
    EXPECT_EQ(byQueue["1"], "7");
  }
  // The fake answers 26 SUBSCRIPTION_GROUP_NOT_EXIST for queue 9.
  Status bad = consumer.commit({{{kTopic, kBroker, 9}, 1}});
  EXPECT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("26"), std::string::npos) << bad.toString();
}

// A broker creates a group's offset entry for a topic without a lock, so parallel first commits
// of several queues can overwrite each other (each answered with success). One commit per
// (broker, topic) goes first; the others are sent only once it is answered.
TEST(RocketmqConsumer, CommitSendsOneQueuePerTopicFirstThenTheRest) {
  FakeBroker fake;
  fake.queues = 4;
  fake.members = {kMe};
  auto client = clientFor(fake.peer->address(), kMe);
  PullConsumer consumer(*client, options());
  ASSERT_TRUE(consumer.start().isOk());
  ASSERT_TRUE(waitUntilPulling(consumer, fake, 4));
  {
    std::lock_guard lock(fake.mu);
    fake.holdNextCommit = true;
    fake.events.clear();
  }
  auto done = std::async(std::launch::async, [&] {
    return consumer.commit({{{kTopic, kBroker, 0}, 10},
                            {{kTopic, kBroker, 1}, 11},
                            {{kTopic, kBroker, 2}, 12},
                            {{kTopic, kBroker, 3}, 13}});
  });
  {
    std::unique_lock lock(fake.mu);
    ASSERT_TRUE(fake.cv.wait_for(lock, std::chrono::seconds(10),
                                 [&] { return fake.heldCommit.has_value(); }));
    fake.releaseHeldCommit();
  }
  Status s = done.get();
  ASSERT_TRUE(s.isOk()) << s.toString();
  std::lock_guard lock(fake.mu);
  // Events: the first commit, its release, then the three others (in any order).
  ASSERT_EQ(fake.events.size(), 5u);
  EXPECT_EQ(fake.events[0].first, kCodeUpdateConsumerOffset);
  EXPECT_EQ(fake.events[1].first, -1) << "other commits were sent before the first was answered";
  EXPECT_EQ(fake.events[1].second, fake.events[0].second);
  for (std::int32_t q = 0; q < 4; ++q) EXPECT_EQ(fake.committed[q], 10 + q);
}

TEST(RocketmqConsumer, CommitOfAQueueNotAssignedIsIgnored) {
  FakeBroker fake;
  fake.queues = 2;
  fake.members = {kMe, "127.0.0.1@consumer-b"};  // a gets queue 0, b queue 1
  auto client = clientFor(fake.peer->address(), kMe);
  PullConsumer consumer(*client, options());
  ASSERT_TRUE(consumer.start().isOk());
  ASSERT_TRUE(waitUntilPulling(consumer, fake, 1));
  ASSERT_EQ(consumer.assignment(), (std::vector<MessageQueue>{{kTopic, kBroker, 0}}));
  Status s = consumer.commit({{{kTopic, kBroker, 0}, 5},
                              {{kTopic, kBroker, 1}, 9},
                              {{kTopic, "no-such-broker", 0}, 1}});
  EXPECT_TRUE(s.isOk()) << s.toString();
  std::lock_guard lock(fake.mu);
  ASSERT_EQ(fake.commits.size(), 1u);
  EXPECT_EQ(fake.commits[0].ext("queueId"), std::optional<std::string>("0"));
  EXPECT_EQ(fake.commits[0].ext("commitOffset"), std::optional<std::string>("5"));
  EXPECT_EQ(fake.committed.count(1), 0u);
}

TEST(RocketmqConsumer, CommitNeverMovesAQueueBackwardsButSeekSetsANewFloor) {
  FakeBroker fake;
  fake.members = {kMe};
  fake.committed[0] = 20;  // the group's offset: this assignment starts there
  auto client = clientFor(fake.peer->address(), kMe);
  PullConsumer consumer(*client, options());
  ASSERT_TRUE(consumer.start().isOk());
  ASSERT_TRUE(waitUntilPulling(consumer, fake, 1));
  const MessageQueue q{kTopic, kBroker, 0};
  for (std::int64_t off : {15, 25, 22, 25}) {  // below the start, new, backwards, unchanged
    ASSERT_TRUE(consumer.commit({{q, off}}).isOk());
  }
  ASSERT_TRUE(consumer.seek(q, 3).isOk());  // explicit: may go below
  ASSERT_TRUE(consumer.commit({{q, 2}}).isOk());
  ASSERT_TRUE(consumer.commit({{q, 4}}).isOk());
  std::lock_guard lock(fake.mu);
  std::vector<std::string> sent;
  for (const auto& c : fake.commits) sent.push_back(c.ext("commitOffset").value_or("?"));
  EXPECT_EQ(sent, (std::vector<std::string>{"25", "4"}));
  EXPECT_EQ(fake.committed[0], 4);
}

ConsumerOptions persistOptions() {
  ConsumerOptions o = options();
  o.persistIntervalMs = 5;  // rounds follow each other quickly; the tests wait on the fake
  o.persistRecheckEvery = 1000000;
  return o;
}

TEST(RocketmqConsumer, ALostCommitIsSentAgainUntilTheBrokerHoldsIt) {
  FakeBroker fake;
  fake.queues = 2;
  fake.members = {kMe};
  fake.dropCommits[0] = 2;   // the first commit and the first re-send are lost
  fake.dropCommits[1] = -1;  // queue 1 is never stored: its re-sends show the rounds go on
  auto client = clientFor(fake.peer->address(), kMe);
  PullConsumer consumer(*client, persistOptions());
  ASSERT_TRUE(consumer.start().isOk());
  ASSERT_TRUE(waitUntilPulling(consumer, fake, 2));
  ASSERT_TRUE(consumer.commit({{{kTopic, kBroker, 0}, 42}, {{kTopic, kBroker, 1}, 7}}).isOk());
  ASSERT_TRUE(fake.waitFor([&] { return fake.committed.count(0) != 0; }));
  std::size_t stored = 0;
  {
    std::lock_guard lock(fake.mu);
    EXPECT_EQ(fake.committed[0], 42);
    EXPECT_EQ(countEvents(fake, kCodeUpdateConsumerOffset, 0), 3u);  // commit + 2 re-sends
    stored = fake.events.size();
  }
  // Five more rounds (queue 1 re-sent each time): queue 0 was checked once more, then left alone.
  ASSERT_TRUE(fake.waitFor(
      [&] { return countEvents(fake, kCodeUpdateConsumerOffset, 1, stored) >= 5; }));
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(countEvents(fake, kCodeUpdateConsumerOffset, 0, stored), 0u);
  EXPECT_EQ(countEvents(fake, kCodeQueryConsumerOffset, 0, stored), 1u);
  // The check asks for "not found" rather than 0 when nothing is committed (5.x).
  ASSERT_FALSE(fake.offsetCalls.empty());
  EXPECT_EQ(fake.offsetCalls.back().code, kCodeQueryConsumerOffset);
  EXPECT_EQ(fake.offsetCalls.back().ext("setZeroIfNotFound"), std::optional<std::string>("false"));
}

TEST(RocketmqConsumer, ARevokedQueueIsNoLongerSentAgain) {
  FakeBroker fake;
  fake.queues = 2;
  fake.members = {kMe};
  fake.dropCommits[0] = -1;
  fake.dropCommits[1] = -1;
  auto client = clientFor(fake.peer->address(), kMe);
  PullConsumer consumer(*client, persistOptions());
  ASSERT_TRUE(consumer.start().isOk());
  ASSERT_TRUE(waitUntilPulling(consumer, fake, 2));
  ASSERT_TRUE(consumer.commit({{{kTopic, kBroker, 0}, 5}, {{kTopic, kBroker, 1}, 6}}).isOk());
  ASSERT_TRUE(fake.waitFor([&] {
    return countEvents(fake, kCodeUpdateConsumerOffset, 1) >= 3;  // being re-sent
  }));
  {
    std::lock_guard lock(fake.mu);
    fake.members = {kMe, "127.0.0.1@consumer-b"};  // b takes queue 1
  }
  fake.notifyIdsChanged("g1");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (consumer.assignment().size() != 1 && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(consumer.poll(10, std::chrono::milliseconds(20)).isOk());
  }
  ASSERT_EQ(consumer.assignment(), (std::vector<MessageQueue>{{kTopic, kBroker, 0}}));
  std::size_t revokedAt = 0;
  {
    std::lock_guard lock(fake.mu);
    revokedAt = fake.events.size();
  }
  // A round already under way may still carry queue 1; from the second re-send of queue 0 after
  // the revoke on, queue 1 is gone.
  ASSERT_TRUE(fake.waitFor(
      [&] { return countEvents(fake, kCodeUpdateConsumerOffset, 0, revokedAt) >= 5; }));
  {
    std::lock_guard lock(fake.mu);
    std::size_t second = revokedAt, seen = 0;
    for (; second < fake.events.size(); ++second) {
      if (fake.events[second] == std::make_pair(kCodeUpdateConsumerOffset, 0) && ++seen == 2) break;
    }
    EXPECT_EQ(countEvents(fake, kCodeUpdateConsumerOffset, 1, second), 0u);
    EXPECT_EQ(countEvents(fake, kCodeQueryConsumerOffset, 1, second), 0u);
    revokedAt = fake.events.size();
  }
  // And a commit of it now is ignored.
  ASSERT_TRUE(consumer.commit({{{kTopic, kBroker, 1}, 60}}).isOk());
  std::lock_guard lock(fake.mu);
  for (const auto& c : fake.commits) EXPECT_NE(c.ext("commitOffset"), std::optional<std::string>("60"));
}

TEST(RocketmqConsumer, SeekRestartsThePullAtTheNewOffset) {
  FakeBroker fake;
  fake.members = {kMe};
  auto client = clientFor(fake.peer->address(), kMe);
  PullConsumer consumer(*client, options());
  ASSERT_TRUE(consumer.start().isOk());
  // poll() applies the assignment; then the first pull (at 0) is held by the fake.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (consumer.assignment().empty() && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(consumer.poll(1, std::chrono::milliseconds(100)).isOk());
  }
  ASSERT_TRUE(fake.waitFor([&] { return fake.pulls.size() >= 1; }));
  {
    std::lock_guard lock(fake.mu);
    fake.pullScript[0].push_back(found(storedMessage(0, 50, "fifty", {}), 51));
  }
  EXPECT_FALSE(consumer.seek({kTopic, kBroker, 3}, 1).isOk());  // not assigned
  ASSERT_TRUE(consumer.seek({kTopic, kBroker, 0}, 50).isOk());
  // The held pull is still outstanding; the broker answers it now (stale epoch -> discarded).
  {
    std::lock_guard lock(fake.mu);
    fake.conn->reply(fake.pulls[0], kRespPullNotFound, {}, {{"nextBeginOffset", "0"}});
  }
  auto msgs = pollAtLeast(consumer, 1);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].message.queueOffset, 50);
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.pulls[1].ext("queueOffset"), std::optional<std::string>("50"));
}

TEST(RocketmqConsumerAllocation, AveragelyLikeJava) {
  std::vector<MessageQueue> all;
  for (int i = 7; i >= 0; --i) all.push_back({"t", "b", i});
  std::vector<std::string> members{"c", "a", "b"};
  auto a = allocateQueues("a", members, all);
  auto b = allocateQueues("b", members, all);
  auto c = allocateQueues("c", members, all);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(a[0].queueId, 0);
  EXPECT_EQ(b[0].queueId, 3);
  EXPECT_EQ(c[1].queueId, 7);
  EXPECT_TRUE(allocateQueues("x", members, all).empty());
  // Two brokers: sorted by (topic, brokerName, queueId).
  std::vector<MessageQueue> two{{"t", "b2", 0}, {"t", "b1", 1}, {"t", "b1", 0}, {"t", "b2", 1}};
  auto first = allocateQueues("a", {"a", "b"}, two);
  std::vector<MessageQueue> expect{{"t", "b1", 0}, {"t", "b1", 1}};
  EXPECT_EQ(first, expect);
  EXPECT_EQ(parseTagExpression(" TagA ||TagB|| "), (std::vector<std::string>{"TagA", "TagB"}));
  EXPECT_TRUE(parseTagExpression("*").empty());
}

}  // namespace
}  // namespace ferry::rocketmq
