// Bad input and unreachable peers for the native RocketMQ client, against the real NameServer +
// Broker of scripts/services/rocketmq (FERRY_ROCKETMQ_NAMESRV, default 127.0.0.1:19876):
// an unreachable NameServer fails fast with kUnavailable naming the address, a never-created
// topic's route is kNotFound, an oversize message (> the broker's 4 MiB maxMessageSize, and
// > the 16 MiB frame limit) fails with a clear non-retriable error and the producer keeps
// working. Also, against a local peer that stops reading: requests that time out while queued
// behind a stalled write are not written afterwards (a late copy of a send the caller already
// retried would be a duplicate message). The client's io thread does the I/O.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdlib>
#include <random>
#include <string>

#include "tests/rocketmq/broker_env.h"
#include "rocketmq/client.h"
#include "rocketmq/producer.h"

namespace ferry::rocketmq {
namespace {

using Clock = std::chrono::steady_clock;

std::string namesrv() {
  const char* env = std::getenv("FERRY_ROCKETMQ_NAMESRV");
  return env != nullptr && *env != '\0' ? env : "127.0.0.1:19876";
}

std::string randomSuffix() {
  std::random_device rd;
  std::mt19937_64 gen(rd());
  return std::to_string(gen() % 100000000000ULL);
}

// A local TCP port nobody listens on: bound by an acceptor that is closed again.
int closedPort() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const int port = a.local_endpoint().port();
  a.close();
  return port;
}

std::int64_t msSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

TEST(RocketmqFaults, UnreachableNamesrvIsUnavailableQuicklyWithAddress) {
  const std::string addr = "127.0.0.1:" + std::to_string(closedPort());
  ClientOptions o;
  o.namesrvAddrs = addr;
  auto c = RocketmqClient::create(o);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  auto client = std::move(c).value();

  auto t0 = Clock::now();
  auto info = client->clusterInfo();
  EXPECT_EQ(info.status().code(), StatusCode::kUnavailable) << info.status().toString();
  EXPECT_NE(info.status().message().find(addr), std::string::npos) << info.status().toString();
  EXPECT_LT(msSince(t0), 3000) << "connection refused must not wait for the request timeout";

  t0 = Clock::now();
  auto route = client->queryRoute("ferry-any-" + randomSuffix());
  EXPECT_EQ(route.status().code(), StatusCode::kUnavailable) << route.status().toString();
  EXPECT_NE(route.status().message().find(addr), std::string::npos) << route.status().toString();
  EXPECT_LT(msSince(t0), 6000);

  Producer producer(*client, {});
  OutgoingMessage m;
  m.topic = "ferry-any-" + randomSuffix();
  m.body = "x";
  t0 = Clock::now();
  auto sent = producer.send(m);
  EXPECT_EQ(sent.status().code(), StatusCode::kUnavailable) << sent.status().toString();
  EXPECT_LT(msSince(t0), 6000);
}

// A peer that accepts but does not read until told to: a 12 MiB request stalls the client's
// write; 20 small requests queued behind it time out (200 ms); then the peer reads everything up
// to a marker request sent after those timeouts. None of the timed-out requests may arrive.
TEST(RocketmqFaults, RequestsTimedOutBeforeBeingWrittenAreNotSent) {
  const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(lfd, 0);
  int small = 64 * 1024;
  ::setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::getsockname(lfd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  const std::string addr = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));

  ClientOptions o;
  o.namesrvAddrs = addr;
  auto c = RocketmqClient::create(o);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  auto client = std::move(c).value();

  std::mutex mu;
  std::condition_variable cv;
  int timedOut = 0;
  int otherErrors = 0;
  RemotingCommand blocker;
  blocker.code = 997;
  blocker.body.assign(12u << 20, 'z');
  client->invokeAsync(addr, blocker, 60000, [](Result<RemotingCommand>) {});
  const int fd = ::accept(lfd, nullptr, nullptr);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 20; ++i) {
    RemotingCommand r;
    r.code = 999;
    client->invokeAsync(addr, r, 200, [&](Result<RemotingCommand> res) {
      std::lock_guard lock(mu);
      (res.status().code() == StatusCode::kTimeout ? timedOut : otherErrors)++;
      cv.notify_all();
    });
  }
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20),
                            [&] { return timedOut + otherErrors == 20; }));
  }
  EXPECT_EQ(timedOut, 20);
  RemotingCommand marker;
  marker.code = 998;
  client->invokeAsync(addr, marker, 60000, [](Result<RemotingCommand>) {});

  std::string buf;
  std::vector<std::int32_t> codes;
  char chunk[65536];
  while (codes.empty() || codes.back() != 998) {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    ASSERT_GT(n, 0) << "peer connection closed before the marker";
    buf.append(chunk, static_cast<std::size_t>(n));
    for (;;) {
      FrameDecode d = decodeFrame(buf);
      if (d.state == FrameDecode::State::kNeedMore) break;
      ASSERT_EQ(d.state, FrameDecode::State::kOk) << d.error;
      codes.push_back(d.command.code);
      buf.erase(0, d.consumed);
    }
  }
  ::close(fd);
  ::close(lfd);
  int late = 0;
  for (auto code : codes) late += code == 999 ? 1 : 0;
  EXPECT_EQ(codes.front(), 997);
  EXPECT_EQ(late, 0) << late << " request(s) written after their caller got kTimeout";
}

