// The rocketmq backbone (see rocketmq_backbone.h).
//
// Mapping. A ferry queue number is the index of a RocketMQ MessageQueue in the topic's route,
// ordered by (brokerName, queueId), so every worker maps alike. A ferry Message travels as a
// RocketMQ message whose body is the value; the key, the headers and the timestamp ride in
// properties (FERRY_KEY, FERRY_TS, FERRY_H_<name>), hex-encoded because the properties string
// cannot carry arbitrary bytes. Keys also pick the queue (hash), as the routing hint does.
#include "backbone/rocketmq/rocketmq_backbone.h"

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "rocketmq/admin.h"
#include "rocketmq/client.h"
#include "rocketmq/consumer.h"
#include "rocketmq/producer.h"
#include "core/clock.h"
#include "core/logging.h"

namespace ferry::backbone {
namespace {

using rocketmq::MessageQueue;

constexpr const char* kKeyProp = "FERRY_KEY";
constexpr const char* kTsProp = "FERRY_TS";
constexpr const char* kHeaderPrefix = "FERRY_H_";

std::string hex(std::string_view in) {
  static const char* d = "0123456789abcdef";
  std::string out;
  out.reserve(in.size() * 2 + 1);
  out.push_back('x');  // never empty (empty property values do not survive), even for ""
  for (unsigned char c : in) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

std::optional<std::string> unhex(std::string_view in) {
  if (in.empty() || in[0] != 'x' || (in.size() - 1) % 2) return std::nullopt;
  auto v = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 1; i + 1 < in.size(); i += 2) {
    int a = v(in[i]), b = v(in[i + 1]);
    if (a < 0 || b < 0) return std::nullopt;
    out.push_back(static_cast<char>(a * 16 + b));
  }
  return out;
}

bool safeHeaderName(const std::string& n) {
  for (unsigned char c : n)
    if (c == 1 || c == 2) return false;
  return !n.empty();
}

class RocketmqBackbone;

// Route cache keyed by topic: ferry queue index <-> MessageQueue.
struct QueueMap {
  std::vector<MessageQueue> queues;  // sorted (brokerName, queueId)
};

class RmqProducer final : public Producer {
 public:
  RmqProducer(RocketmqBackbone& b, rocketmq::RocketmqClient& client, std::int64_t maxInflight)
      : b_(b), producer_(client), maxInflight_(maxInflight), state_(std::make_shared<State>()) {}
  ~RmqProducer() override { flush(std::chrono::seconds(10)).isOk(); }
  Status send(Message m, SendCallback cb) override;
  Status flush(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(state_->mu);
    if (!state_->cv.wait_for(lock, timeout, [&] { return state_->outstanding == 0; }))
      return Status::timeout(std::to_string(state_->outstanding) + " message(s) not yet acknowledged by RocketMQ");
    return Status::ok();
  }
  // What the client still holds gets a retriable error now, and is never sent again: the client
  // retries none of it any more (Producer::abandonRetries), a send() blocked for room returns
  // Unavailable instead of sending, and an answer that comes later is dropped. A request already
  // written to a broker that is alive may still be stored (as with librdkafka's purge of messages
  // in flight); one to a dead broker is gone with its connection. For a worker that lost its lease.
  Status awaitPurged(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(state_->mu);
    if (state_->cv.wait_for(lock, timeout, [&] { return state_->onTheWire.empty(); })) return Status::ok();
    // Waited long enough for them: forget them, so a send whose answer never comes cannot make
    // every later task start wait again.
    const std::size_t left = state_->onTheWire.size();
    state_->onTheWire.clear();
    return Status::timeout(std::to_string(left) + " purged send(s) still without an answer from RocketMQ");
  }
  Status purge() override {
    producer_.abandonRetries();
    std::map<std::uint64_t, SendCallback> dropped;
    {
      std::lock_guard lock(state_->mu);
      ++state_->purges;
      dropped.swap(state_->pending);
      state_->outstanding -= static_cast<std::int64_t>(dropped.size());
      for (const auto& d : dropped) state_->onTheWire.insert(d.first);
      state_->cv.notify_all();
    }
    for (auto& [id, cb] : dropped)
      if (cb) cb(Status::unavailable("purged before RocketMQ answered (this worker lost its lease)"), -1, -1);
    return Status::ok();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::int64_t outstanding = 0;  // sent, callback not yet run
    std::int64_t waiting = 0;      // send() calls blocked by the in-flight cap
    std::uint64_t nextId = 0;
    std::map<std::uint64_t, SendCallback> pending;  // sent, not answered: their callbacks
    std::uint64_t purges = 0;                       // purge() calls so far
    std::set<std::uint64_t> onTheWire;              // purged, the client's answer still to come
  };
  RocketmqBackbone& b_;
  rocketmq::Producer producer_;
  const std::int64_t maxInflight_;  // <= 0: no cap
  std::shared_ptr<State> state_;
};

class RmqConsumer final : public Consumer, public rocketmq::RebalanceListener {
 public:
  RmqConsumer(RocketmqBackbone& b, rocketmq::RocketmqClient& client, std::string group, bool latest)
      : b_(b), client_(client), group_(std::move(group)), latest_(latest) {}
  ~RmqConsumer() override { close(); }
  Status subscribe(const std::vector<std::string>& topics, backbone::RebalanceListener* listener) override;
  Result<std::size_t> poll(std::vector<Message>& out, std::size_t maxMessages, std::chrono::milliseconds maxWait) override;
  Status commit(const OffsetMap& offsets) override;
  Status seek(const TopicQueue& queue, std::int64_t offset) override;
  std::vector<TopicQueue> assignment() const override { return assignment_; }
  void close() override {
    if (consumer_) consumer_->close();
    consumer_.reset();
  }
  // The pull consumer tells when its buffer gets messages or a rebalance is pending.
  bool setWaker(std::function<void()> wake) override {
    waker_ = std::move(wake);
    return true;
  }

