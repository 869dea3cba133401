// Producer against a scripted NameServer + broker: the SEND_MESSAGE_V2 header, properties and
// body on the wire, queue selection, retry on a retriable code, batches.
#include <gtest/gtest.h>

#include <future>
#include <set>

#include "rocketmq/client.h"
#include "rocketmq/producer.h"
#include "client_test_peer.h"

namespace ferry::rocketmq {
namespace {

using testing::PeerConnection;
using testing::ScriptedPeer;

struct FakeBroker {
  std::mutex mu;
  std::vector<RemotingCommand> sends;
  std::map<std::int32_t, std::int64_t> nextOffset;
  int busyAnswers = 0;  // answer this many sends with SYSTEM_BUSY first
  std::unique_ptr<ScriptedPeer> peer;

  FakeBroker() {
    peer = std::make_unique<ScriptedPeer>([this](PeerConnection& conn, const RemotingCommand& r) {
      std::lock_guard lock(mu);
      const std::string self = peer->address();
      if (r.code == kCodeGetRouteInfoByTopic) {
        conn.reply(r, 0,
                   R"({"brokerDatas":[{"brokerAddrs":{0:")" + self +
                       R"("},"brokerName":"fake-a","cluster":"fake"}],"queueDatas":[)"
                       R"({"brokerName":"fake-a","perm":6,"readQueueNums":4,"writeQueueNums":4}]})");
        return;
      }
      if (r.code != kCodeSendMessageV2 && r.code != kCodeSendBatchMessage &&
          r.code != kCodeSendMessage) {
        conn.reply(r, 3);
        return;
      }
      sends.push_back(r);
      if (busyAnswers > 0) {
        --busyAnswers;
        conn.reply(r, 2);
        return;
      }
      auto q = static_cast<std::int32_t>(
          r.extInt(r.code == kCodeSendMessage ? "queueId" : "e").value_or(-1));
      std::int64_t count = 1;
      if (r.code == kCodeSendBatchMessage) {
        auto batch = decodeBatchBody(r.body);
        count = batch.isOk() ? static_cast<std::int64_t>(batch->size()) : 0;
      }
      std::int64_t off = nextOffset[q];
      nextOffset[q] += count;
      conn.reply(r, 0, {},
                 {{"queueId", std::to_string(q)},
                  {"queueOffset", std::to_string(off)},
                  {"msgId", "OFFSETID" + std::to_string(off)}});
    });
  }
};

std::unique_ptr<RocketmqClient> clientFor(const std::string& ns) {
  ClientOptions o;
  o.namesrvAddrs = ns;
  o.routeRefreshMs = 0;
  auto c = RocketmqClient::create(o);
  EXPECT_TRUE(c.isOk());
  return std::move(c).value();
}

OutgoingMessage message(std::string body) {
  OutgoingMessage m;
  m.topic = "orders";
  m.body = std::move(body);
  m.properties[kPropTags] = "tagA";
  m.properties[kPropKeys] = "k1";
  m.properties["color"] = "blue";
  return m;
}

TEST(RocketmqProducer, SendsV2HeaderPropertiesAndBinaryBody) {
  FakeBroker fake;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  const std::string body("a\0b\xff", 4);
  auto r = producer.send(message(body), QueueSelection::queue("fake-a", 2));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->brokerName, "fake-a");
  EXPECT_EQ(r->queueId, 2);
  EXPECT_EQ(r->queueOffset, 0);
  EXPECT_EQ(r->offsetMsgId, "OFFSETID0");
  EXPECT_FALSE(r->msgId.empty());

  std::lock_guard lock(fake.mu);
  ASSERT_EQ(fake.sends.size(), 1u);
  const RemotingCommand& s = fake.sends[0];
  EXPECT_EQ(s.code, kCodeSendMessageV2);
  EXPECT_EQ(s.body, body);
  EXPECT_EQ(s.ext("a"), std::optional<std::string>("ferry_producer"));
  EXPECT_EQ(s.ext("b"), std::optional<std::string>("orders"));
  EXPECT_EQ(s.ext("c"), std::optional<std::string>("TBW102"));
  EXPECT_EQ(s.ext("e"), std::optional<std::string>("2"));
  EXPECT_EQ(s.ext("m"), std::optional<std::string>("false"));
  EXPECT_EQ(s.ext("n"), std::optional<std::string>("fake-a"));
  EXPECT_TRUE(s.extInt("g").has_value());
  auto props = decodeProperties(s.ext("i").value_or(""));
  EXPECT_EQ(props["TAGS"], "tagA");
  EXPECT_EQ(props["KEYS"], "k1");
  EXPECT_EQ(props["color"], "blue");
  EXPECT_EQ(props["WAIT"], "true");
  EXPECT_EQ(props["UNIQ_KEY"], r->msgId);
}

