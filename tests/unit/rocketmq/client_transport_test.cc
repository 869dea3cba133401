// Transport of the RocketMQ client against a scripted in-process peer: opaque matching, timeouts,
// connection loss and reconnect, server-initiated requests, response code mapping.
#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <vector>

#include "rocketmq/client.h"
#include "rocketmq/connection.h"
#include "client_test_peer.h"

namespace ferry::rocketmq {
namespace {

using testing::PeerConnection;
using testing::ScriptedPeer;

std::unique_ptr<RocketmqClient> makeClient(const std::string& namesrv,
                                           std::int64_t timeoutMs = 3000) {
  ClientOptions o;
  o.namesrvAddrs = namesrv;
  o.requestTimeoutMs = timeoutMs;
  o.routeRefreshMs = 0;
  auto c = RocketmqClient::create(o);
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  return std::move(c).value();
}

RemotingCommand request(std::int32_t code) {
  RemotingCommand r;
  r.code = code;
  r.extFields["k"] = "v" + std::to_string(code);
  return r;
}

TEST(RocketmqClientTransport, OutOfOrderResponsesAreMatchedByOpaque) {
  std::vector<RemotingCommand> held;
  ScriptedPeer peer([&](PeerConnection& conn, const RemotingCommand& req) {
    held.push_back(req);
    if (held.size() < 2) return;
    // Answer the second request first.
    for (int i = 1; i >= 0; --i) {
      conn.reply(held[i], 0, "answer-to-" + std::to_string(held[i].code));
    }
    held.clear();
  });
  auto client = makeClient(peer.address());
  auto f1 = std::async(std::launch::async,
                       [&] { return client->invoke(peer.address(), request(1001)); });
  auto f2 = std::async(std::launch::async,
                       [&] { return client->invoke(peer.address(), request(1002)); });
  auto r1 = f1.get();
  auto r2 = f2.get();
  ASSERT_TRUE(r1.isOk()) << r1.status().toString();
  ASSERT_TRUE(r2.isOk()) << r2.status().toString();
  EXPECT_EQ(r1->body, "answer-to-1001");
  EXPECT_EQ(r2->body, "answer-to-1002");
  EXPECT_TRUE(r1->isResponse());
  EXPECT_EQ(peer.accepted(), 1);  // one shared connection
}

TEST(RocketmqClientTransport, RequestsCarryDistinctOpaquesAndHeaders) {
  std::vector<RemotingCommand> seen;
  ScriptedPeer peer([&](PeerConnection& conn, const RemotingCommand& req) {
    seen.push_back(req);
    conn.reply(req, 0);
  });
  auto client = makeClient(peer.address());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(client->invoke(peer.address(), request(7)).isOk());
  ASSERT_EQ(seen.size(), 5u);
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_NE(seen[i].opaque, seen[i - 1].opaque);
  EXPECT_EQ(seen[0].flag, 0);
  EXPECT_EQ(seen[0].language, kLanguageCpp);
  EXPECT_EQ(seen[0].version, kVersion);
  EXPECT_EQ(seen[0].ext("k"), std::optional<std::string>("v7"));
}

TEST(RocketmqClientTransport, NoAnswerTimesOut) {
  ScriptedPeer peer([&](PeerConnection&, const RemotingCommand&) {});
  auto client = makeClient(peer.address());
  auto start = std::chrono::steady_clock::now();
  auto r = client->invoke(peer.address(), request(5), 100);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout) << r.status().toString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(client->connection(peer.address())->pendingCount(), 0u);
}

TEST(RocketmqClientTransport, LateResponseAfterTimeoutIsDropped) {
  std::vector<RemotingCommand> held;
  ScriptedPeer peer([&](PeerConnection& conn, const RemotingCommand& req) {
    if (req.code == 1) {
      held.push_back(req);  // never answered in time
      return;
    }
    for (auto& h : held) conn.reply(h, 0, "late");
    held.clear();
    conn.reply(req, 0, "fresh");
  });
  auto client = makeClient(peer.address());
  auto r1 = client->invoke(peer.address(), request(1), 50);
  EXPECT_EQ(r1.status().code(), StatusCode::kTimeout);
  auto r2 = client->invoke(peer.address(), request(2));
  ASSERT_TRUE(r2.isOk()) << r2.status().toString();
  EXPECT_EQ(r2->body, "fresh");
}

TEST(RocketmqClientTransport, PeerCloseFailsPendingAndNextCallReconnects) {
  ScriptedPeer peer([&](PeerConnection& conn, const RemotingCommand& req) {
    if (req.code == 66) {
      conn.close();
      return;
    }
    conn.reply(req, 0, "ok");
  });
  auto client = makeClient(peer.address());
  auto r1 = client->invoke(peer.address(), request(66));
  ASSERT_FALSE(r1.isOk());
  EXPECT_EQ(r1.status().code(), StatusCode::kUnavailable) << r1.status().toString();
  auto r2 = client->invoke(peer.address(), request(67));
  ASSERT_TRUE(r2.isOk()) << r2.status().toString();
  EXPECT_EQ(r2->body, "ok");
  EXPECT_EQ(peer.accepted(), 2);
}

TEST(RocketmqClientTransport, UnreachableAddressFailsQuicklyWithUnavailable) {
  // A port that was just free: nobody listens there.
  std::string addr;
  {
    ScriptedPeer probe([](PeerConnection&, const RemotingCommand&) {});
    addr = probe.address();
  }
  auto client = makeClient(addr);
  auto start = std::chrono::steady_clock::now();
  auto r = client->invoke(addr, request(1));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().toString();
  EXPECT_NE(r.status().message().find(addr), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  // A second call inside the backoff window waits for it and fails the same way.
  auto r2 = client->invoke(addr, request(1));
  EXPECT_EQ(r2.status().code(), StatusCode::kUnavailable);
}

TEST(RocketmqClientTransport, InvalidFrameClosesConnection) {
  ScriptedPeer peer([&](PeerConnection& conn, const RemotingCommand& req) {
    // Length 0x7fffffff: far beyond the frame limit.
    conn.sendRaw(std::string("\x7f\xff\xff\xff\x00\x00\x00\x00", 8));
  });
  auto client = makeClient(peer.address());
  auto r = client->invoke(peer.address(), request(1));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().toString();
}

TEST(RocketmqClientTransport, ServerRequestWithoutHandlerGetsCode3) {
  RemotingCommand reply;
  bool gotReply = false;
  ScriptedPeer peer([&](PeerConnection& conn, const RemotingCommand& frame) {
    if (frame.isResponse()) {
      peer.update([&] {
        reply = frame;
        gotReply = true;
      });
      return;
    }
    RemotingCommand serverReq;
    serverReq.code = 307;  // GET_CONSUMER_RUNNING_INFO
    serverReq.opaque = 4242;
    conn.send(serverReq);
    conn.reply(frame, 0);
  });
  auto client = makeClient(peer.address());
  ASSERT_TRUE(client->invoke(peer.address(), request(1)).isOk());
  ASSERT_TRUE(peer.waitFor([&] { return gotReply; }));
  EXPECT_EQ(reply.code, 3);
  EXPECT_EQ(reply.opaque, 4242);
  EXPECT_TRUE(reply.isResponse());
}

TEST(RocketmqClientTransport, RegisteredHandlerAnswersServerRequest) {
  RemotingCommand reply;
  bool gotReply = false;
  ScriptedPeer peer([&](PeerConnection& conn, const RemotingCommand& frame) {
    if (frame.isResponse()) {
      peer.update([&] {
        reply = frame;
        gotReply = true;
      });
      return;
    }
    RemotingCommand oneway;  // must not be answered
    oneway.code = kCodeNotifyConsumerIdsChanged;
    oneway.opaque = 1;
    oneway.flag = kFlagOneway;
    oneway.extFields["consumerGroup"] = "g1";
    conn.send(oneway);
    RemotingCommand serverReq;
    serverReq.code = kCodeNotifyConsumerIdsChanged;
    serverReq.opaque = 2;
    serverReq.extFields["consumerGroup"] = "g2";
    conn.send(serverReq);
    conn.reply(frame, 0);
  });
  auto client = makeClient(peer.address());
  std::mutex mu;
  std::vector<std::string> groups;
  client->setRequestHandler(kCodeNotifyConsumerIdsChanged, [&](const RemotingCommand& req) {
    std::lock_guard lock(mu);
    groups.push_back(req.ext("consumerGroup").value_or(""));
    RemotingCommand r;
    r.code = 0;
    r.remark = "handled";
    return r;
  });
  ASSERT_TRUE(client->invoke(peer.address(), request(1)).isOk());
  ASSERT_TRUE(peer.waitFor([&] { return gotReply; }));
  EXPECT_EQ(reply.code, 0);
  EXPECT_EQ(reply.opaque, 2);  // the oneway one (opaque 1) got no answer
  EXPECT_EQ(reply.remark, std::optional<std::string>("handled"));
  std::lock_guard lock(mu);
  EXPECT_EQ(groups, (std::vector<std::string>{"g1", "g2"}));
}

TEST(RocketmqClientTransport, AsyncInvokeAndOneway) {
  std::vector<RemotingCommand> seen;
  ScriptedPeer peer([&](PeerConnection& conn, const RemotingCommand& req) {
    peer.update([&] { seen.push_back(req); });
    if (!req.isOneway()) conn.reply(req, 0, "async");
  });
  auto client = makeClient(peer.address());
  client->invokeOneway(peer.address(), request(9));
  std::promise<Result<RemotingCommand>> p;
  client->invokeAsync(peer.address(), request(10), -1,
                      [&](Result<RemotingCommand> r) { p.set_value(std::move(r)); });
  auto r = p.get_future().get();
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->body, "async");
  ASSERT_TRUE(peer.waitFor([&] { return seen.size() == 2; }));
  EXPECT_TRUE(seen[0].isOneway());
  EXPECT_EQ(seen[0].code, 9);
}

TEST(RocketmqClientTransport, ShutdownCancelsPending) {
  ScriptedPeer peer([&](PeerConnection&, const RemotingCommand&) {});
  auto client = makeClient(peer.address(), 60000);
  std::promise<Result<RemotingCommand>> p;
  client->invokeAsync(peer.address(), request(1), -1,
                      [&](Result<RemotingCommand> r) { p.set_value(std::move(r)); });
  ASSERT_TRUE(peer.waitFor([&] { return peer.accepted() == 1; }));
  client.reset();
  auto r = p.get_future().get();
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
}

TEST(RocketmqClientTransport, ResponseCodeMapping) {
  RemotingCommand r;
  r.code = 0;
  EXPECT_TRUE(responseStatus(r, "x").isOk());
  r.code = 2;
  r.remark = "[REJECTREQUEST]system busy";
  Status s = responseStatus(r, "send");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(s.isRetriable());
  EXPECT_NE(s.message().find("REJECTREQUEST"), std::string::npos);
  r.code = 1500;
  EXPECT_EQ(responseStatus(r, "x").code(), StatusCode::kUnavailable);
  r.code = 17;
  EXPECT_EQ(responseStatus(r, "x").code(), StatusCode::kNotFound);
  r.code = 26;
  r.remark = "no group";
  s = responseStatus(r, "x");
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("26"), std::string::npos);
  EXPECT_NE(s.message().find("no group"), std::string::npos);
}

TEST(RocketmqClientTransport, SplitAddresses) {
  EXPECT_EQ(splitAddresses("a:1; b:2,c:3;"), (std::vector<std::string>{"a:1", "b:2", "c:3"}));
  EXPECT_TRUE(splitAddresses(" ; ").empty());
  ClientOptions o;
  EXPECT_EQ(RocketmqClient::create(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ferry::rocketmq