class RocketmqFaultsBroker : public ::testing::Test {
 protected:
  void SetUp() override {
    ClientOptions o;
    o.namesrvAddrs = namesrv();
    o.requestTimeoutMs = 10000;  // a 5-16 MiB frame on a loaded machine
    auto c = RocketmqClient::create(o);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = std::move(c).value();
    auto info = client_->clusterInfo();
    ASSERT_TRUE(info.isOk()) << "RocketMQ NameServer " << namesrv()
                             << " is not reachable (scripts/services/rocketmq start): "
                             << info.status().toString();
  }

  std::string freshTopic(int queues) {
    std::string topic = "ferry-fault-" + randomSuffix();
    Status s = client_->createTopic(topic, queues, {testenv::cluster()});
    EXPECT_TRUE(s.isOk()) << s.toString();
    return topic;
  }

  void expectNormalSendWorks(Producer& producer, const std::string& topic) {
    OutgoingMessage ok;
    ok.topic = topic;
    ok.body = "normal message after a failure";
    auto r = producer.send(ok);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r->brokerName, testenv::cluster());
    EXPECT_GE(r->queueOffset, 0);
  }

  std::unique_ptr<RocketmqClient> client_;
};

TEST_F(RocketmqFaultsBroker, NeverCreatedTopicRouteIsNotFoundNamingTheTopic) {
  const std::string topic = "ferry-never-" + randomSuffix();
  auto r = client_->queryRoute(topic);
  ASSERT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().toString();
  EXPECT_NE(r.status().message().find(topic), std::string::npos) << r.status().toString();
  // Asking again (refresh) is still NotFound: nothing was cached or created by the query.
  auto again = client_->queryRoute(topic, true);
  EXPECT_EQ(again.status().code(), StatusCode::kNotFound) << again.status().toString();
}

TEST_F(RocketmqFaultsBroker, OversizeMessageIsNonRetriableAndProducerKeepsWorking) {
  const std::string topic = freshTopic(2);
  // The broker's own refusal: no local size check, no compression.
  ProducerOptions raw;
  raw.maxMessageBytes = 0;
  raw.compressOverBytes = 0;
  Producer producer(*client_, raw);
  expectNormalSendWorks(producer, topic);

  OutgoingMessage big;
  big.topic = topic;
  big.body.assign((4u << 20) + 1024, 'b');  // > maxMessageSize (4 MiB)
  auto t0 = Clock::now();
  auto r = producer.send(big);
  ASSERT_FALSE(r.isOk()) << "a " << big.body.size() << "-byte body was stored at offset "
                         << r->queueOffset;
  const StatusCode code = r.status().code();
  EXPECT_NE(code, StatusCode::kUnavailable) << r.status().toString();
  EXPECT_NE(code, StatusCode::kTimeout) << r.status().toString();
  EXPECT_NE(code, StatusCode::kRetriable) << r.status().toString();
  EXPECT_EQ(code, StatusCode::kInvalidArgument) << r.status().toString();
  EXPECT_LT(msSince(t0), 10000);
  std::cout << "oversize (4 MiB + 1 KiB): " << r.status().toString() << "\n";

  expectNormalSendWorks(producer, topic);
}

TEST_F(RocketmqFaultsBroker, FrameBeyondSixteenMibIsRefusedAndProducerKeepsWorking) {
  const std::string topic = freshTopic(2);
  // The transport's frame limit: no local size check, no compression.
  ProducerOptions raw;
  raw.maxMessageBytes = 0;
  raw.compressOverBytes = 0;
  Producer producer(*client_, raw);
  OutgoingMessage huge;
  huge.topic = topic;
  huge.body.assign((16u << 20) + 1024, 'h');  // the frame cannot be sent at all
  auto t0 = Clock::now();
  auto r = producer.send(huge);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().code(), StatusCode::kUnavailable) << r.status().toString();
  EXPECT_NE(r.status().code(), StatusCode::kTimeout) << r.status().toString();
  EXPECT_LT(msSince(t0), 10000);
  std::cout << "oversize (16 MiB + 1 KiB): " << r.status().toString() << "\n";

  expectNormalSendWorks(producer, topic);
}

}  // namespace
}  // namespace ferry::rocketmq
