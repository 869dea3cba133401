// Where the broker tests find their cluster: scripts/services/rocketmq's cluster A (and S for ACL)
// by default; the rocketmq_compat label points the same tests at the 4.9.x and 5.5.x clusters.
#pragma once

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rocketmq/client.h"
#include "rocketmq/consumer.h"
#include "rocketmq/remoting.h"

namespace ferry::rocketmq::testenv {

inline std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// The cluster (and broker) name of the plain cluster: topics are created there.
inline std::string cluster() { return envOr("FERRY_ROCKETMQ_CLUSTER", "ferry-a"); }
// The cluster (and broker) name of the secured cluster.
inline std::string secureCluster() { return envOr("FERRY_ROCKETMQ_SECURE_CLUSTER", "ferry-s"); }

// The release the cluster runs ("4.9.7", "5.5.0"; the compat label sets FERRY_ROCKETMQ_VERSION),
// 5.3.3 by default.
inline std::string expectedVersion() { return envOr("FERRY_ROCKETMQ_VERSION", "5.3.3"); }

inline std::string randomSuffix() {
  std::random_device rd;
  std::mt19937_64 gen(rd());
  return std::to_string(gen() % 100000000000ULL);
}

// One raw PULL_MESSAGE (no group membership) of up to `maxNums` messages of `queue` from
// `offset`. The broker acknowledges a send once the commit log has it and fills the consume
// queue asynchronously, so a pull right after a send may answer 19 (PULL_NOT_FOUND): asked again
// for up to 10 s. Returns the last answer.
inline Result<RemotingCommand> pullOnce(RocketmqClient& client, const MessageQueue& queue,
                                        std::int64_t offset, int maxNums) {
  auto addr = client.brokerAddress(queue.brokerName);
  if (!addr.isOk()) return addr.status();
  RemotingCommand pull;
  pull.code = kCodePullMessage;
  pull.extFields = {{"consumerGroup", "ferry-pull-check"},
                    {"topic", queue.topic},
                    {"queueId", std::to_string(queue.queueId)},
                    {"queueOffset", std::to_string(offset)},
                    {"maxMsgNums", std::to_string(maxNums)},
                    {"sysFlag", std::to_string(kPullFlagSubscription)},
                    {"commitOffset", "0"},
                    {"suspendTimeoutMillis", "0"},
                    {"subscription", "*"},
                    {"subVersion", "0"},
                    {"expressionType", "TAG"},
                    {"bname", queue.brokerName}};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto r = client.invoke(*addr, pull, 10000);
  while (r.isOk() && r->code == kRespPullNotFound && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r = client.invoke(*addr, pull, 10000);
  }
  return r;
}

// Pulls `count` messages of `queue` from `offset` (decoded), for up to 10 s. Returns what it got.
inline std::vector<StoredMessage> pullStored(RocketmqClient& client, const MessageQueue& queue,
                                             std::int64_t offset, std::size_t count) {
  std::vector<StoredMessage> out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (out.size() < count && std::chrono::steady_clock::now() < deadline) {
    auto r = pullOnce(client, queue, offset, 32);
    if (r.isOk() && r->code == 0) {
      StoredDecode d = decodeStoredMessages(r->body);
      for (auto& m : d.messages) {
        offset = m.queueOffset + 1;
        out.push_back(std::move(m));
      }
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return out;
}

}  // namespace ferry::rocketmq::testenv
