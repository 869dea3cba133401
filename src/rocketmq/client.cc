// RocketmqClient: connections are created lazily under mu_ and then used lock-free (their state
// lives on the io thread). The synchronous calls are built on the async ones plus a promise, so
// the deadline sweep is the single place that enforces timeouts.
#include "rocketmq/client.h"

#include "core/thread.h"
#include "rocketmq/acl.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <set>

#include "core/logging.h"

namespace ferry::rocketmq {
namespace {

std::shared_ptr<spdlog::logger> log() {
  static auto l = core::logger("rocketmq");
  return l;
}

// First non-loopback IPv4 address of this host, else 127.0.0.1 (used only in the client id).
std::string localIp() {
  std::string ip = "127.0.0.1";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return ip;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN] = {};
    auto* sin = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf) == nullptr) continue;
    if (std::string_view(buf).starts_with("127.")) continue;
    ip = buf;
    break;
  }
  freeifaddrs(list);
  return ip;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

std::vector<std::string> splitAddresses(const std::string& list) {
  std::vector<std::string> out;
  std::string_view rest = list;
  while (!rest.empty()) {
    auto pos = rest.find_first_of(";,");
    std::string item = trim(rest.substr(0, pos));
    if (!item.empty()) out.push_back(std::move(item));
    if (pos == std::string_view::npos) break;
    rest.remove_prefix(pos + 1);
  }
  return out;
}

Result<std::unique_ptr<RocketmqClient>> RocketmqClient::create(ClientOptions options) {
  auto namesrvs = splitAddresses(options.namesrvAddrs);
  if (namesrvs.empty()) {
    return Status::invalidArgument("rocketmq: no NameServer address given (namesrvAddrs '" +
                                   options.namesrvAddrs + "')");
  }
  if (options.instanceName.empty()) {
    options.instanceName =
        std::to_string(::getpid()) + "#" +
        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  if (options.clientId.empty()) options.clientId = localIp() + "@" + options.instanceName;
  if (options.requestTimeoutMs <= 0) options.requestTimeoutMs = 3000;
  if (options.connectTimeoutMs <= 0) options.connectTimeoutMs = 3000;
  if (options.sweepIntervalMs <= 0) options.sweepIntervalMs = 10;
  return std::unique_ptr<RocketmqClient>(
      new RocketmqClient(std::move(options), std::move(namesrvs)));
}

RocketmqClient::RocketmqClient(ClientOptions options, std::vector<std::string> namesrvs)
    : options_(std::move(options)),
      namesrvs_(std::move(namesrvs)),
      work_(asio::make_work_guard(io_)),
      sweepTimer_(io_),
      refreshTimer_(io_) {
  std::promise<void> started;
  thread_ = core::namedThread("rmq-io", [this, &started] {
    ioThreadId_ = std::this_thread::get_id();
    started.set_value();
    run();
  });
  started.get_future().wait();
  asio::post(io_, [this] {
    scheduleSweep();
    scheduleRouteRefresh();
  });
}

RocketmqClient::~RocketmqClient() {
  std::map<std::string, std::shared_ptr<Connection>> connections;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    connections = connections_;
  }
  std::promise<void> done;
  asio::post(io_, [&] {
    sweepTimer_.cancel();
    refreshTimer_.cancel();
    for (auto& [addr, c] : connections) c->shutdown();
    done.set_value();
  });
  done.get_future().wait();
  work_.reset();
  thread_.join();
}

void RocketmqClient::run() {
  for (;;) {
    try {
      io_.run();
      return;
    } catch (const std::exception& e) {
      // A handler must not throw; keep the io thread alive if one does.
      log()->error("rocketmq io thread: unexpected exception: {}", e.what());
    }
  }
}

void RocketmqClient::scheduleSweep() {
  sweepTimer_.expires_after(std::chrono::milliseconds(options_.sweepIntervalMs));
  sweepTimer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    std::vector<std::shared_ptr<Connection>> conns;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      for (auto& [addr, c] : connections_) conns.push_back(c);
    }
    const auto now = Connection::Clock::now();
    for (auto& c : conns) c->sweepTimeouts(now);
    scheduleSweep();
  });
}

