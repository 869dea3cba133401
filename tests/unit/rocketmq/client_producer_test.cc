// Producer against a scripted NameServer + broker: the SEND_MESSAGE_V2 header, properties and
// body on the wire, queue selection, retry on a retriable code, batches.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "rocketmq/client.h"
#include "rocketmq/producer.h"
#include "client_test_peer.h"
#include "producer_fake_broker.h"

namespace ferry::rocketmq {
namespace {

using testing::clientFor;
using testing::ProducerBroker;
using testing::PeerConnection;
using testing::ScriptedPeer;

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
  ProducerBroker fake;
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
  ProducerBroker fake;
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
  ProducerBroker fake;
  fake.busyAnswers = 2;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  auto r = producer.send(message("retry"));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  std::lock_guard lock(fake.mu);
  ASSERT_EQ(fake.sends.size(), 3u);
  EXPECT_NE(fake.sends[0].opaque, fake.sends[1].opaque);  // a retry uses a new opaque
}

// abandonRetries() (a worker that lost its lease): a send under way is answered, but not retried
// once it fails; a send started afterwards retries as before.
TEST(RocketmqProducer, AbandonedSendsAreNotRetried) {
  ProducerBroker fake;
  fake.busyAnswers = 1;
  fake.hold = true;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  auto answered = std::make_shared<std::promise<Result<SendResult>>>();
  producer.sendAsync(message("held"), QueueSelection::queue("fake-a", 0),
                     [answered](Result<SendResult> r) { answered->set_value(std::move(r)); });
  {
    std::unique_lock lock(fake.mu);
    ASSERT_TRUE(fake.held.wait_for(lock, std::chrono::seconds(20), [&] { return !fake.sends.empty(); }));
  }
  producer.abandonRetries();
  fake.release();  // answered SYSTEM_BUSY, which would be retried
  auto f = answered->get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  auto r = f.get();
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().toString().find("abandoned"), std::string::npos) << r.status().toString();
  {
    std::lock_guard lock(fake.mu);
    EXPECT_EQ(fake.sends.size(), 1u) << "the abandoned send was retried";
    fake.busyAnswers = 1;
  }
  auto again = producer.send(message("later"), QueueSelection::queue("fake-a", 0));
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.sends.size(), 3u);  // busy once, then stored
}

TEST(RocketmqProducer, GivesUpAfterRetries) {
  ProducerBroker fake;
  fake.busyAnswers = 10;
  auto client = clientFor(fake.peer->address());
  ProducerOptions o;
  o.retries = 1;
  o.busyRetryMs = 0;  // a busy answer as an ordinary retry
  Producer producer(*client, o);
  auto r = producer.send(message("busy"));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.sends.size(), 2u);
}

// A busy broker (flow control: nothing stored) is given time: each retry waits longer than the
// one before (10 ms doubling, ±50 %), and busy answers do not use up `retries`.
// A broker answering its first `busy` sends with SYSTEM_BUSY, and a producer with `o`.
struct BusyBroker {
  BusyBroker(int busy, ProducerOptions o) {
    fake.busyAnswers = busy;
    client = clientFor(fake.peer->address());
    producer = std::make_unique<Producer>(*client, std::move(o));
  }
  ProducerBroker fake;
  std::unique_ptr<RocketmqClient> client;
  std::unique_ptr<Producer> producer;
};

TEST(RocketmqProducer, BusyAnswersAreRetriedAfterGrowingPausesWithoutUsingRetries) {
  ProducerOptions o;
  o.retries = 0;
  BusyBroker b(5, o);
  auto& fake = b.fake;
  auto r = b.producer->send(message("busy for a while"));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  std::lock_guard lock(fake.mu);
  ASSERT_EQ(fake.sends.size(), 6u);
  for (std::size_t i = 1; i < fake.sendTimes.size(); ++i) {
    const auto least = std::chrono::milliseconds((10 << (i - 1)) / 2);
    EXPECT_GE(fake.sendTimes[i] - fake.sendTimes[i - 1], least) << "retry " << i << " came too soon";
  }
}

