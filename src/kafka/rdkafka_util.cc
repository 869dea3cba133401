// Helpers over librdkafka (see rdkafka_util.h).
#include "kafka/rdkafka_util.h"

#include <librdkafka/rdkafka.h>

#include <sys/types.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/logging.h"

namespace ferry::kafka {
namespace {

std::shared_ptr<spdlog::logger> logger() {
  static auto l = core::logger("kafka");
  return l;
}

// librdkafka's own log lines go to the worker log, not to stderr.
void onLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  const char* who = rk ? rd_kafka_name(rk) : "librdkafka";
  if (level <= 3)
    logger()->error("{} {}: {}", who, fac, buf);
  else if (level == 4)
    logger()->warn("{} {}: {}", who, fac, buf);
  else if (level <= 6)
    logger()->info("{} {}: {}", who, fac, buf);
  else
    logger()->debug("{} {}: {}", who, fac, buf);
}

std::string errText(rd_kafka_resp_err_t e) { return rd_kafka_err2str(e); }

struct EventGuard {
  rd_kafka_event_t* ev;
  ~EventGuard() {
    if (ev) rd_kafka_event_destroy(ev);
  }
};

struct ListGuard {
  rd_kafka_topic_partition_list_t* list;
  ~ListGuard() {
    if (list) rd_kafka_topic_partition_list_destroy(list);
  }
};

// Runs one admin request (started by `start` on a temporary queue) and returns its result event,
// or an error when none came or the request as a whole failed.
template <class Start>
Result<rd_kafka_event_t*> adminCall(rd_kafka_t* rk, rd_kafka_admin_op_t op, std::int64_t timeoutMs,
                                    const std::string& what, Start start) {
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, op);
  char err[256];
  rd_kafka_AdminOptions_set_request_timeout(opts, static_cast<int>(timeoutMs), err, sizeof err);
  start(opts, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, static_cast<int>(timeoutMs + 2000));
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_queue_destroy(q);
  if (ev == nullptr) return Status::timeout(what + ": no answer within " + std::to_string(timeoutMs) + " ms");
  if (rd_kafka_event_error(ev)) {
    Status s = Status::unavailable(what + ": " + rd_kafka_event_error_string(ev));
    rd_kafka_event_destroy(ev);
    return s;
  }
  return ev;
}

Status groupError(const rd_kafka_error_t* e, const std::string& what, const std::string& group) {
  const rd_kafka_resp_err_t code = rd_kafka_error_code(e);
  if (code == RD_KAFKA_RESP_ERR_NON_EMPTY_GROUP || code == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID)
    return Status::failedPrecondition("Kafka consumer group " + group + " has live members; stop them first");
  return Status::unavailable(what + ": " + rd_kafka_error_string(e));
}

}  // namespace

Result<rd_kafka_conf_t*> makeConf(const std::vector<ConfLayer>& layers) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set_log_cb(conf, onLog);
  char err[512];
  for (const ConfLayer& layer : layers)
    for (const auto& [k, v] : *layer.settings)
      if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        return Status::invalidArgument(layer.namePrefix + k + ": " + err);
      }
  return conf;
}

Result<rd_kafka_t*> newAdminHandle(const std::vector<ConfLayer>& layers) {
  FERRY_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf, makeConf(layers));
  char err[512];
  if (rd_kafka_conf_set(conf, "allow.auto.create.topics", "false", err, sizeof err) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return Status::internal(std::string("allow.auto.create.topics: ") + err);
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::invalidArgument(std::string("cannot create a Kafka client: ") + err);
  }
  return rk;
}

void destroy(rd_kafka_t* rk) {
  if (rk) rd_kafka_destroy(rk);
}