TEST(RocketmqProducer, RoundRobinCoversQueuesAndKeyHashIsStable) {
  FakeBroker fake;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  std::set<std::int32_t> queues;
  for (int i = 0; i < 8; ++i) {
    auto r = producer.send(message("x"));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    queues.insert(r->queueId);
  }
  EXPECT_EQ(queues.size(), 4u);
  std::set<std::int32_t> keyed;
  for (int i = 0; i < 4; ++i) {
    auto r = producer.send(message("y"), QueueSelection::byKey("customer-17"));
    ASSERT_TRUE(r.isOk());
    keyed.insert(r->queueId);
  }
  EXPECT_EQ(keyed.size(), 1u);
  EXPECT_EQ(*keyed.begin(), static_cast<std::int32_t>(keyHash("customer-17") % 4));
}

TEST(RocketmqProducer, RetriesOnSystemBusyThenSucceeds) {
  FakeBroker fake;
  fake.busyAnswers = 2;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  auto r = producer.send(message("retry"));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  std::lock_guard lock(fake.mu);
  ASSERT_EQ(fake.sends.size(), 3u);
  EXPECT_NE(fake.sends[0].opaque, fake.sends[1].opaque);  // a retry uses a new opaque
}

TEST(RocketmqProducer, GivesUpAfterRetries) {
  FakeBroker fake;
  fake.busyAnswers = 10;
  auto client = clientFor(fake.peer->address());
  ProducerOptions o;
  o.retries = 1;
  Producer producer(*client, o);
  auto r = producer.send(message("busy"));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.sends.size(), 2u);
}

TEST(RocketmqProducer, LargeSingleBodiesAreSentCompressedLikeJava) {
  FakeBroker fake;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  std::string big;
  for (int i = 0; i < 2000; ++i) big += "sensor-" + std::to_string(i % 7) + ";";  // > 4 KiB, compressible
  big += std::string("\0\xff", 2);
  ASSERT_TRUE(producer.send(message(big), QueueSelection::queue("fake-a", 0)).isOk());
  ASSERT_TRUE(producer.send(message("small"), QueueSelection::queue("fake-a", 0)).isOk());
  std::vector<OutgoingMessage> batch{message(big), message(big)};
  ASSERT_TRUE(producer.sendBatch(batch, QueueSelection::queue("fake-a", 0)).isOk());
  ProducerOptions off;
  off.compressOverBytes = 0;
  Producer plain(*client, off);
  ASSERT_TRUE(plain.send(message(big), QueueSelection::queue("fake-a", 0)).isOk());

  std::lock_guard lock(fake.mu);
  ASSERT_EQ(fake.sends.size(), 4u);
  const RemotingCommand& c = fake.sends[0];
  EXPECT_EQ(c.extInt("f"), kSysFlagCompressedZlib);
  EXPECT_LT(c.body.size(), big.size() / 4);
  auto inflated = decompressBody(c.body, kSysFlagCompressedZlib);
  ASSERT_TRUE(inflated.isOk()) << inflated.status().toString();
  EXPECT_EQ(*inflated, big);
  EXPECT_EQ(fake.sends[1].extInt("f"), 0);  // under the threshold
  EXPECT_EQ(fake.sends[1].body, "small");
  EXPECT_EQ(fake.sends[2].extInt("f"), 0);  // batches are never compressed
  auto entries = decodeBatchBody(fake.sends[2].body);
  ASSERT_TRUE(entries.isOk());
  EXPECT_EQ((*entries)[0].body, big);
  EXPECT_EQ(fake.sends[3].extInt("f"), 0);  // disabled
  EXPECT_EQ(fake.sends[3].body, big);
}

