// A scripted RocketMQ NameServer + broker in one peer, for the consumer and source-task unit
// tests: routes, heartbeats, member lists, offset queries and commits (stored, or dropped while
// answering success), pulls answered from a per-queue script (else held like a long poll), and
// NOTIFY_CONSUMER_IDS_CHANGED pushed to the client. Every request is recorded.
//
// Threading: the peer thread runs handle() under `mu`; tests read the records under `mu` and
// wait with waitFor() (condition variable, no sleeps).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rocketmq/client.h"
#include "rocketmq/consumer.h"
#include "client_test_peer.h"
#include "codec_test_util.h"

namespace ferry::rocketmq::testing {

using PullResponder = std::function<void(PeerConnection&, const RemotingCommand&)>;

inline constexpr const char* kTopic = "orders";
inline constexpr const char* kBroker = "fake-a";

struct FakeBroker {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<PeerConnection> conn;
  int queues = 1;
  std::vector<std::string> members;
  std::map<std::int32_t, std::int64_t> committed;  // answered by QUERY_CONSUMER_OFFSET
  std::int64_t minOffset = 0;
  std::int64_t maxOffset = 0;
  std::map<std::int32_t, std::deque<PullResponder>> pullScript;  // empty: hold the pull
  std::vector<RemotingCommand> heartbeats, pulls, commits, lists, unregisters, offsetCalls;
  // UPDATE_CONSUMER_OFFSET answers success but is dropped (not stored) this many times per queue
  // (< 0: always), as a broker that lost a concurrent first commit does.
  std::map<std::int32_t, int> dropCommits;
  // Every offset request in arrival order: (code, queueId); releaseHeldCommit() adds (-1, queue).
  std::vector<std::pair<std::int32_t, std::int32_t>> events;
  // When set, the next UPDATE_CONSUMER_OFFSET is stored but not answered until
  // releaseHeldCommit() (under `mu`).
  bool holdNextCommit = false;
  std::optional<RemotingCommand> heldCommit;
  // Also list the clientIDs that heartbeated as members (for clients whose id is generated).
  bool heartbeatersAreMembers = false;
  std::vector<std::string> heartbeaters;
  std::unique_ptr<ScriptedPeer> peer;

  FakeBroker() {
    peer = std::make_unique<ScriptedPeer>([this](PeerConnection& c, const RemotingCommand& r) {
      std::lock_guard lock(mu);
      conn = c;
      handle(c, r);
      cv.notify_all();
    });
  }

  // Stores and answers the held commit (call with `mu` held).
  void releaseHeldCommit() {
    if (!heldCommit || !conn) return;
    const RemotingCommand r = *heldCommit;
    heldCommit.reset();
    const auto q = static_cast<std::int32_t>(r.extInt("queueId").value_or(0));
    committed[q] = r.extInt("commitOffset").value_or(-1);
    events.emplace_back(-1, q);
    conn->reply(r, 0);
  }

  void handle(PeerConnection& c, const RemotingCommand& r) {
    const std::string self = peer->address();
    switch (r.code) {
      case kCodeGetRouteInfoByTopic:
        c.reply(r, 0,
                R"({"brokerDatas":[{"brokerAddrs":{0:")" + self + R"("},"brokerName":")" +
                    kBroker + R"(","cluster":"fake"}],"queueDatas":[{"brokerName":")" + kBroker +
                    R"(","perm":6,"readQueueNums":)" + std::to_string(queues) +
                    R"(,"writeQueueNums":)" + std::to_string(queues) + "}]}");
        return;
      case kCodeHeartBeat: {
        heartbeats.push_back(r);
        auto hb = nlohmann::json::parse(r.body, nullptr, false);
        if (hb.is_object() && hb.contains("clientID")) {
          auto id = hb["clientID"].get<std::string>();
          if (std::find(heartbeaters.begin(), heartbeaters.end(), id) == heartbeaters.end()) {
            heartbeaters.push_back(id);
          }
        }
        c.reply(r, 0);
        return;
      }
      case kCodeGetConsumerListByGroup: {
        lists.push_back(r);
        std::vector<std::string> all = members;
        if (heartbeatersAreMembers) all.insert(all.end(), heartbeaters.begin(), heartbeaters.end());
        if (all.empty()) {
          c.reply(r, 1);
          return;
        }
        nlohmann::json body = {{"consumerIdList", all}};
        c.reply(r, 0, body.dump());
        return;
      }
      case kCodeQueryConsumerOffset: {
        offsetCalls.push_back(r);
        auto q = static_cast<std::int32_t>(r.extInt("queueId").value_or(-1));
        events.emplace_back(r.code, q);
        if (auto it = committed.find(q); it != committed.end()) {
          c.reply(r, 0, {}, {{"offset", std::to_string(it->second)}});
        } else {
          c.reply(r, kRespQueryNotFound);
        }
        return;
      }
      case kCodeGetMinOffset:
        offsetCalls.push_back(r);
        c.reply(r, 0, {}, {{"offset", std::to_string(minOffset)}});
        return;
      case kCodeGetMaxOffset:
        offsetCalls.push_back(r);
        c.reply(r, 0, {}, {{"offset", std::to_string(maxOffset)}});
        return;
      case kCodePullMessage: {
        pulls.push_back(r);
        auto q = static_cast<std::int32_t>(r.extInt("queueId").value_or(-1));
        auto& script = pullScript[q];
        if (!script.empty()) {
          auto fn = std::move(script.front());
          script.pop_front();
          fn(c, r);
        }
        return;  // else held: a long poll with nothing new
      }
      case kCodeUpdateConsumerOffset: {
        commits.push_back(r);
        auto q = static_cast<std::int32_t>(r.extInt("queueId").value_or(0));
        events.emplace_back(r.code, q);
        if (holdNextCommit) {
          holdNextCommit = false;
          heldCommit = r;
          return;
        }
        if (q == 9) {
          c.reply(r, 26);
          return;
        }
        if (int& d = dropCommits[q]; d != 0) {
          if (d > 0) --d;
        } else {
          committed[q] = r.extInt("commitOffset").value_or(-1);
        }
        c.reply(r, 0);
        return;
      }
      case kCodeUnregisterClient:
        unregisters.push_back(r);
        c.reply(r, 0);
        return;
      default:
        c.reply(r, 3);
    }
  }

  template <typename Pred>
  bool waitFor(Pred pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), pred);
  }

  // Sends NOTIFY_CONSUMER_IDS_CHANGED (oneway) over the client's connection.
  void notifyIdsChanged(const std::string& group) {
    std::lock_guard lock(mu);
    ASSERT_TRUE(conn.has_value());
    RemotingCommand n;
    n.code = kCodeNotifyConsumerIdsChanged;
    n.flag = kFlagOneway;
    n.opaque = 4242;
    n.extFields["consumerGroup"] = group;
    conn->send(n);
  }
};

