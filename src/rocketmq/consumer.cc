// PullConsumer (see consumer.h). State lives in Impl, shared with the io-thread callbacks through
// weak pointers. Per assigned queue a QueueState carries the next pull offset, an epoch (bumped by
// seek so a response to an older pull is discarded) and flags saying whether a pull is in flight,
// waiting for buffer room (paused) or backing off (delayed, handled by the membership thread); and
// its commit state: the floor below which commits are refused, the last commit of this assignment
// and whether the broker was seen holding it (confirmed).
#include "rocketmq/consumer.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <future>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/allocation.h"
#include "core/thread.h"
#include "rocketmq/admin.h"
#include "rocketmq/fastjson.h"
#include "core/clock.h"
#include "core/logging.h"

namespace ferry::rocketmq {
namespace {

std::shared_ptr<spdlog::logger> log() {
  static auto l = core::logger("rocketmq");
  return l;
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

const char* fromWhereName(ConsumeFromWhere w) {
  switch (w) {
    case ConsumeFromWhere::kFirstOffset: return "CONSUME_FROM_FIRST_OFFSET";
    case ConsumeFromWhere::kTimestamp: return "CONSUME_FROM_TIMESTAMP";
    default: return "CONSUME_FROM_LAST_OFFSET";
  }
}

bool isAll(const std::string& expression) {
  std::string t = trimmed(expression);
  return t.empty() || t == "*";
}

std::size_t messageBytes(const PulledMessage& m) {
  std::size_t n = m.message.body.size() + m.message.topic.size() + 128;
  for (const auto& [k, v] : m.message.properties) n += k.size() + v.size() + 2;
  return n;
}

}  // namespace

std::vector<std::string> parseTagExpression(const std::string& expression) {
  std::vector<std::string> tags;
  if (isAll(expression)) return tags;
  std::string_view rest = expression;
  for (;;) {
    auto pos = rest.find("||");
    std::string tag = trimmed(rest.substr(0, pos));
    if (!tag.empty() && std::find(tags.begin(), tags.end(), tag) == tags.end()) {
      tags.push_back(std::move(tag));
    }
    if (pos == std::string_view::npos) break;
    rest.remove_prefix(pos + 2);
  }
  return tags;
}

std::string heartbeatBody(const std::string& clientId, const ConsumerOptions& options,
                          std::int64_t subVersion) {
  nlohmann::json subs = nlohmann::json::array();
  for (const auto& s : options.subscriptions) {
    auto tags = parseTagExpression(s.expression);
    nlohmann::json codes = nlohmann::json::array();
    for (const auto& t : tags) codes.push_back(static_cast<std::int32_t>(tagHash(t)));
    subs.push_back({{"classFilterMode", false},
                    {"topic", s.topic},
                    {"subString", isAll(s.expression) ? std::string("*") : s.expression},
                    {"tagsSet", tags},
                    {"codeSet", codes},
                    {"subVersion", subVersion},
                    {"expressionType", "TAG"}});
  }
  nlohmann::json consumer = {{"groupName", options.group},
                             // What DefaultLitePullConsumer sends (pull-style consumption).
                             {"consumeType", "CONSUME_ACTIVELY"},
                             {"messageModel", "CLUSTERING"},
                             {"consumeFromWhere", fromWhereName(options.fromWhere)},
                             {"subscriptionDataSet", subs},
                             {"unitMode", false}};
  nlohmann::json body = {{"clientID", clientId},
                         {"consumerDataSet", nlohmann::json::array({consumer})},
                         {"producerDataSet", nlohmann::json::array()},
                         {"heartbeatFingerprint", 0},
                         {"withoutSub", false}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<MessageQueue> allocateQueues(const std::string& clientId,
                                         std::vector<std::string> members,
                                         std::vector<MessageQueue> all) {
  std::vector<MessageQueue> out;
  if (std::find(members.begin(), members.end(), clientId) == members.end()) return out;
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  // Per topic, as Java does: the queues of one topic become TopicQueue{topic, index in the sorted
  // (topic, brokerName, queueId) order}, so allocateAveragely's (topic, queue) order is Java's.
  std::map<std::string, std::vector<std::size_t>> byTopic;
  for (std::size_t i = 0; i < all.size(); ++i) byTopic[all[i].topic].push_back(i);
  for (const auto& [topic, indices] : byTopic) {
    std::vector<TopicQueue> tqs;
    for (std::size_t k = 0; k < indices.size(); ++k) {
      tqs.push_back({topic, static_cast<std::int32_t>(k)});
    }
    auto alloc = core::allocateAveragely(members, tqs);
    for (const auto& tq : alloc[clientId]) {
      out.push_back(all[indices[static_cast<std::size_t>(tq.queue)]]);
    }
  }
  return out;
}

class PullConsumer::Impl : public std::enable_shared_from_this<Impl> {
 public:
  using Clock = std::chrono::steady_clock;

  struct QueueState {
    MessageQueue mq;
    std::string expression;
    std::vector<std::string> tags;  // empty: every message
    bool active = true;
    bool offsetKnown = false;
    std::int64_t nextOffset = 0;
    std::uint64_t epoch = 0;
    bool inflight = false;
    bool paused = false;
    bool delayed = false;
    bool unreachable = false;    // the last pull failed to reach the broker (logged once)
    std::int32_t undecodable = 0;  // answers in a row whose head message did not decode
    std::string undecodableWhy;    // the degraded report while undecodable >= the bound
    std::int64_t brokerId = 0;
    // Commit state (this assignment only; a revoked queue's state goes with it).
    std::int64_t floor = 0;                 // valid once offsetKnown
    std::optional<std::int64_t> committed;  // last accepted commit
    bool confirmed = true;                  // the broker answered `committed` (or more)
    bool exactOnly = false;                 // lowered by seek / OFFSET_MOVED: only == confirms
    std::uint64_t commitVersion = 0;        // bumps with every accepted commit / seek
  };
  struct PullSpec {
    std::shared_ptr<QueueState> q;
    std::uint64_t epoch = 0;
    std::int64_t offset = 0;
    std::string address;
  };

  Impl(RocketmqClient& client, ConsumerOptions options, RebalanceListener* listener)
      : client_(client),
        options_(std::move(options)),
        listener_(listener),
        subVersion_(core::nowMs()) {}

  Status start();
  Result<std::vector<PulledMessage>> poll(std::size_t max, std::chrono::milliseconds maxWait);
  Status commit(const std::map<MessageQueue, std::int64_t>& offsets);
  std::vector<MessageQueue> assignment() const;
  Status seek(const MessageQueue& queue, std::int64_t offset);
  void close();
  void requestRebalance() {
    {
      std::lock_guard lock(mu_);
      rebalanceRequested_ = true;
    }
    workCv_.notify_all();
  }
  void setWaker(std::function<void()> wake) {
    std::lock_guard lock(wakerMu_);
    waker_ = std::move(wake);
  }
  void setHealthListener(std::function<void(const ConnectionHealth&)> health) {
    std::lock_guard lock(healthMu_);
    health_ = std::move(health);
  }

 private:
  // What a waiting poll() is told (cv_), told to the owner's waker too.
  void notifyOwner() {
    cv_.notify_all();
    std::lock_guard lock(wakerMu_);
    if (waker_) waker_();
  }
  // Tells the health listener about `h` when it differs from the last report (a reconnecting
  // report with another reason is passed on too). Call without mu_ held.
  void reportHealth(const ConnectionHealth& h) {
    std::lock_guard lock(healthMu_);
    if (!health_) return;
    if (healthKnown_ && h.state == lastHealth_.state &&
        (h.state == ConnectionHealth::State::kConnected || h.reason == lastHealth_.reason)) {
      return;
    }
    healthKnown_ = true;
    lastHealth_ = h;
    health_(h);
  }
  // What to report when a broker answered: connected, or degraded while a queue's head message
  // does not decode.
  ConnectionHealth answeredLocked() const {
    for (const auto& [mq, q] : queues_) {
      if (q->undecodable >= options_.undecodableReportAfter)
        return {ConnectionHealth::State::kDegraded, q->undecodableWhy};
    }
    return {};
  }
  void loop();
  std::size_t heartbeat();
  void rebalance();
  Result<std::int64_t> resolveOffset(const MessageQueue& mq);
  void processDue(std::vector<std::shared_ptr<QueueState>> due);
  void applyPending();
  void persist(bool recheckAll);
  // Marks the commits of queues on `brokerName` (every broker when empty) as unconfirmed.
  void unconfirmLocked(const std::string& brokerName) {
    for (auto& [mq, q] : queues_) {
      if (q->committed && (brokerName.empty() || mq.brokerName == brokerName)) q->confirmed = false;
    }
  }
  std::shared_ptr<QueueState> committableLocked(const MessageQueue& mq) const {
    if (auto it = queues_.find(mq); it != queues_.end()) return it->second;
    if (auto it = revoking_.find(mq); it != revoking_.end()) return it->second;
    return nullptr;
  }

  bool bufferFullLocked() const {
    return buffer_.size() >= options_.maxBufferedMessages ||
           bufferedBytes_ >= options_.maxBufferedBytes;
  }
  void delayLocked(const std::shared_ptr<QueueState>& q, std::int64_t ms) {
    q->delayed = true;
    delayed_.emplace(Clock::now() + std::chrono::milliseconds(ms), q);
    workCv_.notify_all();
  }
  void dropBufferedLocked(const MessageQueue& mq) {
    std::deque<PulledMessage> kept;
    bufferedBytes_ = 0;
    for (auto& m : buffer_) {
      if (m.queue() == mq) continue;
      bufferedBytes_ += messageBytes(m);
      kept.push_back(std::move(m));
    }
    buffer_.swap(kept);
  }
  std::optional<std::string> pullAddressLocked(const QueueState& q) const;
  void startPullLocked(const std::shared_ptr<QueueState>& q, std::vector<PullSpec>& out);
  void sendPulls(std::vector<PullSpec> pulls);
  void onPullResponse(const PullSpec& spec, Result<RemotingCommand> r);

  RocketmqClient& client_;
  const ConsumerOptions options_;
  RebalanceListener* const listener_;
  const std::int64_t subVersion_;
  std::map<std::string, std::string> expressions_;  // topic -> expression (set by start)
  std::thread thread_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;      // owner waits in poll()
  std::mutex wakerMu_;              // guards waker_; held while it runs (close() waits for it)
  std::function<void()> waker_;     // setWaker()
  std::mutex healthMu_;             // guards the three below; held while health_ runs
  std::function<void(const ConnectionHealth&)> health_;  // setHealthListener()
  bool healthKnown_ = false;
  ConnectionHealth lastHealth_;
  std::condition_variable workCv_;  // membership thread waits
  bool started_ = false;
  bool closed_ = false;
  bool rebalanceRequested_ = false;
  bool heartbeatRequested_ = false;
  std::optional<std::set<MessageQueue>> pendingTarget_;
  std::set<MessageQueue> publishedTarget_;
  std::map<MessageQueue, std::shared_ptr<QueueState>> queues_;
  // Queues handed to onRevoked: still committable during the callback.
  std::map<MessageQueue, std::shared_ptr<QueueState>> revoking_;
  std::deque<PulledMessage> buffer_;
  std::size_t bufferedBytes_ = 0;
  std::multimap<Clock::time_point, std::shared_ptr<QueueState>> delayed_;
  std::map<std::string, std::map<std::int64_t, std::string>> brokerAddrs_;
  std::set<std::string> heartbeatAddrs_;
  Status heartbeatRefusal_;  // an ACL refusal heartbeat() saw; read by start() before thread_ runs
  std::size_t listBrokerIndex_ = 0;
  // Held by commit() and by the re-send of persist() (before mu_): one UPDATE per queue at a time.
  std::mutex commitMu_;
};

Status PullConsumer::Impl::start() {
  {
    std::lock_guard lock(mu_);
    if (started_ || closed_) {
      return Status::failedPrecondition("rocketmq consumer: start() called twice or after close()");
    }
  }
  if (options_.group.empty()) return Status::invalidArgument("rocketmq consumer: no group");
  if (options_.subscriptions.empty()) {
    return Status::invalidArgument("rocketmq consumer: no subscription");
  }
  if (options_.pullBatchSize <= 0 || options_.longPollingSuspendMs < 0 ||
      options_.pullTimeoutMs <= options_.longPollingSuspendMs ||
      options_.heartbeatIntervalMs <= 0 || options_.rebalanceIntervalMs <= 0 ||
      options_.persistIntervalMs <= 0 || options_.persistRecheckEvery <= 0 ||
      options_.maxBufferedMessages == 0 || options_.maxBufferedBytes == 0) {
    return Status::invalidArgument(
        "rocketmq consumer: pullBatchSize, intervals and buffer bounds must be > 0 and "
        "pullTimeoutMs must exceed longPollingSuspendMs");
  }
  for (const auto& s : options_.subscriptions) {
    if (s.topic.empty()) return Status::invalidArgument("rocketmq consumer: empty topic");
    if (expressions_.count(s.topic) != 0) {
      return Status::invalidArgument("rocketmq consumer: topic '" + s.topic +
                                     "' subscribed twice");
    }
    expressions_[s.topic] = s.expression;
    auto route = client_.queryRoute(s.topic);
    if (!route.isOk()) {
      return route.status().withContext("rocketmq consumer: route of topic '" + s.topic + "'");
    }
  }
  std::weak_ptr<Impl> weak = weak_from_this();
  const std::string group = options_.group;
  client_.setRequestHandler(kCodeNotifyConsumerIdsChanged,
                            [weak, group](const RemotingCommand& request) {
                              auto g = request.ext("consumerGroup");
                              if (auto self = weak.lock(); self && (!g || *g == group)) {
                                log()->debug("consumer group {} changed: rebalancing", group);
                                self->requestRebalance();
                              }
                              RemotingCommand ok;
                              return ok;
                            });
  if (heartbeat() == 0) {
    client_.setRequestHandler(kCodeNotifyConsumerIdsChanged, {});
    if (!heartbeatRefusal_.isOk()) return heartbeatRefusal_;  // ACL: retrying cannot help
    return Status::unavailable("rocketmq consumer: no broker accepted the heartbeat of group '" +
                               options_.group + "'");
  }
  {
    std::lock_guard lock(mu_);
    started_ = true;
    rebalanceRequested_ = true;
  }
  thread_ = core::namedThread("rmq-consumer", [this] { loop(); });
  return Status::ok();
}

void PullConsumer::Impl::loop() {
  auto nextHeartbeat = Clock::now() + std::chrono::milliseconds(options_.heartbeatIntervalMs);
  auto nextRebalance = Clock::now();
  auto nextPersist = Clock::now() + std::chrono::milliseconds(options_.persistIntervalMs);
  std::int64_t persistRounds = 0;
  std::unique_lock lock(mu_);
  while (!closed_) {
    const auto now = Clock::now();
    const bool doHeartbeat = heartbeatRequested_ || now >= nextHeartbeat;
    const bool doRebalance = rebalanceRequested_ || now >= nextRebalance;
    const bool doPersist = now >= nextPersist;
    std::vector<std::shared_ptr<QueueState>> due;
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      due.push_back(delayed_.begin()->second);
      delayed_.erase(delayed_.begin());
    }
    if (doHeartbeat || doRebalance || doPersist || !due.empty()) {
      heartbeatRequested_ = false;
      rebalanceRequested_ = false;
      lock.unlock();
      if (doHeartbeat) {
        heartbeat();
        nextHeartbeat = Clock::now() + std::chrono::milliseconds(options_.heartbeatIntervalMs);
      }
      if (doRebalance) {
        rebalance();
        nextRebalance = Clock::now() + std::chrono::milliseconds(options_.rebalanceIntervalMs);
      }
      processDue(std::move(due));
      if (doPersist) {
        persist(++persistRounds % options_.persistRecheckEvery == 0);
        nextPersist = Clock::now() + std::chrono::milliseconds(options_.persistIntervalMs);
      }
      lock.lock();
      continue;
    }
    auto wake = std::min({nextHeartbeat, nextRebalance, nextPersist});
    if (!delayed_.empty()) wake = std::min(wake, delayed_.begin()->first);
    workCv_.wait_until(lock, wake);
  }
}

std::size_t PullConsumer::Impl::heartbeat() {
  std::set<std::string> addresses;
  std::map<std::string, std::map<std::int64_t, std::string>> brokers;
  std::string lastError;
  for (const auto& [topic, expr] : expressions_) {
    auto route = client_.queryRoute(topic);
    if (!route.isOk()) {
      log()->warn("consumer {}: route of {}: {}", options_.group, topic,
                  route.status().toString());
      lastError = "route of " + topic + ": " + route.status().message();
      continue;
    }
    for (const auto& b : route->brokerDatas) {
      brokers[b.brokerName] = b.brokerAddrs;
      for (const auto& [id, addr] : b.brokerAddrs) addresses.insert(addr);
    }
  }
  {
    std::lock_guard lock(mu_);
    for (auto& [name, addrs] : brokers) brokerAddrs_[name] = addrs;
    heartbeatAddrs_.insert(addresses.begin(), addresses.end());
  }
  const std::string body = heartbeatBody(client_.clientId(), options_, subVersion_);
  std::size_t ok = 0;
  for (const auto& addr : addresses) {
    RemotingCommand req;
    req.code = kCodeHeartBeat;
    req.body = body;
    auto r = client_.invoke(addr, std::move(req));
    Status s = r.isOk() ? responseStatus(*r, "heartbeat to " + addr) : r.status();
    if (s.isOk()) {
      ++ok;
    } else {
      log()->warn("consumer {}: heartbeat to {} failed: {}", options_.group, addr, s.toString());
      if (r.isOk() && isAclRefusal(*r)) heartbeatRefusal_ = s;
      lastError = "heartbeat to " + addr + ": " + s.message();
      // The broker may be restarting: its in-memory offsets may be older than our commits.
      std::lock_guard lock(mu_);
      for (const auto& [name, addrs] : brokerAddrs_) {
        for (const auto& [id, a] : addrs) {
          if (a == addr) unconfirmLocked(name);
        }
      }
    }
  }
  if (addresses.empty() || ok == 0) {
    if (!lastError.empty()) reportHealth({ConnectionHealth::State::kReconnecting, lastError});
  } else if (ok == addresses.size()) {
    ConnectionHealth h;
    {
      std::lock_guard lock(mu_);
      h = answeredLocked();
    }
    reportHealth(h);
  }
  return ok;
}

void PullConsumer::Impl::rebalance() {
  std::set<MessageQueue> target;
  std::set<MessageQueue> previous;
  {
    std::lock_guard lock(mu_);
    previous = publishedTarget_;
  }
  for (const auto& [topic, expr] : expressions_) {
    auto keepTopic = [&, topic = topic] {
      for (const auto& q : previous) {
        if (q.topic == topic) target.insert(q);
      }
    };
    auto route = client_.queryRoute(topic);
    if (!route.isOk()) {
      log()->warn("consumer {}: rebalance of {}: {}", options_.group, topic,
                  route.status().toString());
      keepTopic();
      continue;
    }
    auto all = route->subscribeQueues();
    std::vector<std::string> masters;
    for (const auto& b : route->brokerDatas) {
      if (auto m = b.master()) masters.push_back(*m);
    }
    if (all.empty() || masters.empty()) {
      keepTopic();
      continue;
    }
    // One broker of the topic answers for the group (Java picks one at random); rotate.
    const std::string addr = masters[listBrokerIndex_++ % masters.size()];
    RemotingCommand req;
    req.code = kCodeGetConsumerListByGroup;
    req.extFields["consumerGroup"] = options_.group;
    auto r = client_.invoke(addr, std::move(req));
    std::vector<std::string> members;
    Status s = r.isOk() ? responseStatus(*r, "consumer list of group '" + options_.group + "'")
                        : r.status();
    if (s.isOk()) {
      auto json = parseFastjson(r->body);
      if (json.isOk() && json->is_object() && json->contains("consumerIdList") &&
          (*json)["consumerIdList"].is_array()) {
        for (const auto& id : (*json)["consumerIdList"]) {
          if (id.is_string()) members.push_back(id.get<std::string>());
        }
      } else {
        s = Status::invalidArgument("unparsable consumer list: " + r->body.substr(0, 200));
      }
    }
    if (!s.isOk() || members.empty()) {
      log()->info("consumer {}: keeping the assignment of {} (no member list: {})",
                  options_.group, topic, s.toString());
      keepTopic();
      continue;
    }
    for (auto& q : allocateQueues(client_.clientId(), members, all)) target.insert(q);
  }
  std::lock_guard lock(mu_);
  if (closed_ || target == publishedTarget_) return;
  log()->info("consumer {}: new assignment of {} queues (was {})", options_.group, target.size(),
              publishedTarget_.size());
  publishedTarget_ = target;
  pendingTarget_ = std::move(target);
  notifyOwner();
}

Result<std::int64_t> PullConsumer::Impl::resolveOffset(const MessageQueue& mq) {
  FERRY_ASSIGN_OR_RETURN(std::string addr, client_.brokerAddress(mq.brokerName));
  RemotingCommand req;
  req.code = kCodeQueryConsumerOffset;
  req.extFields["consumerGroup"] = options_.group;
  req.extFields["topic"] = mq.topic;
  req.extFields["queueId"] = std::to_string(mq.queueId);
  FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, client_.invoke(addr, req));
  const std::string what = "offset of " + mq.toString();
  if (resp.code == kRespSuccess) {
    auto off = resp.extInt("offset");
    if (!off) return Status::invalidArgument(what + ": response without 'offset'");
    return *off;
  }
  if (resp.code != kRespQueryNotFound) return responseStatus(resp, "committed " + what);
  RemotingCommand q;
  q.extFields["topic"] = mq.topic;
  q.extFields["queueId"] = std::to_string(mq.queueId);
  switch (options_.fromWhere) {
    case ConsumeFromWhere::kFirstOffset: q.code = kCodeGetMinOffset; break;
    case ConsumeFromWhere::kTimestamp:
      q.code = kCodeSearchOffsetByTimestamp;
      q.extFields["timestamp"] = std::to_string(options_.consumeTimestampMs);
      break;
    default: q.code = kCodeGetMaxOffset; break;
  }
  FERRY_ASSIGN_OR_RETURN(RemotingCommand r2, client_.invoke(addr, q));
  FERRY_RETURN_IF_ERROR(responseStatus(r2, "start " + what));
  auto off = r2.extInt("offset");
  if (!off) return Status::invalidArgument(what + ": response without 'offset'");
  return *off;
}

void PullConsumer::Impl::processDue(std::vector<std::shared_ptr<QueueState>> due) {
  for (auto& q : due) {
    bool needOffset = false;
    {
      std::lock_guard lock(mu_);
      if (!q->active || closed_) continue;
      q->delayed = false;
      needOffset = !q->offsetKnown;
    }
    std::optional<Result<std::int64_t>> resolved;
    if (needOffset) resolved = resolveOffset(q->mq);
    std::vector<PullSpec> out;
    {
      std::lock_guard lock(mu_);
      if (!q->active || closed_) continue;
      if (resolved && !q->offsetKnown) {  // a seek() meanwhile wins
        if (!resolved->isOk()) {
          log()->warn("consumer {}: {}; retrying in {} ms", options_.group,
                      resolved->status().toString(), options_.pullBackoffMs);
          delayLocked(q, options_.pullBackoffMs);
          continue;
        }
        q->nextOffset = **resolved;
        q->offsetKnown = true;
        q->floor = q->nextOffset;  // where this assignment starts: nothing below is committed
        log()->info("consumer {}: {} starts at offset {}", options_.group, q->mq.toString(),
                    q->nextOffset);
      }
      startPullLocked(q, out);
    }
    sendPulls(std::move(out));
  }
}

std::optional<std::string> PullConsumer::Impl::pullAddressLocked(const QueueState& q) const {
  auto it = brokerAddrs_.find(q.mq.brokerName);
  if (it == brokerAddrs_.end() || it->second.empty()) return std::nullopt;
  if (auto a = it->second.find(q.brokerId); a != it->second.end()) return a->second;
  if (auto a = it->second.find(0); a != it->second.end()) return a->second;
  return it->second.begin()->second;
}

void PullConsumer::Impl::startPullLocked(const std::shared_ptr<QueueState>& q,
                                         std::vector<PullSpec>& out) {
  if (!q->active || closed_ || q->inflight || q->delayed || !q->offsetKnown) return;
  if (bufferFullLocked()) {
    q->paused = true;
    return;
  }
  q->paused = false;
  auto addr = pullAddressLocked(*q);
  if (!addr) {
    heartbeatRequested_ = true;  // refreshes the broker addresses
    delayLocked(q, options_.pullBackoffMs);
    return;
  }
  q->inflight = true;
  out.push_back({q, q->epoch, q->nextOffset, *addr});
}

void PullConsumer::Impl::sendPulls(std::vector<PullSpec> pulls) {
  std::weak_ptr<Impl> weak = weak_from_this();
  for (auto& spec : pulls) {
    RemotingCommand req;
    req.code = kCodePullMessage;
    auto& f = req.extFields;
    f["consumerGroup"] = options_.group;
    f["topic"] = spec.q->mq.topic;
    f["queueId"] = std::to_string(spec.q->mq.queueId);
    f["queueOffset"] = std::to_string(spec.offset);
    f["maxMsgNums"] = std::to_string(options_.pullBatchSize);
    f["sysFlag"] = std::to_string(kPullFlagSuspend | kPullFlagSubscription);
    f["commitOffset"] = "0";
    f["suspendTimeoutMillis"] = std::to_string(options_.longPollingSuspendMs);
    f["subscription"] = isAll(spec.q->expression) ? std::string("*") : spec.q->expression;
    f["subVersion"] = std::to_string(subVersion_);
    f["expressionType"] = "TAG";
    f["maxMsgBytes"] = "2147483647";
    f["bname"] = spec.q->mq.brokerName;
    const std::string address = spec.address;
    client_.invokeAsync(address, std::move(req), options_.pullTimeoutMs,
                        [weak, spec = std::move(spec)](Result<RemotingCommand> r) {
                          if (auto self = weak.lock()) self->onPullResponse(spec, std::move(r));
                        });
  }
}

void PullConsumer::Impl::onPullResponse(const PullSpec& spec, Result<RemotingCommand> r) {
  std::vector<PullSpec> out;
  std::optional<ConnectionHealth> report;
  {
    std::lock_guard lock(mu_);
    const auto& q = spec.q;
    q->inflight = false;
    if (!q->active || closed_) return;
    if (r.isOk()) {
      report = answeredLocked();  // the broker answered
      if (q->unreachable) {
        q->unreachable = false;
        log()->info("consumer {}: pulling {} again", options_.group, q->mq.toString());
        // A broker that restarted knows the group again only from a heartbeat: send it now.
        heartbeatRequested_ = true;
        workCv_.notify_all();
      }
    }
    if (spec.epoch != q->epoch) {  // seek() since: pull from the new position
      startPullLocked(q, out);
    } else if (!r.isOk()) {
      const StatusCode code = r.status().code();
      const bool unreachable = code == StatusCode::kUnavailable || code == StatusCode::kTimeout;
      const std::int64_t wait =
          unreachable ? options_.unreachablePullBackoffMs : options_.pullBackoffMs;
      // While the broker stays away the queue is retried often: say so once per outage.
      if (!(unreachable && q->unreachable)) {
        log()->warn("consumer {}: pull of {} at {} failed: {}; retrying every {} ms",
                    options_.group, q->mq.toString(), spec.offset, r.status().toString(), wait);
      }
      if (unreachable) {
        q->unreachable = true;
        report = ConnectionHealth{ConnectionHealth::State::kReconnecting,
                                  "pull of " + q->mq.toString() + ": " + r.status().message()};
      }
      // A lost connection may be a broker restart, which reloads older offsets: verify again.
      if (code == StatusCode::kUnavailable) unconfirmLocked(q->mq.brokerName);
      delayLocked(q, wait);
    } else {
      const RemotingCommand& resp = *r;
      const auto next = resp.extInt("nextBeginOffset");
      if (auto suggest = resp.extInt("suggestWhichBrokerId")) {
        auto b = brokerAddrs_.find(q->mq.brokerName);
        q->brokerId =
            b != brokerAddrs_.end() && b->second.count(*suggest) != 0 ? *suggest : 0;
      }
      switch (resp.code) {
        case kRespSuccess: {
          const std::int64_t receivedNs = core::monotonicNs();
          StoredDecode d = decodeStoredMessages(resp.body);
          std::int64_t lastSeen = spec.offset - 1;
          std::size_t added = 0;
          for (auto& m : d.messages) {
            if (m.queueOffset < spec.offset) continue;  // never hand out older positions
            lastSeen = std::max(lastSeen, m.queueOffset);
            if (!q->tags.empty()) {
              // The broker filters by tag hash only; re-check the tag itself (collisions).
              auto t = m.properties.find("TAGS");
              if (t == m.properties.end() ||
                  std::find(q->tags.begin(), q->tags.end(), t->second) == q->tags.end()) {
                continue;
              }
            }
            PulledMessage pm{std::move(m), q->mq.brokerName, receivedNs};
            bufferedBytes_ += messageBytes(pm);
            buffer_.push_back(std::move(pm));
            ++added;
          }
          if (!d.complete) {
            log()->error("consumer {}: pull of {} at {}: undecodable message after offset {}: {}",
                         options_.group, q->mq.toString(), spec.offset, lastSeen, d.error);
            if (lastSeen >= spec.offset) {
              q->nextOffset = lastSeen + 1;
              q->undecodable = 0;
              report = answeredLocked();
            } else {
              // Nothing before it decoded: the same message comes again. Retried (not skipped:
              // the consumer cannot tell what it is), and reported after a bounded number.
              if (++q->undecodable >= options_.undecodableReportAfter) {
                q->undecodableWhy =
                    "the message at offset " + std::to_string(spec.offset) + " of " +
                        q->mq.toString() + " cannot be decoded (" +
                        std::to_string(q->undecodable) + " attempts, retrying every " +
                        std::to_string(options_.pullBackoffMs) + " ms): " + d.error;
                report = ConnectionHealth{ConnectionHealth::State::kDegraded, q->undecodableWhy};
              }
              delayLocked(q, options_.pullBackoffMs);
            }
          } else {
            q->nextOffset = next.value_or(lastSeen + 1);
            q->undecodable = 0;
            report = answeredLocked();
          }
          if (added > 0) notifyOwner();
          startPullLocked(q, out);
          break;
        }
        case kRespPullNotFound:
        case kRespPullRetryImmediately:
          if (next) q->nextOffset = *next;
          startPullLocked(q, out);
          break;
        case kRespPullOffsetMoved:
          log()->warn("consumer {}: offset {} of {} is not valid (min {}, max {}); moving to {}",
                      options_.group, spec.offset, q->mq.toString(),
                      resp.extInt("minOffset").value_or(-1), resp.extInt("maxOffset").value_or(-1),
                      next.value_or(spec.offset));
          if (next) {
            q->nextOffset = *next;
            // As the Java client: the broker's position is the new floor (it may be lower).
            q->floor = *next;
            q->exactOnly = true;
          }
          startPullLocked(q, out);
          break;
        case kRespSubscriptionNotExist:
        case kRespSubscriptionNotLatest:
          heartbeatRequested_ = true;
          delayLocked(q, std::min<std::int64_t>(options_.pullBackoffMs, 1000));
          break;
        default:
          log()->warn("consumer {}: {}; retrying in {} ms", options_.group,
                      responseStatus(resp, "pull of " + q->mq.toString()).toString(),
                      options_.pullBackoffMs);
          delayLocked(q, options_.pullBackoffMs);
          break;
      }
    }
  }
  if (report) reportHealth(*report);
  sendPulls(std::move(out));
}

void PullConsumer::Impl::applyPending() {
  std::vector<MessageQueue> revoked;
  std::vector<MessageQueue> added;
  std::set<MessageQueue> target;
  {
    std::lock_guard lock(mu_);
    if (!pendingTarget_) return;
    target = std::move(*pendingTarget_);
    pendingTarget_.reset();
    for (auto it = queues_.begin(); it != queues_.end();) {
      if (target.count(it->first) != 0) {
        ++it;
        continue;
      }
      it->second->active = false;
      dropBufferedLocked(it->first);
      revoked.push_back(it->first);
      revoking_.insert(*it);
      it = queues_.erase(it);
    }
    for (const auto& mq : target) {
      if (queues_.count(mq) == 0) added.push_back(mq);
    }
  }
  if (listener_ != nullptr && !revoked.empty()) listener_->onRevoked(revoked);
  {
    std::lock_guard lock(mu_);
    revoking_.clear();  // no longer ours: never committed (or re-sent) by this member again
    if (closed_) return;
    for (const auto& mq : added) {
      auto q = std::make_shared<QueueState>();
      q->mq = mq;
      q->expression = expressions_[mq.topic];
      q->tags = parseTagExpression(q->expression);
      queues_[mq] = q;
      delayLocked(q, 0);  // the membership thread resolves the start offset, then pulls
    }
  }
  if (listener_ != nullptr && !added.empty()) listener_->onAssigned(added);
}

Result<std::vector<PulledMessage>> PullConsumer::Impl::poll(std::size_t max,
                                                            std::chrono::milliseconds maxWait) {
  const auto deadline = Clock::now() + maxWait;
  std::vector<PulledMessage> out;
  std::vector<PullSpec> pulls;
  {
    std::unique_lock lock(mu_);
    if (!started_) return Status::failedPrecondition("rocketmq consumer: poll() before start()");
    for (;;) {
      if (closed_) return Status::cancelled("rocketmq consumer: closed");
      if (pendingTarget_) {
        lock.unlock();
        applyPending();
        lock.lock();
        continue;
      }
      if (!buffer_.empty() && max > 0) break;
      if (!cv_.wait_until(lock, deadline, [&] {
            return closed_ || pendingTarget_.has_value() || (!buffer_.empty() && max > 0);
          })) {
        return out;
      }
    }
    while (!buffer_.empty() && out.size() < max) {
      bufferedBytes_ -= std::min(bufferedBytes_, messageBytes(buffer_.front()));
      out.push_back(std::move(buffer_.front()));
      buffer_.pop_front();
    }
    if (!bufferFullLocked()) {
      for (auto& [mq, q] : queues_) {
        if (q->paused) startPullLocked(q, pulls);
      }
    }
  }
  sendPulls(std::move(pulls));
  return out;
}

namespace {

// Sends every request (in parallel) and waits for all answers.
std::vector<Result<RemotingCommand>> invokeAll(
    RocketmqClient& client, std::vector<std::pair<std::string, RemotingCommand>> requests) {
  std::vector<std::future<Result<RemotingCommand>>> futures;
  for (auto& [addr, req] : requests) {
    auto promise = std::make_shared<std::promise<Result<RemotingCommand>>>();
    futures.push_back(promise->get_future());
    client.invokeAsync(addr, std::move(req), -1,
                       [promise](Result<RemotingCommand> r) { promise->set_value(std::move(r)); });
  }
  std::vector<Result<RemotingCommand>> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

// UPDATE_CONSUMER_OFFSET requests. A broker (4.9.x to 5.5.x, ConsumerOffsetManager.commitOffset)
// creates a group's offset entry for a topic without a lock, so concurrent first commits for
// different queues of one topic overwrite each other while each is answered with success. So one
// request per (broker, topic) goes first and the others follow, in parallel, once it is
// answered: the entry exists by then. (Another member's concurrent first commit can still race
// with ours; the periodic verification in persist() repairs that.)
std::vector<Result<RemotingCommand>> invokeOffsetUpdates(
    RocketmqClient& client, std::vector<std::pair<std::string, RemotingCommand>> requests) {
  std::set<std::pair<std::string, std::string>> leading;
  std::vector<std::pair<std::string, RemotingCommand>> leads, rest;
  std::vector<std::size_t> leadIndex, restIndex;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto& req = requests[i];
    if (leading.emplace(req.first, req.second.ext("topic").value_or("")).second) {
      leads.push_back(std::move(req));
      leadIndex.push_back(i);
    } else {
      rest.push_back(std::move(req));
      restIndex.push_back(i);
    }
  }
  std::vector<Result<RemotingCommand>> out(requests.size(), Status::internal("not sent"));
  auto first = invokeAll(client, std::move(leads));
  for (std::size_t i = 0; i < first.size(); ++i) out[leadIndex[i]] = std::move(first[i]);
  auto second = invokeAll(client, std::move(rest));
  for (std::size_t i = 0; i < second.size(); ++i) out[restIndex[i]] = std::move(second[i]);
  return out;
}

}  // namespace

Status PullConsumer::Impl::commit(const std::map<MessageQueue, std::int64_t>& offsets) {
  std::lock_guard commitLock(commitMu_);
  std::vector<std::pair<MessageQueue, std::int64_t>> accepted;
  Status first;
  std::size_t unassigned = 0, stale = 0;
  {
    std::lock_guard lock(mu_);
    for (const auto& [mq, offset] : offsets) {
      auto q = committableLocked(mq);
      if (!q || !q->offsetKnown) {
        ++unassigned;
        continue;
      }
      if (offset < q->floor) {
        ++stale;
        continue;
      }
      if (q->committed && *q->committed == offset) continue;  // nothing new
      q->floor = offset;
      q->committed = offset;
      q->confirmed = false;  // until persist() sees the broker answer it (also after a failure)
      ++q->commitVersion;
      accepted.emplace_back(mq, offset);
    }
  }
  std::vector<MessageQueue> sent;
  std::vector<std::pair<std::string, RemotingCommand>> requests;
  for (const auto& [mq, offset] : accepted) {
    auto addr = client_.brokerAddress(mq.brokerName);  // may ask the NameServer: not under mu_
    if (!addr.isOk()) {
      if (first.isOk()) first = addr.status().withContext("commit of " + mq.toString());
      continue;
    }
    sent.push_back(mq);
    requests.emplace_back(*addr, updateGroupOffsetRequest(options_.group, mq, offset));
  }
  if (unassigned + stale > 0) {
    log()->debug("consumer {}: commit ignored {} queue(s) not assigned (or not started yet) and {} "
                 "offset(s) below what this assignment already committed or started at",
                 options_.group, unassigned, stale);
  }
  auto answers = invokeOffsetUpdates(client_, std::move(requests));
  for (std::size_t i = 0; i < answers.size(); ++i) {
    auto& r = answers[i];
    const std::string what = "commit of " + sent[i].toString();
    Status s = r.isOk() ? responseStatus(*r, what) : r.status().withContext(what);
    if (!s.isOk() && first.isOk()) first = s;
  }
  return first;
}

void PullConsumer::Impl::persist(bool recheckAll) {
  struct Check {
    std::shared_ptr<QueueState> q;
    std::int64_t value;
    std::uint64_t version;
  };
  std::vector<Check> candidates;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    for (auto& [mq, q] : queues_) {
      if (!q->committed || (q->confirmed && !recheckAll)) continue;
      candidates.push_back({q, *q->committed, q->commitVersion});
    }
  }
  std::vector<Check> checks;
  std::vector<std::pair<std::string, RemotingCommand>> queries;
  {
    for (const auto& c : candidates) {
      const MessageQueue& mq = c.q->mq;
      auto addr = client_.brokerAddress(mq.brokerName);
      if (!addr.isOk()) continue;
      checks.push_back(c);
      queries.emplace_back(*addr, queryGroupOffsetRequest(options_.group, mq,
                                                          client_.knownVersion(*addr)));
    }
  }
  if (checks.empty()) return;
  auto answers = invokeAll(client_, std::move(queries));
  std::vector<Check> resend;
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < answers.size(); ++i) {
      const Check& c = checks[i];
      if (!c.q->active || c.q->commitVersion != c.version) continue;  // gone or committed since
      const auto& r = answers[i];
      if (!r.isOk() || (r->code != kRespSuccess && r->code != kRespQueryNotFound)) {
        c.q->confirmed = false;  // cannot tell: ask again next round
        continue;
      }
      std::optional<std::int64_t> held;
      if (r->code == kRespSuccess) held = r->extInt("offset");
      // Held higher: another member moved it on (never move it back) — unless this assignment
      // lowered it on purpose (seek, OFFSET_MOVED).
      if (held && (*held == c.value || (*held > c.value && !c.q->exactOnly))) {
        c.q->confirmed = true;
        continue;
      }
      c.q->confirmed = false;
      log()->info("consumer {}: broker holds offset {} of {}, committed {}: sending it again",
                  options_.group, held ? std::to_string(*held) : std::string("none"),
                  c.q->mq.toString(), c.value);
      resend.push_back(c);
    }
  }
  if (resend.empty()) return;
  std::vector<std::string> addrs;
  for (const auto& c : resend) addrs.push_back(client_.brokerAddress(c.q->mq.brokerName).valueOr(""));
  std::lock_guard commitLock(commitMu_);
  std::vector<std::pair<std::string, RemotingCommand>> updates;
  std::vector<MessageQueue> sent;
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < resend.size(); ++i) {
      const Check& c = resend[i];
      // Still ours (applied and in the latest rebalance result) and not committed since.
      if (closed_ || addrs[i].empty() || !c.q->active || c.q->commitVersion != c.version ||
          queues_.count(c.q->mq) == 0 || publishedTarget_.count(c.q->mq) == 0) {
        continue;
      }
      sent.push_back(c.q->mq);
      updates.emplace_back(addrs[i], updateGroupOffsetRequest(options_.group, c.q->mq, c.value));
    }
  }
  auto answers2 = invokeOffsetUpdates(client_, std::move(updates));
  for (std::size_t i = 0; i < answers2.size(); ++i) {
    const auto& r = answers2[i];
    Status s = r.isOk() ? responseStatus(*r, "re-sent commit of " + sent[i].toString())
                        : r.status();
    if (!s.isOk()) log()->warn("consumer {}: {}", options_.group, s.toString());
  }
}