 private:
  void onRevoked(const std::vector<MessageQueue>& queues) override;
  void onAssigned(const std::vector<MessageQueue>& queues) override;
  std::vector<TopicQueue> toFerry(const std::vector<MessageQueue>& queues);

  RocketmqBackbone& b_;
  rocketmq::RocketmqClient& client_;
  const std::string group_;
  const bool latest_;
  backbone::RebalanceListener* listener_ = nullptr;
  std::unique_ptr<rocketmq::PullConsumer> consumer_;
  std::vector<TopicQueue> assignment_;
  std::function<void()> waker_;  // setWaker(): handed to the pull consumer at subscribe()
};

// A stored RocketMQ message as a ferry Message (key, headers and timestamp from our properties).
Message toMessage(rocketmq::StoredMessage&& sm, std::int32_t queue) {
  Message m;
  m.topic = sm.topic;
  m.queue = queue;
  m.offset = sm.queueOffset;
  m.value = Bytes(std::move(sm.body));
  m.timestampMs = sm.bornTimestamp;
  for (auto& [k, v] : sm.properties) {
    if (k == kKeyProp) {
      if (auto key = unhex(v)) m.key = Bytes(std::move(*key));
    } else if (k == kTsProp) {
      try {
        m.timestampMs = std::stoll(v);
      } catch (...) {
      }
    } else if (k.rfind(kHeaderPrefix, 0) == 0) {
      auto val = v == "n" ? std::optional<std::string>() : unhex(v);
      m.headers.add(k.substr(std::string(kHeaderPrefix).size()), val ? Bytes(std::move(*val)) : Bytes());
    }
  }
  return m;
}

// The shared log on the one queue of a one-queue topic. Appends are synchronous sends to that
// queue (the broker's queue offset is the entry's offset); reads are long-polling PULL_MESSAGE
// requests at an explicit offset (no rebalance, no committed offsets); the broker's store
// timestamp is the entry's time.
class RmqSharedLog final : public SharedLog {
 public:
  RmqSharedLog(rocketmq::RocketmqClient& client, MessageQueue mq) : client_(client), producer_(client), mq_(std::move(mq)) {}

  Result<std::int64_t> append(const Bytes& value, std::chrono::milliseconds timeout) override {
    (void)timeout;  // the client's request timeout bounds the send
    rocketmq::OutgoingMessage m;
    m.topic = mq_.topic;
    m.body = std::string(value.view());
    FERRY_ASSIGN_OR_RETURN(auto r, producer_.send(std::move(m), rocketmq::QueueSelection::queue(mq_.brokerName, mq_.queueId)));
    return r.queueOffset;
  }