void RocketmqClient::scheduleRouteRefresh() {
  if (options_.routeRefreshMs <= 0) return;
  refreshTimer_.expires_after(std::chrono::milliseconds(options_.routeRefreshMs));
  refreshTimer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    refreshRoutesAsync();
    scheduleRouteRefresh();
  });
}

void RocketmqClient::refreshRoutesAsync() {
  std::vector<std::string> topics;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    for (auto& [t, r] : routes_) topics.push_back(t);
  }
  const std::string ns = namesrvs_[namesrvIndex_.load() % namesrvs_.size()];
  for (const auto& topic : topics) {
    RemotingCommand req;
    req.code = kCodeGetRouteInfoByTopic;
    req.extFields["topic"] = topic;
    invokeAsync(ns, std::move(req), options_.requestTimeoutMs,
                [this, topic](Result<RemotingCommand> r) {
                  if (!r.isOk()) {
                    log()->debug("route refresh of {} failed: {}", topic, r.status().toString());
                    namesrvIndex_.fetch_add(1);
                    return;
                  }
                  if (r->code != kRespSuccess) return;  // keep the last known route
                  auto route = parseTopicRoute(topic, r->body);
                  if (!route.isOk()) return;
                  rememberBrokers(route->brokerDatas);
                  std::lock_guard lock(mu_);
                  routes_[topic] = std::move(route).value();
                });
  }
}

std::shared_ptr<Connection> RocketmqClient::connection(const std::string& address) {
  std::lock_guard lock(mu_);
  auto it = connections_.find(address);
  if (it != connections_.end()) return it->second;
  ConnectionContext ctx;
  ctx.nextOpaque = [this] { return nextOpaque_.fetch_add(1, std::memory_order_relaxed); };
  ctx.handlerFor = [this](std::int32_t code) { return handlerFor(code); };
  ctx.serializeType = options_.serializeType;
  ctx.connectTimeout = std::chrono::milliseconds(options_.connectTimeoutMs);
  ctx.maxBackoff = std::chrono::milliseconds(std::max<std::int64_t>(options_.reconnectBackoffMaxMs, 100));
  auto conn = std::make_shared<Connection>(io_, address, std::move(ctx));
  if (stopping_) {
    asio::post(io_, [conn] { conn->shutdown(); });
  }
  connections_[address] = conn;
  return conn;
}

RequestHandler RocketmqClient::handlerFor(std::int32_t code) {
  std::lock_guard lock(mu_);
  auto it = handlers_.find(code);
  return it == handlers_.end() ? RequestHandler() : it->second;
}

void RocketmqClient::sign(RemotingCommand& request) const {
  if (options_.accessKey.empty()) return;
  signRequest(request, AclCredentials{options_.accessKey, options_.secretKey, options_.securityToken});
}

void RocketmqClient::setRequestHandler(std::int32_t code, RequestHandler handler) {
  std::lock_guard lock(mu_);
  handlers_[code] = std::move(handler);
}

void RocketmqClient::runAfter(std::chrono::milliseconds delay, std::function<void()> fn) {
  auto timer = std::make_shared<asio::steady_timer>(io_, delay);
  timer->async_wait([timer, fn = std::move(fn)](const asio::error_code&) { fn(); });
}

void RocketmqClient::invokeAsync(const std::string& address, RemotingCommand request,
                                 std::int64_t timeoutMs, ResponseCallback callback) {
  sign(request);
  // An ACL refusal gets the identity the request was sent with and the permission it needs
  // appended to the broker's reason, so the error names the access key (or says there was none).
  // A 4.x broker answers refusals with 1 SYSTEM_ERROR (its AclException as the remark), which
  // every caller would take for a transient failure: it is turned into the 16 NO_PERMISSION a
  // 5.x broker sends, so refusals look (and are handled) the same on every version.
  callback = [cb = std::move(callback), who = options_.accessKey,
              code = request.code](Result<RemotingCommand> r) {
    if (r.isOk() && isAclRefusal(*r)) {
      std::string note = " [";
      if (r->code != kRespNoPermission) {
        note += "4.x ACL refusal, answered as code " + std::to_string(r->code) + "; ";
        r->code = kRespNoPermission;
      }
      note += who.empty() ? "sent unsigned: no access key configured"
                          : "signed with access key '" + who + "'";
      if (const char* perm = requiredPermission(code); *perm != '\0') {
        note += std::string("; request code ") + std::to_string(code) + " needs " + perm +
                " permission";
      }
      r->remark = r->remark.value_or("") + note + "]";
    }
    cb(std::move(r));
  };
  connection(address)->invokeAsync(std::move(request),
                                   std::chrono::milliseconds(timeoutOrDefault(timeoutMs)),
                                   std::move(callback));
}

