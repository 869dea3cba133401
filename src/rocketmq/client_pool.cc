// Shared RocketmqClient pool (see client_pool.h).
#include "rocketmq/client_pool.h"

#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>

namespace ferry::rocketmq {
namespace {

std::mutex gMu;
std::map<std::string, std::weak_ptr<RocketmqClient>> gPool;
std::atomic<std::uint64_t> gNext{0};

std::string poolKey(const ClientOptions& o) {
  std::string k = o.namesrvAddrs;
  k += '\x01';
  k += std::to_string(o.requestTimeoutMs);
  k += '\x01';
  k += std::to_string(o.connectTimeoutMs);
  k += '\x01';
  k += std::to_string(o.reconnectBackoffMaxMs);
  k += '\x01';
  k += std::to_string(static_cast<int>(o.serializeType));
  for (const std::string* part : {&o.accessKey, &o.secretKey, &o.securityToken}) {
    k += '\x01';
    k += *part;
  }
  return k;
}

}  // namespace

Result<std::shared_ptr<RocketmqClient>> sharedClient(const ClientOptions& options) {
  const std::string key = poolKey(options);
  std::lock_guard lock(gMu);
  if (auto it = gPool.find(key); it != gPool.end())
    if (auto alive = it->second.lock()) return alive;
  ClientOptions o = options;
  o.instanceName = "ferry-shared-" + std::to_string(::getpid()) + "-" + std::to_string(gNext.fetch_add(1));
  o.clientId.clear();
  FERRY_ASSIGN_OR_RETURN(auto made, RocketmqClient::create(o));
  std::shared_ptr<RocketmqClient> client(std::move(made));
  gPool[key] = client;
  // Drop entries whose clients are gone.
  for (auto it = gPool.begin(); it != gPool.end();) it = it->second.expired() ? gPool.erase(it) : std::next(it);
  return client;
}

std::size_t sharedClientCount() {
  std::lock_guard lock(gMu);
  std::size_t n = 0;
  for (const auto& [k, w] : gPool) n += w.expired() ? 0 : 1;
  return n;
}

}  // namespace ferry::rocketmq