  Result<std::size_t> read(std::int64_t from, std::vector<Entry>& out, std::size_t max,
                           std::chrono::milliseconds wait) override {
    FERRY_ASSIGN_OR_RETURN(auto stored, pull(from, max, wait));
    for (auto& m : stored) out.push_back(Entry{m.queueOffset, m.storeTimestamp, Bytes(std::move(m.body))});
    return stored.size();
  }

  // Stored messages from `from` on (long polling up to `wait`); empty when there are none yet.
  Result<std::vector<rocketmq::StoredMessage>> pull(std::int64_t from, std::size_t max, std::chrono::milliseconds wait) {
    using Out = std::vector<rocketmq::StoredMessage>;
    FERRY_ASSIGN_OR_RETURN(std::string addr, client_.brokerAddress(mq_.brokerName));
    for (int attempt = 0; attempt < 2; ++attempt) {
      rocketmq::RemotingCommand req;
      req.code = rocketmq::kCodePullMessage;
      auto& f = req.extFields;
      f["consumerGroup"] = "ferry-cluster-log";
      f["topic"] = mq_.topic;
      f["queueId"] = std::to_string(mq_.queueId);
      f["queueOffset"] = std::to_string(from);
      f["maxMsgNums"] = std::to_string(std::min<std::size_t>(max, 256));
      f["sysFlag"] = std::to_string(rocketmq::kPullFlagSubscription | (wait.count() > 0 ? rocketmq::kPullFlagSuspend : 0));
      f["commitOffset"] = "0";
      f["suspendTimeoutMillis"] = std::to_string(std::max<std::int64_t>(1, wait.count()));
      f["subscription"] = "*";
      f["subVersion"] = "0";
      f["expressionType"] = "TAG";
      f["maxMsgBytes"] = "2147483647";
      f["bname"] = mq_.brokerName;
      FERRY_ASSIGN_OR_RETURN(auto resp, client_.invoke(addr, std::move(req), wait.count() + 10000));
      if (resp.code == rocketmq::kRespSuccess) {
        rocketmq::StoredDecode d = rocketmq::decodeStoredMessages(resp.body);
        Out out;
        for (auto& m : d.messages)
          if (m.queueOffset >= from) out.push_back(std::move(m));
        if (!d.complete && out.empty())
          return Status::dataLoss("rocketmq pull of " + mq_.toString() + ": undecodable message at " +
                                  std::to_string(from) + ": " + d.error);
        return out;
      }
      if (resp.code == rocketmq::kRespPullOffsetMoved) {
        // Below the queue's start (or past its end): continue where the broker says.
        auto next = resp.extInt("nextBeginOffset");
        if (!next || *next == from) return Out();
        from = *next;
        continue;
      }
      if (resp.code == rocketmq::kRespPullNotFound || resp.code == rocketmq::kRespPullRetryImmediately) return Out();
      return rocketmq::responseStatus(resp, "rocketmq pull of " + mq_.toString());
    }
    return Out();
  }

  Result<std::int64_t> endOffset() override { return rocketmq::maxOffset(client_, mq_); }

 private:
  rocketmq::RocketmqClient& client_;
  rocketmq::Producer producer_;
  const MessageQueue mq_;
};

class RocketmqBackbone final : public Backbone, public Admin {
 public:
  RocketmqBackbone(RocketmqBackboneOptions o, std::unique_ptr<rocketmq::RocketmqClient> c)
      : o_(std::move(o)), client_(std::move(c)) {}
  ~RocketmqBackbone() override { close(); }

