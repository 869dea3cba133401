#include "rocketmq/admin.h"

#include <algorithm>

#include "rocketmq/connection.h"
#include "rocketmq/consumer.h"
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

Result<std::optional<std::int64_t>> queryGroupOffset(RocketmqClient& client, const std::string& group,
                                                     const MessageQueue& queue) {
  RemotingCommand req;
  req.code = kCodeQueryConsumerOffset;
  req.extFields["consumerGroup"] = group;
  req.extFields["topic"] = queue.topic;
  req.extFields["queueId"] = std::to_string(queue.queueId);
  FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, brokerCall(client, queue.brokerName, std::move(req)));
  if (resp.code == kRespQueryNotFound) return std::optional<std::int64_t>{};
  FERRY_RETURN_IF_ERROR(responseStatus(resp, "offset of group " + group + " on " + queue.toString()));
  auto off = resp.extInt("offset");
  if (!off) return Status::invalidArgument("offset of group " + group + ": response without 'offset'");
  return std::optional<std::int64_t>(*off);
}

Status updateGroupOffset(RocketmqClient& client, const std::string& group, const MessageQueue& queue,
                         std::int64_t offset) {
  RemotingCommand req;
  req.code = kCodeUpdateConsumerOffset;
  req.extFields["consumerGroup"] = group;
  req.extFields["topic"] = queue.topic;
  req.extFields["queueId"] = std::to_string(queue.queueId);
  req.extFields["commitOffset"] = std::to_string(offset);
  FERRY_ASSIGN_OR_RETURN(RemotingCommand resp, brokerCall(client, queue.brokerName, std::move(req)));
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

}  // namespace ferry::rocketmq
