// The MQTT <-> RocketMQ bridge rules (see bridge.h).
#include "connectors/mqtt/bridge.h"

#include <algorithm>
#include <charconv>

#include "mqtt/codec.h"

namespace ferry::connectors::mqttc {
namespace {

using Kind = BridgeTemplate::Part::Kind;

bool rocketmqChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '%' || c == '|';
}

std::optional<int> parseLevel(std::string_view s) {
  int n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || p != s.data() + s.size() || n < 1 || n > 1000) return std::nullopt;
  return n;
}

// The MQTT topic's levels (split at '/').
std::vector<std::string_view> levels(std::string_view topic) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t slash = topic.find('/', start);
    if (slash == std::string_view::npos) {
      out.push_back(topic.substr(start));
      return out;
    }
    out.push_back(topic.substr(start, slash - start));
    start = slash + 1;
  }
}

// Levels every topic matching `filter` has: those before a '#', and at least one (a topic name
// is never empty, so even "#" matches only topics with a first level).
int fixedLevels(std::string_view filter) {
  auto ls = levels(filter);
  int n = 0;
  for (auto l : ls) {
    if (l == "#") break;
    ++n;
  }
  return std::max(n, 1);
}

std::string get(const StringMap& m, const std::string& k, const std::string& def = "") {
  auto it = m.find(k);
  return it == m.end() ? def : it->second;
}

std::vector<std::string> splitList(const std::string& s, std::string_view sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t at = s.find(sep, start);
    std::string item = s.substr(start, at == std::string::npos ? std::string::npos : at - start);
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    if (at == std::string::npos) return out;
    start = at + sep.size();
  }
}

Status keyError(const std::string& key, const std::string& msg) {
  return Status::invalidArgument(key + ": " + msg);
}

}  // namespace

Result<BridgeTemplate> BridgeTemplate::parse(std::string_view text) {
  BridgeTemplate t;
  std::string literal;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      const std::size_t close = text.find('}', i + 2);
      if (close == std::string_view::npos)
        return Status::invalidArgument("unclosed '${' in '" + std::string(text) + "'");
      if (!literal.empty()) t.parts_.push_back({Kind::kText, std::move(literal), 0});
      literal.clear();
      const std::string_view name = text.substr(i + 2, close - i - 2);
      Part p;
      if (name == "topic") {
        p.kind = Kind::kTopic;
      } else if (name == "tag") {
        p.kind = Kind::kTag;
      } else if (name == "key") {
        p.kind = Kind::kKey;
      } else if (name.rfind("header:", 0) == 0 && name.size() > 7) {
        p.kind = Kind::kHeader;
        p.text = std::string(name.substr(7));
      } else if (name.rfind("level:", 0) == 0) {
        auto n = parseLevel(name.substr(6));
        if (!n) return Status::invalidArgument("'${" + std::string(name) + "}': the level is a number from 1");
        p.kind = Kind::kLevel;
        p.level = *n;
      } else if (name.rfind("levels:", 0) == 0 && name.size() > 8 && name.back() == '-') {
        auto n = parseLevel(name.substr(7, name.size() - 8));
        if (!n) return Status::invalidArgument("'${" + std::string(name) + "}': write ${levels:N-} with N from 1");
        p.kind = Kind::kLevelsFrom;
        p.level = *n;
      } else {
        return Status::invalidArgument("unknown placeholder '${" + std::string(name) +
                                       "}' (known: ${level:N}, ${levels:N-}, ${topic}, ${tag}, ${key}, "
                                       "${header:<name>})");
      }
      t.parts_.push_back(std::move(p));
      i = close + 1;
    } else {
      literal.push_back(text[i++]);
    }
  }
  if (!literal.empty()) t.parts_.push_back({Kind::kText, std::move(literal), 0});
  if (t.parts_.empty()) return Status::invalidArgument("empty template");
  return t;
}

bool BridgeTemplate::uses(Part::Kind kind) const {
  for (const auto& p : parts_)
    if (p.kind == kind) return true;
  return false;
}

int BridgeTemplate::maxLevel() const {
  int n = 0;
  for (const auto& p : parts_)
    if (p.kind == Kind::kLevel) n = std::max(n, p.level);
  return n;
}

