#include "rocketmq/admin.h"

#include <algorithm>
#include <set>

#include "rocketmq/connection.h"
#include "rocketmq/consumer.h"
#include "core/json_bounds.h"
#include "rocketmq/fastjson.h"

namespace ferry::rocketmq {

Result<std::vector<std::string>> listTopics(RocketmqClient& client) {
  RemotingCommand req;
  req.code = kCodeGetAllTopicListFromNamesrv;
  FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, client.invokeNamesrv(req));
  FERRY_RETURN_IF_ERROR(responseStatus(resp, "topic list"));
  FERRY_ASSIGN_OR_RETURN(nlohmann::json j, parseFastjson(resp.body));
  std::vector<std::string> out;
  if (!j.is_object() || !j.contains("topicList") || !j["topicList"].is_array())
    return Status::invalidArgument("topic list: body without a 'topicList' array");
  for (const auto& t : j["topicList"])
    if (t.is_string()) out.push_back(t.get<std::string>());
  std::sort(out.begin(), out.end());
  return out;
}

bool isSystemTopic(const std::string& topic, const std::vector<std::string>& clusterAndBrokerNames) {
  static const char* const kExact[] = {
      "TBW102", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT", "BenchmarkTest", "SCHEDULE_TOPIC_XXXX",
      "TRANS_CHECK_MAX_TIME_TOPIC", "DefaultHeartBeatSyncerTopic", "RMQ_SYS_TRANS_HALF_TOPIC",
      "RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"};
  for (const char* e : kExact)
    if (topic == e) return true;
  static const char* const kPrefixes[] = {"%RETRY%", "%DLQ%", "%LMQ%", "RMQ_SYS_", "rmq_sys_",
                                          "rocketmq-broker-", "%SYS%"};
  for (const char* p : kPrefixes)
    if (topic.rfind(p, 0) == 0) return true;
  return std::find(clusterAndBrokerNames.begin(), clusterAndBrokerNames.end(), topic) !=
         clusterAndBrokerNames.end();
}

namespace {

Result<RemotingCommand> brokerCall(RocketmqClient& client, const std::string& brokerName,
                                   RemotingCommand req) {
  FERRY_ASSIGN_OR_RETURN(std::string addr, client.brokerAddress(brokerName));
  return client.invoke(addr, std::move(req));
}

Result<std::int64_t> offsetCall(RocketmqClient& client, std::int32_t code, const MessageQueue& q,
                                const char* what) {
  RemotingCommand req;
  req.code = code;
  req.extFields["topic"] = q.topic;
  req.extFields["queueId"] = std::to_string(q.queueId);
  FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, brokerCall(client, q.brokerName, std::move(req)));
  FERRY_RETURN_IF_ERROR(responseStatus(resp, std::string(what) + " of " + q.toString()));
  auto off = resp.extInt("offset");
  if (!off) return Status::invalidArgument(std::string(what) + " of " + q.toString() + ": no 'offset'");
  return *off;
}

}  // namespace

RemotingCommand queryGroupOffsetRequest(const std::string& group, const MessageQueue& queue,
                                        std::int32_t brokerVersion) {
  RemotingCommand req;
  req.code = kCodeQueryConsumerOffset;
  req.extFields["consumerGroup"] = group;
  req.extFields["topic"] = queue.topic;
  req.extFields["queueId"] = std::to_string(queue.queueId);
  // 4.x has no such field (it would ignore it): it answers 0 for a queue never committed whose
  // first message is still in memory, and the 4.x Java client takes that 0 as the offset.
  if (!isV4OrOlder(brokerVersion)) req.extFields["setZeroIfNotFound"] = "false";
  return req;
}

RemotingCommand deleteGroupRequest(const std::string& group, std::int32_t brokerVersion) {
  RemotingCommand req;
  req.code = kCodeDeleteSubscriptionGroup;
  req.extFields["groupName"] = group;
  // DeleteSubscriptionGroupRequestHeader: `removeOffset` up to 4.9.x, `cleanOffset` from 5.0.
  // A broker ignores the other one, so the wrong name deletes the group but keeps its offsets.
  req.extFields[isV4OrOlder(brokerVersion) ? "removeOffset" : "cleanOffset"] = "true";
  return req;
}

