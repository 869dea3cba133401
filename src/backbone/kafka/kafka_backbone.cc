// The kafka backbone (see kafka_backbone.h).
#include "backbone/kafka/kafka_backbone.h"

#include <librdkafka/rdkafka.h>

#include <sys/types.h>

#include <atomic>
#include <cctype>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/clock.h"
#include "core/thread.h"
#include "kafka/rdkafka_util.h"
#include "core/logging.h"

namespace ferry::backbone {
namespace {

std::shared_ptr<spdlog::logger> log() {
  static auto l = core::logger("kafka");
  return l;
}

std::string errText(rd_kafka_resp_err_t e) { return rd_kafka_err2str(e); }

struct ListGuard {
  rd_kafka_topic_partition_list_t* list;
  ~ListGuard() {
    if (list) rd_kafka_topic_partition_list_destroy(list);
  }
};

std::uint32_t fnv1a(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

class KafkaBackbone;

// A consumed Kafka record as a backbone Message named `topic` (key, value, timestamp, headers).
Message fromKafka(const rd_kafka_message_t* m, std::string topic) {
  Message msg;
  msg.topic = std::move(topic);
  msg.queue = m->partition;
  msg.offset = m->offset;
  if (m->key) msg.key = Bytes(std::string(static_cast<const char*>(m->key), m->key_len));
  if (m->payload) msg.value = Bytes(std::string(static_cast<const char*>(m->payload), m->len));
  rd_kafka_timestamp_type_t tt;
  msg.timestampMs = std::max<std::int64_t>(0, rd_kafka_message_timestamp(m, &tt));
  msg.headers = kafka::readHeaders(m);
  return msg;
}

class KafkaProducer final : public TransactionalProducer {
 public:
  KafkaProducer(KafkaBackbone& b, rd_kafka_t* rk, bool transactional)
      : b_(b), rk_(rk), transactional_(transactional) {
    poller_ = core::namedThread("kafka-poll", [this] {
      while (!stop_.load()) rd_kafka_poll(rk_, 50);
    });
  }
  ~KafkaProducer() override {
    if (purged_.load()) {
      // Purged (a worker without its lease): nothing may be waited for from a broker that may be
      // gone; an open transaction is aborted by the successor's fencing or its timeout. The
      // purged messages' delivery reports are served first (their callbacks free what they hold).
      (void)flush(std::chrono::seconds(2));
    } else if (inTxn_) {
      (void)abortTransaction(std::chrono::seconds(5));
    } else {
      (void)flush(std::chrono::seconds(10));
    }
    stop_ = true;
    poller_.join();
    rd_kafka_destroy(rk_);
  }
  Status send(Message m, SendCallback cb) override;
  Status flush(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(state_.mu);
    if (!state_.cv.wait_for(lock, timeout, [&] { return state_.outstanding == 0; }))
      return Status::timeout(std::to_string(state_.outstanding) + " message(s) not yet acknowledged by Kafka");
    return Status::ok();
  }

  // Drops what librdkafka still holds for this producer (queued or in flight); the delivery
  // reports (RD_KAFKA_RESP_ERR__PURGE_QUEUE / __PURGE_INFLIGHT, retriable Unavailable here) are
  // served by the poller thread. Blocking only while librdkafka's own threads empty their queues.
  Status purge() override {
    purged_ = true;
    if (rd_kafka_resp_err_t e = rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return Status::internal("kafka backbone: purge: " + errText(e));
    return Status::ok();
  }

  // Fences earlier producers with the same transactional.id (aborting what they left open).
  Status initTransactions(std::int64_t timeoutMs) {
    if (rd_kafka_error_t* e = rd_kafka_init_transactions(rk_, static_cast<int>(timeoutMs)))
      return txnError(e, "initialising transactions (fencing earlier producers)", timeoutMs);
    return Status::ok();
  }
  Status beginTransaction() override {
    if (!transactional_) return Status::failedPrecondition("kafka backbone: not a transactional producer");
    if (rd_kafka_error_t* e = rd_kafka_begin_transaction(rk_)) return txnError(e, "beginning a transaction", 5000);
    inTxn_ = true;
    return Status::ok();
  }
  // commit_transaction flushes first and fails (abortable) when any message of the transaction
  // was not delivered; a retriable failure (a coordinator moving) is retried until the timeout.
  Status commitTransaction(std::chrono::milliseconds timeout) override {
    const std::int64_t deadline = core::monotonicMs() + timeout.count();
    for (;;) {
      const std::int64_t left = std::max<std::int64_t>(1, deadline - core::monotonicMs());
      rd_kafka_error_t* e = rd_kafka_commit_transaction(rk_, static_cast<int>(left));
      if (e == nullptr) {
        inTxn_ = false;
        return Status::ok();
      }
      if (rd_kafka_error_is_retriable(e) && core::monotonicMs() < deadline) {
        rd_kafka_error_destroy(e);
        continue;
      }
      return txnError(e, "committing a transaction", timeout.count());
    }
  }
  Status abortTransaction(std::chrono::milliseconds timeout) override {
    if (!inTxn_) return Status::ok();
    inTxn_ = false;
    if (rd_kafka_error_t* e = rd_kafka_abort_transaction(rk_, static_cast<int>(timeout.count()))) {
      Status s = Status::unavailable(std::string("kafka backbone: aborting a transaction: ") + rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
      return s;
    }
    return Status::ok();
  }

  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::int64_t outstanding = 0;
  };
  struct Pending {
    State* state;
    SendCallback cb;
  };

 private:
  // A failed transaction call: the open transaction is aborted when the error asks for it; a
  // fenced producer (another one took over its transactional.id) is a fatal error.
  Status txnError(rd_kafka_error_t* e, const std::string& what, std::int64_t timeoutMs) {
    const bool fatal = rd_kafka_error_is_fatal(e);
    const bool abortable = rd_kafka_error_txn_requires_abort(e);
    std::string text = std::string("kafka backbone: ") + what + ": " + rd_kafka_error_string(e);
    const bool fenced = rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR__FENCED ||
                        rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
                        rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
    rd_kafka_error_destroy(e);
    if (abortable && inTxn_) {
      inTxn_ = false;
      if (rd_kafka_error_t* a = rd_kafka_abort_transaction(rk_, static_cast<int>(timeoutMs))) {
        text += std::string(" (abort failed too: ") + rd_kafka_error_string(a) + ")";
        rd_kafka_error_destroy(a);
      } else {
        text += " (transaction aborted)";
      }
    }
    if (fenced) return Status::failedPrecondition(text + " - fenced: another producer took over this transactional.id");
    return fatal ? Status::internal(text) : Status::unavailable(text);
  }

  KafkaBackbone& b_;
  rd_kafka_t* rk_;
  const bool transactional_;
  bool inTxn_ = false;
  State state_;
  std::atomic<bool> purged_{false};  // purge() was called: the destructor waits for no broker
  std::atomic<bool> stop_{false};
  std::thread poller_;
};

void onDelivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void*) {
  auto* p = static_cast<KafkaProducer::Pending*>(m->_private);
  if (p == nullptr) return;
  if (p->cb) {
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      p->cb(Status::ok(), m->partition, m->offset);
    } else if (m->err == RD_KAFKA_RESP_ERR__FATAL) {  // the reason (fenced, ...) is the fatal error's
      char fatal[512];
      rd_kafka_fatal_error(rk, fatal, sizeof fatal);
      p->cb(Status::internal(std::string("Kafka did not take the message: fatal error: ") + fatal), -1, -1);
    } else {
      p->cb(Status::unavailable("Kafka did not take the message: " + errText(m->err)), -1, -1);
    }
  }
  KafkaProducer::State* s = p->state;
  delete p;
  std::lock_guard lock(s->mu);
  if (--s->outstanding == 0) s->cv.notify_all();
}

class KafkaConsumer final : public Consumer {
 public:
  KafkaConsumer(KafkaBackbone& b, std::string group, std::string staticMember)
      : b_(b), group_(std::move(group)), staticMember_(std::move(staticMember)) {}
  ~KafkaConsumer() override {
    close();
    if (conf_) rd_kafka_conf_destroy(conf_);
  }
  void prepare(rd_kafka_conf_t* conf) { conf_ = conf; }
  Status subscribe(const std::vector<std::string>& topics, RebalanceListener* listener) override;
  Result<std::size_t> poll(std::vector<Message>& out, std::size_t maxMessages, std::chrono::milliseconds maxWait) override;
  Status commit(const OffsetMap& offsets) override;
  Status seek(const TopicQueue& queue, std::int64_t offset) override;
  std::vector<TopicQueue> assignment() const override { return assignment_; }
  void close() override {
    if (rk_ == nullptr) return;
    queueWaker_.detach();  // no more wake-ups
    rd_kafka_consumer_close(rk_);  // serves the final revocation (listener commits) first
    rd_kafka_destroy(rk_);         // joins librdkafka's threads: no callback after this
    rk_ = nullptr;
  }
  // librdkafka calls back (from its own thread) when the consumer queue turns non-empty:
  // messages, a rebalance to serve, an error.
  bool setWaker(std::function<void()> wake) override {
    waker_ = std::move(wake);
    return true;
  }