  std::string kind() const override { return "rocketmq"; }
  Result<std::unique_ptr<Producer>> createProducer(const StringMap&) override {
    if (closed_) return Status::unavailable("backbone closed");
    return std::unique_ptr<Producer>(std::make_unique<RmqProducer>(*this, *client_, o_.maxInflight));
  }
  Result<std::unique_ptr<Consumer>> createConsumer(const std::string& group, const std::string&,
                                                   const StringMap& overrides) override {
    if (closed_) return Status::unavailable("backbone closed");
    auto it = overrides.find("auto.offset.reset");
    const bool latest = it != overrides.end() && it->second == "latest";
    // One PullConsumer per RocketmqClient (the NOTIFY handler is per client): each consumer gets
    // its own client.
    rocketmq::ClientOptions co;
    co.namesrvAddrs = o_.namesrv;
    co.requestTimeoutMs = o_.requestTimeoutMs;
    co.accessKey = o_.accessKey;
    co.secretKey = o_.secretKey;
    co.instanceName = "ferry-" + std::to_string(::getpid()) + "-" + std::to_string(nextInstance_++);
    FERRY_ASSIGN_OR_RETURN(auto client, rocketmq::RocketmqClient::create(co));
    auto* raw = client.get();
    {
      std::lock_guard lock(mu_);
      consumerClients_.push_back(std::move(client));
    }
    return std::unique_ptr<Consumer>(std::make_unique<RmqConsumer>(*this, *raw, rocketmqSafeName(group), latest));
  }
  Admin& admin() override { return *this; }
  void close() override { closed_ = true; }

  // RocketMQ has no transactions of ours here: everything stored is committed. Reads every queue
  // from its start to its end as of the call, through the shared-log pull path.
  Status readCommitted(const std::string& name, std::int32_t queueCount, const std::function<void(const Message&)>& fn,
                       bool waitForOpen, std::chrono::milliseconds timeout,
                       std::map<std::int32_t, std::int64_t>* cursor = nullptr) override {
    (void)waitForOpen;
    FERRY_RETURN_IF_ERROR(ensureTopic(name, queueCount));
    const std::int64_t deadline = core::monotonicMs() + timeout.count();
    Result<std::shared_ptr<const QueueMap>> qm = queues(name, /*refresh=*/true);
    while (!qm.isOk() && core::monotonicMs() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      qm = queues(name, true);
    }
    FERRY_RETURN_IF_ERROR(qm.status());
    FERRY_ASSIGN_OR_RETURN(auto starts, startOffsets(name));
    FERRY_ASSIGN_OR_RETURN(auto ends, endOffsets(name));
    for (std::size_t i = 0; i < (*qm)->queues.size(); ++i) {
      const TopicQueue tq{name, static_cast<std::int32_t>(i)};
      RmqSharedLog reader(*client_, (*qm)->queues[i]);
      std::int64_t next = starts.count(tq) ? starts[tq] : 0;
      if (cursor && cursor->count(tq.queue)) next = std::max(next, cursor->at(tq.queue));
      const std::int64_t end = ends.count(tq) ? ends[tq] : 0;
      while (next < end) {
        if (core::monotonicMs() >= deadline)
          return Status::timeout("rocketmq backbone: " + name + " queue " + std::to_string(i) + " not read to " +
                                 std::to_string(end) + " in time (at " + std::to_string(next) + ")");
        FERRY_ASSIGN_OR_RETURN(auto got, reader.pull(next, 256, std::chrono::milliseconds(0)));
        if (got.empty()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          continue;
        }
        for (auto& sm : got) {
          next = sm.queueOffset + 1;
          Message m = toMessage(std::move(sm), tq.queue);
          m.topic = name;
          fn(m);
        }
      }
      if (cursor) (*cursor)[tq.queue] = next;
    }
    return Status::ok();
  }

  Result<std::unique_ptr<SharedLog>> openSharedLog(const std::string& name) override {
    if (closed_) return Status::unavailable("backbone closed");
    FERRY_RETURN_IF_ERROR(ensureTopic(name, 1));
    FERRY_ASSIGN_OR_RETURN(auto qm, queues(name, /*refresh=*/true));
    if (qm->queues.size() != 1)
      return Status::failedPrecondition("rocketmq shared log: topic " + rocketmqSafeName(name) + " has " +
                                        std::to_string(qm->queues.size()) + " queues; it needs exactly one (a total order)");
    return std::unique_ptr<SharedLog>(std::make_unique<RmqSharedLog>(*client_, qm->queues.front()));
  }

