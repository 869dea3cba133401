// A scripted NameServer + broker for producer flows (one peer answers both): route info for one
// broker "fake-a" with 4 queues, and SEND_MESSAGE / SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE answered
// with increasing queue offsets, or with SYSTEM_BUSY / a refusal as the test sets. Shared by
// client_producer_test.cc and batch_sender_test.cc; clientFor() by client_routes_test.cc too.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client_test_peer.h"
#include "rocketmq/client.h"
#include "rocketmq/remoting.h"

namespace ferry::rocketmq::testing {

struct ProducerBroker {
  std::mutex mu;
  std::vector<RemotingCommand> sends;
  std::vector<std::chrono::steady_clock::time_point> sendTimes;  // when each of `sends` came
  std::map<std::int32_t, std::int64_t> nextOffset;
  int busyAnswers = 0;  // answer this many sends with SYSTEM_BUSY first
  int routeBusy = 0;    // answer this many route queries with SYSTEM_BUSY first
  std::int32_t version = kVersion;  // the `version` of every answer (the broker's MQVersion)
  int probes = 0;                   // GET_BROKER_RUNTIME_INFO requests seen
  // When set, every send is answered with this code and remark (an ACL refusal, say).
  std::optional<std::pair<std::int32_t, std::string>> refuseSends;
  // Offsets taken by other producers after every send (their messages interleave with ours).
  std::int64_t othersPerSend = 0;
  // While set, a send is held unanswered (release() lets it be answered): a test acts while a
  // send is under way.
  bool hold = false;
  std::condition_variable held;
  void release() {
    std::lock_guard lock(mu);
    hold = false;
    held.notify_all();
  }
  std::unique_ptr<ScriptedPeer> peer;

  ProducerBroker() {
    peer = std::make_unique<ScriptedPeer>([this](PeerConnection& conn, const RemotingCommand& r) {
      std::unique_lock lock(mu);
      conn.version = version;
      const std::string self = peer->address();
      if (r.code == kCodeGetBrokerRuntimeInfo) ++probes;
      if (r.code == kCodeGetRouteInfoByTopic && routeBusy > 0) {
        --routeBusy;
        conn.reply(r, 2);
        return;
      }
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
      sendTimes.push_back(std::chrono::steady_clock::now());
      held.notify_all();
      held.wait(lock, [this] { return !hold; });
      if (refuseSends) {
        conn.reply(r, refuseSends->first, {}, {}, refuseSends->second);
        return;
      }
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
      nextOffset[q] += count + othersPerSend;
      conn.reply(r, 0, {},
                 {{"queueId", std::to_string(q)},
                  {"queueOffset", std::to_string(off)},
                  {"msgId", "OFFSETID" + std::to_string(off)}});
    });
  }
};

inline std::unique_ptr<RocketmqClient> clientFor(const std::string& ns) {
  ClientOptions o;
  o.namesrvAddrs = ns;
  o.routeRefreshMs = 0;
  auto c = RocketmqClient::create(o);
  EXPECT_TRUE(c.isOk());
  return std::move(c).value();
}

}  // namespace ferry::rocketmq::testing
