// KafkaReplicator logic (see kafka_replicator_logic.h).
#include "connectors/kafka/kafka_replicator_logic.h"

namespace ferry::connectors::krepl {

std::string Naming::targetTopic(const std::string& sourceTopic) const {
  if (policy == Policy::kIdentity) return sourceTopic;
  return sourceAlias + separator + sourceTopic;
}

bool Naming::cameFromTarget(const std::string& sourceTopic) const {
  if (policy != Policy::kPrefix) return false;
  const std::string prefix = targetAlias + separator;
  return sourceTopic.size() > prefix.size() && sourceTopic.compare(0, prefix.size(), prefix) == 0;
}

bool pathHas(std::string_view path, std::string_view alias) {
  while (!path.empty()) {
    const auto comma = path.find(',');
    if (path.substr(0, comma) == alias) return true;
    if (comma == std::string_view::npos) break;
    path.remove_prefix(comma + 1);
  }
  return false;
}

std::string pathAppend(std::string_view path, std::string_view alias) {
  std::string out(path);
  if (!out.empty()) out += ',';
  out += alias;
  return out;
}

Result<TopicSelector> TopicSelector::make(const std::vector<std::string>& include,
                                          const std::vector<std::string>& exclude) {
  TopicSelector s;
  auto compile = [](const std::vector<std::string>& in, std::vector<std::regex>& out, const char* key) -> Status {
    for (const auto& r : in) {
      if (r.empty()) continue;
      try {
        out.emplace_back(r, std::regex::ECMAScript | std::regex::optimize);
      } catch (const std::regex_error& e) {
        return Status::invalidArgument(std::string(key) + ": '" + r + "' is not a valid regex: " + e.what());
      }
    }
    return Status::ok();
  };
  FERRY_RETURN_IF_ERROR(compile(include, s.include_, "topics"));
  FERRY_RETURN_IF_ERROR(compile(exclude, s.exclude_, "topics.exclude"));
  return s;
}

bool TopicSelector::selected(const std::string& topic) const {
  bool in = false;
  for (const auto& r : include_)
    if (std::regex_match(topic, r)) {
      in = true;
      break;
    }
  if (!in) return false;
  for (const auto& r : exclude_)
    if (std::regex_match(topic, r)) return false;
  return true;
}

void OffsetSyncs::record(std::int64_t sourceOffset, std::int64_t targetOffset) {
  if (latest_) {
    const std::int64_t lastKept = kept_.empty() ? -1 : kept_.back().first;
    // Keep the previous pair when it is `every` past the last kept one, or when the source offsets
    // went back (a new run of copies after a restart starts below the old one).
    if (kept_.empty() || latest_->first - lastKept >= every_ || sourceOffset <= latest_->first) {
      kept_.push_back(*latest_);
      if (kept_.size() > keep_) kept_.pop_front();
    }
  }
  latest_ = {sourceOffset, targetOffset};
}

std::optional<std::int64_t> OffsetSyncs::translate(std::int64_t committed) const {
  // Target offsets grow in delivery order, so the newest pair with s < committed has the largest t.
  if (latest_ && latest_->first < committed) return latest_->second + 1;
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it)
    if (it->first < committed) return it->second + 1;
  return std::nullopt;
}

}  // namespace ferry::connectors::krepl
