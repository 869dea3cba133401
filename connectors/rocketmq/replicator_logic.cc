// Pure parts of the Replicator (see replicator_logic.h).
#include "connectors/rocketmq/replicator_logic.h"

#include <algorithm>
#include <charconv>

#include "rocketmq/producer.h"

namespace ferry::connectors::repl {

Result<TopicFilter> TopicFilter::create(std::vector<std::string> list, const std::string& include,
                                        const std::string& exclude) {
  TopicFilter f;
  f.list_ = std::move(list);
  try {
    if (!include.empty()) f.include_.emplace(include, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Status::invalidArgument("topics.regex '" + include + "' is not a valid regex: " + e.what());
  }
  try {
    if (!exclude.empty()) f.exclude_.emplace(exclude, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Status::invalidArgument("topics.exclude '" + exclude + "' is not a valid regex: " + e.what());
  }
  return f;
}

bool TopicFilter::matches(const std::string& topic) const {
  if (exclude_ && std::regex_match(topic, *exclude_)) return false;
  if (std::find(list_.begin(), list_.end(), topic) != list_.end()) return true;
  return include_ && std::regex_match(topic, *include_);
}

namespace {

void replaceAll(std::string& s, std::string_view what, std::string_view with) {
  for (std::size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + with.size()))
    s.replace(pos, what.size(), with);
}

}  // namespace

std::string renameTopic(const std::string& format, const std::string& topic,
                        const std::string& sourceAlias) {
  std::string out = format;
  replaceAll(out, "${source.alias}", sourceAlias);
  replaceAll(out, "${topic}", topic);
  return out;
}

Status validateRenameFormat(const std::string& format) {
  if (format.find("${topic}") == std::string::npos)
    return Status::invalidArgument("must contain ${topic} (e.g. '${topic}' or '${source.alias}.${topic}')");
  return Status::ok();
}

bool cameFrom(const std::map<std::string, std::string>& properties, const std::string& alias) {
  auto it = properties.find(kPropPath);
  if (it == properties.end() || alias.empty()) return false;
  std::string_view path = it->second;
  while (!path.empty()) {
    const std::size_t comma = path.find(',');
    if (path.substr(0, comma) == alias) return true;
    if (comma == std::string_view::npos) break;
    path.remove_prefix(comma + 1);
  }
  return false;
}

bool droppedOnReplication(std::string_view p) {
  static constexpr std::string_view kDropped[] = {
      "MIN_OFFSET", "MAX_OFFSET", "REAL_TOPIC", "REAL_QID", "DELAY", "__STARTDELIVERTIME",
      "TRAN_MSG", "TRAN_PREPARED_QUEUE_OFFSET", "PGROUP", "CONSUME_START_TIME", "MSG_REGION",
      "TRACE_ON", "CLUSTER", "INNER_MULTI_DISPATCH", "INNER_MULTI_QUEUE_OFFSET", "RETRY_TOPIC",
      "ORIGIN_MESSAGE_ID", "RECONSUME_TIME", "MAX_RECONSUME_TIMES", "__SHARDINGKEY",
      "CHECK_IMMUNITY_TIME_IN_SECONDS", "TRANSACTION_CHECK_TIMES"};
  for (std::string_view d : kDropped)
    if (p == d) return true;
  return p.rfind("TIMER_", 0) == 0;
}

std::map<std::string, std::string> replicatedProperties(std::map<std::string, std::string> props,
                                                        const std::string& sourceAlias) {
  std::erase_if(props, [](const auto& kv) { return droppedOnReplication(kv.first); });
  std::string& path = props[kPropPath];
  path = path.empty() ? sourceAlias : path + "," + sourceAlias;
  return props;
}

int placeQueue(bool preserve, int sourceIndex, int targetQueues, std::string_view key) {
  if (targetQueues <= 0) return 0;
  if (preserve || key.empty()) return (sourceIndex < 0 ? 0 : sourceIndex) % targetQueues;
  return static_cast<int>(rocketmq::keyHash(key) % static_cast<std::uint32_t>(targetQueues));
}

std::string encodeMeta(const ReplicaMeta& m) {
  // Fields separated by '\n' (topic and broker names cannot contain it).
  std::string out;
  out.reserve(m.sourceTopic.size() + m.sourceBroker.size() + 64);
  out += m.sourceTopic;
  out += '\n';
  out += m.sourceBroker;
  for (std::int64_t v : {std::int64_t{m.sourceQueueId}, std::int64_t{m.sourceIndex},
                         std::int64_t{m.sourceQueues}, m.sourceOffset, std::int64_t{m.flag},
                         m.storeTimestamp}) {
    out += '\n';
    out += std::to_string(v);
  }
  return out;
}

std::optional<ReplicaMeta> decodeMeta(std::string_view text) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t nl = text.find('\n');
    parts.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  if (parts.size() != 8 || parts[0].empty()) return std::nullopt;
  std::int64_t v[6];
  for (int i = 0; i < 6; ++i) {
    std::string_view s = parts[static_cast<std::size_t>(i) + 2];
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v[i]);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  }
  auto i32 = [](std::int64_t x) -> std::optional<std::int32_t> {
    if (x < INT32_MIN || x > INT32_MAX) return std::nullopt;
    return static_cast<std::int32_t>(x);
  };
  ReplicaMeta m;
  m.sourceTopic = std::string(parts[0]);
  m.sourceBroker = std::string(parts[1]);
  auto qid = i32(v[0]), idx = i32(v[1]), n = i32(v[2]), flag = i32(v[4]);
  if (!qid || !idx || !n || !flag || *idx < 0 || *n < 0) return std::nullopt;
  m.sourceQueueId = *qid;
  m.sourceIndex = *idx;
  m.sourceQueues = *n;
  m.sourceOffset = v[3];
  m.flag = *flag;
  m.storeTimestamp = v[5];
  return m;
}