Result<std::optional<std::int64_t>> queryGroupOffset(RocketmqClient& client, const std::string& group,
                                                     const MessageQueue& queue) {
  FERRY_ASSIGN_OR_RETURN(std::string addr, client.brokerAddress(queue.brokerName));
  FERRY_ASSIGN_OR_RETURN(std::int32_t version, client.brokerVersion(addr));
  FERRY_ASSIGN_OR_RETURN(RemotingCommand resp,
                         client.invoke(addr, queryGroupOffsetRequest(group, queue, version)));
  if (resp.code == kRespQueryNotFound) return std::optional<std::int64_t>{};
  FERRY_RETURN_IF_ERROR(responseStatus(resp, "offset of group " + group + " on " + queue.toString()));
  auto off = resp.extInt("offset");
  if (!off) return Status::invalidArgument("offset of group " + group + ": response without 'offset'");
  return std::optional<std::int64_t>(*off);
}

RemotingCommand updateGroupOffsetRequest(const std::string& group, const MessageQueue& queue,
                                         std::int64_t offset) {
  RemotingCommand req;
  req.code = kCodeUpdateConsumerOffset;
  req.extFields["consumerGroup"] = group;
  req.extFields["topic"] = queue.topic;
  req.extFields["queueId"] = std::to_string(queue.queueId);
  req.extFields["commitOffset"] = std::to_string(offset);
  return req;
}

Status updateGroupOffset(RocketmqClient& client, const std::string& group, const MessageQueue& queue,
                         std::int64_t offset) {
  FERRY_ASSIGN_OR_RETURN(RemotingCommand resp,
                         brokerCall(client, queue.brokerName, updateGroupOffsetRequest(group, queue, offset)));
  return responseStatus(resp, "setting the offset of group " + group + " on " + queue.toString());
}

Status setGroupOffset(RocketmqClient& client, const std::string& group, const MessageQueue& queue,
                      std::int64_t offset) {
  const RemotingCommand req = updateGroupOffsetRequest(group, queue, offset);
  FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, brokerCall(client, queue.brokerName, req));
  if (resp.code == kRespSubscriptionGroupNotExist) {
    FERRY_RETURN_IF_ERROR(createGroup(client, group, {queue.brokerName}));
    FERRY_ASSIGN_OR_RETURN(resp, brokerCall(client, queue.brokerName, req));
  }
  return responseStatus(resp, "setting the offset of group " + group + " on " + queue.toString());
}

Result<std::int64_t> maxOffset(RocketmqClient& client, const MessageQueue& queue) {
  return offsetCall(client, kCodeGetMaxOffset, queue, "max offset");
}

Result<std::int64_t> minOffset(RocketmqClient& client, const MessageQueue& queue) {
  return offsetCall(client, kCodeGetMinOffset, queue, "min offset");
}

Result<std::vector<MessageQueue>> topicQueues(RocketmqClient& client, const std::string& topic,
                                              bool refresh) {
  FERRY_ASSIGN_OR_RETURN(TopicRoute route, client.queryRoute(topic, refresh));
  auto qs = route.subscribeQueues();
  std::sort(qs.begin(), qs.end(), [](const MessageQueue& a, const MessageQueue& b) {
    return std::tie(a.brokerName, a.queueId) < std::tie(b.brokerName, b.queueId);
  });
  return qs;
}