std::vector<MessageQueue> PullConsumer::Impl::assignment() const {
  std::lock_guard lock(mu_);
  std::vector<MessageQueue> out;
  for (const auto& [mq, q] : queues_) out.push_back(mq);
  return out;
}

Status PullConsumer::Impl::seek(const MessageQueue& queue, std::int64_t offset) {
  if (offset < 0) return Status::invalidArgument("rocketmq consumer: negative seek offset");
  std::vector<PullSpec> pulls;
  {
    std::lock_guard lock(mu_);
    auto it = queues_.find(queue);
    if (it == queues_.end()) {
      return Status::failedPrecondition("rocketmq consumer: seek on unassigned queue " +
                                        queue.toString());
    }
    auto& q = it->second;
    q->nextOffset = offset;
    q->offsetKnown = true;
    ++q->epoch;
    // An explicit position is the new commit floor; what was committed before is not re-sent.
    q->floor = offset;
    q->committed.reset();
    q->confirmed = true;
    q->exactOnly = true;
    ++q->commitVersion;
    dropBufferedLocked(queue);
    startPullLocked(q, pulls);
  }
  sendPulls(std::move(pulls));
  return Status::ok();
}

void PullConsumer::Impl::close() {
  std::set<std::string> addresses;
  bool wasStarted = false;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    wasStarted = started_;
    for (auto& [mq, q] : queues_) q->active = false;
    queues_.clear();
    buffer_.clear();
    bufferedBytes_ = 0;
    delayed_.clear();
    pendingTarget_.reset();
    addresses = heartbeatAddrs_;
  }
  workCv_.notify_all();
  notifyOwner();  // a waiting poll() returns kCancelled; the owner polls once more and sees it
  {
    std::lock_guard lock(wakerMu_);  // waits for a wake-up in progress
    waker_ = nullptr;
  }
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(healthMu_);  // waits for a report in progress
    health_ = nullptr;
  }
  if (!wasStarted) return;
  client_.setRequestHandler(kCodeNotifyConsumerIdsChanged, {});
  for (const auto& addr : addresses) {
    RemotingCommand req;
    req.code = kCodeUnregisterClient;
    req.extFields["clientID"] = client_.clientId();
    req.extFields["consumerGroup"] = options_.group;
    auto r = client_.invoke(addr, std::move(req));
    Status s = r.isOk() ? responseStatus(*r, "unregister at " + addr) : r.status();
    if (!s.isOk()) log()->info("consumer {}: {}", options_.group, s.toString());
  }
}

PullConsumer::PullConsumer(RocketmqClient& client, ConsumerOptions options,
                           RebalanceListener* listener)
    : impl_(std::make_shared<Impl>(client, std::move(options), listener)) {}

PullConsumer::~PullConsumer() { close(); }

Status PullConsumer::start() { return impl_->start(); }
Result<std::vector<PulledMessage>> PullConsumer::poll(std::size_t max,
                                                      std::chrono::milliseconds maxWait) {
  return impl_->poll(max, maxWait);
}
Status PullConsumer::commit(const std::map<MessageQueue, std::int64_t>& offsets) {
  return impl_->commit(offsets);
}
std::vector<MessageQueue> PullConsumer::assignment() const { return impl_->assignment(); }
Status PullConsumer::seek(const MessageQueue& queue, std::int64_t offset) {
  return impl_->seek(queue, offset);
}
void PullConsumer::close() { impl_->close(); }
void PullConsumer::requestRebalance() { impl_->requestRebalance(); }
void PullConsumer::setWaker(std::function<void()> wake) { impl_->setWaker(std::move(wake)); }
void PullConsumer::setHealthListener(std::function<void(const ConnectionHealth&)> health) {
  impl_->setHealthListener(std::move(health));
}

}  // namespace ferry::rocketmq