  void rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts);

 private:
  std::vector<TopicQueue> toFerry(const rd_kafka_topic_partition_list_t* parts) const;

  Status open(const std::vector<std::string>& topics);

  KafkaBackbone& b_;
  const std::string group_;
  const std::string staticMember_;  // empty: dynamic membership
  rd_kafka_conf_t* conf_ = nullptr;  // until subscribe() creates the client
  rd_kafka_t* rk_ = nullptr;
  RebalanceListener* listener_ = nullptr;
  std::map<std::string, std::string> names_;  // Kafka topic -> ferry topic
  std::vector<TopicQueue> assignment_;
  std::function<void()> waker_;         // setWaker()
  kafka::QueueWaker queueWaker_;        // calls waker_ while registered on the consumer queue
};

void onRebalance(rd_kafka_t*, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts, void* opaque) {
  static_cast<KafkaConsumer*>(opaque)->rebalance(err, parts);
}

// The shared log on one partition of a topic with message.timestamp.type=LogAppendTime: the broker
// stamps every entry. Appends are idempotent and acknowledged by all in-sync replicas; reads
// assign the partition (no group) and seek when asked for another offset than the next one.
class KafkaSharedLog final : public SharedLog {
 public:
  struct Pending {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    std::int64_t offset = -1;
    std::function<void(const Pending&)> then;  // appendAsync(): run by the delivery callback
  };

  KafkaSharedLog(std::string topic, rd_kafka_t* producer, rd_kafka_t* consumer)
      : topic_(std::move(topic)), producer_(producer), consumer_(consumer) {
    poller_ = core::namedThread("kafka-poll", [this] {
      while (!stop_.load()) rd_kafka_poll(producer_, 20);
    });
  }
  ~KafkaSharedLog() override {
    rd_kafka_flush(producer_, 5000);
    stop_ = true;
    poller_.join();
    rd_kafka_destroy(producer_);
    rd_kafka_consumer_close(consumer_);
    rd_kafka_destroy(consumer_);
  }

  static void onDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
    auto* holder = static_cast<std::shared_ptr<Pending>*>(m->_private);
    if (holder == nullptr) return;
    {
      std::lock_guard lock((*holder)->mu);
      (*holder)->done = true;
      (*holder)->err = m->err;
      (*holder)->offset = m->offset;
    }
    (*holder)->cv.notify_all();
    if ((*holder)->then) (*holder)->then(**holder);
    delete holder;
  }