Result<std::map<std::string, std::int32_t>> topicPartitions(rd_kafka_t* rk, std::int64_t timeoutMs) {
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, nullptr, &md, static_cast<int>(timeoutMs));
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) return Status::unavailable("Kafka metadata: " + errText(e));
  std::map<std::string, std::int32_t> out;
  for (int i = 0; i < md->topic_cnt; ++i)
    if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) out[md->topics[i].topic] = md->topics[i].partition_cnt;
  rd_kafka_metadata_destroy(md);
  return out;
}

namespace {

// The first per-topic failure of an admin call's results, other than `tolerated` (e.g. "already
// exists" for a create), as Unavailable naming `what`.
Status topicResults(const rd_kafka_topic_result_t** res, size_t n, const std::string& what,
                    rd_kafka_resp_err_t tolerated) {
  for (size_t i = 0; i < n; ++i) {
    const rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != tolerated) {
      const char* s = rd_kafka_topic_result_error_string(res[i]);
      return Status::unavailable(what + ": " + (s ? s : errText(e)));
    }
  }
  return Status::ok();
}

}  // namespace

Status createTopic(rd_kafka_t* rk, const std::string& topic, std::int32_t partitions, std::int32_t replicationFactor,
                   std::int64_t timeoutMs, const StringMap& configs) {
  char err[512];
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(topic.c_str(), partitions, replicationFactor, err, sizeof err);
  if (nt == nullptr) return Status::invalidArgument("Kafka topic " + topic + ": " + err);
  for (const auto& [k, v] : configs)
    if (rd_kafka_resp_err_t e = rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str())) {
      rd_kafka_NewTopic_destroy(nt);
      return Status::invalidArgument("Kafka topic " + topic + ": config " + k + ": " + errText(e));
    }
  auto ev = adminCall(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeoutMs, "creating Kafka topic " + topic,
                      [&](rd_kafka_AdminOptions_t* o, rd_kafka_queue_t* q) { rd_kafka_CreateTopics(rk, &nt, 1, o, q); });
  rd_kafka_NewTopic_destroy(nt);
  FERRY_RETURN_IF_ERROR(ev.status());
  EventGuard g{*ev};
  size_t n = 0;
  const rd_kafka_topic_result_t** res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(g.ev), &n);
  return topicResults(res, n, "creating Kafka topic " + topic, RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS);
}

Status createPartitions(rd_kafka_t* rk, const std::string& topic, std::int32_t total, std::int64_t timeoutMs) {
  char err[512];
  rd_kafka_NewPartitions_t* np = rd_kafka_NewPartitions_new(topic.c_str(), static_cast<size_t>(total), err, sizeof err);
  if (np == nullptr) return Status::invalidArgument("Kafka topic " + topic + ": " + err);
  auto ev = adminCall(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS, timeoutMs, "adding partitions to Kafka topic " + topic,
                      [&](rd_kafka_AdminOptions_t* o, rd_kafka_queue_t* q) { rd_kafka_CreatePartitions(rk, &np, 1, o, q); });
  rd_kafka_NewPartitions_destroy(np);
  FERRY_RETURN_IF_ERROR(ev.status());
  EventGuard g{*ev};
  size_t n = 0;
  const rd_kafka_topic_result_t** res =
      rd_kafka_CreatePartitions_result_topics(rd_kafka_event_CreatePartitions_result(g.ev), &n);
  // INVALID_PARTITIONS: it has that many already (another task grew it first).
  return topicResults(res, n, "adding partitions to Kafka topic " + topic, RD_KAFKA_RESP_ERR_INVALID_PARTITIONS);
}

Status deleteTopic(rd_kafka_t* rk, const std::string& topic, std::int64_t timeoutMs) {
  rd_kafka_DeleteTopic_t* dt = rd_kafka_DeleteTopic_new(topic.c_str());
  auto ev = adminCall(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS, timeoutMs, "deleting Kafka topic " + topic,
                      [&](rd_kafka_AdminOptions_t* o, rd_kafka_queue_t* q) { rd_kafka_DeleteTopics(rk, &dt, 1, o, q); });
  rd_kafka_DeleteTopic_destroy(dt);
  FERRY_RETURN_IF_ERROR(ev.status());
  EventGuard g{*ev};
  size_t n = 0;
  const rd_kafka_topic_result_t** res = rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(g.ev), &n);
  return topicResults(res, n, "deleting Kafka topic " + topic, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
}