void RocketmqClient::brokerVersionAsync(const std::string& address,
                                        std::function<void(Result<std::int32_t>)> callback) {
  if (const std::int32_t v = knownVersion(address); v >= 0) {
    callback(v);
    return;
  }
  RemotingCommand probe;
  probe.code = kCodeGetBrokerRuntimeInfo;
  invokeAsync(address, std::move(probe), -1,
              [cb = std::move(callback), address](Result<RemotingCommand> r) {
                if (!r.isOk()) {
                  cb(r.status().withContext("probing the version of RocketMQ at " + address));
                  return;
                }
                cb(r->version);
              });
}

Result<std::int32_t> RocketmqClient::brokerVersion(const std::string& address) {
  if (const std::int32_t v = knownVersion(address); v >= 0) return v;
  if (onIoThread()) {
    return Status::internal("rocketmq: synchronous brokerVersion called from the io thread");
  }
  auto promise = std::make_shared<std::promise<Result<std::int32_t>>>();
  auto future = promise->get_future();
  brokerVersionAsync(address, [promise](Result<std::int32_t> r) { promise->set_value(std::move(r)); });
  return future.get();
}

void RocketmqClient::invokeOneway(const std::string& address, RemotingCommand request) {
  sign(request);
  connection(address)->invokeOneway(std::move(request));
}

Result<RemotingCommand> RocketmqClient::invoke(const std::string& address,
                                               RemotingCommand request, std::int64_t timeoutMs) {
  if (onIoThread()) {
    return Status::internal("rocketmq: synchronous invoke called from the io thread (a callback)");
  }
  auto promise = std::make_shared<std::promise<Result<RemotingCommand>>>();
  auto future = promise->get_future();
  invokeAsync(address, std::move(request), timeoutMs,
              [promise](Result<RemotingCommand> r) { promise->set_value(std::move(r)); });
  return future.get();
}

Result<RemotingCommand> RocketmqClient::invokeNamesrv(const RemotingCommand& request,
                                                      std::int64_t timeoutMs) {
  const std::size_t start = namesrvIndex_.load();
  Status last = Status::unavailable("rocketmq: no NameServer");
  for (std::size_t i = 0; i < namesrvs_.size(); ++i) {
    const std::size_t idx = (start + i) % namesrvs_.size();
    auto r = invoke(namesrvs_[idx], request, timeoutMs);
    if (r.isOk()) {
      namesrvIndex_.store(idx);
      return r;
    }
    if (r.status().code() == StatusCode::kCancelled ||
        r.status().code() == StatusCode::kInternal) {
      return r;
    }
    last = r.status();
  }
  if (namesrvs_.size() == 1) return last;
  return Status(last.code(), "no NameServer of '" + options_.namesrvAddrs +
                                 "' answered; last error: " + last.message());
}

void RocketmqClient::rememberBrokers(const std::vector<BrokerData>& brokers) {
  std::lock_guard lock(mu_);
  for (const auto& b : brokers) {
    if (auto m = b.master()) brokerMasters_[b.brokerName] = *m;
  }
}

Result<TopicRoute> RocketmqClient::queryRoute(const std::string& topic, bool refresh) {
  if (!refresh) {
    std::lock_guard lock(mu_);
    auto it = routes_.find(topic);
    if (it != routes_.end()) return it->second;
  }
  RemotingCommand req;
  req.code = kCodeGetRouteInfoByTopic;
  req.extFields["topic"] = topic;
  FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, invokeNamesrv(req));
  FERRY_RETURN_IF_ERROR(responseStatus(resp, "route of topic '" + topic + "'"));
  FERRY_ASSIGN_OR_RETURN(TopicRoute route, parseTopicRoute(topic, resp.body));
  if (route.staticQueueMapping) {
    return Status::incompatible("topic '" + topic +
                                "' is a static (logically mapped) topic, which ferry does not "
                                "support");
  }
  rememberBrokers(route.brokerDatas);
  std::lock_guard lock(mu_);
  routes_[topic] = route;
  return route;
}