  // ----- Admin
  Status ensureTopic(const std::string& name, std::int32_t queues) override {
    auto route = client_->queryRoute(rocketmqSafeName(name));
    if (route.isOk() && !route->publishQueues().empty()) return Status::ok();
    std::vector<std::string> where;
    if (!o_.cluster.empty()) where.push_back(o_.cluster);
    return client_->createTopic(rocketmqSafeName(name), queues, where);
  }
  Result<std::vector<TopicInfo>> listTopics() override {
    FERRY_ASSIGN_OR_RETURN(auto names, rocketmq::listTopics(*client_));
    FERRY_ASSIGN_OR_RETURN(auto info, client_->clusterInfo());
    std::vector<std::string> clusterAndBrokers;
    for (const auto& [c, bs] : info.clusters) clusterAndBrokers.push_back(c);
    for (const auto& [b, d] : info.brokers) clusterAndBrokers.push_back(b);
    std::vector<TopicInfo> out;
    for (const auto& n : names) {
      if (rocketmq::isSystemTopic(n, clusterAndBrokers)) continue;
      auto qm = queues(n);
      if (!qm.isOk()) continue;  // listed but without readable queues (being deleted, or write-only)
      out.push_back(TopicInfo{n, static_cast<std::int32_t>((*qm)->queues.size())});
    }
    return out;
  }
  Result<TopicInfo> describeTopic(const std::string& name) override {
    FERRY_ASSIGN_OR_RETURN(auto qm, queues(name));
    return TopicInfo{name, static_cast<std::int32_t>(qm->queues.size())};
  }
  Result<OffsetMap> endOffsets(const std::string& topic) override { return brokerOffsets(topic, 30); }
  Result<OffsetMap> startOffsets(const std::string& topic) override { return brokerOffsets(topic, 31); }
  // The group's topics are those its consumers in this process subscribed plus those the brokers
  // hold offsets of the group for (GET_CONSUME_STATS without a topic), so a sink that has not run
  // in this process is seen too. Offsets are read per queue (QUERY_CONSUMER_OFFSET): consume
  // stats write 0 for a queue never committed.
  Result<OffsetMap> committedOffsets(const std::string& group) override {
    const std::string g = rocketmqSafeName(group);
    std::map<std::string, std::string> topics;  // RocketMQ name -> name reported (ferry's if known)
    {
      std::lock_guard lock(mu_);
      for (const auto& t : groupTopics_[g]) topics[rocketmqSafeName(t)] = t;
    }
    FERRY_ASSIGN_OR_RETURN(auto stats, rocketmq::consumeStats(*client_, g));
    for (const auto& q : stats.queues)
      if (!rocketmq::isSystemTopic(q.queue.topic)) topics.emplace(q.queue.topic, q.queue.topic);
    OffsetMap out;
    for (const auto& [name, shown] : topics) {
      auto qm = queues(name);
      if (!qm.isOk() && qm.status().code() == StatusCode::kNotFound) continue;  // topic deleted
      FERRY_RETURN_IF_ERROR(qm.status());
      for (std::size_t i = 0; i < (*qm)->queues.size(); ++i) {
        FERRY_ASSIGN_OR_RETURN(auto off, rocketmq::queryGroupOffset(*client_, g, (*qm)->queues[i]));
        if (off) out[TopicQueue{shown, static_cast<std::int32_t>(i)}] = *off;
      }
    }
    return out;
  }
  // RocketMQ drops offsets only per group (DELETE_SUBSCRIPTIONGROUP with cleanOffset): an empty
  // map, or one that lacks a queue the group has an offset for, deletes the group's offsets on
  // every broker first; then each offset is written (creating the group where a broker does not
  // know it). Refused while the brokers list a live member of the group.
  Status setCommittedOffsets(const std::string& group, const OffsetMap& offsets) override {
    const std::string g = rocketmqSafeName(group);
    FERRY_ASSIGN_OR_RETURN(auto members, rocketmq::groupMembers(*client_, g));
    if (!members.empty())
      return Status::failedPrecondition("RocketMQ consumer group " + g + " has " + std::to_string(members.size()) +
                                        " live member(s) (" + members.front() + (members.size() > 1 ? ", ..." : "") +
                                        "); stop them first");
    bool dropSome = offsets.empty();
    if (!dropSome) {
      FERRY_ASSIGN_OR_RETURN(auto current, committedOffsets(group));
      for (const auto& [tq, off] : current)
        if (!offsets.count(tq)) dropSome = true;
    }
    if (dropSome) {
      FERRY_RETURN_IF_ERROR(rocketmq::deleteGroup(*client_, g));
      std::lock_guard lock(mu_);
      groupTopics_.erase(g);
    }
    for (const auto& [tq, off] : offsets) {
      FERRY_ASSIGN_OR_RETURN(auto mq, queueOf(tq));
      FERRY_RETURN_IF_ERROR(rocketmq::setGroupOffset(*client_, g, mq, off));
      rememberGroupTopic(group, tq.topic);
    }
    return Status::ok();
  }
  Status deleteGroup(const std::string& group) override { return setCommittedOffsets(group, {}); }