Result<std::vector<std::string>> listGroups(rd_kafka_t* rk, std::int64_t timeoutMs) {
  auto ev = adminCall(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS, timeoutMs, "listing Kafka consumer groups",
                      [&](rd_kafka_AdminOptions_t* o, rd_kafka_queue_t* q) { rd_kafka_ListConsumerGroups(rk, o, q); });
  FERRY_RETURN_IF_ERROR(ev.status());
  EventGuard g{*ev};
  const rd_kafka_ListConsumerGroups_result_t* res = rd_kafka_event_ListConsumerGroups_result(g.ev);
  size_t n = 0;
  const rd_kafka_ConsumerGroupListing_t** valid = rd_kafka_ListConsumerGroups_result_valid(res, &n);
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.emplace_back(rd_kafka_ConsumerGroupListing_group_id(valid[i]));
  return out;
}

Result<PartitionOffsets> groupOffsets(rd_kafka_t* rk, const std::string& group, std::int64_t timeoutMs) {
  rd_kafka_ListConsumerGroupOffsets_t* req = rd_kafka_ListConsumerGroupOffsets_new(group.c_str(), nullptr);
  const std::string what = "offsets of Kafka consumer group " + group;
  auto ev = adminCall(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS, timeoutMs, what,
                      [&](rd_kafka_AdminOptions_t* o, rd_kafka_queue_t* q) {
                        rd_kafka_ListConsumerGroupOffsets(rk, &req, 1, o, q);
                      });
  rd_kafka_ListConsumerGroupOffsets_destroy(req);
  FERRY_RETURN_IF_ERROR(ev.status());
  EventGuard g{*ev};
  size_t n = 0;
  const rd_kafka_group_result_t** groups =
      rd_kafka_ListConsumerGroupOffsets_result_groups(rd_kafka_event_ListConsumerGroupOffsets_result(g.ev), &n);
  PartitionOffsets out;
  for (size_t i = 0; i < n; ++i) {
    if (const rd_kafka_error_t* e = rd_kafka_group_result_error(groups[i])) return groupError(e, what, group);
    const rd_kafka_topic_partition_list_t* parts = rd_kafka_group_result_partitions(groups[i]);
    for (int j = 0; parts && j < parts->cnt; ++j) {
      const auto& p = parts->elems[j];
      if (p.err == RD_KAFKA_RESP_ERR_NO_ERROR && p.offset >= 0) out[{p.topic, p.partition}] = p.offset;
    }
  }
  return out;
}

Status alterGroupOffsets(rd_kafka_t* rk, const std::string& group, const PartitionOffsets& offsets,
                         std::int64_t timeoutMs) {
  if (offsets.empty()) return Status::ok();
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size()));
  ListGuard pg{parts};
  for (const auto& [tp, off] : offsets) rd_kafka_topic_partition_list_add(parts, tp.first.c_str(), tp.second)->offset = off;
  rd_kafka_AlterConsumerGroupOffsets_t* req = rd_kafka_AlterConsumerGroupOffsets_new(group.c_str(), parts);
  const std::string what = "writing offsets of Kafka consumer group " + group;
  auto ev = adminCall(rk, RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS, timeoutMs, what,
                      [&](rd_kafka_AdminOptions_t* o, rd_kafka_queue_t* q) {
                        rd_kafka_AlterConsumerGroupOffsets(rk, &req, 1, o, q);
                      });
  rd_kafka_AlterConsumerGroupOffsets_destroy(req);
  FERRY_RETURN_IF_ERROR(ev.status());
  EventGuard g{*ev};
  size_t n = 0;
  const rd_kafka_group_result_t** res =
      rd_kafka_AlterConsumerGroupOffsets_result_groups(rd_kafka_event_AlterConsumerGroupOffsets_result(g.ev), &n);
  for (size_t i = 0; i < n; ++i) {
    if (const rd_kafka_error_t* e = rd_kafka_group_result_error(res[i])) return groupError(e, what, group);
    const rd_kafka_topic_partition_list_t* got = rd_kafka_group_result_partitions(res[i]);
    for (int j = 0; got && j < got->cnt; ++j) {
      const rd_kafka_resp_err_t code = got->elems[j].err;
      if (code == RD_KAFKA_RESP_ERR_NO_ERROR) continue;
      if (code == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID || code == RD_KAFKA_RESP_ERR_NON_EMPTY_GROUP)
        return Status::failedPrecondition("Kafka consumer group " + group + " has live members; stop them first");
      return Status::unavailable(what + " for " + got->elems[j].topic + "/" + std::to_string(got->elems[j].partition) +
                                 ": " + errText(code));
    }
  }
  return Status::ok();
}