std::string BridgeTemplate::literalText() const {
  std::string s;
  for (const auto& p : parts_)
    if (p.kind == Kind::kText) s += p.text;
  return s;
}

Result<std::string> BridgeTemplate::render(const Input& in) const {
  std::string out;
  std::vector<std::string_view> ls;
  bool split = false;
  for (const auto& p : parts_) {
    switch (p.kind) {
      case Kind::kText: out += p.text; break;
      case Kind::kTopic: out += in.topic; break;
      case Kind::kTag: out += in.tag; break;
      case Kind::kKey:
        if (in.record && !in.record->key.isNull()) out += in.record->key.view();
        break;
      case Kind::kHeader: {
        const Header* h = in.record ? in.record->headers.last(p.text) : nullptr;
        if (!h) return Status::invalidArgument("the record has no header '" + p.text + "'");
        out += h->value.view();
        break;
      }
      case Kind::kLevel:
      case Kind::kLevelsFrom: {
        if (!split) {
          ls = levels(in.mqttTopic);
          split = true;
        }
        const auto idx = static_cast<std::size_t>(p.level - 1);
        if (p.kind == Kind::kLevel) {
          if (idx >= ls.size())
            return Status::invalidArgument("MQTT topic '" + std::string(in.mqttTopic) + "' has no level " +
                                           std::to_string(p.level));
          out += ls[idx];
        } else {
          for (std::size_t j = idx; j < ls.size(); ++j) {
            if (j > idx) out += '/';
            out += ls[j];
          }
        }
        break;
      }
    }
  }
  return out;
}

Status validateRocketMQTopic(std::string_view name) {
  if (name.empty()) return Status::invalidArgument("empty RocketMQ topic");
  if (name.size() > 127)
    return Status::invalidArgument("RocketMQ topic '" + std::string(name.substr(0, 40)) + "...' is longer than 127");
  for (char c : name)
    if (!rocketmqChar(c))
      return Status::invalidArgument("'" + std::string(name) +
                                     "' is not a RocketMQ topic name (only letters, digits, _ - % |)");
  return Status::ok();
}

