// The broker-free parts of KafkaReplicator (kafka_replicator.h): topic naming and selection,
// loop prevention, and the offset syncs that translate consumer-group offsets from the source
// cluster to the target.
//
// Threading: plain values; an OffsetSyncs belongs to one task thread.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "ferry/result.h"

namespace ferry::connectors::krepl {

// Header that carries, under the identity policy, the aliases of the clusters a record was
// replicated from ("A,B"): a replicator never writes a record back into a cluster on that path.
constexpr const char* kPathHeader = "ferry.replication.path";

enum class Policy { kPrefix, kIdentity };

struct Naming {
  Policy policy = Policy::kPrefix;
  std::string sourceAlias;
  std::string targetAlias;
  std::string separator = ".";

  // prefix: "<source alias><sep><topic>" (MirrorMaker 2's DefaultReplicationPolicy); identity: the
  // same name.
  std::string targetTopic(const std::string& sourceTopic) const;
  // Loop prevention by name under the prefix policy: "<target alias><sep>..." on the source is a
  // copy of a target topic and is never replicated back.
  bool cameFromTarget(const std::string& sourceTopic) const;
};

// True when `path` (a kPathHeader value) names `alias`.
bool pathHas(std::string_view path, std::string_view alias);
// `path` with `alias` appended.
std::string pathAppend(std::string_view path, std::string_view alias);

// Which source topics are replicated: the whole name matches one of `include` and none of
// `exclude` (ECMAScript regexes).
class TopicSelector {
 public:
  static Result<TopicSelector> make(const std::vector<std::string>& include, const std::vector<std::string>& exclude);
  bool selected(const std::string& topic) const;

 private:
  std::vector<std::regex> include_;
  std::vector<std::regex> exclude_;
};

// Where copies of one source partition landed on the target: pairs (source offset, target
// offset) reported by delivery acknowledgements. Copies of a source partition go, in order, to
// the same partition number on the target, so for any synced pair (s, t), every source record
// after s has a copy after t (in the same run of copies or in a later one after a restart).
// A group that committed C on the source (it read everything before C) may therefore resume on
// the target at t + 1 for the newest pair with s < C: it reads again at most what lies between,
// and never skips a record it had not read.
class OffsetSyncs {
 public:
  explicit OffsetSyncs(std::int64_t every = 100, std::size_t keep = 4096) : every_(every), keep_(keep) {}
  void record(std::int64_t sourceOffset, std::int64_t targetOffset);
  std::optional<std::int64_t> translate(std::int64_t committed) const;
  std::size_t size() const { return kept_.size() + (latest_ ? 1 : 0); }

 private:
  const std::int64_t every_;
  const std::size_t keep_;
  std::deque<std::pair<std::int64_t, std::int64_t>> kept_;   // sampled pairs, in delivery order
  std::optional<std::pair<std::int64_t, std::int64_t>> latest_;  // the newest pair, not yet sampled
};

}  // namespace ferry::connectors::krepl