Status deleteGroup(rd_kafka_t* rk, const std::string& group, std::int64_t timeoutMs) {
  rd_kafka_DeleteGroup_t* dg = rd_kafka_DeleteGroup_new(group.c_str());
  const std::string what = "deleting Kafka consumer group " + group;
  auto ev = adminCall(rk, RD_KAFKA_ADMIN_OP_DELETEGROUPS, timeoutMs, what,
                      [&](rd_kafka_AdminOptions_t* o, rd_kafka_queue_t* q) { rd_kafka_DeleteGroups(rk, &dg, 1, o, q); });
  rd_kafka_DeleteGroup_destroy(dg);
  FERRY_RETURN_IF_ERROR(ev.status());
  EventGuard g{*ev};
  size_t n = 0;
  const rd_kafka_group_result_t** res = rd_kafka_DeleteGroups_result_groups(rd_kafka_event_DeleteGroups_result(g.ev), &n);
  for (size_t i = 0; i < n; ++i)
    if (const rd_kafka_error_t* e = rd_kafka_group_result_error(res[i])) {
      if (rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND) continue;
      return groupError(e, what, group);
    }
  return Status::ok();
}

namespace {

Result<rd_kafka_t*> groupConsumer(const std::vector<ConfLayer>& layers, const std::string& group) {
  FERRY_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf, makeConf(layers));
  char err[512];
  if (rd_kafka_conf_set(conf, "group.id", group.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return Status::internal(std::string("group consumer settings: ") + err);
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::invalidArgument(std::string("cannot create a Kafka consumer: ") + err);
  }
  return rk;
}

}  // namespace

Result<PartitionOffsets> committedVia(const std::vector<ConfLayer>& layers, const std::string& group,
                                      const std::vector<std::pair<std::string, std::int32_t>>& partitions,
                                      std::int64_t timeoutMs) {
  PartitionOffsets out;
  if (partitions.empty()) return out;
  FERRY_ASSIGN_OR_RETURN(rd_kafka_t * rk, groupConsumer(layers, group));
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size()));
  ListGuard g{list};
  for (const auto& [t, p] : partitions) rd_kafka_topic_partition_list_add(list, t.c_str(), p);
  rd_kafka_resp_err_t e = rd_kafka_committed(rk, list, static_cast<int>(timeoutMs));
  rd_kafka_destroy(rk);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return Status::unavailable("offsets of Kafka consumer group " + group + ": " + errText(e));
  for (int i = 0; i < list->cnt; ++i)
    if (list->elems[i].err == RD_KAFKA_RESP_ERR_NO_ERROR && list->elems[i].offset >= 0)
      out[{list->elems[i].topic, list->elems[i].partition}] = list->elems[i].offset;
  return out;
}

