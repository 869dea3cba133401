// RocketmqClient: one client instance talking to RocketMQ NameServers and Brokers over the
// remoting protocol (§1, §6.1, §6.2, §6.6). It owns one io thread, the connections (one per
// remote address, shared by every producer/consumer built on the client), the opaque counter,
// the route cache (refreshed every 30 s) and the handlers of broker-initiated requests.
//
// Threading: all public methods are thread-safe. The synchronous ones (invoke, queryRoute,
// createTopic, ...) block the calling thread only and must NOT be called from the io thread (that
// is, from a callback or request handler): they return kInternal if they are. Async callbacks and
// request handlers run on the io thread and must not block.
//
// Lifetime: the destructor fails every pending request with kCancelled, stops and joins the io
// thread. Objects built on the client (Producer, ...) must be destroyed first.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rocketmq/connection.h"
#include "rocketmq/remoting.h"
#include "rocketmq/routes.h"
#include "ferry/result.h"

namespace ferry::rocketmq {

// Request codes the client layer uses (§2.1).
inline constexpr std::int32_t kCodeSendMessage = 10;
inline constexpr std::int32_t kCodeUpdateAndCreateTopic = 17;
inline constexpr std::int32_t kCodeGetBrokerRuntimeInfo = 28;
inline constexpr std::int32_t kCodeNotifyConsumerIdsChanged = 40;
inline constexpr std::int32_t kCodeGetRouteInfoByTopic = 105;
inline constexpr std::int32_t kCodeGetBrokerClusterInfo = 106;
inline constexpr std::int32_t kCodeSendMessageV2 = 310;
inline constexpr std::int32_t kCodeSendBatchMessage = 320;
// Response codes (§3).
inline constexpr std::int32_t kRespSuccess = 0;
inline constexpr std::int32_t kRespSystemBusy = 2;  // flow control: the request was not run
inline constexpr std::int32_t kRespNoPermission = 16;
inline constexpr std::int32_t kRespTopicNotExist = 17;

struct ClientOptions {
  std::string namesrvAddrs;  // "host:port;host:port" (',' also accepted)
  std::string instanceName;  // default "<pid>#<start ns>"
  std::string clientId;      // default "<ip>@<instanceName>"
  std::int64_t requestTimeoutMs = 3000;
  std::int64_t connectTimeoutMs = 3000;
  // Failed connection attempts to one address back off from 100 ms, doubling up to this. The
  // connectors use 500 ms so that a broker coming back is seen within about half a second.
  std::int64_t reconnectBackoffMaxMs = 5000;
  std::int64_t routeRefreshMs = 30000;
  std::int64_t sweepIntervalMs = 10;        // how often deadlines are checked
  std::int64_t createTopicWaitMs = 15000;   // how long createTopic waits for the route
  SerializeType serializeType = SerializeType::kJson;
  // ACL: when accessKey is set every request is signed (acl.h).
  std::string accessKey;
  std::string secretKey;
  std::string securityToken;
};

class RocketmqClient {
 public:
  // Starts the io thread. Fails with kInvalidArgument when no NameServer address is given.
  static Result<std::unique_ptr<RocketmqClient>> create(ClientOptions options);
  ~RocketmqClient();
  RocketmqClient(const RocketmqClient&) = delete;
  RocketmqClient& operator=(const RocketmqClient&) = delete;

  const ClientOptions& options() const { return options_; }
  const std::string& clientId() const { return options_.clientId; }
  const std::vector<std::string>& namesrvAddresses() const { return namesrvs_; }

  // The shared connection to `address` ("host:port"), created on first use (not yet connected).
  std::shared_ptr<Connection> connection(const std::string& address);

  // Request/response with `address`. The result is the response whatever its code (use
  // responseStatus() to map it), or kTimeout / kUnavailable / kCancelled. timeoutMs < 0 means
  // options().requestTimeoutMs.
  Result<RemotingCommand> invoke(const std::string& address, RemotingCommand request,
                                 std::int64_t timeoutMs = -1);
  void invokeAsync(const std::string& address, RemotingCommand request, std::int64_t timeoutMs,
                   ResponseCallback callback);
  void invokeOneway(const std::string& address, RemotingCommand request);
  // Runs `fn` on the io thread once `delay` has passed (also while the client stops: the io
  // thread runs until every such timer has fired). Any thread.
  void runAfter(std::chrono::milliseconds delay, std::function<void()> fn);
  // invoke() on the NameServers in turn (starting with the last one that answered) until one
  // answers; transport errors move on to the next.
  Result<RemotingCommand> invokeNamesrv(const RemotingCommand& request, std::int64_t timeoutMs = -1);