TEST(RocketmqProducer, AlwaysBusyFailsAfterBusyRetryMs) {
  ProducerOptions o;
  o.busyRetryMs = 300;
  BusyBroker b(1000000, o);
  auto& fake = b.fake;
  const auto start = std::chrono::steady_clock::now();
  auto r = b.producer->send(message("never stored"));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.isOk());
  EXPECT_TRUE(r.status().isRetriable()) << r.status().toString();
  EXPECT_NE(r.status().toString().find("still busy"), std::string::npos) << r.status().toString();
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::seconds(5));
  std::lock_guard lock(fake.mu);
  EXPECT_LT(fake.sends.size(), 40u) << "busy retries must pause, not spin";
}

// abandonRetries() while a busy send waits for its next try: it fails as abandoned and is not
// sent again.
TEST(RocketmqProducer, AbandonedWhileWaitingOutABusyBrokerIsNotSentAgain) {
  BusyBroker b(1000000, {});
  auto& fake = b.fake;
  auto& client = b.client;
  Producer& producer = *b.producer;
  auto answered = std::make_shared<std::promise<Result<SendResult>>>();
  producer.sendAsync(message("busy"), {},
                     [answered](Result<SendResult> r) { answered->set_value(std::move(r)); });
  {
    std::unique_lock lock(fake.mu);
    ASSERT_TRUE(fake.held.wait_for(lock, std::chrono::seconds(20), [&] { return fake.sends.size() >= 3; }));
  }
  producer.abandonRetries();
  auto f = answered->get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto r = f.get();
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().toString().find("abandoned"), std::string::npos) << r.status().toString();
  std::size_t sent = 0;
  {
    std::lock_guard lock(fake.mu);
    sent = fake.sends.size();
    fake.busyAnswers = 0;
  }
  // A retry sent with (or right after) the abandoned answer would reach the broker before this
  // send, which goes out after the answer came.
  ProducerOptions once;
  once.retries = 0;
  Producer later(*client, once);
  auto after = later.send(message("after"));
  ASSERT_TRUE(after.isOk()) << after.status().toString();
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.sends.size(), sent + 1) << "the abandoned send was sent again";
}

TEST(RocketmqProducer, LargeSingleBodiesAreSentCompressedLikeJava) {
  ProducerBroker fake;
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
  ProducerBroker fake;
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
  ProducerBroker fake;
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

// The properties a 4.x / 5.3 broker stores for the inner messages of a batch: each message's own,
// then the wrapper's appended (MessageDecoder reads the last duplicate).
std::vector<std::map<std::string, std::string>> storedBatchProperties(const RemotingCommand& send) {
  std::vector<std::map<std::string, std::string>> out;
  auto entries = decodeBatchBody(send.body);
  EXPECT_TRUE(entries.isOk());
  if (!entries.isOk()) return out;
  const std::string wrapper = send.ext("i").value_or("");
  for (const auto& e : *entries) {
    std::string merged = encodeProperties(e.properties);
    if (!wrapper.empty()) merged += std::string(1, '\x02') + wrapper;
    out.push_back(decodeProperties(merged));
  }
  return out;
}

std::vector<std::string> splitIds(const std::string& joined) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    auto comma = joined.find(',', start);
    out.push_back(joined.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// Regression: the wrapper of a batch carried a UNIQ_KEY of its own, which the broker copies onto
// every inner message, so a whole batch was stored with one message id.
TEST(RocketmqProducer, BatchWrapperCarriesNoMessageIdSoEachMessageKeepsItsOwn) {
  ProducerBroker fake;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  std::vector<OutgoingMessage> batch;
  for (int i = 0; i < 4; ++i) batch.push_back(message("m" + std::to_string(i)));
  batch[3].properties[kPropUniqKey] = "CALLER-CHOSEN-ID";  // a replicated message keeps its id
  auto r = producer.sendBatch(batch, QueueSelection::queue("fake-a", 0));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const auto ids = splitIds(r->msgId);
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[3], "CALLER-CHOSEN-ID");
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 4u);

  std::lock_guard lock(fake.mu);
  ASSERT_EQ(fake.sends.size(), 1u);
  const auto wrapper = decodeProperties(fake.sends[0].ext("i").value_or(""));
  EXPECT_EQ(wrapper, (std::map<std::string, std::string>{{"WAIT", "true"}}));
  const auto stored = storedBatchProperties(fake.sends[0]);
  ASSERT_EQ(stored.size(), 4u);
  for (std::size_t i = 0; i < stored.size(); ++i) {
    EXPECT_EQ(stored[i].at("UNIQ_KEY"), ids[i]) << i;
    EXPECT_EQ(stored[i].at("WAIT"), "true");
  }
}