  // ----- shared with producers and consumers
  // The queue map of `topic`, kept per topic for kRouteCacheMs so the per-message mapping
  // (indexOf, queueOf) costs a map lookup, not a route copy and sort. Blocks on a miss: never
  // call it from the client's io thread (indexOf does not).
  Result<std::shared_ptr<const QueueMap>> queues(const std::string& topic, bool refresh = false) {
    const std::string name = rocketmqSafeName(topic);
    const std::int64_t now = core::monotonicMs();
    if (!refresh) {
      std::lock_guard lock(mu_);
      auto it = queueMaps_.find(name);
      if (it != queueMaps_.end() && now - it->second.first < kRouteCacheMs) return it->second.second;
    }
    FERRY_ASSIGN_OR_RETURN(auto route, client_->queryRoute(name, refresh));
    auto m = std::make_shared<QueueMap>();
    m->queues = route.subscribeQueues();
    std::sort(m->queues.begin(), m->queues.end());
    if (m->queues.empty()) return Status::notFound("topic " + topic + " has no readable queue");
    std::lock_guard lock(mu_);
    queueMaps_[name] = {now, m};
    return std::shared_ptr<const QueueMap>(std::move(m));
  }
  Result<MessageQueue> queueOf(const TopicQueue& tq) {
    FERRY_ASSIGN_OR_RETURN(auto qm, queues(tq.topic));
    if (tq.queue < 0 || static_cast<std::size_t>(tq.queue) >= qm->queues.size())
      return Status::invalidArgument("topic " + tq.topic + " has no queue " + std::to_string(tq.queue));
    return qm->queues[static_cast<std::size_t>(tq.queue)];
  }
  // The ferry queue number of `mq` from the cached map only (safe on the io thread); -1 when the
  // topic's map is not cached or lacks the queue.
  std::int32_t indexOf(const MessageQueue& mq) {
    std::shared_ptr<const QueueMap> qm;
    {
      std::lock_guard lock(mu_);
      auto it = queueMaps_.find(mq.topic);
      if (it == queueMaps_.end()) return -1;
      qm = it->second.second;
    }
    auto it = std::lower_bound(qm->queues.begin(), qm->queues.end(), mq);
    if (it == qm->queues.end() || !(*it == mq)) return -1;
    return static_cast<std::int32_t>(it - qm->queues.begin());
  }
  void rememberGroupTopic(const std::string& group, const std::string& topic) {
    std::lock_guard lock(mu_);
    groupTopics_[rocketmqSafeName(group)].insert(topic);
  }
  bool closed() const { return closed_; }
  Status ensureForSend(const std::string& topic) {
    {
      std::lock_guard lock(mu_);
      if (known_.count(topic)) return Status::ok();
    }
    FERRY_RETURN_IF_ERROR(ensureTopic(topic, o_.defaultQueues));
    FERRY_RETURN_IF_ERROR(queues(topic).status());  // cached for the send callbacks' indexOf
    std::lock_guard lock(mu_);
    known_.insert(topic);
    return Status::ok();
  }

 private:
  Result<OffsetMap> brokerOffsets(const std::string& topic, std::int32_t code) {
    FERRY_ASSIGN_OR_RETURN(auto qm, queues(topic));
    OffsetMap out;
    for (std::size_t i = 0; i < qm->queues.size(); ++i) {
      const auto& mq = qm->queues[i];
      FERRY_ASSIGN_OR_RETURN(std::string addr, client_->brokerAddress(mq.brokerName));
      rocketmq::RemotingCommand req;
      req.code = code;
      req.extFields["topic"] = mq.topic;
      req.extFields["queueId"] = std::to_string(mq.queueId);
      FERRY_ASSIGN_OR_RETURN(auto resp, client_->invoke(addr, req));
      FERRY_RETURN_IF_ERROR(rocketmq::responseStatus(resp, "offsets of " + mq.toString()));
      if (auto off = resp.extInt("offset")) out[TopicQueue{topic, static_cast<std::int32_t>(i)}] = *off;
    }
    return out;
  }