void OffsetTranslator::record(const std::string& key, std::int64_t sourceOffset,
                              std::int64_t targetOffset) {
  History& h = map_[key];
  // Replayed after a restart or resend: keep the history increasing; a re-replicated message
  // maps to its newest copy.
  while (!h.recent.empty() && h.recent.back().first >= sourceOffset) h.recent.pop_back();
  while (!h.ladder.empty() && h.ladder.back().first >= sourceOffset) h.ladder.pop_back();
  h.recent.emplace_back(sourceOffset, targetOffset);
  if (h.recent.size() <= cap_) return;
  // The oldest recent pair moves down to the ladder when it is a stride past the ladder's last.
  const auto oldest = h.recent.front();
  h.recent.pop_front();
  if (!h.ladder.empty() && oldest.first - h.ladder.back().first < h.stride) return;
  h.ladder.push_back(oldest);
  if (h.ladder.size() <= cap_) return;
  // Ladder full: double its spacing by keeping every other pair (the oldest stays).
  h.stride *= 2;
  std::deque<std::pair<std::int64_t, std::int64_t>> thinned;
  for (std::size_t i = 0; i < h.ladder.size(); i += 2) thinned.push_back(h.ladder[i]);
  h.ladder.swap(thinned);
}

std::optional<std::int64_t> OffsetTranslator::translate(const std::string& key,
                                                        std::int64_t committed) const {
  auto it = map_.find(key);
  if (it == map_.end()) return std::nullopt;
  // Newest pair with source offset < committed: in the exact recent pairs, else on the ladder.
  auto newestBelow = [committed](const std::deque<std::pair<std::int64_t, std::int64_t>>& d)
      -> std::optional<std::int64_t> {
    auto pos = std::lower_bound(d.begin(), d.end(), committed,
                                [](const auto& pair, std::int64_t c) { return pair.first < c; });
    if (pos == d.begin()) return std::nullopt;
    return std::prev(pos)->second + 1;
  };
  if (auto r = newestBelow(it->second.recent)) return r;
  return newestBelow(it->second.ladder);
}

}  // namespace ferry::connectors::repl
