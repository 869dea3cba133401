// Route parsing: the NameServer writes fastjson (bare integer map keys, numbers possibly quoted);
// parseFastjson accepts that dialect and this file reads fields leniently (absent -> default,
// unknown -> ignored, numbers given as strings accepted, `topicSynFlag` of 4.x accepted).
#include "rocketmq/routes.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

#include "rocketmq/fastjson.h"

namespace ferry::rocketmq {
namespace {

using nlohmann::json;

std::int64_t jsonInt(const json& obj, const char* key, std::int64_t fallback = 0) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number()) return static_cast<std::int64_t>(it->get<double>());
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size()) return v;
  }
  return fallback;
}

std::string jsonString(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

BrokerData brokerDataFrom(const json& j) {
  BrokerData b;
  b.cluster = jsonString(j, "cluster");
  b.brokerName = jsonString(j, "brokerName");
  auto addrs = j.find("brokerAddrs");
  if (addrs != j.end() && addrs->is_object()) {
    for (auto it = addrs->begin(); it != addrs->end(); ++it) {
      std::int64_t id = 0;
      const std::string& k = it.key();
      auto [p, ec] = std::from_chars(k.data(), k.data() + k.size(), id);
      if (ec != std::errc() || p != k.data() + k.size() || !it.value().is_string()) continue;
      b.brokerAddrs[id] = it.value().get<std::string>();
    }
  }
  return b;
}

Result<json> parseObject(std::string_view body, const char* what) {
  auto parsed = parseFastjson(body);
  if (!parsed.isOk()) return parsed.status().withContext(what);
  if (!parsed->is_object()) return Status::invalidArgument(std::string(what) + ": not an object");
  return std::move(parsed).value();
}

}  // namespace

std::string MessageQueue::toString() const {
  return topic + "@" + brokerName + "#" + std::to_string(queueId);
}

std::optional<std::string> BrokerData::master() const {
  auto it = brokerAddrs.find(0);
  if (it == brokerAddrs.end()) return std::nullopt;
  return it->second;
}

std::vector<MessageQueue> TopicRoute::publishQueues() const {
  std::vector<MessageQueue> out;
  if (!orderTopicConf.empty()) {
    std::string_view conf = orderTopicConf;
    while (!conf.empty()) {
      auto semi = conf.find(';');
      std::string_view item = conf.substr(0, semi);
      conf = semi == std::string_view::npos ? std::string_view() : conf.substr(semi + 1);
      auto colon = item.find(':');
      if (colon == std::string_view::npos) continue;
      int n = 0;
      auto num = item.substr(colon + 1);
      std::from_chars(num.data(), num.data() + num.size(), n);
      for (int i = 0; i < n; ++i) {
        out.push_back({topic, std::string(item.substr(0, colon)), i});
      }
    }
    return out;
  }
  std::vector<const QueueData*> sorted;
  for (const auto& q : queueDatas) sorted.push_back(&q);
  std::sort(sorted.begin(), sorted.end(),
            [](const QueueData* a, const QueueData* b) { return a->brokerName < b->brokerName; });
  for (const QueueData* q : sorted) {
    if ((q->perm & kPermWrite) == 0) continue;
    if (!masterAddress(q->brokerName)) continue;
    for (int i = 0; i < q->writeQueueNums; ++i) out.push_back({topic, q->brokerName, i});
  }
  return out;
}

std::vector<MessageQueue> TopicRoute::subscribeQueues() const {
  std::vector<MessageQueue> out;
  for (const auto& q : queueDatas) {
    if ((q.perm & kPermRead) == 0) continue;
    for (int i = 0; i < q.readQueueNums; ++i) out.push_back({topic, q.brokerName, i});
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> TopicRoute::masterAddress(const std::string& brokerName) const {
  for (const auto& b : brokerDatas) {
    if (b.brokerName == brokerName) return b.master();
  }
  return std::nullopt;
}

Result<TopicRoute> parseTopicRoute(std::string_view topic, std::string_view body) {
  FERRY_ASSIGN_OR_RETURN(json j, parseObject(body, "TopicRouteData"));
  TopicRoute route;
  route.topic = std::string(topic);
  route.orderTopicConf = jsonString(j, "orderTopicConf");
  if (auto qs = j.find("queueDatas"); qs != j.end() && qs->is_array()) {
    for (const auto& q : *qs) {
      if (!q.is_object()) continue;
      QueueData d;
      d.brokerName = jsonString(q, "brokerName");
      d.readQueueNums = static_cast<std::int32_t>(jsonInt(q, "readQueueNums"));
      d.writeQueueNums = static_cast<std::int32_t>(jsonInt(q, "writeQueueNums"));
      d.perm = static_cast<std::int32_t>(jsonInt(q, "perm"));
      d.topicSysFlag =
          static_cast<std::int32_t>(jsonInt(q, "topicSysFlag", jsonInt(q, "topicSynFlag")));
      route.queueDatas.push_back(std::move(d));
    }
  }
  if (auto bs = j.find("brokerDatas"); bs != j.end() && bs->is_array()) {
    for (const auto& b : *bs) {
      if (b.is_object()) route.brokerDatas.push_back(brokerDataFrom(b));
    }
  }
  if (auto m = j.find("topicQueueMappingByBroker"); m != j.end() && m->is_object()) {
    route.staticQueueMapping = !m->empty();
  }
  return route;
}

Result<ClusterInfo> parseClusterInfo(std::string_view body) {
  FERRY_ASSIGN_OR_RETURN(json j, parseObject(body, "ClusterInfo"));
  ClusterInfo info;
  if (auto bt = j.find("brokerAddrTable"); bt != j.end() && bt->is_object()) {
    for (auto it = bt->begin(); it != bt->end(); ++it) {
      if (!it.value().is_object()) continue;
      BrokerData b = brokerDataFrom(it.value());
      if (b.brokerName.empty()) b.brokerName = it.key();
      info.brokers[it.key()] = std::move(b);
    }
  }
  if (auto ct = j.find("clusterAddrTable"); ct != j.end() && ct->is_object()) {
    for (auto it = ct->begin(); it != ct->end(); ++it) {
      std::vector<std::string> names;
      if (it.value().is_array()) {
        for (const auto& n : it.value()) {
          if (n.is_string()) names.push_back(n.get<std::string>());
        }
      }
      std::sort(names.begin(), names.end());
      info.clusters[it.key()] = std::move(names);
    }
  }
  return info;
}

}  // namespace ferry::rocketmq