inline std::string storedMessage(std::int32_t queueId, std::int64_t offset, const std::string& body,
                          std::map<std::string, std::string> props) {
  StoredSpec s;
  s.topic = kTopic;
  s.queueId = queueId;
  s.queueOffset = offset;
  s.physicalOffset = 1000 + offset * 100;
  s.body = body;
  s.bodyCrc = bodyCrc(body);
  s.properties = encodeProperties(props);
  return storedRecord(s);
}

inline PullResponder found(std::string body, std::int64_t next) {
  return [body = std::move(body), next](PeerConnection& c, const RemotingCommand& r) {
    c.reply(r, 0, body,
            {{"nextBeginOffset", std::to_string(next)},
             {"minOffset", "0"},
             {"maxOffset", std::to_string(next)},
             {"suggestWhichBrokerId", "0"}});
  };
}

inline PullResponder status(std::int32_t code, std::int64_t next) {
  return [code, next](PeerConnection& c, const RemotingCommand& r) {
    c.reply(r, code, {},
            {{"nextBeginOffset", std::to_string(next)},
             {"minOffset", "0"},
             {"maxOffset", std::to_string(next)},
             {"suggestWhichBrokerId", "0"}});
  };
}

inline std::unique_ptr<RocketmqClient> clientFor(const std::string& ns, const std::string& id) {
  ClientOptions o;
  o.namesrvAddrs = ns;
  o.clientId = id;
  o.routeRefreshMs = 0;
  auto c = RocketmqClient::create(o);
  EXPECT_TRUE(c.isOk());
  return std::move(c).value();
}

inline ConsumerOptions options(const std::string& expression = "*") {
  ConsumerOptions o;
  o.group = "g1";
  o.subscriptions = {{kTopic, expression}};
  o.fromWhere = ConsumeFromWhere::kFirstOffset;
  o.heartbeatIntervalMs = 3600000;  // only the start heartbeat and explicit triggers
  o.rebalanceIntervalMs = 3600000;
  return o;
}

inline std::vector<PulledMessage> pollAtLeast(PullConsumer& c, std::size_t n) {
  std::vector<PulledMessage> all;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (all.size() < n && std::chrono::steady_clock::now() < deadline) {
    auto r = c.poll(100, std::chrono::milliseconds(200));
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    if (!r.isOk()) break;
    for (auto& m : *r) all.push_back(std::move(m));
  }
  return all;
}


// Polls until `n` queues are assigned and each has a pull outstanding at the broker (so its start
// offset is known); false on timeout.
inline bool waitUntilPulling(PullConsumer& c, FakeBroker& fake, std::size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = c.poll(100, std::chrono::milliseconds(20));
    if (!r.isOk()) return false;
    if (c.assignment().size() != n) continue;
    std::lock_guard lock(fake.mu);
    std::set<std::int64_t> pulling;
    for (const auto& p : fake.pulls) pulling.insert(p.extInt("queueId").value_or(-1));
    if (pulling.size() >= n) return true;
  }
  return false;
}

// Counts events with `code` for `queue` at or after index `from`.
inline std::size_t countEvents(const FakeBroker& fake, std::int32_t code, std::int32_t queue,
                               std::size_t from = 0) {
  std::size_t n = 0;
  for (std::size_t i = from; i < fake.events.size(); ++i) {
    if (fake.events[i] == std::make_pair(code, queue)) ++n;
  }
  return n;
}

}  // namespace ferry::rocketmq::testing