namespace {

struct Master {
  std::string brokerName;
  std::string address;
};

// Master of every broker of the named clusters / brokers (empty: every broker), from cluster info.
Result<std::vector<Master>> masters(RocketmqClient& client, const std::vector<std::string>& names,
                                    const char* what) {
  FERRY_ASSIGN_OR_RETURN(ClusterInfo info, client.clusterInfo());
  std::set<std::string> brokers;
  if (names.empty())
    for (const auto& [name, b] : info.brokers) brokers.insert(name);
  for (const auto& n : names) {
    if (auto c = info.clusters.find(n); c != info.clusters.end()) {
      brokers.insert(c->second.begin(), c->second.end());
    } else if (info.brokers.count(n) != 0) {
      brokers.insert(n);
    } else {
      return Status::notFound(std::string(what) + ": '" + n +
                              "' is neither a cluster nor a broker known to the NameServer");
    }
  }
  if (brokers.empty()) return Status::unavailable(std::string(what) + ": no broker registered");
  std::vector<Master> out;
  for (const auto& name : brokers) {
    auto m = info.brokers[name].master();
    if (!m) return Status::unavailable(std::string(what) + ": broker '" + name + "' has no master");
    out.push_back(Master{name, *m});
  }
  return out;
}

std::optional<std::int64_t> intField(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_string()) {  // tolerated, as elsewhere in the client
    try {
      std::size_t used = 0;
      const std::string& s = it->get_ref<const std::string&>();
      long long v = std::stoll(s, &used);
      if (used == s.size()) return v;
    } catch (...) {
    }
  }
  return std::nullopt;
}

}  // namespace

Result<ConsumeStats> parseConsumeStats(std::string_view body) {
  FERRY_ASSIGN_OR_RETURN(nlohmann::json j, parseFastjson(body));
  if (!j.is_object()) return Status::invalidArgument("consume stats: body is not a JSON object");
  ConsumeStats out;
  if (auto tps = j.find("consumeTps"); tps != j.end() && tps->is_number())
    out.consumeTps = tps->get<double>();
  auto table = j.find("offsetTable");
  if (table == j.end() || table->is_null()) return out;  // fastjson omits null maps
  if (!table->is_object()) return Status::invalidArgument("consume stats: 'offsetTable' is not an object");
  for (const auto& [key, value] : table->items()) {
    // parseFastjson turned each MessageQueue key into a string holding its strict JSON.
    auto parsedKey = core::parseJsonBounded<nlohmann::json>(key);
    const nlohmann::json k = parsedKey.isOk() ? std::move(*parsedKey) : nlohmann::json();
    if (!k.is_object() || !value.is_object())
      return Status::invalidArgument("consume stats: offsetTable entry '" + key.substr(0, 120) +
                                     "' is not MessageQueue -> OffsetWrapper");
    QueueConsumeStats q;
    auto topic = k.find("topic");
    auto broker = k.find("brokerName");
    auto queueId = intField(k, "queueId");
    if (topic == k.end() || !topic->is_string() || broker == k.end() || !broker->is_string() || !queueId)
      return Status::invalidArgument("consume stats: key '" + key.substr(0, 120) +
                                     "' lacks topic, brokerName or queueId");
    q.queue = MessageQueue{topic->get<std::string>(), broker->get<std::string>(),
                           static_cast<std::int32_t>(*queueId)};
    q.brokerOffset = intField(value, "brokerOffset").value_or(0);
    q.consumerOffset = intField(value, "consumerOffset").value_or(0);
    q.pullOffset = intField(value, "pullOffset").value_or(0);
    q.lastTimestamp = intField(value, "lastTimestamp").value_or(0);
    out.queues.push_back(std::move(q));
  }
  std::sort(out.queues.begin(), out.queues.end(),
            [](const QueueConsumeStats& a, const QueueConsumeStats& b) { return a.queue < b.queue; });
  return out;
}

