// BatchSender::flushAsync (connectors/rocketmq/batch_sender.h), used by RocketMQSink for direct
// tasks, against the scripted broker of producer_fake_broker.h: answered once every batch sent
// before it was answered, exactly once; the first non-retriable failure is its answer; sends that
// failed retriably make the answer retriable, and flush() then resends them. No sleeps: futures.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>

#include "connectors/rocketmq/batch_sender.h"
#include "producer_fake_broker.h"
#include "rocketmq/producer.h"

namespace ferry::rocketmq {
namespace {

using namespace std::chrono_literals;
using testing::clientFor;
using testing::ProducerBroker;

connectors::rmq::BatchSender::Batch batch(int from, int n) {
  connectors::rmq::BatchSender::Batch b;
  for (int i = from; i < from + n; ++i) {
    OutgoingMessage m;
    m.topic = "orders";
    m.body = std::to_string(i);
    b.messages.push_back(std::move(m));
  }
  b.selection = QueueSelection::queue("fake-a", 1);
  return b;
}

// Calls flushAsync and waits for its answer; counts the calls of `done`.
Status flushAsync(connectors::rmq::BatchSender& sender, std::atomic<int>& calls) {
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  sender.flushAsync("RocketMQSink", [p, &calls](Status s) {
    if (calls.fetch_add(1) == 0) p->set_value(std::move(s));
  });
  EXPECT_EQ(f.wait_for(20s), std::future_status::ready) << "flushAsync never answered";
  return f.get();
}

// Sends batch(0, n), then answers flushAsync's Status.
Status sendThenFlushAsync(connectors::rmq::BatchSender& sender, int n) {
  sender.send(batch(0, n));
  std::atomic<int> calls{0};
  Status s = flushAsync(sender, calls);
  EXPECT_EQ(calls.load(), 1);
  return s;
}

TEST(RocketmqBatchSender, FlushAsyncAnswersOnceEveryEarlierBatchWasAnswered) {
  ProducerBroker fake;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  connectors::rmq::BatchSender sender(producer, /*ordered=*/false, 1000);
  std::atomic<int> calls{0};
  // Nothing sent: at once.
  EXPECT_TRUE(flushAsync(sender, calls).isOk());
  std::atomic<int> stored{0};
  for (int i = 0; i < 20; ++i) {
    auto b = batch(i * 10, 10);
    b.onSent = [&stored](const SendResult&) { stored.fetch_add(10); };
    sender.send(std::move(b));
  }
  calls = 0;
  auto p = std::make_shared<std::promise<int>>();
  auto f = p->get_future();
  sender.flushAsync("RocketMQSink", [&, p](Status s) {
    EXPECT_TRUE(s.isOk()) << s.toString();
    if (calls.fetch_add(1) == 0) p->set_value(stored.load());  // what the broker had stored by then
  });
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(f.get(), 200);
  EXPECT_EQ(calls.load(), 1);
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.nextOffset[1], 200);
}

TEST(RocketmqBatchSender, FlushAsyncAnswersTheFirstNonRetriableFailure) {
  ProducerBroker fake;
  fake.refuseSends = std::make_pair(13, std::string("the message is illegal"));
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  connectors::rmq::BatchSender sender(producer, false, 1000);
  Status s = sendThenFlushAsync(sender, 3);
  EXPECT_FALSE(s.isOk());
  EXPECT_FALSE(s.isRetriable()) << s.toString();
  EXPECT_NE(s.toString().find("RocketMQSink"), std::string::npos) << s.toString();
}

TEST(RocketmqBatchSender, RetriableFailuresMakeTheAnswerRetriableAndFlushResendsThem) {
  ProducerBroker fake;
  fake.busyAnswers = 3;  // the first send and both of the producer's retries: SYSTEM_BUSY
  auto client = clientFor(fake.peer->address());
  ProducerOptions o;
  o.busyRetryMs = 0;  // busy answers as ordinary retries: the third fails the send
  Producer producer(*client, o);
  connectors::rmq::BatchSender sender(producer, false, 1000);
  Status s = sendThenFlushAsync(sender, 5);
  EXPECT_TRUE(s.isRetriable()) << s.toString();
  // What the runtime does next: flush(), which sends the kept batch again (the broker accepts now).
  EXPECT_TRUE(sender.flush("RocketMQSink").isOk());
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.nextOffset[1], 5);
  ASSERT_EQ(fake.sends.size(), 4u);
  // The resend is the batch as first prepared: the same bodies and message ids.
  auto first = decodeBatchBody(fake.sends[0].body);
  auto resent = decodeBatchBody(fake.sends[3].body);
  ASSERT_TRUE(first.isOk() && resent.isOk());
  ASSERT_EQ(first->size(), 5u);
  ASSERT_EQ(resent->size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ((*resent)[i].body, std::to_string(i));
    EXPECT_EQ((*resent)[i].properties.at(kPropUniqKey), (*first)[i].properties.at(kPropUniqKey));
  }
}

// A batch refused before it is sent for a reason that passes (the NameServer busy: no route
// yet) is kept, untouched, and sent by the next flush().
TEST(RocketmqBatchSender, ARetriableRefusalBeforeSendingKeepsTheMessagesForFlush) {
  ProducerBroker fake;
  fake.routeBusy = 1;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  connectors::rmq::BatchSender sender(producer, false, 1000);
  Status s = sendThenFlushAsync(sender, 3);
  EXPECT_TRUE(s.isRetriable()) << s.toString();
  {
    std::lock_guard lock(fake.mu);
    EXPECT_TRUE(fake.sends.empty());
  }
  ASSERT_TRUE(sender.flush("RocketMQSink").isOk());
  std::lock_guard lock(fake.mu);
  ASSERT_EQ(fake.sends.size(), 1u);
  auto sent = decodeBatchBody(fake.sends[0].body);
  ASSERT_TRUE(sent.isOk());
  ASSERT_EQ(sent->size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ((*sent)[i].body, std::to_string(i));
}

}  // namespace
}  // namespace ferry::rocketmq