constexpr const char* kAclExceptionRemark =
    "org.apache.rocketmq.acl.common.AclException: No acl config for ferryReader, "
    "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:1)";

std::unique_ptr<RocketmqClient> signingClientFor(const std::string& ns, const std::string& key) {
  ClientOptions o;
  o.namesrvAddrs = ns;
  o.routeRefreshMs = 0;
  o.accessKey = key;
  o.secretKey = "secret";
  auto c = RocketmqClient::create(o);
  EXPECT_TRUE(c.isOk());
  return std::move(c).value();
}

// 4.x ACL 1.0 answers a refusal with 1 SYSTEM_ERROR + AclException, which was retried (code 1)
// and then mapped to a retriable Status, so a task with wrong credentials restarted forever.
TEST(RocketmqProducer, V4AclRefusalIsNotRetriedAndNamesKeyAndPermission) {
  ProducerBroker fake;
  fake.refuseSends = std::make_pair(1, std::string(kAclExceptionRemark));
  auto client = signingClientFor(fake.peer->address(), "ferryReader");
  Producer producer(*client, {});
  auto r = producer.send(message("x"), QueueSelection::queue("fake-a", 0));
  ASSERT_FALSE(r.isOk());
  EXPECT_FALSE(r.status().isRetriable()) << r.status().toString();
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  const std::string msg = r.status().message();
  EXPECT_NE(msg.find("permission denied"), std::string::npos) << msg;
  EXPECT_NE(msg.find("access key 'ferryReader'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs PUB permission"), std::string::npos) << msg;
  EXPECT_NE(msg.find("AclException"), std::string::npos) << msg;
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.sends.size(), 1u);  // no retry
}

TEST(RocketmqProducer, V5AclRefusalIsNotRetriedButAForbiddenTopicIs) {
  ProducerBroker fake;
  fake.refuseSends = std::make_pair(16, std::string("check signature failed."));
  auto client = signingClientFor(fake.peer->address(), "ferryAdmin");
  Producer producer(*client, {});
  auto r = producer.send(message("x"), QueueSelection::queue("fake-a", 0));
  ASSERT_FALSE(r.isOk());
  EXPECT_FALSE(r.status().isRetriable());
  EXPECT_NE(r.status().message().find("access key 'ferryAdmin'"), std::string::npos);
  {
    std::lock_guard lock(fake.mu);
    EXPECT_EQ(fake.sends.size(), 1u);
    fake.sends.clear();
    fake.refuseSends = std::make_pair(16, std::string("the topic[orders] sending message is forbidden"));
  }
  auto forbidden = producer.send(message("x"));
  ASSERT_FALSE(forbidden.isOk());
  std::lock_guard lock(fake.mu);
  EXPECT_EQ(fake.sends.size(), 3u);  // the Java producer's retries for a non-writable topic
}

// Pulls, commits and admin calls name the permission they need; a 4.x refusal reads as 16.
TEST(RocketmqProducer, AclRefusalsOfOtherRequestsNameTheirPermission) {
  ScriptedPeer peer([](PeerConnection& conn, const RemotingCommand& req) {
    conn.version = kVersion4_9_7;
    conn.reply(req, 1, {}, {}, std::string(kAclExceptionRemark));
  });
  auto client = signingClientFor(peer.address(), "ferryReader");
  for (auto [code, perm] : std::vector<std::pair<std::int32_t, std::string>>{
           {11, "SUB"}, {15, "SUB"}, {34, "SUB"}, {207, "admin"}, {200, "admin"}}) {
    RemotingCommand req;
    req.code = code;
    auto r = client->invoke(peer.address(), req);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r->code, kRespNoPermission);
    const Status s = responseStatus(*r, "request");
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(s.message().find("needs " + perm + " permission"), std::string::npos) << s.toString();
    EXPECT_NE(s.message().find("access key 'ferryReader'"), std::string::npos) << s.toString();
  }
  // Without the client's rewrite (a response built elsewhere) the mapping holds as well.
  RemotingCommand raw;
  raw.code = 1;
  raw.remark = kAclExceptionRemark;
  EXPECT_FALSE(responseStatus(raw, "x").isRetriable());
  raw.remark = "no consumer for this group";
  EXPECT_TRUE(responseStatus(raw, "x").isRetriable());
}