Result<ConsumeStats> consumeStats(RocketmqClient& client, const std::string& group,
                                  const std::string& topic) {
  if (group.empty()) return Status::invalidArgument("consume stats: no group");
  std::vector<Master> where;
  if (topic.empty()) {
    FERRY_ASSIGN_OR_RETURN(where, masters(client, {}, "consume stats"));
  } else {
    FERRY_ASSIGN_OR_RETURN(TopicRoute route, client.queryRoute(topic));
    std::set<std::string> names;
    for (const auto& q : route.queueDatas) names.insert(q.brokerName);
    for (const auto& name : names) {
      auto addr = route.masterAddress(name);
      if (!addr) return Status::unavailable("consume stats of " + topic + ": broker '" + name + "' has no master");
      where.push_back(Master{name, *addr});
    }
  }
  ConsumeStats out;
  for (const auto& m : where) {
    RemotingCommand req;
    req.code = kCodeGetConsumeStats;
    req.extFields["consumerGroup"] = group;
    if (!topic.empty()) req.extFields["topic"] = topic;
    FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, client.invoke(m.address, std::move(req)));
    FERRY_RETURN_IF_ERROR(responseStatus(resp, "consume stats of group " + group + " on broker " + m.brokerName));
    auto one = parseConsumeStats(resp.body);
    if (!one.isOk())
      return Status::invalidArgument("consume stats of group " + group + " on broker " + m.brokerName + ": " +
                                     one.status().message());
    out.consumeTps += one->consumeTps;
    for (auto& q : one->queues) out.queues.push_back(std::move(q));
  }
  std::sort(out.queues.begin(), out.queues.end(),
            [](const QueueConsumeStats& a, const QueueConsumeStats& b) { return a.queue < b.queue; });
  return out;
}

Status deleteGroup(RocketmqClient& client, const std::string& group,
                   const std::vector<std::string>& clusterOrBrokerNames) {
  if (group.empty()) return Status::invalidArgument("delete group: no group");
  FERRY_ASSIGN_OR_RETURN(auto where, masters(client, clusterOrBrokerNames, "delete group"));
  for (const auto& m : where) {
    FERRY_ASSIGN_OR_RETURN(std::int32_t version, client.brokerVersion(m.address));
    FERRY_ASSIGN_OR_RETURN(RemotingCommand resp,
                           client.invoke(m.address, deleteGroupRequest(group, version)));
    FERRY_RETURN_IF_ERROR(responseStatus(resp, "deleting group " + group + " on broker " + m.brokerName));
  }
  return Status::ok();
}

Status createGroup(RocketmqClient& client, const std::string& group,
                   const std::vector<std::string>& clusterOrBrokerNames) {
  if (group.empty()) return Status::invalidArgument("create group: no group");
  FERRY_ASSIGN_OR_RETURN(auto where, masters(client, clusterOrBrokerNames, "create group"));
  // Every other SubscriptionGroupConfig field keeps the broker's default.
  const std::string body = nlohmann::json{{"groupName", group}}.dump();
  for (const auto& m : where) {
    RemotingCommand req;
    req.code = kCodeUpdateAndCreateSubscriptionGroup;
    req.body = body;
    FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, client.invoke(m.address, std::move(req)));
    FERRY_RETURN_IF_ERROR(responseStatus(resp, "creating group " + group + " on broker " + m.brokerName));
  }
  return Status::ok();
}

Result<std::vector<std::string>> groupMembers(RocketmqClient& client, const std::string& group,
                                              const std::vector<std::string>& clusterOrBrokerNames) {
  FERRY_ASSIGN_OR_RETURN(auto where, masters(client, clusterOrBrokerNames, "group members"));
  std::set<std::string> ids;
  for (const auto& m : where) {
    RemotingCommand req;
    req.code = kCodeGetConsumerListByGroup;
    req.extFields["consumerGroup"] = group;
    FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, client.invoke(m.address, std::move(req)));
    // SYSTEM_ERROR "no consumer for this group" (4.x and 5.x). A 4.x ACL refusal is code 1 too
    // on the wire; the client has turned it into 16 NO_PERMISSION, so it is not taken for "none".
    if (resp.code == 1) continue;
    FERRY_RETURN_IF_ERROR(responseStatus(resp, "members of group " + group + " on broker " + m.brokerName));
    FERRY_ASSIGN_OR_RETURN(nlohmann::json j, parseFastjson(resp.body));
    if (!j.is_object() || !j.contains("consumerIdList") || !j["consumerIdList"].is_array())
      return Status::invalidArgument("members of group " + group + ": body without 'consumerIdList'");
    for (const auto& id : j["consumerIdList"])
      if (id.is_string()) ids.insert(id.get<std::string>());
  }
  return std::vector<std::string>(ids.begin(), ids.end());
}

}  // namespace ferry::rocketmq