void RocketmqClient::invalidateRoute(const std::string& topic) {
  std::lock_guard lock(mu_);
  routes_.erase(topic);
}

Result<ClusterInfo> RocketmqClient::clusterInfo() {
  RemotingCommand req;
  req.code = kCodeGetBrokerClusterInfo;
  FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, invokeNamesrv(req));
  FERRY_RETURN_IF_ERROR(responseStatus(resp, "cluster info"));
  FERRY_ASSIGN_OR_RETURN(ClusterInfo info, parseClusterInfo(resp.body));
  std::vector<BrokerData> brokers;
  for (auto& [name, b] : info.brokers) brokers.push_back(b);
  rememberBrokers(brokers);
  return info;
}

Result<std::string> RocketmqClient::brokerAddress(const std::string& brokerName) {
  {
    std::lock_guard lock(mu_);
    auto it = brokerMasters_.find(brokerName);
    if (it != brokerMasters_.end()) return it->second;
  }
  FERRY_ASSIGN_OR_RETURN(ClusterInfo info, clusterInfo());
  auto it = info.brokers.find(brokerName);
  if (it == info.brokers.end()) {
    return Status::notFound("rocketmq: broker '" + brokerName + "' is not registered with the "
                            "NameServer");
  }
  auto master = it->second.master();
  if (!master) {
    return Status::unavailable("rocketmq: broker '" + brokerName + "' has no master (id 0)");
  }
  return *master;
}

Status RocketmqClient::createTopic(const std::string& topic, int queues,
                                   const std::vector<std::string>& clusterOrBrokerNames) {
  if (topic.empty() || queues <= 0) {
    return Status::invalidArgument("rocketmq createTopic: need a topic name and queues > 0");
  }
  FERRY_ASSIGN_OR_RETURN(ClusterInfo info, clusterInfo());
  std::set<std::string> brokers;
  if (clusterOrBrokerNames.empty()) {
    for (auto& [name, b] : info.brokers) brokers.insert(name);
  }
  for (const auto& n : clusterOrBrokerNames) {
    if (auto c = info.clusters.find(n); c != info.clusters.end()) {
      brokers.insert(c->second.begin(), c->second.end());
    } else if (info.brokers.count(n) != 0) {
      brokers.insert(n);
    } else {
      return Status::notFound("rocketmq createTopic: '" + n +
                              "' is neither a cluster nor a broker known to the NameServer");
    }
  }
  if (brokers.empty()) return Status::unavailable("rocketmq createTopic: no broker registered");
  for (const auto& name : brokers) {
    auto master = info.brokers[name].master();
    if (!master) return Status::unavailable("rocketmq createTopic: broker '" + name +
                                            "' has no master");
    RemotingCommand req;
    req.code = kCodeUpdateAndCreateTopic;
    req.extFields["topic"] = topic;
    req.extFields["defaultTopic"] = "TBW102";
    req.extFields["readQueueNums"] = std::to_string(queues);
    req.extFields["writeQueueNums"] = std::to_string(queues);
    req.extFields["perm"] = std::to_string(kPermRead | kPermWrite);
    req.extFields["topicFilterType"] = "SINGLE_TAG";
    req.extFields["topicSysFlag"] = "0";
    req.extFields["order"] = "false";
    FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, invoke(*master, std::move(req)));
    FERRY_RETURN_IF_ERROR(
        responseStatus(resp, "create topic '" + topic + "' on broker '" + name + "'"));
  }
  // The broker registers the topic with the NameServer asynchronously: wait for the route.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.createTopicWaitMs);
  Status last;
  for (;;) {
    auto route = queryRoute(topic, true);
    if (route.isOk()) {
      std::size_t ready = 0;
      for (const auto& q : route->queueDatas) {
        if (brokers.count(q.brokerName) != 0 && q.writeQueueNums == queues) ++ready;
      }
      if (ready == brokers.size()) return Status::ok();
      last = Status::unavailable("route lists " + std::to_string(ready) + " of " +
                                 std::to_string(brokers.size()) + " brokers");
    } else {
      last = route.status();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::timeout("rocketmq createTopic: topic '" + topic +
                             "' was created but its route did not appear in time: " +
                             last.toString());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace ferry::rocketmq