Result<BridgeRules> BridgeRules::compile(const StringMap& config) {
  BridgeRules out;
  const std::string dir = get(config, "direction");
  if (dir == "mqtt-to-rocketmq") {
    out.direction = BridgeDirection::kMqttToRocketMQ;
  } else if (dir == "rocketmq-to-mqtt") {
    out.direction = BridgeDirection::kRocketMQToMqtt;
  } else {
    return keyError("direction", "'" + dir + "' is neither mqtt-to-rocketmq nor rocketmq-to-mqtt");
  }
  const std::string unmatched = get(config, "unmatched", "fail");
  if (unmatched != "fail" && unmatched != "drop")
    return keyError("unmatched", "'" + unmatched + "' is neither fail nor drop");
  out.dropUnmatched = unmatched == "drop";
  out.topicHeader = get(config, "topic.header", "mqtt.topic");
  if (out.topicHeader.empty()) return keyError("topic.header", "must not be empty");
  const bool up = out.direction == BridgeDirection::kMqttToRocketMQ;
  const auto ids = splitList(get(config, "rules"), ",");
  if (ids.empty()) return keyError("rules", "no rule listed");
  std::set<std::string> seen;
  for (const auto& id : ids) {
    if (!seen.insert(id).second) return keyError("rules", "rule '" + id + "' is listed twice");
    const std::string prefix = "rule." + id + ".";
    BridgeRule rule;
    rule.id = id;
    // Keys of the other direction are mistakes, not options.
    static const std::vector<std::string> kUpOnly = {"mqtt.filter", "rocketmq.tag"};
    static const std::vector<std::string> kDownOnly = {"rocketmq.tags", "mqtt.topic"};
    for (const std::string& k : up ? kDownOnly : kUpOnly) {
      if (config.count(prefix + k))
        return keyError(prefix + k, "is not a key of direction " + dir);
    }
    if (up) {
      rule.mqttFilter = get(config, prefix + "mqtt.filter");
      if (rule.mqttFilter.empty()) return keyError(prefix + "mqtt.filter", "required (an MQTT topic filter)");
      if (auto st = mqtt::validateTopicFilter(rule.mqttFilter); !st.isOk())
        return keyError(prefix + "mqtt.filter", st.message());
      if (rule.mqttFilter.rfind("$share/", 0) == 0)
        return keyError(prefix + "mqtt.filter", "a rule matches topics; share the subscription in the source");
      const std::string topicText = get(config, prefix + "rocketmq.topic");
      if (topicText.empty()) return keyError(prefix + "rocketmq.topic", "required (a template such as ${level:1})");
      auto topic = BridgeTemplate::parse(topicText);
      if (!topic.isOk()) return keyError(prefix + "rocketmq.topic", topic.status().message());
      for (char c : topic->literalText())
        if (!rocketmqChar(c))
          return keyError(prefix + "rocketmq.topic", std::string("literal '") + c +
                                                         "' cannot be part of a RocketMQ topic name");
      if (topic->uses(Kind::kTag)) return keyError(prefix + "rocketmq.topic", "${tag} is not known in this direction");
      rule.rocketmqTopic = std::move(*topic);
      const int fixed = fixedLevels(rule.mqttFilter);
      if (rule.rocketmqTopic.maxLevel() > fixed)
        return keyError(prefix + "rocketmq.topic", "filter '" + rule.mqttFilter + "' guarantees " +
                                                       std::to_string(fixed) + " level(s), not " +
                                                       std::to_string(rule.rocketmqTopic.maxLevel()));
      const std::string tagText = get(config, prefix + "rocketmq.tag");
      if (!tagText.empty()) {
        auto tag = BridgeTemplate::parse(tagText);
        if (!tag.isOk()) return keyError(prefix + "rocketmq.tag", tag.status().message());
        if (tag->uses(Kind::kTag)) return keyError(prefix + "rocketmq.tag", "${tag} is not known in this direction");
        if (tag->literalText().find("||") != std::string::npos)
          return keyError(prefix + "rocketmq.tag", "a tag cannot contain '||'");
        if (tag->maxLevel() > fixed)
          return keyError(prefix + "rocketmq.tag", "filter '" + rule.mqttFilter + "' guarantees " +
                                                       std::to_string(fixed) + " level(s), not " +
                                                       std::to_string(tag->maxLevel()));
        rule.rocketmqTag = std::move(*tag);
      }
    } else {
      rule.sourceTopic = get(config, prefix + "rocketmq.topic", "*");
      if (rule.sourceTopic != "*") {
        if (auto st = validateRocketMQTopic(rule.sourceTopic); !st.isOk())
          return keyError(prefix + "rocketmq.topic", st.message() + " (a name or *)");
      }
      const std::string tags = get(config, prefix + "rocketmq.tags", "*");
      if (tags != "*") {
        for (auto& t : splitList(tags, "||")) rule.tags.insert(t);
        if (rule.tags.empty()) return keyError(prefix + "rocketmq.tags", "'" + tags + "' names no tag");
      }
      auto topic = BridgeTemplate::parse(get(config, prefix + "mqtt.topic", "${header:" + out.topicHeader + "}"));
      if (!topic.isOk()) return keyError(prefix + "mqtt.topic", topic.status().message());
      if (topic->uses(Kind::kLevel) || topic->uses(Kind::kLevelsFrom))
        return keyError(prefix + "mqtt.topic", "${level:N} is not known in this direction");
      const std::string lit = topic->literalText();
      if (lit.find_first_of("+#") != std::string::npos)
        return keyError(prefix + "mqtt.topic", "an MQTT topic name cannot contain + or #");
      rule.mqttTopic = std::move(*topic);
    }
    out.rules.push_back(std::move(rule));
  }
  // Rule keys for ids that are not listed: likely a typo.
  for (const auto& [k, v] : config) {
    if (k.rfind("rule.", 0) != 0) continue;
    const std::size_t dot = k.find('.', 5);
    const std::string id = k.substr(5, dot == std::string::npos ? std::string::npos : dot - 5);
    if (!seen.count(id)) return keyError(k, "rule '" + id + "' is not listed in 'rules'");
  }
  return out;
}