  // The version of the server at `address` (an MQVersion ordinal; mqVersionName() spells it):
  // the `version` field of the last response read on the current connection to it, else that of
  // the answer to a probe (GET_BROKER_RUNTIME_INFO 28; every answer carries the version, a
  // refusal or "not supported" too). So a version is probed at most once per connection while
  // answers keep coming, and again after a reconnect (the server may have been upgraded).
  // Fails only when the server cannot be reached.
  Result<std::int32_t> brokerVersion(const std::string& address);
  void brokerVersionAsync(const std::string& address,
                          std::function<void(Result<std::int32_t>)> callback);
  // The cached version only, -1 when none is known. Never blocks; any thread.
  std::int32_t knownVersion(const std::string& address) { return connection(address)->peerVersion(); }
  // True when requests are signed (ClientOptions::accessKey set).
  bool signsRequests() const { return !options_.accessKey.empty(); }

  // Handler for a broker-initiated request code (e.g. NOTIFY_CONSUMER_IDS_CHANGED 40). Codes
  // without one are answered with 3 REQUEST_CODE_NOT_SUPPORTED (oneway ones are dropped).
  void setRequestHandler(std::int32_t code, RequestHandler handler);

  // The route of `topic` (GET_ROUTEINFO_BY_TOPIC 105), from the cache unless `refresh`. A topic
  // the NameServer does not know gives kNotFound. Queried topics stay cached and are refreshed in
  // the background every routeRefreshMs.
  Result<TopicRoute> queryRoute(const std::string& topic, bool refresh = false);
  // Drops `topic` from the cache (after a send said the route is stale).
  void invalidateRoute(const std::string& topic);
  // GET_BROKER_CLUSTER_INFO (106).
  Result<ClusterInfo> clusterInfo();
  // Master (brokerId 0) address of `brokerName`, from the routes seen so far or cluster info.
  Result<std::string> brokerAddress(const std::string& brokerName);

  // Creates (or updates) `topic` with `queues` read and write queues (perm 6) on every master
  // broker of the given clusters or broker names (empty: every broker of every cluster), with
  // UPDATE_AND_CREATE_TOPIC (17); then waits until the NameServer's route lists all of them.
  Status createTopic(const std::string& topic, int queues,
                     const std::vector<std::string>& clusterOrBrokerNames = {});

 private:
  explicit RocketmqClient(ClientOptions options, std::vector<std::string> namesrvs);
  void run();
  void scheduleSweep();
  void scheduleRouteRefresh();
  void refreshRoutesAsync();
  void rememberBrokers(const std::vector<BrokerData>& brokers);
  bool onIoThread() const { return std::this_thread::get_id() == ioThreadId_; }
  RequestHandler handlerFor(std::int32_t code);
  void sign(RemotingCommand& request) const;  // ACL, when options_.accessKey is set
  std::int64_t timeoutOrDefault(std::int64_t t) const {
    return t < 0 ? options_.requestTimeoutMs : t;
  }

  const ClientOptions options_;
  const std::vector<std::string> namesrvs_;
  std::atomic<std::int32_t> nextOpaque_{0};
  std::atomic<std::size_t> namesrvIndex_{0};

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  asio::steady_timer sweepTimer_;    // io thread
  asio::steady_timer refreshTimer_;  // io thread
  std::thread thread_;
  std::thread::id ioThreadId_;

  std::mutex mu_;  // guards the members below
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Connection>> connections_;
  std::map<std::int32_t, RequestHandler> handlers_;
  std::map<std::string, TopicRoute> routes_;
  std::map<std::string, std::string> brokerMasters_;  // brokerName -> master address
};

// Splits "a:1;b:2" (or comma-separated) into addresses, trimming blanks.
std::vector<std::string> splitAddresses(const std::string& list);

}  // namespace ferry::rocketmq
