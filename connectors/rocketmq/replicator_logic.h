// Pure parts of the RocketMQ Replicator (no I/O, unit-tested): topic selection and renaming,
// which properties travel, loop detection, queue placement, the metadata a replicated record
// carries from the source task to the sink task, and the source → target offset map behind
// consumer-group checkpoints.
//
// Thread-safety: free functions; OffsetTranslator is not synchronised (its owner locks).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"

namespace ferry::connectors::repl {

// Property naming the clusters a message was replicated from, in order ("a,b"). A replicator
// whose target alias is in this list drops the message (it came from there): loop prevention for
// bidirectional and ring setups.
inline constexpr const char* kPropPath = "FERRY_REPL_PATH";
// Header carrying the message's properties (encoded as on the wire) from source to sink task.
inline constexpr const char* kHeaderProps = "replicator.properties";
// Header carrying ReplicaMeta (see encodeMeta).
inline constexpr const char* kHeaderMeta = "replicator.meta";

class TopicFilter {
 public:
  // `list`: exact names; `include`: a regex (empty: none); `exclude`: a regex (empty: none).
  // InvalidArgument for a malformed regex.
  static Result<TopicFilter> create(std::vector<std::string> list, const std::string& include,
                                    const std::string& exclude);
  bool matches(const std::string& topic) const;

 private:
  std::vector<std::string> list_;
  std::optional<std::regex> include_;
  std::optional<std::regex> exclude_;
};

// `format` with ${topic} and ${source.alias} replaced ("${topic}" keeps the name).
std::string renameTopic(const std::string& format, const std::string& topic,
                        const std::string& sourceAlias);
// Checks a rename format: it must contain ${topic} (else every topic would merge into one).
Status validateRenameFormat(const std::string& format);

// True when `alias` is in the message's replication path (it came from that cluster).
bool cameFrom(const std::map<std::string, std::string>& properties, const std::string& alias);

// The properties the target message gets: the source's, minus the ones the broker sets or
// interprets on store (queue offsets, delay/timer, transaction, region/trace, retry bookkeeping),
// plus `sourceAlias` appended to the replication path.
std::map<std::string, std::string> replicatedProperties(std::map<std::string, std::string> properties,
                                                        const std::string& sourceAlias);
bool droppedOnReplication(std::string_view property);

// Where a source queue's messages go among `targetQueues` queues of the target topic.
// preserve: the source queue's index (modulo, when the target has fewer); hash: FNV-1a of the
// key (the source index when there is no key). Never negative; 0 when targetQueues <= 0.
int placeQueue(bool preserve, int sourceIndex, int targetQueues, std::string_view key);

// What the sink task needs to know about a replicated message besides body and properties.
struct ReplicaMeta {
  std::string sourceTopic;
  std::string sourceBroker;
  std::int32_t sourceQueueId = 0;
  std::int32_t sourceIndex = 0;   // index of the queue in the topic's (broker, queueId) order
  std::int32_t sourceQueues = 0;  // queues of the source topic
  std::int64_t sourceOffset = 0;
  std::int32_t flag = 0;
  std::int64_t storeTimestamp = 0;
  auto operator<=>(const ReplicaMeta&) const = default;
};
std::string encodeMeta(const ReplicaMeta& meta);
std::optional<ReplicaMeta> decodeMeta(std::string_view text);

// Per source queue, a bounded history of (source offset, target offset) pairs of replicated
// messages: the newest `historyPerQueue` pairs exactly, and below them a ladder of at most as many
// pairs at least `stride` source offsets apart; when the ladder is full its spacing doubles (every
// other pair is dropped). A group far behind still translates, re-reading at most `stride`
// messages more than it had consumed. Memory: 32 bytes x historyPerQueue per source queue. translate(c), for a group that committed c on the source queue (it consumed every
// message below c), answers the target offset a consumer of the same group may resume at without
// losing anything: one past the target offset of the newest replicated message below c. It never
// skips a message the group did not consume, so a failed-over consumer sees duplicates at most.
class OffsetTranslator {
 public:
  explicit OffsetTranslator(std::size_t historyPerQueue = 1024)
      : cap_(historyPerQueue < 2 ? 2 : historyPerQueue) {}
  // key identifies the source queue ("topic@broker#id"); pairs must come in increasing order.
  void record(const std::string& key, std::int64_t sourceOffset, std::int64_t targetOffset);
  // nullopt when nothing below `committed` was replicated yet (or it fell out of the history).
  std::optional<std::int64_t> translate(const std::string& key, std::int64_t committed) const;
  std::size_t queues() const { return map_.size(); }

 private:
  struct History {
    std::deque<std::pair<std::int64_t, std::int64_t>> recent;  // source offsets increasing
    std::deque<std::pair<std::int64_t, std::int64_t>> ladder;  // older, sparse, increasing
    std::int64_t stride = 1;
  };
  std::size_t cap_;
  std::map<std::string, History> map_;
};

}  // namespace ferry::connectors::repl