  // Hands `value` to the client; onDelivery settles `pending`. The refusal's status, if any.
  Status produce(const Bytes& value, const std::shared_ptr<Pending>& pending) {
    auto* holder = new std::shared_ptr<Pending>(pending);
    rd_kafka_resp_err_t e = rd_kafka_producev(
        producer_, RD_KAFKA_V_TOPIC(topic_.c_str()), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.view().data()), value.size()), RD_KAFKA_V_OPAQUE(holder),
        RD_KAFKA_V_END);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return Status::ok();
    delete holder;
    return Status::unavailable("kafka shared log " + topic_ + ": " + errText(e));
  }

  void appendAsync(const Bytes& value, std::function<void(Result<std::int64_t>)> done) override {
    auto pending = std::make_shared<Pending>();
    pending->then = [done, topic = topic_](const Pending& p) {
      if (p.err != RD_KAFKA_RESP_ERR_NO_ERROR)
        done(Status::unavailable("kafka shared log " + topic + ": " + errText(p.err)));
      else
        done(p.offset);
    };
    if (Status refused = produce(value, pending); !refused.isOk()) done(refused);
  }

  Result<std::int64_t> append(const Bytes& value, std::chrono::milliseconds timeout) override {
    return appendAll({value}, timeout);
  }

  Result<std::int64_t> appendAll(const std::vector<Bytes>& values, std::chrono::milliseconds timeout) override {
    // All handed to the client first (one partition, the idempotent producer keeps their order),
    // then every acknowledgement waited for under one deadline.
    std::vector<std::shared_ptr<Pending>> pending;
    pending.reserve(values.size());
    Status refused;
    for (const auto& value : values) {
      auto p = std::make_shared<Pending>();
      refused = produce(value, p);
      if (!refused.isOk()) break;  // the later ones are not sent: order is kept
      pending.push_back(std::move(p));
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::int64_t last = -1;
    for (auto& p : pending) {
      std::unique_lock lock(p->mu);
      if (!p->cv.wait_until(lock, deadline, [&] { return p->done; }))
        return Status::timeout("kafka shared log " + topic_ + ": append not acknowledged within " +
                               std::to_string(timeout.count()) + " ms");
      if (p->err != RD_KAFKA_RESP_ERR_NO_ERROR)
        return Status::unavailable("kafka shared log " + topic_ + ": " + errText(p->err));
      last = p->offset;
    }
    if (!refused.isOk()) return refused;
    return last;
  }

  Result<std::size_t> read(std::int64_t from, std::vector<Entry>& out, std::size_t max,
                           std::chrono::milliseconds wait) override {
    std::lock_guard lock(readMu_);
    if (from != next_) {
      ListGuard list{rd_kafka_topic_partition_list_new(1)};
      rd_kafka_topic_partition_list_add(list.list, topic_.c_str(), 0)->offset = from;
      if (rd_kafka_resp_err_t e = rd_kafka_assign(consumer_, list.list))
        return Status::unavailable("kafka shared log " + topic_ + ": " + errText(e));
      next_ = from;
    }
    std::size_t n = 0;
    const std::int64_t deadline = core::monotonicMs() + wait.count();
    while (n < max) {
      const std::int64_t left = n > 0 ? 0 : std::max<std::int64_t>(0, deadline - core::monotonicMs());
      rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer_, static_cast<int>(left));
      if (m == nullptr) {
        if (n > 0 || core::monotonicMs() >= deadline) break;
        continue;
      }
      if (m->err) {
        const rd_kafka_resp_err_t err = m->err;
        rd_kafka_message_destroy(m);
        if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF || err == RD_KAFKA_RESP_ERR__TRANSPORT ||
            err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
          continue;
        return Status::unavailable("kafka shared log " + topic_ + ": " + errText(err));
      }
      Entry e;
      e.offset = m->offset;
      rd_kafka_timestamp_type_t tt;
      e.timestampMs = rd_kafka_message_timestamp(m, &tt);
      if (m->payload) e.value = Bytes(std::string(static_cast<const char*>(m->payload), m->len));
      next_ = m->offset + 1;
      rd_kafka_message_destroy(m);
      out.push_back(std::move(e));
      ++n;
    }
    return n;
  }

  Result<std::int64_t> endOffset() override {
    std::int64_t lo = 0, hi = 0;
    if (rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(consumer_, topic_.c_str(), 0, &lo, &hi, 10000))
      return Status::unavailable("kafka shared log " + topic_ + ": " + errText(e));
    return hi;
  }

 private:
  const std::string topic_;
  rd_kafka_t* producer_;
  rd_kafka_t* consumer_;
  std::atomic<bool> stop_{false};
  std::thread poller_;
  std::mutex readMu_;
  std::int64_t next_ = -1;  // guarded by readMu_: the offset the consumer reads next
};

class KafkaBackbone final : public Backbone, public Admin {
 public:
  KafkaBackbone(KafkaBackboneOptions o, rd_kafka_t* admin) : o_(std::move(o)), admin_(admin) {}
  ~KafkaBackbone() override {
    close();
    rd_kafka_destroy(admin_);
  }

  std::string kind() const override { return "kafka"; }

  Result<std::unique_ptr<Producer>> createProducer(const StringMap& overrides) override {
    FERRY_ASSIGN_OR_RETURN(auto p, makeProducer(overrides, ""));
    return std::unique_ptr<Producer>(std::move(p));
  }

  Result<std::unique_ptr<TransactionalProducer>> createTransactionalProducer(const std::string& transactionalId,
                                                                             const StringMap& overrides) override {
    FERRY_ASSIGN_OR_RETURN(auto p, makeProducer(overrides, transactionalId));
    FERRY_RETURN_IF_ERROR(p->initTransactions(std::max<std::int64_t>(30000, o_.requestTimeoutMs * 3)));
    return std::unique_ptr<TransactionalProducer>(std::move(p));
  }