// A 4.x broker checks no PUB permission for SEND_BATCH_MESSAGE: a signing client sends a batch
// to it as single SEND_MESSAGE_V2s, one after the other, with the same ids and one result.
TEST(RocketmqProducer, SigningClientSplitsBatchesForV4Brokers) {
  ProducerBroker fake;
  fake.version = kVersion4_9_7;
  fake.othersPerSend = 1;  // another producer writes the queue between our single sends
  auto client = signingClientFor(fake.peer->address(), "ferryAdmin");
  Producer producer(*client, {});
  std::vector<OutgoingMessage> batch;
  for (int i = 0; i < 3; ++i) batch.push_back(message("m" + std::to_string(i)));
  auto r = producer.sendBatch(batch, QueueSelection::queue("fake-a", 2));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const auto ids = splitIds(r->msgId);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(r->queueOffset, 0);
  // Each message's own offset (the Replicator's checkpoints map offsets with them).
  EXPECT_EQ(r->queueOffsets, (std::vector<std::int64_t>{0, 2, 4}));
  EXPECT_EQ(r->offsetMsgId, "OFFSETID0,OFFSETID2,OFFSETID4");
  {
    std::lock_guard lock(fake.mu);
    ASSERT_EQ(fake.sends.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      const RemotingCommand& s = fake.sends[i];
      EXPECT_EQ(s.code, kCodeSendMessageV2);
      EXPECT_EQ(s.ext("e"), std::optional<std::string>("2"));
      EXPECT_EQ(s.ext("m"), std::optional<std::string>("false"));
      EXPECT_EQ(s.body, "m" + std::to_string(i));
      auto props = decodeProperties(s.ext("i").value_or(""));
      EXPECT_EQ(props["UNIQ_KEY"], ids[i]);
      EXPECT_EQ(props["TAGS"], "tagA");
      EXPECT_EQ(props["WAIT"], "true");
      EXPECT_TRUE(s.extFields.count("Signature"));
    }
    EXPECT_EQ(fake.probes, 0);  // the route's answer (same peer) already told the version
    fake.sends.clear();
    fake.version = kVersion5_3_3;
  }
  // After a reconnect the version is unknown again (an upgraded broker); the route is cached, so
  // it is probed once. A 5.x broker checks batches: one SEND_BATCH_MESSAGE.
  client->connection(fake.peer->address())->resetConnection();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (client->knownVersion(fake.peer->address()) != -1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  ASSERT_EQ(client->knownVersion(fake.peer->address()), -1);
  auto again = producer.sendBatch(batch, QueueSelection::queue("fake-a", 2));
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_TRUE(again->queueOffsets.empty());  // a real batch: consecutive from queueOffset
  std::lock_guard lock(fake.mu);
  ASSERT_EQ(fake.sends.size(), 1u);
  EXPECT_EQ(fake.sends[0].code, kCodeSendBatchMessage);
  EXPECT_EQ(fake.probes, 1);
  EXPECT_EQ(client->knownVersion(fake.peer->address()), kVersion5_3_3);
}

// Without ACL keys there is nothing to enforce: batches go as batches whatever the version.
TEST(RocketmqProducer, UnsignedClientKeepsBatchesOnV4) {
  ProducerBroker fake;
  fake.version = kVersion4_9_7;
  auto client = clientFor(fake.peer->address());
  Producer producer(*client, {});
  std::vector<OutgoingMessage> batch{message("a"), message("b")};
  ASSERT_TRUE(producer.sendBatch(batch, QueueSelection::queue("fake-a", 0)).isOk());
  std::lock_guard lock(fake.mu);
  ASSERT_EQ(fake.sends.size(), 1u);
  EXPECT_EQ(fake.sends[0].code, kCodeSendBatchMessage);
  EXPECT_EQ(fake.probes, 0);
}

TEST(RocketmqProducer, AsyncSendsAndValidation) {
  ProducerBroker fake;
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
  ProducerBroker fake;
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