TEST(RocketmqProducer, OversizeBodiesAreRefusedLocallyBeforeCompression) {
  FakeBroker fake;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  auto r = producer.send(message(std::string((4u << 20) + 1, 'z')), QueueSelection::queue("fake-a", 0));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("over the limit"), std::string::npos) << r.status().toString();
  std::vector<OutgoingMessage> batch{message(std::string(3u << 20, 'z')), message(std::string(2u << 20, 'z'))};
  auto b = producer.sendBatch(batch, QueueSelection::queue("fake-a", 0));
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  std::lock_guard lock(fake.mu);
  EXPECT_TRUE(fake.sends.empty());
}

TEST(RocketmqProducer, BatchUsesCode320WithEntries) {
  FakeBroker fake;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  std::vector<OutgoingMessage> batch;
  for (int i = 0; i < 3; ++i) batch.push_back(message("m" + std::to_string(i)));
  auto r = producer.sendBatch(batch, QueueSelection::queue("fake-a", 1));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->queueOffset, 0);
  auto second = producer.sendBatch(batch, QueueSelection::queue("fake-a", 1));
  ASSERT_TRUE(second.isOk());
  EXPECT_EQ(second->queueOffset, 3);
  std::lock_guard lock(fake.mu);
  const RemotingCommand& s = fake.sends[0];
  EXPECT_EQ(s.code, kCodeSendBatchMessage);
  EXPECT_EQ(s.ext("m"), std::optional<std::string>("true"));
  auto entries = decodeBatchBody(s.body);
  ASSERT_TRUE(entries.isOk());
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[2].body, "m2");
  EXPECT_EQ((*entries)[2].properties.at("TAGS"), "tagA");
  EXPECT_FALSE((*entries)[0].properties.at("UNIQ_KEY").empty());
  EXPECT_NE((*entries)[0].properties.at("UNIQ_KEY"), (*entries)[1].properties.at("UNIQ_KEY"));
}

TEST(RocketmqProducer, AsyncSendsAndValidation) {
  FakeBroker fake;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  constexpr int kCount = 200;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0, ok = 0;
  for (int i = 0; i < kCount; ++i) {
    producer.sendAsync(message("a" + std::to_string(i)), QueueSelection::queue("fake-a", 0),
                       [&](Result<SendResult> r) {
                         std::lock_guard lock(mu);
                         ++done;
                         if (r.isOk()) ++ok;
                         cv.notify_all();
                       });
  }
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done == kCount; }));
  EXPECT_EQ(ok, kCount);
  lock.unlock();

  OutgoingMessage empty;
  empty.topic = "orders";
  EXPECT_EQ(producer.send(empty).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(producer.send(message("x"), QueueSelection::queue("nobody", 0)).status().code(),
            StatusCode::kNotFound);
}

TEST(RocketmqProducer, V1HeaderOption) {
  FakeBroker fake;
  auto client = clientFor(fake.peer->address());
  ProducerOptions o;
  o.useV1Header = true;
  Producer producer(*client, o);
  ASSERT_TRUE(producer.send(message("v1"), QueueSelection::queue("fake-a", 3)).isOk());
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.sends[0].code, kCodeSendMessage);
  EXPECT_EQ(fake.sends[0].ext("topic"), std::optional<std::string>("orders"));
  EXPECT_EQ(fake.sends[0].ext("queueId"), std::optional<std::string>("3"));
}

}  // namespace
}  // namespace ferry::rocketmq