Result<bool> BridgeRules::apply(Record& record) const {
  const Header* tagHeader = record.headers.last("rocketmq.tags");
  const std::string tag = tagHeader ? tagHeader->value.str() : std::string();
  if (direction == BridgeDirection::kMqttToRocketMQ) {
    const Header* th = record.headers.last(topicHeader);
    const std::string mqttTopic = th ? th->value.str() : record.topic;
    for (const auto& rule : rules) {
      if (!mqtt::topicMatches(rule.mqttFilter, mqttTopic)) continue;
      BridgeTemplate::Input in{mqttTopic, record.topic, tag, &record};
      auto topic = rule.rocketmqTopic.render(in);
      if (!topic.isOk()) return topic.status().withContext("bridge rule '" + rule.id + "'");
      if (auto st = validateRocketMQTopic(*topic); !st.isOk())
        return st.withContext("bridge rule '" + rule.id + "' for MQTT topic '" + mqttTopic + "'");
      std::string newTag;
      if (rule.rocketmqTag) {
        auto t = rule.rocketmqTag->render(in);
        if (!t.isOk()) return t.status().withContext("bridge rule '" + rule.id + "'");
        newTag = std::move(*t);
      }
      if (!th) record.headers.add(topicHeader, std::string_view(mqttTopic));
      record.headers.remove("rocketmq.tags");
      if (!newTag.empty()) record.headers.add("rocketmq.tags", std::string_view(newTag));
      record.topic = std::move(*topic);
      return true;
    }
    if (dropUnmatched) return false;
    return Status::invalidArgument("no bridge rule matches MQTT topic '" + mqttTopic + "'");
  }
  // The RocketMQ topic the message was read from: RocketMQSource keeps it in the rocketmq.topic
  // header when it writes to another backbone topic (its `topic` key), so rules still see it.
  const Header* srcHeader = record.headers.last("rocketmq.topic");
  const std::string sourceTopic = srcHeader ? srcHeader->value.str() : record.topic;
  for (const auto& rule : rules) {
    if (rule.sourceTopic != "*" && rule.sourceTopic != sourceTopic) continue;
    if (!rule.tags.empty() && !rule.tags.count(tag)) continue;
    BridgeTemplate::Input in{{}, sourceTopic, tag, &record};
    auto topic = rule.mqttTopic.render(in);
    if (!topic.isOk()) return topic.status().withContext("bridge rule '" + rule.id + "'");
    if (auto st = mqtt::validateTopicName(*topic); !st.isOk())
      return st.withContext("bridge rule '" + rule.id + "' rendered '" + *topic + "'");
    record.topic = std::move(*topic);
    return true;
  }
  if (dropUnmatched) return false;
  return Status::invalidArgument("no bridge rule matches RocketMQ topic '" + sourceTopic + "' tag '" + tag + "'");
}

const ConfigDef& MqttRocketMQBridge::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    d.define("direction", ConfigType::kString, std::nullopt, Importance::kHigh,
             "mqtt-to-rocketmq or rocketmq-to-mqtt.");
    d.define("rules", ConfigType::kList, std::nullopt, Importance::kHigh,
             "Rule ids, tried in order; each is configured under rule.<id>. (mqtt.filter, "
             "rocketmq.topic, rocketmq.tag for mqtt-to-rocketmq; rocketmq.topic, rocketmq.tags, "
             "mqtt.topic for rocketmq-to-mqtt).");
    d.define("unmatched", ConfigType::kString, "fail", Importance::kMedium,
             "A record no rule matches: 'fail' (errors.tolerance / dead letter queue) or 'drop'.");
    d.define("topic.header", ConfigType::kString, "mqtt.topic", Importance::kLow,
             "Header (RocketMQ property) carrying the original MQTT topic.");
    d.allowPrefix("rule.");
    return d;
  }();
  return def;
}

Status MqttRocketMQBridge::configure(const StringMap& config) {
  FERRY_ASSIGN_OR_RETURN(rules_, BridgeRules::compile(config));
  return Status::ok();
}

}  // namespace ferry::connectors::mqttc