Status commitVia(const std::vector<ConfLayer>& layers, const std::string& group, const PartitionOffsets& offsets,
                 std::int64_t timeoutMs) {
  (void)timeoutMs;  // rd_kafka_commit waits for the coordinator's answer itself
  if (offsets.empty()) return Status::ok();
  FERRY_ASSIGN_OR_RETURN(rd_kafka_t * rk, groupConsumer(layers, group));
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size()));
  ListGuard g{list};
  for (const auto& [tp, off] : offsets) rd_kafka_topic_partition_list_add(list, tp.first.c_str(), tp.second)->offset = off;
  rd_kafka_resp_err_t e = rd_kafka_commit(rk, list, 0);
  rd_kafka_destroy(rk);
  switch (e) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
      return Status::ok();
    case RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID:
    case RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION:
    case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
      return Status::failedPrecondition("Kafka consumer group " + group + " has live members; stop them first");
    default:
      return Status::unavailable("writing offsets of Kafka consumer group " + group + ": " + errText(e));
  }
}

Headers readHeaders(const rd_kafka_message_t* m) {
  Headers out;
  rd_kafka_headers_t* hdrs = nullptr;
  if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) return out;
  const char* name;
  const void* val;
  size_t size;
  for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i)
    out.add(name, val ? Bytes(std::string(static_cast<const char*>(val), size)) : Bytes());
  return out;
}

rd_kafka_headers_t* toKafkaHeaders(const Headers& headers) {
  if (headers.empty()) return nullptr;
  rd_kafka_headers_t* hdrs = rd_kafka_headers_new(headers.size());
  for (const Header& h : headers)
    rd_kafka_header_add(hdrs, h.key.data(), static_cast<ssize_t>(h.key.size()),
                        h.value.isNull() ? nullptr : h.value.view().data(),
                        h.value.isNull() ? 0 : static_cast<ssize_t>(h.value.size()));
  return hdrs;
}

std::string staticInstanceId(const std::string& member, std::vector<std::string> subscription) {
  std::sort(subscription.begin(), subscription.end());
  std::uint32_t h = 2166136261u;
  for (const auto& t : subscription) {
    for (unsigned char c : t) h = (h ^ c) * 16777619u;
    h = (h ^ 0xffu) * 16777619u;  // separator
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", h);
  return member + "-" + hex;
}

Result<std::pair<std::int64_t, std::int64_t>> watermarks(rd_kafka_t* rk, const std::string& topic,
                                                         std::int32_t partition, std::int64_t timeoutMs) {
  int64_t lo = 0, hi = 0;
  rd_kafka_resp_err_t e =
      rd_kafka_query_watermark_offsets(rk, topic.c_str(), partition, &lo, &hi, static_cast<int>(timeoutMs));
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return Status::unavailable("offsets of Kafka " + topic + "/" + std::to_string(partition) + ": " + errText(e));
  return std::make_pair(static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi));
}

void QueueWaker::attach(Handle* consumer, std::function<void()> wake) {
  detach();
  wake_ = std::move(wake);
  queue_ = rd_kafka_queue_get_consumer(consumer);
  if (queue_ != nullptr) rd_kafka_queue_cb_event_enable(queue_, &QueueWaker::onEvent, this);
}

void QueueWaker::detach() {
  if (queue_ == nullptr) return;
  rd_kafka_queue_cb_event_enable(queue_, nullptr, nullptr);  // no more calls
  rd_kafka_queue_destroy(queue_);
  queue_ = nullptr;
}

void QueueWaker::onEvent(Handle*, void* opaque) {
  auto* self = static_cast<QueueWaker*>(opaque);
  if (self->wake_) self->wake_();
}

StringMap connectorClientDefaults() {
  return {{"reconnect.backoff.max.ms", "500"}, {"statistics.interval.ms", "1000"}};
}

bool statsEnabled(const rd_kafka_conf_t* conf) {
  char value[32];
  size_t size = sizeof value;
  if (rd_kafka_conf_get(conf, "statistics.interval.ms", value, &size) != RD_KAFKA_CONF_OK) return false;
  return std::atoi(value) > 0;
}