  RocketmqBackboneOptions o_;
  std::unique_ptr<rocketmq::RocketmqClient> client_;
  std::atomic<bool> closed_{false};
  std::atomic<int> nextInstance_{0};
  std::mutex mu_;
  std::vector<std::unique_ptr<rocketmq::RocketmqClient>> consumerClients_;
  std::map<std::string, std::set<std::string>> groupTopics_;
  std::set<std::string> known_;
  static constexpr std::int64_t kRouteCacheMs = 30000;
  // RocketMQ topic name -> (fetched at, queue map).
  std::map<std::string, std::pair<std::int64_t, std::shared_ptr<const QueueMap>>> queueMaps_;
};

Status RmqProducer::send(Message m, SendCallback cb) {
  if (b_.closed()) return Status::unavailable("backbone closed");
  FERRY_RETURN_IF_ERROR(b_.ensureForSend(m.topic));
  rocketmq::OutgoingMessage out;
  out.topic = rocketmqSafeName(m.topic);
  out.body = m.value.str();
  if (!m.key.isNull()) out.properties[kKeyProp] = hex(m.key.view());
  out.properties[kTsProp] = std::to_string(m.timestampMs == 0 ? core::nowMs() : m.timestampMs);
  for (const auto& h : m.headers) {
    if (!safeHeaderName(h.key)) continue;
    out.properties[kHeaderPrefix + h.key] = h.value.isNull() ? std::string("n") : hex(h.value.view());
  }
  rocketmq::QueueSelection sel = rocketmq::QueueSelection::roundRobin();
  std::uint64_t id = 0;
  if (m.queue >= 0) {
    FERRY_ASSIGN_OR_RETURN(auto mq, b_.queueOf(TopicQueue{m.topic, m.queue}));
    sel = rocketmq::QueueSelection::queue(mq.brokerName, mq.queueId);
  } else if (!m.key.isNull()) {
    sel = rocketmq::QueueSelection::byKey(std::string(m.key.view()));
  } else if (!m.routingHint.empty()) {
    sel = rocketmq::QueueSelection::byKey(m.routingHint);
  }
  {
    // The in-flight cap: block (backpressure) until an answer frees a slot. Unbounded sends
    // pile up while a broker is slow or restarting; each one that times out although the broker
    // stored it comes back as a duplicate when the runtime resends it.
    std::unique_lock lock(state_->mu);
    if (maxInflight_ > 0 && state_->outstanding >= maxInflight_) {
      const std::uint64_t purges = state_->purges;
      ++state_->waiting;
      while (state_->outstanding >= maxInflight_ && !b_.closed() && state_->purges == purges)
        state_->cv.wait_for(lock, std::chrono::milliseconds(100));
      --state_->waiting;
      if (b_.closed()) return Status::unavailable("backbone closed");
      if (state_->purges != purges) return Status::unavailable("producer purged while this send waited for room");
    }
    ++state_->outstanding;
    id = state_->nextId++;
    state_->pending.emplace(id, std::move(cb));
  }
  auto state = state_;
  auto* b = &b_;
  const std::string topic = m.topic;
  producer_.sendAsync(std::move(out), sel, [state, b, topic, id](Result<rocketmq::SendResult> r) {
    SendCallback cb;
    {
      std::lock_guard lock(state->mu);
      auto it = state->pending.find(id);
      if (it == state->pending.end()) {  // purged: its callback already ran; now its fate is known
        if (state->onTheWire.erase(id) > 0) state->cv.notify_all();
        return;
      }
      cb = std::move(it->second);
      state->pending.erase(it);
    }
    if (cb) {
      if (r.isOk()) {
        const std::int32_t q = b->indexOf(MessageQueue{r->brokerName.empty() ? "" : rocketmqSafeName(topic),
                                                       r->brokerName, r->queueId});
        cb(Status::ok(), q, r->queueOffset);
      } else {
        cb(r.status(), -1, -1);
      }
    }
    std::lock_guard lock(state->mu);
    if (--state->outstanding == 0 || state->waiting > 0) state->cv.notify_all();
  });
  return Status::ok();
}

Status RmqConsumer::subscribe(const std::vector<std::string>& topics, backbone::RebalanceListener* listener) {
  listener_ = listener;
  rocketmq::ConsumerOptions co;
  co.group = group_;
  co.fromWhere = latest_ ? rocketmq::ConsumeFromWhere::kLastOffset : rocketmq::ConsumeFromWhere::kFirstOffset;
  co.longPollingSuspendMs = 1000;  // poll() waits at most its maxWait anyway
  co.pullTimeoutMs = 5000;
  co.rebalanceIntervalMs = 5000;
  for (const auto& t : topics) {
    FERRY_RETURN_IF_ERROR(b_.queues(t).status());  // cached for the rebalance callbacks' indexOf
    co.subscriptions.push_back(rocketmq::Subscription{rocketmqSafeName(t), "*"});
    b_.rememberGroupTopic(group_, t);
  }
  consumer_ = std::make_unique<rocketmq::PullConsumer>(client_, co, this);
  if (waker_) consumer_->setWaker(waker_);
  return consumer_->start();
}

std::vector<TopicQueue> RmqConsumer::toFerry(const std::vector<MessageQueue>& queues) {
  std::vector<TopicQueue> out;
  for (const auto& mq : queues) {
    const std::int32_t i = b_.indexOf(mq);
    if (i >= 0) out.push_back(TopicQueue{mq.topic, i});
  }
  return out;
}

void RmqConsumer::onRevoked(const std::vector<MessageQueue>& queues) {
  auto tqs = toFerry(queues);
  if (listener_ && !tqs.empty()) listener_->onRevoked(tqs);
  for (const auto& tq : tqs) std::erase(assignment_, tq);
}

void RmqConsumer::onAssigned(const std::vector<MessageQueue>& queues) {
  auto tqs = toFerry(queues);
  assignment_.insert(assignment_.end(), tqs.begin(), tqs.end());
  if (listener_ && !tqs.empty()) listener_->onAssigned(tqs);
}

Result<std::size_t> RmqConsumer::poll(std::vector<Message>& out, std::size_t maxMessages,
                                      std::chrono::milliseconds maxWait) {
  if (!consumer_) return Status::failedPrecondition("subscribe first");
  FERRY_ASSIGN_OR_RETURN(auto pulled, consumer_->poll(maxMessages, maxWait));
  for (auto& p : pulled) out.push_back(toMessage(std::move(p.message), b_.indexOf(p.queue())));
  return pulled.size();
}

Status RmqConsumer::commit(const OffsetMap& offsets) {
  if (!consumer_) return Status::failedPrecondition("subscribe first");
  std::map<MessageQueue, std::int64_t> mqs;
  for (const auto& [tq, off] : offsets) {
    FERRY_ASSIGN_OR_RETURN(auto mq, b_.queueOf(tq));
    mqs[mq] = off;
  }
  return consumer_->commit(mqs);
}

Status RmqConsumer::seek(const TopicQueue& queue, std::int64_t offset) {
  if (!consumer_) return Status::failedPrecondition("subscribe first");
  FERRY_ASSIGN_OR_RETURN(auto mq, b_.queueOf(queue));
  return consumer_->seek(mq, offset);
}

}  // namespace

std::string rocketmqSafeName(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '%' || c == '|' || c == '_' || c == '-')) c = '_';
  }
  return out;
}

Result<std::unique_ptr<Backbone>> openRocketmqBackbone(const RocketmqBackboneOptions& options) {
  rocketmq::ClientOptions co;
  co.namesrvAddrs = options.namesrv;
  co.requestTimeoutMs = options.requestTimeoutMs;
  co.accessKey = options.accessKey;
  co.secretKey = options.secretKey;
  FERRY_ASSIGN_OR_RETURN(auto client, rocketmq::RocketmqClient::create(co));
  // Fail early and clearly when no NameServer answers.
  auto info = client->clusterInfo();
  if (!info.isOk())
    return Status::unavailable("rocketmq backbone: NameServer " + options.namesrv + " does not answer: " +
                               info.status().message());
  return std::unique_ptr<Backbone>(std::make_unique<RocketmqBackbone>(options, std::move(client)));
}

}  // namespace ferry::backbone