  Result<std::unique_ptr<KafkaProducer>> makeProducer(const StringMap& overrides, const std::string& transactionalId) {
    if (closed_) return Status::unavailable("backbone closed");
    StringMap base = {{"bootstrap.servers", o_.bootstrapServers},
                      {"enable.idempotence", "true"},
                      {"acks", "all"},
                      {"linger.ms", "5"},
                      {"partitioner", "murmur2_random"},  // the Java client's choice: same key, same partition
                      {"queue.buffering.max.messages", "100000"},
                      {"message.timeout.ms", "120000"},
                      {"client.id", "ferry-producer"}};
    StringMap txn;
    if (!transactionalId.empty()) {
      // A transaction a crashed producer left open blocks read_committed readers until it times
      // out or a successor with the same id aborts it; a minute, Kafka Connect's default.
      txn = {{"transactional.id", kafkaSafeName(transactionalId)},
             {"transaction.timeout.ms", "60000"},
             {"message.timeout.ms", "60000"}};
    }
    FERRY_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf,
                           kafka::makeConf({{&base, "kafka backbone: "},
                                            {&o_.clientOverrides, "backbone.kafka.client."},
                                            {&o_.producerOverrides, "backbone.kafka.producer."},
                                            {&overrides, "kafka backbone: "},
                                            {&txn, "kafka backbone: "}}));
    rd_kafka_conf_set_dr_msg_cb(conf, onDelivery);
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (rk == nullptr) {
      rd_kafka_conf_destroy(conf);
      return Status::invalidArgument(std::string("kafka backbone: cannot create a producer: ") + err);
    }
    return std::make_unique<KafkaProducer>(*this, rk, !transactionalId.empty());
  }

  Result<std::unique_ptr<Consumer>> createConsumer(const std::string& group, const std::string& memberId,
                                                   const StringMap& overrides) override {
    if (closed_) return Status::unavailable("backbone closed");
    StringMap base = {{"bootstrap.servers", o_.bootstrapServers},
                      {"group.id", kafkaSafeName(group)},
                      {"client.id", kafkaSafeName(memberId.empty() ? group : memberId)},
                      {"enable.auto.commit", "false"},
                      {"enable.auto.offset.store", "false"},
                      {"auto.offset.reset", "earliest"},
                      {"partition.assignment.strategy", "cooperative-sticky"},
                      {"session.timeout.ms", std::to_string(o_.sessionTimeoutMs)},
                      {"heartbeat.interval.ms", std::to_string(std::max<std::int64_t>(1000, o_.sessionTimeoutMs / 4))},
                      {"topic.metadata.refresh.interval.ms", "10000"},
                      {"allow.auto.create.topics", "false"}};
    FERRY_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf,
                           kafka::makeConf({{&base, "kafka backbone: "},
                                            {&o_.clientOverrides, "backbone.kafka.client."},
                                            {&o_.consumerOverrides, "backbone.kafka.consumer."},
                                            {&overrides, "kafka backbone: "}}));
    // The client is created at subscribe(), when the static member id (which depends on the
    // topics) is known; the settings are checked now.
    auto c = std::make_unique<KafkaConsumer>(*this, kafkaSafeName(group),
                                             o_.staticMembership && !memberId.empty() ? kafkaSafeName(memberId)
                                                                                      : std::string());
    c->prepare(conf);
    return std::unique_ptr<Consumer>(std::move(c));
  }

  Admin& admin() override { return *this; }
  void close() override { closed_ = true; }

  Result<std::unique_ptr<SharedLog>> openSharedLog(const std::string& name) override {
    if (closed_) return Status::unavailable("backbone closed");
    const std::string topic = kafkaSafeName(name);
    // One partition (the total order); the broker's clock stamps entries; nothing expires.
    FERRY_RETURN_IF_ERROR(kafka::createTopic(admin_, topic, 1, o_.replicationFactor, o_.requestTimeoutMs,
                                             {{"message.timestamp.type", "LogAppendTime"},
                                              {"retention.ms", "-1"},
                                              {"cleanup.policy", "delete"}})
                              .withContext("kafka shared log"));
    const std::int64_t deadline = core::monotonicMs() + o_.requestTimeoutMs;
    Result<TopicInfo> info = describeTopic(name);
    while (!info.isOk()) {
      if (core::monotonicMs() >= deadline) return Status::timeout("kafka shared log: topic " + topic + " not in the metadata");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      info = describeTopic(name);
    }
    if (info->queues != 1)
      return Status::failedPrecondition("kafka shared log: topic " + topic + " has " + std::to_string(info->queues) +
                                        " partitions; it needs exactly one (a total order)");
    StringMap pbase = {{"bootstrap.servers", o_.bootstrapServers},
                       {"enable.idempotence", "true"},
                       {"acks", "all"},
                       {"linger.ms", "0"},
                       {"message.timeout.ms", "30000"},
                       {"client.id", "ferry-cluster-log"}};
    StringMap cbase = {{"bootstrap.servers", o_.bootstrapServers},
                       {"group.id", "ferry-cluster-log"},  // never joined: the partition is assigned
                       {"client.id", "ferry-cluster-log"},
                       {"enable.auto.commit", "false"},
                       {"enable.auto.offset.store", "false"},
                       {"auto.offset.reset", "earliest"},
                       {"fetch.wait.max.ms", "50"},
                       {"allow.auto.create.topics", "false"}};
    FERRY_ASSIGN_OR_RETURN(rd_kafka_conf_t * pconf,
                           kafka::makeConf({{&pbase, "kafka shared log: "},
                                            {&o_.clientOverrides, "backbone.kafka.client."},
                                            {&o_.producerOverrides, "backbone.kafka.producer."}}));
    rd_kafka_conf_set_dr_msg_cb(pconf, KafkaSharedLog::onDelivery);
    char err[512];
    rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, err, sizeof err);
    if (producer == nullptr) {
      rd_kafka_conf_destroy(pconf);
      return Status::invalidArgument(std::string("kafka shared log: ") + err);
    }
    auto cconf = kafka::makeConf({{&cbase, "kafka shared log: "},
                                  {&o_.clientOverrides, "backbone.kafka.client."},
                                  {&o_.consumerOverrides, "backbone.kafka.consumer."}});
    if (!cconf.isOk()) {
      rd_kafka_destroy(producer);
      return cconf.status();
    }
    rd_kafka_t* consumer = rd_kafka_new(RD_KAFKA_CONSUMER, *cconf, err, sizeof err);
    if (consumer == nullptr) {
      rd_kafka_conf_destroy(*cconf);
      rd_kafka_destroy(producer);
      return Status::invalidArgument(std::string("kafka shared log: ") + err);
    }
    rd_kafka_poll_set_consumer(consumer);
    return std::unique_ptr<SharedLog>(std::make_unique<KafkaSharedLog>(topic, producer, consumer));
  }

  // Assigns every partition from its start (no group), read_committed, and reads each to its
  // first end (the last stable offset) or, with waitForOpen, to the high watermark it had then:
  // data of transactions still open is waited for (their commit or abort moves the last stable
  // offset past it).
  Status readCommitted(const std::string& name, std::int32_t queues, const std::function<void(const Message&)>& fn,
                       bool waitForOpen, std::chrono::milliseconds timeout,
                       std::map<std::int32_t, std::int64_t>* cursor = nullptr) override {
    if (closed_) return Status::unavailable("backbone closed");
    const std::int64_t tA = core::monotonicMs();
    FERRY_RETURN_IF_ERROR(ensureTopic(name, queues));
    FERRY_ASSIGN_OR_RETURN(TopicInfo info, describeTopic(name));
    const std::int64_t tB = core::monotonicMs();
    const std::string topic = kafkaSafeName(name);
    StringMap base = {{"bootstrap.servers", o_.bootstrapServers},
                      {"group.id", "ferry-reader"},  // never joined: partitions are assigned
                      {"client.id", "ferry-reader"},
                      {"enable.auto.commit", "false"},
                      {"enable.auto.offset.store", "false"},
                      {"enable.partition.eof", "true"},
                      {"isolation.level", "read_committed"},
                      {"fetch.wait.max.ms", "20"},  // an empty partition answers (and ends) at once
                      {"allow.auto.create.topics", "false"}};
    StringMap fixed = {{"isolation.level", "read_committed"}, {"enable.partition.eof", "true"}};
    FERRY_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf,
                           kafka::makeConf({{&base, "kafka backbone: "},
                                            {&o_.clientOverrides, "backbone.kafka.client."},
                                            {&o_.consumerOverrides, "backbone.kafka.consumer."},
                                            {&fixed, "kafka backbone: "}}));
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (rk == nullptr) {
      rd_kafka_conf_destroy(conf);
      return Status::invalidArgument(std::string("kafka backbone: cannot create a reader: ") + err);
    }
    // Where a slow read spends its time (logged when the whole read took over 500 ms).
    struct Closer {
      rd_kafka_t* rk;
      const std::string& topic;
      std::int64_t t0, tMeta, tLoop = -1;
      ~Closer() {
        const std::int64_t t = core::monotonicMs();
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        const std::int64_t end = core::monotonicMs();
        if (end - t0 > 500)
          core::logger("backbone")->info("kafka backbone: read_committed {} took {} ms (metadata {} ms, reading {} ms, "
                                         "closing the reader {} ms)", topic, end - t0, tMeta - t0,
                                         tLoop < 0 ? -1 : tLoop - tMeta, end - t);
      }
    } closer{rk, topic, tA, tB};
    rd_kafka_poll_set_consumer(rk);
    ListGuard all{rd_kafka_topic_partition_list_new(info.queues)};
    for (std::int32_t p = 0; p < info.queues; ++p)
      rd_kafka_topic_partition_list_add(all.list, topic.c_str(), p)->offset =
          cursor && cursor->count(p) ? cursor->at(p) : RD_KAFKA_OFFSET_BEGINNING;
    if (rd_kafka_resp_err_t e = rd_kafka_assign(rk, all.list))
      return Status::unavailable("kafka backbone: reading " + topic + ": " + errText(e));
    // Each partition's end as of now (its high watermark). librdkafka signals a partition's end
    // only on a fetch that brings nothing new, which a partition written all the time (the
    // positions of running exactly-once sources: a record per transaction) may not see for
    // seconds: a partition is also read to its end once a record at or past target - 1 arrived
    // (read_committed delivers it only when everything before it is stable).
    const std::int64_t deadline = core::monotonicMs() + timeout.count();
    std::vector<std::int64_t> target(static_cast<std::size_t>(info.queues), -1);
    for (std::int32_t p = 0; p < info.queues; ++p) {
      std::int64_t lo = 0, hi = 0;
      const int wait = static_cast<int>(std::clamp<std::int64_t>(deadline - core::monotonicMs(), 1, 5000));
      if (rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &lo, &hi, wait) != RD_KAFKA_RESP_ERR_NO_ERROR)
        break;  // the broker does not answer: the rest end at their end signal (or the deadline)
      target[static_cast<std::size_t>(p)] = hi;
    }
    std::vector<std::int64_t> stalledAt(static_cast<std::size_t>(info.queues), -1);
    std::vector<bool> done(static_cast<std::size_t>(info.queues), false);
    std::int32_t remaining = info.queues;
    std::int64_t nextReseek = core::monotonicMs() + 200;
    while (remaining > 0) {
      if (closed_) return Status::unavailable("backbone closed");  // a worker shutting down
      if (core::monotonicMs() >= deadline) {
        std::string which;
        for (std::int32_t p = 0; p < info.queues; ++p)
          if (!done[static_cast<std::size_t>(p)])
            which += " " + std::to_string(p) + " (committed up to " + std::to_string(stalledAt[static_cast<std::size_t>(p)]) +
                     ", written up to " + std::to_string(target[static_cast<std::size_t>(p)]) + ")";
        return Status::timeout("kafka backbone: " + topic + " not read to its end within " +
                               std::to_string(timeout.count()) + " ms; partitions" + which +
                               ": a transaction is still open there");
      }
      if (core::monotonicMs() >= nextReseek) {
        // A partition that ended below its target is fetched again to see the stable offset move.
        nextReseek = core::monotonicMs() + 200;
        ListGuard again{rd_kafka_topic_partition_list_new(1)};
        for (std::int32_t p = 0; p < info.queues; ++p)
          if (!done[static_cast<std::size_t>(p)] && stalledAt[static_cast<std::size_t>(p)] >= 0)
            rd_kafka_topic_partition_list_add(again.list, topic.c_str(), p)->offset = stalledAt[static_cast<std::size_t>(p)];
        if (again.list->cnt > 0)
          if (rd_kafka_error_t* e = rd_kafka_seek_partitions(rk, again.list, 5000)) rd_kafka_error_destroy(e);
      }
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
      if (m == nullptr) continue;
      struct MsgGuard {
        rd_kafka_message_t* m;
        ~MsgGuard() { rd_kafka_message_destroy(m); }
      } guard{m};
      const auto p = static_cast<std::size_t>(m->partition);
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        if (p >= done.size() || done[p]) continue;
        if (target[p] < 0) {
          std::int64_t lo = 0, hi = 0;
          rd_kafka_get_watermark_offsets(rk, topic.c_str(), m->partition, &lo, &hi);
          target[p] = hi;
        }
        if (m->offset >= target[p] || !waitForOpen) {
          done[p] = true;
          --remaining;
          if (cursor) (*cursor)[m->partition] = m->offset;  // the end offset: next to read
        } else {
          stalledAt[p] = m->offset;
        }
        continue;
      }
      if (m->err) {
        if (m->err == RD_KAFKA_RESP_ERR__TRANSPORT || m->err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) continue;
        return Status::unavailable("kafka backbone: reading " + topic + ": " + errText(m->err));
      }
      if (cursor) (*cursor)[m->partition] = m->offset + 1;
      fn(fromKafka(m, name));
      if (p < done.size() && !done[p] && target[p] >= 0 && m->offset >= target[p] - 1) {
        done[p] = true;
        --remaining;
      }
    }
    closer.tLoop = core::monotonicMs();
    return Status::ok();
  }
  bool closed() const { return closed_; }

  // ----- Admin
  Status ensureTopic(const std::string& name, std::int32_t queues) override {
    const std::string t = kafkaSafeName(name);
    if (describeTopic(name).isOk()) return Status::ok();
    FERRY_RETURN_IF_ERROR(
        kafka::createTopic(admin_, t, queues, o_.replicationFactor, o_.requestTimeoutMs).withContext("kafka backbone"));
    // The controller answered; wait until the metadata the clients see has the topic.
    const std::int64_t deadline = core::monotonicMs() + o_.requestTimeoutMs;
    while (core::monotonicMs() < deadline) {
      if (describeTopic(name).isOk()) return Status::ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return Status::timeout("kafka backbone: topic " + t + " created but not yet in the metadata");
  }

  Result<std::vector<TopicInfo>> listTopics() override {
    FERRY_ASSIGN_OR_RETURN(auto all, metadata());
    std::vector<TopicInfo> out;
    for (const auto& [name, parts] : all)
      if (name.rfind("__", 0) != 0) out.push_back(TopicInfo{name, parts});
    return out;
  }

  Result<TopicInfo> describeTopic(const std::string& name) override {
    const std::string t = kafkaSafeName(name);
    FERRY_ASSIGN_OR_RETURN(auto all, metadata());
    auto it = all.find(t);
    if (it == all.end() || it->second <= 0) return Status::notFound("Kafka topic " + t + " does not exist");
    remember(t, it->second);
    return TopicInfo{name, it->second};
  }

  Result<OffsetMap> endOffsets(const std::string& topic) override { return watermarks(topic, true); }
  Result<OffsetMap> startOffsets(const std::string& topic) override { return watermarks(topic, false); }

  Result<OffsetMap> committedOffsets(const std::string& group) override {
    FERRY_ASSIGN_OR_RETURN(auto got, kafka::groupOffsets(admin_, kafkaSafeName(group), o_.requestTimeoutMs));
    OffsetMap out;
    for (const auto& [tp, off] : got) out[TopicQueue{tp.first, tp.second}] = off;
    return out;
  }

  // Kafka refuses both steps while the group has members. Static members (the default) stay in
  // the group for session.timeout.ms after their consumer closed, so a group whose sink was just
  // stopped is retried until that time has passed before the refusal is reported.
  Status setCommittedOffsets(const std::string& group, const OffsetMap& offsets) override {
    const std::string g = kafkaSafeName(group);
    const std::int64_t deadline = core::monotonicMs() + o_.sessionTimeoutMs + 5000;
    for (;;) {
      Status s = trySetCommitted(g, group, offsets);
      if (s.code() != StatusCode::kFailedPrecondition || core::monotonicMs() >= deadline) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  Status deleteGroup(const std::string& group) override { return setCommittedOffsets(group, {}); }

  std::int32_t partitionsOf(const std::string& kafkaTopic) {
    std::lock_guard lock(mu_);
    auto it = partitions_.find(kafkaTopic);
    return it == partitions_.end() ? 0 : it->second;
  }
  Status ensureForSend(const std::string& kafkaTopic, const std::string& name) {
    if (partitionsOf(kafkaTopic) > 0) return Status::ok();
    return ensureTopic(name, o_.defaultQueues);
  }
  std::int64_t requestTimeoutMs() const { return o_.requestTimeoutMs; }

 private:
  void remember(const std::string& kafkaTopic, std::int32_t parts) {
    std::lock_guard lock(mu_);
    partitions_[kafkaTopic] = parts;
  }

  Result<std::map<std::string, std::int32_t>> metadata() {
    auto m = kafka::topicPartitions(admin_, o_.requestTimeoutMs);
    if (!m.isOk()) return m.status().withContext("kafka backbone: " + o_.bootstrapServers);
    return m;
  }

  Result<OffsetMap> watermarks(const std::string& topic, bool high) {
    FERRY_ASSIGN_OR_RETURN(auto info, describeTopic(topic));
    const std::string t = kafkaSafeName(topic);
    OffsetMap out;
    for (std::int32_t p = 0; p < info.queues; ++p) {
      FERRY_ASSIGN_OR_RETURN(auto w, kafka::watermarks(admin_, t, p, o_.requestTimeoutMs));
      out[TopicQueue{topic, p}] = high ? w.second : w.first;
    }
    return out;
  }

  Status trySetCommitted(const std::string& g, const std::string& group, const OffsetMap& offsets) {
    bool dropSome = offsets.empty();
    if (!dropSome) {
      FERRY_ASSIGN_OR_RETURN(auto current, committedOffsets(group));
      for (const auto& [tq, off] : current)
        if (!offsets.count(TopicQueue{kafkaSafeName(tq.topic), tq.queue}) && !offsets.count(tq)) dropSome = true;
    }
    if (dropSome) FERRY_RETURN_IF_ERROR(kafka::deleteGroup(admin_, g, o_.requestTimeoutMs));
    kafka::PartitionOffsets want;
    for (const auto& [tq, off] : offsets) want[{kafkaSafeName(tq.topic), tq.queue}] = off;
    return kafka::alterGroupOffsets(admin_, g, want, o_.requestTimeoutMs);
  }

  KafkaBackboneOptions o_;
  rd_kafka_t* admin_;  // a producer handle used for admin requests and metadata only
  std::atomic<bool> closed_{false};
  std::mutex mu_;
  std::map<std::string, std::int32_t> partitions_;  // Kafka topic -> partitions (send side)
};

Status KafkaProducer::send(Message m, SendCallback cb) {
  if (b_.closed()) return Status::unavailable("backbone closed");
  char fatal[512];
  if (rd_kafka_resp_err_t e = rd_kafka_fatal_error(rk_, fatal, sizeof fatal); e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return Status::internal(std::string("kafka backbone producer: fatal error: ") + fatal);
  const std::string topic = kafkaSafeName(m.topic);
  FERRY_RETURN_IF_ERROR(b_.ensureForSend(topic, m.topic));
  std::int32_t partition = RD_KAFKA_PARTITION_UA;
  if (m.queue >= 0) {
    partition = m.queue;
  } else if (m.key.isNull() && !m.routingHint.empty()) {
    if (const std::int32_t n = b_.partitionsOf(topic); n > 0)
      partition = static_cast<std::int32_t>(fnv1a(m.routingHint) % static_cast<std::uint32_t>(n));
  }
  rd_kafka_headers_t* hdrs = kafka::toKafkaHeaders(m.headers);
  auto* pending = new Pending{&state_, std::move(cb)};
  {
    std::lock_guard lock(state_.mu);
    ++state_.outstanding;
  }
  for (;;) {
    rd_kafka_resp_err_t e = rd_kafka_producev(
        rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE(m.value.isNull() ? nullptr : const_cast<char*>(m.value.view().data()),
                         m.value.isNull() ? 0 : m.value.size()),
        RD_KAFKA_V_KEY(m.key.isNull() ? nullptr : const_cast<char*>(m.key.view().data()),
                       m.key.isNull() ? 0 : m.key.size()),
        RD_KAFKA_V_TIMESTAMP(m.timestampMs), RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(pending), RD_KAFKA_V_END);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return Status::ok();  // librdkafka owns hdrs now
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL && !b_.closed()) {
      // Backpressure: the poller thread serves delivery reports and makes room.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    if (hdrs) rd_kafka_headers_destroy(hdrs);
    delete pending;
    {
      std::lock_guard lock(state_.mu);
      if (--state_.outstanding == 0) state_.cv.notify_all();
    }
    if (e == RD_KAFKA_RESP_ERR__FATAL) {  // raised since the check above: say what it is (fenced, ...)
      rd_kafka_fatal_error(rk_, fatal, sizeof fatal);
      return Status::internal(std::string("kafka backbone producer: fatal error: ") + fatal);
    }
    return Status::unavailable("kafka backbone: cannot send to " + topic + ": " + errText(e));
  }
}

Status KafkaConsumer::open(const std::vector<std::string>& topics) {
  if (conf_ == nullptr) return Status::failedPrecondition("kafka backbone: consumer closed");
  rd_kafka_conf_t* conf = conf_;
  conf_ = nullptr;
  char err[512];
  if (!staticMember_.empty()) {
    std::vector<std::string> names;
    for (const auto& t : topics) names.push_back(kafkaSafeName(t));
    const std::string id = kafka::staticInstanceId(staticMember_, names);
    if (rd_kafka_conf_set(conf, "group.instance.id", id.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status::invalidArgument(std::string("kafka backbone: group.instance.id: ") + err);
    }
  }
  rd_kafka_conf_set_rebalance_cb(conf, onRebalance);
  rd_kafka_conf_set_opaque(conf, this);
  rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk_ == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::invalidArgument(std::string("kafka backbone: cannot create a consumer: ") + err);
  }
  rd_kafka_poll_set_consumer(rk_);
  if (waker_) queueWaker_.attach(rk_, waker_);
  return Status::ok();
}

Status KafkaConsumer::subscribe(const std::vector<std::string>& topics, RebalanceListener* listener) {
  if (rk_ == nullptr) FERRY_RETURN_IF_ERROR(open(topics));
  listener_ = listener;
  rd_kafka_topic_partition_list_t* subs = rd_kafka_topic_partition_list_new(static_cast<int>(topics.size()));
  ListGuard g{subs};
  for (const auto& t : topics) {
    const std::string k = kafkaSafeName(t);
    names_[k] = t;
    rd_kafka_topic_partition_list_add(subs, k.c_str(), RD_KAFKA_PARTITION_UA);
  }
  rd_kafka_resp_err_t e = rd_kafka_subscribe(rk_, subs);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return Status::unavailable("kafka backbone: group " + group_ + " cannot subscribe: " + errText(e));
  return Status::ok();
}

std::vector<TopicQueue> KafkaConsumer::toFerry(const rd_kafka_topic_partition_list_t* parts) const {
  std::vector<TopicQueue> out;
  for (int i = 0; parts && i < parts->cnt; ++i) {
    auto it = names_.find(parts->elems[i].topic);
    out.push_back(TopicQueue{it == names_.end() ? std::string(parts->elems[i].topic) : it->second,
                             parts->elems[i].partition});
  }
  return out;
}

// Runs inside rd_kafka_consumer_poll() / rd_kafka_consumer_close() on the task thread. Revoked
// partitions are offered to the listener (which flushes the sink and commits) before they are
// given up; with the cooperative protocol only the partitions that move are revoked.
void KafkaConsumer::rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts) {
  const bool cooperative = std::string_view(rd_kafka_rebalance_protocol(rk_)) == "COOPERATIVE";
  auto tqs = toFerry(parts);
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_assign(rk_, parts)) {
        log()->warn("kafka backbone: group {}: incremental assign failed: {}", group_, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
      }
    } else {
      rd_kafka_assign(rk_, parts);
      assignment_.clear();
    }
    assignment_.insert(assignment_.end(), tqs.begin(), tqs.end());
    if (listener_ && !tqs.empty()) listener_->onAssigned(tqs);
    return;
  }
  // Revoked (or lost: then the commits the listener makes fail and the partitions' new owner
  // reads again from the last committed offsets; nothing is lost).
  if (listener_ && !tqs.empty()) listener_->onRevoked(tqs);
  for (const auto& tq : tqs) std::erase(assignment_, tq);
  if (cooperative) {
    if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk_, parts)) {
      log()->warn("kafka backbone: group {}: incremental unassign failed: {}", group_, rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
    }
  } else {
    rd_kafka_assign(rk_, nullptr);
    assignment_.clear();
  }
}