void ConnectionWatch::setReport(Report report) {
  std::lock_guard<std::mutex> lock(mu_);
  report_ = std::move(report);
}

bool ConnectionWatch::isLoss(int err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    case RD_KAFKA_RESP_ERR__SSL:
    case RD_KAFKA_RESP_ERR__FATAL:
      return true;
    default:
      return false;
  }
}

void ConnectionWatch::onError(int err, const char* reason) {
  const std::string why = reason ? reason : rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(err));
  if (!isLoss(err)) {
    // A broker-level error (__TRANSPORT, __RESOLVE, ...): one broker of several may be gone;
    // kept as the detail of a loss that follows.
    if (err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__RESOLVE) {
      std::lock_guard<std::mutex> lock(mu_);
      lastBroker_ = why;
    }
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
    lose("the Kafka brokers are down (" + why + ")");
  else
    lose("the Kafka brokers refused the client: " + why);
}

void ConnectionWatch::onStats(std::string_view json) {
  // librdkafka writes the JSON without spaces; a broker in state UP is all "connected" needs, and
  // the consumer group's own state is lower case ("up"), so this finds brokers only.
  if (json.find("\"state\":\"UP\"") != std::string_view::npos) {
    std::lock_guard<std::mutex> lock(mu_);
    failedStats_ = 0;
    if (connected_) return;
    regain();
    return;
  }
  const std::int64_t attempts = connectAttempts(json);
  std::lock_guard<std::mutex> lock(mu_);
  // No broker UP: lost only while the client tries to connect and fails (a client that needs no
  // connection, e.g. an idle producer whose broker closed an idle connection, makes no attempts),
  // on two statistics events in a row (a handshake in progress at the first one is no loss).
  const bool trying = attempts > attempts_;
  attempts_ = attempts;
  failedStats_ = trying ? failedStats_ + 1 : 0;
  if (failedStats_ >= 2 && connected_) lose("the Kafka brokers are down (none reachable)");
}

void ConnectionWatch::onAcknowledged() {
  if (!lost_.load(std::memory_order_relaxed)) return;  // one load per delivery while connected
  std::lock_guard<std::mutex> lock(mu_);
  if (!connected_) regain();
}

bool ConnectionWatch::connected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return connected_;
}

void ConnectionWatch::lose(std::string text) {
  if (!connected_) return;  // the first reason of a loss is the one shown
  if (!lastBroker_.empty()) text += "; last broker error: " + lastBroker_;
  connected_ = false;
  lost_.store(true, std::memory_order_relaxed);
  if (report_) report_(false, text);
}

void ConnectionWatch::regain() {
  connected_ = true;
  lost_.store(false, std::memory_order_relaxed);
  lastBroker_.clear();
  failedStats_ = 0;
  if (report_) report_(true, "");
}

bool ConnectionWatch::statsShowBrokerUp(std::string_view json) {
  const auto doc = nlohmann::json::parse(json.begin(), json.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return false;
  const auto brokers = doc.find("brokers");
  if (brokers == doc.end() || !brokers->is_object()) return false;
  for (const auto& b : *brokers) {
    const auto state = b.find("state");
    if (state != b.end() && state->is_string() && state->get<std::string>() == "UP") return true;
  }
  return false;
}

std::int64_t ConnectionWatch::connectAttempts(std::string_view json) {
  const auto doc = nlohmann::json::parse(json.begin(), json.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return 0;
  const auto brokers = doc.find("brokers");
  if (brokers == doc.end() || !brokers->is_object()) return 0;
  std::int64_t n = 0;
  for (const auto& b : *brokers) {
    const auto c = b.find("connects");
    if (c != b.end() && c->is_number_integer()) n += c->get<std::int64_t>();
  }
  return n;
}

}  // namespace ferry::kafka