Result<std::size_t> KafkaConsumer::poll(std::vector<Message>& out, std::size_t maxMessages,
                                        std::chrono::milliseconds maxWait) {
  if (rk_ == nullptr) return Status::failedPrecondition("consumer closed");
  std::size_t n = 0;
  auto timeout = static_cast<int>(maxWait.count());
  while (n < maxMessages) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, timeout);
    if (m == nullptr) break;
    timeout = 0;  // take what is there, do not wait again
    if (m->err) {
      const rd_kafka_resp_err_t err = m->err;
      std::string what = rd_kafka_message_errstr(m);
      rd_kafka_message_destroy(m);
      if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF) continue;
      if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char fatal[512];
        rd_kafka_fatal_error(rk_, fatal, sizeof fatal);
        return Status::internal("kafka backbone: group " + group_ + ": " + fatal);
      }
      log()->warn("kafka backbone: group {}: {}", group_, what);
      break;
    }
    const char* kt = rd_kafka_topic_name(m->rkt);
    auto it = names_.find(kt);
    Message msg = fromKafka(m, it == names_.end() ? std::string(kt) : it->second);
    rd_kafka_message_destroy(m);
    out.push_back(std::move(msg));
    ++n;
  }
  return n;
}

Status KafkaConsumer::commit(const OffsetMap& offsets) {
  if (rk_ == nullptr) return Status::failedPrecondition("consumer closed");
  if (offsets.empty()) return Status::ok();
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size()));
  ListGuard g{list};
  for (const auto& [tq, off] : offsets)
    rd_kafka_topic_partition_list_add(list, kafkaSafeName(tq.topic).c_str(), tq.queue)->offset = off;
  rd_kafka_resp_err_t e = rd_kafka_commit(rk_, list, 0);  // synchronous
  switch (e) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
    case RD_KAFKA_RESP_ERR__NO_OFFSET:
      return Status::ok();
    case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
    case RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION:
    case RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID:
    case RD_KAFKA_RESP_ERR__ASSIGNMENT_LOST:
    case RD_KAFKA_RESP_ERR__STATE:
      // The partitions are moving to another member, which reads again from the last committed
      // offsets: duplicates, not loss. Not a reason to fail the task.
      log()->warn("kafka backbone: group {}: commit during a rebalance not taken ({})", group_, errText(e));
      return Status::ok();
    default:
      return Status::unavailable("kafka backbone: group " + group_ + ": commit failed: " + errText(e));
  }
}

Status KafkaConsumer::seek(const TopicQueue& queue, std::int64_t offset) {
  if (rk_ == nullptr) return Status::failedPrecondition("consumer closed");
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  ListGuard g{list};
  rd_kafka_topic_partition_list_add(list, kafkaSafeName(queue.topic).c_str(), queue.queue)->offset = offset;
  if (rd_kafka_error_t* e = rd_kafka_seek_partitions(rk_, list, 5000)) {
    Status s = Status::unavailable(std::string("kafka backbone: seek failed: ") + rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return s;
  }
  if (list->elems[0].err != RD_KAFKA_RESP_ERR_NO_ERROR)
    return Status::unavailable("kafka backbone: seek " + queue.topic + "/" + std::to_string(queue.queue) + ": " +
                               errText(list->elems[0].err));
  return Status::ok();
}

}  // namespace

std::string kafkaSafeName(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '.' || c == '_' || c == '-')) c = '_';
  }
  if (out.size() > 249) out.resize(249);
  return out;
}

Result<std::unique_ptr<Backbone>> openKafkaBackbone(const KafkaBackboneOptions& options) {
  StringMap base = {{"bootstrap.servers", options.bootstrapServers}, {"client.id", "ferry-admin"}};
  FERRY_ASSIGN_OR_RETURN(rd_kafka_t * rk, kafka::newAdminHandle({{&base, "kafka backbone: "},
                                                                 {&options.clientOverrides, "backbone.kafka.client."}}));
  // Fail early and clearly when no broker answers.
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, nullptr, &md, static_cast<int>(options.requestTimeoutMs));
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_destroy(rk);
    return Status::unavailable("kafka backbone: no broker of " + options.bootstrapServers + " answers: " + errText(e));
  }
  rd_kafka_metadata_destroy(md);
  return std::unique_ptr<Backbone>(std::make_unique<KafkaBackbone>(options, rk));
}

}  // namespace ferry::backbone
