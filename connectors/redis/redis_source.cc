// RedisSource (see redis_source.h).
#include "connectors/redis/redis_source.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <mutex>
#include <unordered_set>

#include "connectors/common.h"
#include "connectors/redis/redis_common.h"
#include "core/logging.h"

namespace ferry::connectors {
namespace {

using Mode = RedisSourceTask::Mode;
using redis::Command;
using redis::Reply;

// A processing list in the same hash slot as `list` (LMOVE needs both keys in one slot).
std::string processingListFor(const std::string& list, const std::string& owner) {
  const auto open = list.find('{');
  if (open != std::string::npos) {
    const auto close = list.find('}', open + 1);
    if (close != std::string::npos && close > open + 1) return list + ":ferry-processing:" + owner;
  }
  return "{" + list + "}:ferry-processing:" + owner;
}

// Removes acknowledged elements from a processing list; ARGV: the elements, oldest first.
// Records are acknowledged in poll order and LMOVE puts the newest element at the head, so they
// are normally the list's tail in that order: one LTRIM. Otherwise (elements delivered twice
// after a reconnect, ...) each is removed with LREM from the tail.
constexpr const char* kAckScript =
    "local n = #ARGV\n"
    "local tail = redis.call('LRANGE', KEYS[1], -n, -1)\n"
    "local same = #tail == n\n"
    "if same then\n"
    "  for i = 1, n do\n"
    "    if tail[i] ~= ARGV[n - i + 1] then same = false break end\n"
    "  end\n"
    "end\n"
    "if same then redis.call('LTRIM', KEYS[1], 0, -n - 1) return n end\n"
    "local removed = 0\n"
    "for i = 1, n do removed = removed + redis.call('LREM', KEYS[1], -1, ARGV[i]) end\n"
    "return removed\n";

std::int64_t idMillis(std::string_view id) {
  std::int64_t ms = 0;
  auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), ms);
  (void)p;
  return ec == std::errc() ? ms : 0;
}

}  // namespace

// What the runtime's acknowledgements of safe records turn into: stream ids to XACK, list
// elements to LREM. Filled from any thread (the Acknowledger contract), drained by the task.
struct RedisSourceTask::AckQueue {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> done;  // (stream or list, id or element)
};

namespace {

class QueueAck final : public Acknowledger {
 public:
  QueueAck(std::shared_ptr<RedisSourceTask::AckQueue> q, std::string source, std::string item)
      : q_(std::move(q)), source_(std::move(source)), item_(std::move(item)) {}
  void ack() noexcept override { push(); }
  // Dropped by a filter or tolerated as an error: handled, so acknowledged too. Never delivered
  // (the task stopped first): left pending, delivered again by the next task.
  void release(bool delivered) noexcept override {
    if (delivered) push();
  }

 private:
  void push() noexcept;
  std::shared_ptr<RedisSourceTask::AckQueue> q_;
  std::string source_;
  std::string item_;
};

}  // namespace

void QueueAck::push() noexcept {
  try {
    std::lock_guard lock(q_->mu);
    q_->done.emplace_back(std::move(source_), std::move(item_));
  } catch (...) {
  }
}

const ConfigDef& RedisSourceConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    redisc::defineConnectionKeys(d);
    d.define("redis.streams", ConfigType::kList, "", Importance::kHigh,
             "Stream keys read with a consumer group (at-least-once).");
    d.define("redis.lists", ConfigType::kList, "", Importance::kHigh,
             "List keys read as reliable queues: LMOVE into a processing list, removed from it once safe "
             "(at-least-once).");
    d.define("redis.channels", ConfigType::kList, "", Importance::kHigh,
             "Pub/sub channels to SUBSCRIBE (at-most-once: messages while disconnected are lost).");
    d.define("redis.patterns", ConfigType::kList, "", Importance::kHigh,
             "Pub/sub patterns to PSUBSCRIBE, e.g. __keyspace@0__:* for keyspace notifications (at-most-once).");
    d.define("topic", ConfigType::kString, "${source}", Importance::kHigh,
             "Record topic; ${source} is replaced by the stream, list or channel name.");
    d.define("redis.stream.group", ConfigType::kString, "", Importance::kMedium,
             "Consumer group (empty: ferry-<connector>).");
    d.define("redis.stream.consumer", ConfigType::kString, "", Importance::kLow,
             "Consumer name prefix (empty: <connector>); the task number is appended.");
    d.define("redis.stream.start.id", ConfigType::kString, "0", Importance::kMedium,
             "Where a new group starts: 0 (every entry in the stream) or $ (only new entries).");
    d.define("redis.stream.value", ConfigType::kString, "field", Importance::kMedium,
             "field: value = the entry's value field, key = its key field, other fields are headers; "
             "json: value = every field as a JSON object.",
             validators::oneOf({"field", "json"}));
    d.define("redis.stream.value.field", ConfigType::kString, "value", Importance::kLow,
             "redis.stream.value=field: the field holding the value.");
    d.define("redis.stream.key.field", ConfigType::kString, "key", Importance::kLow,
             "The field holding the record key.");
    d.define("redis.stream.claim.min.idle.ms", ConfigType::kLong, "60000", Importance::kMedium,
             "Take over entries pending this long with another consumer (XAUTOCLAIM); 0: never.",
             validators::atLeast(0));
    d.define("redis.stream.claim.interval.ms", ConfigType::kLong, "10000", Importance::kLow,
             "How often to look for such entries.", validators::atLeast(100));
    d.define("redis.batch.size", ConfigType::kInt, "500", Importance::kLow,
             "Most entries or elements read per round trip.", validators::between(1, 100000));
    return d;
  }();
  return def;
}

std::string RedisSourceConnector::version() const { return kVersion; }

void RedisSourceConnector::validate(const StringMap& config, ConfigValidation& v) const {
  auto p = definition().parse(config, false);
  if (!p.isOk()) return;
  redisc::validateConnectionKeys(*p, v);
  const int kinds = (!p->getList("redis.streams").empty() ? 1 : 0) + (!p->getList("redis.lists").empty() ? 1 : 0) +
                    (!p->getList("redis.channels").empty() || !p->getList("redis.patterns").empty() ? 1 : 0);
  if (kinds != 1)
    v.errors["redis.streams"].push_back(
        "set exactly one of redis.streams, redis.lists or redis.channels/redis.patterns");
  const std::string start = p->getString("redis.stream.start.id");
  if (start != "0" && start != "$" && start.find_first_not_of("0123456789-") != std::string::npos)
    v.errors["redis.stream.start.id"].push_back("must be 0, $ or a stream id");
  if (p->getString("topic").empty()) v.errors["topic"].push_back("must not be empty");
  if (p->getString("redis.client.mode") == "cluster")
    for (const std::string& l : p->getList("redis.lists"))
      if (l.find('{') == std::string::npos && l.find('}') != std::string::npos)
        v.errors["redis.lists"].push_back("list '" + l + "': a '}' without a hash tag cannot be used in a cluster");
}

Status RedisSourceConnector::start(const StringMap& config, ConnectorContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "RedisSource"));
  (void)parsed;
  ConfigValidation v;
  validate(config, v);
  if (!v.errors.empty()) return Status::invalidArgument("RedisSource: " + v.summary());
  config_ = config;
  connector_ = context.connectorName();
  return Status::ok();
}

Result<std::vector<StringMap>> RedisSourceConnector::taskConfigs(int maxTasks) {
  // Streams and lists: every task reads every key as a consumer of its own (Redis shares the
  // entries out). Pub/sub: one task (each subscriber gets every message).
  const bool pubsub = config_.count("redis.channels") + config_.count("redis.patterns") > 0 &&
                      (!config_["redis.channels"].empty() || !config_["redis.patterns"].empty());
  const int n = pubsub ? 1 : std::max(1, maxTasks);
  return std::vector<StringMap>(static_cast<std::size_t>(n), config_);
}

std::unique_ptr<SourceTask> RedisSourceConnector::createTask() { return std::make_unique<RedisSourceTask>(); }

RedisSourceTask::RedisSourceTask() : log_(core::logger("redis-source")), done_(std::make_shared<AckQueue>()) {}

RedisSourceTask::~RedisSourceTask() { stop(); }

std::string RedisSourceTask::version() const { return kVersion; }

Status RedisSourceTask::start(const StringMap& config, SourceTaskContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(RedisSourceConnector::definition(), config, "RedisSource task"));
  context_ = &context;
  const std::string owner = context.connectorName() + "-" + std::to_string(context.taskId());
  if (!p.getList("redis.streams").empty()) {
    mode_ = Mode::kStream;
    sources_ = p.getList("redis.streams");
  } else if (!p.getList("redis.lists").empty()) {
    mode_ = Mode::kList;
    sources_ = p.getList("redis.lists");
    for (const auto& l : sources_) processing_[l] = processingListFor(l, redisc::safeName(owner));
  } else {
    mode_ = Mode::kPubSub;
    sources_ = p.getList("redis.channels");
    patterns_ = p.getList("redis.patterns");
  }
  topic_ = p.getString("topic");
  batch_ = static_cast<std::size_t>(p.getInt("redis.batch.size"));
  group_ = p.getString("redis.stream.group");
  if (group_.empty()) group_ = "ferry-" + context.connectorName();
  consumer_ = p.getString("redis.stream.consumer");
  consumer_ = (consumer_.empty() ? context.connectorName() : consumer_) + "-" + std::to_string(context.taskId());
  startId_ = p.getString("redis.stream.start.id");
  valueAsJson_ = p.getString("redis.stream.value") == "json";
  valueField_ = p.getString("redis.stream.value.field");
  keyField_ = p.getString("redis.stream.key.field");
  claimMinIdle_ = std::chrono::milliseconds(p.getLong("redis.stream.claim.min.idle.ms"));
  claimInterval_ = std::chrono::milliseconds(p.getLong("redis.stream.claim.interval.ms"));
  for (const auto& s : sources_) pendingFrom_[s] = "0";
  FERRY_ASSIGN_OR_RETURN(options_, redisc::clientOptions(p, "ferry-" + redisc::safeName(owner)));
  // A refused login or certificate fails the task at once; a server that is down or does not
  // answer is tried again at each poll (the status shows the connection reconnecting).
  Status s = connect();
  if (!s.isOk()) {
    if (s.code() == StatusCode::kInvalidArgument) return s.withContext("RedisSource");
    (void)unavailable(s, "connecting");
    log_->warn("{} task {}: Redis not reachable yet (tried again at each poll): {}", context.connectorName(),
               context.taskId(), s.toString());
  }
  const char* what = mode_ == Mode::kStream ? "streams" : mode_ == Mode::kList ? "lists" : "channels";
  log_->info("{} task {}: reading {} {} from Redis ({}){}", context.connectorName(), context.taskId(), what,
             sources_.empty() ? "(patterns)" : p.getString("redis.streams") + p.getString("redis.lists") +
                                                   p.getString("redis.channels"),
             options_.cluster ? "cluster" : "standalone",
             mode_ == Mode::kPubSub ? "; pub/sub is at-most-once: messages while disconnected are lost" : "");
  return Status::ok();
}

Status RedisSourceTask::connect() {
  if (!client_) {
    FERRY_ASSIGN_OR_RETURN(client_, redis::Client::connect(options_));
  }
  if (mode_ == Mode::kStream && !groupsReady_) {
    for (const std::string& stream : sources_) {
      FERRY_ASSIGN_OR_RETURN(Reply r, client_->command(Command{{"XGROUP", "CREATE", stream, group_, startId_, "MKSTREAM"}, stream}));
      if (r.isError() && r.errorPrefix() != "BUSYGROUP")
        return Status::invalidArgument("XGROUP CREATE " + stream + " " + group_ + ": " + r.describe());
    }
    groupsReady_ = true;
  }
  if (mode_ == Mode::kPubSub && !subscription_) {
    FERRY_ASSIGN_OR_RETURN(auto conn, client_->dedicated(""));
    std::vector<std::vector<std::string>> cmds;
    if (!sources_.empty()) {
      std::vector<std::string> c{"SUBSCRIBE"};
      c.insert(c.end(), sources_.begin(), sources_.end());
      cmds.push_back(std::move(c));
    }
    if (!patterns_.empty()) {
      std::vector<std::string> c{"PSUBSCRIBE"};
      c.insert(c.end(), patterns_.begin(), patterns_.end());
      cmds.push_back(std::move(c));
    }
    // One confirmation per channel and pattern.
    std::string out;
    for (const auto& c : cmds) redis::appendCommand(out, c);
    const auto deadline = redis::Clock::now() + options_.connection.timeout;
    FERRY_RETURN_IF_ERROR(conn->write(out, deadline));
    for (std::size_t i = 0; i < sources_.size() + patterns_.size(); ++i) {
      FERRY_ASSIGN_OR_RETURN(Reply r, conn->read(deadline));
      if (r.isError()) return Status::invalidArgument("SUBSCRIBE refused: " + r.describe());
    }
    subscription_ = std::move(conn);
  }
  return Status::ok();
}

Status RedisSourceTask::unavailable(const Status& s, const char* what) {
  // The next poll reconnects. A refused login or a bad certificate is not retriable as it is.
  client_.reset();
  subscription_.reset();
  ++reconnects_;
  // A reply lost with the connection leaves entries in this consumer's pending list (streams:
  // read again from id 0; in-flight ones are skipped) or elements in the processing list (lists:
  // delivered again, at-least-once).
  requeue(ahead_.acks);  // their replies are lost too: sent again (XACK and the removal are idempotent)
  ahead_ = Ahead{};
  if (mode_ == Mode::kStream)
    for (const auto& src : sources_) pendingFrom_[src] = "0";
  if (mode_ == Mode::kList) recovered_ = false;
  if (s.code() == StatusCode::kInvalidArgument) return s.withContext(std::string("RedisSource: ") + what);
  return Status::unavailable(std::string("RedisSource: ") + what + ": " + s.toString());
}

std::string RedisSourceTask::topicFor(const std::string& source) const {
  std::string t = topic_;
  for (std::size_t at = t.find("${source}"); at != std::string::npos; at = t.find("${source}", at + source.size()))
    t.replace(at, 9, source);
  return t;
}

void RedisSourceTask::ackCommands(const std::vector<std::pair<std::string, std::string>>& done,
                                  std::vector<Command>& cmds) {
  // Grouped by stream or list, each group in acknowledgement order, at most 1,000 a command.
  std::map<std::string, std::vector<std::string_view>> bySource;
  for (const auto& [source, item] : done) bySource[source].push_back(item);
  for (const auto& [source, items] : bySource) {
    for (std::size_t i = 0; i < items.size(); i += 1000) {
      Command c;
      if (mode_ == Mode::kStream) {
        c = Command{{"XACK", source, group_}, source};
      } else {
        const std::string& proc = processing_[source];
        c = Command{{"EVAL", kAckScript, "1", proc}, proc};
      }
      for (std::size_t j = i; j < std::min(items.size(), i + 1000); ++j) c.args.emplace_back(items[j]);
      cmds.push_back(std::move(c));
    }
  }
}

void RedisSourceTask::acknowledged(const std::vector<std::pair<std::string, std::string>>& done,
                                   const std::vector<Reply>& replies) {
  for (const Reply& r : replies)
    if (r.isError()) log_->warn("{}: acknowledging in Redis failed: {}", context_->connectorName(), r.describe());
  if (mode_ == Mode::kStream)
    for (const auto& [stream, id] : done) {
      // Acknowledgements come in delivery order: normally the oldest id in flight.
      auto& flying = inFlight_[stream];
      if (!flying.empty() && flying.front() == id) {
        flying.pop_front();
      } else if (auto it = std::find(flying.begin(), flying.end(), id); it != flying.end()) {
        flying.erase(it);
      }
    }
}

void RedisSourceTask::requeue(std::vector<std::pair<std::string, std::string>>& done) {
  if (done.empty()) return;
  std::lock_guard lock(done_->mu);
  done_->done.insert(done_->done.begin(), std::make_move_iterator(done.begin()), std::make_move_iterator(done.end()));
  done.clear();
}

Status RedisSourceTask::flushAcks() {
  std::vector<std::pair<std::string, std::string>> done;
  {
    std::lock_guard lock(done_->mu);
    done.swap(done_->done);
  }
  if (done.empty()) return Status::ok();
  if (!client_) {
    requeue(done);  // not connected: kept for the next call
    return Status::ok();
  }
  std::vector<Command> cmds;
  ackCommands(done, cmds);
  auto replies = client_->pipeline(cmds);
  if (!replies.isOk()) {
    requeue(done);
    return replies.status();
  }
  acknowledged(done, *replies);
  return Status::ok();
}

Status RedisSourceTask::commit() {
  // With a read ahead on the connection the acknowledgements go with the next poll's write.
  if (!client_ || ahead_.replies > 0) return Status::ok();
  Status s = flushAcks();
  if (!s.isOk()) (void)unavailable(s, "acknowledging");
  return Status::ok();
}

std::size_t RedisSourceTask::streamEntries(const std::string& stream, Reply& entries, std::vector<Record>& out,
                                           bool fresh) {
  std::size_t n = 0;
  if (!entries.isArray()) return 0;
  auto& flying = inFlight_[stream];
  // Entries read with ">" are new to this consumer; pending or claimed ones may be in flight.
  std::unordered_set<std::string_view> given;
  if (!fresh) given.insert(flying.begin(), flying.end());
  const std::string topic = topicFor(stream);
  for (Reply& e : entries.elements) {
    if (!e.isArray() || e.elements.size() < 2 || !e.elements[0].isString()) continue;
    std::string& id = e.elements[0].str;
    Reply& fields = e.elements[1];
    if (!fresh && given.count(id) != 0) continue;  // already given out, not yet acknowledged
    if (!fields.isArray()) {
      // Deleted (XDEL / trimmed) while pending: nothing to deliver; acknowledge it.
      flying.push_back(id);
      std::lock_guard lock(done_->mu);
      done_->done.emplace_back(stream, std::move(id));
      continue;
    }
    Record r;
    r.topic = topic;
    r.timestampMs = idMillis(id);
    nlohmann::json obj = nlohmann::json::object();
    for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
      std::string& f = fields.elements[i].str;
      std::string& v = fields.elements[i + 1].str;
      if (valueAsJson_) {
        if (f == keyField_) r.key = Bytes::copyOf(v);
        obj[f] = std::move(v);
      } else if (f == valueField_) {
        r.value = Bytes(std::move(v));
      } else if (f == keyField_) {
        r.key = Bytes(std::move(v));
      } else {
        r.headers.add(std::move(f), std::move(v));
      }
    }
    if (valueAsJson_) r.value = Bytes(obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    r.headers.add("redis.stream", stream);
    r.headers.add("redis.id", id);
    r.position.partition = {{"redis.stream", stream}};
    r.position.offset = {{"id", id}};
    flying.push_back(id);
    r.acknowledger = std::make_shared<QueueAck>(done_, stream, std::move(id));
    out.push_back(std::move(r));
    ++n;
  }
  return n;
}

bool RedisSourceTask::claimDue() const {
  return mode_ == Mode::kStream && claimMinIdle_.count() > 0 && std::chrono::steady_clock::now() >= nextClaim_;
}

void RedisSourceTask::appendRead(std::string& bytes, std::size_t max, Ahead& ahead) {
  if (mode_ == Mode::kStream) {
    std::vector<std::string> args{"XREADGROUP", "GROUP", group_, consumer_, "COUNT", std::to_string(max), "STREAMS"};
    args.insert(args.end(), sources_.begin(), sources_.end());
    args.insert(args.end(), sources_.size(), ">");
    redis::appendCommand(bytes, args);
    ahead.replies = 1;
    ahead.max = max;
    return;
  }
  const std::string& list = sources_[nextList_++ % sources_.size()];
  const std::string_view args[] = {"LMOVE", list, processing_[list], "RIGHT", "LEFT"};
  ahead.max = std::min(max, batch_);
  for (std::size_t i = 0; i < ahead.max; ++i) redis::appendCommand(bytes, args, 5);
  ahead.replies = ahead.max;
  ahead.list = list;
}

void RedisSourceTask::sendAhead(std::size_t max) {
  if (!client_ || client_->cluster() || (mode_ == Mode::kStream && claimDue())) return;
  std::string bytes;
  Ahead ahead;
  appendRead(bytes, max, ahead);
  ahead.full = true;  // sent because the batch before it was full
  auto conn = client_->server();
  Status s = conn.isOk() ? conn.value()->write(bytes, redis::Clock::now() + options_.connection.timeout)
                         : conn.status();
  if (!s.isOk()) {
    // The records of this poll are delivered; the next poll reconnects.
    log_->warn("{}: reading ahead failed: {}", context_->connectorName(), s.toString());
    (void)unavailable(s, "reading ahead");
    return;
  }
  ahead_ = std::move(ahead);
}

Result<std::size_t> RedisSourceTask::takeAhead(std::vector<Record>& out, std::size_t max) {
  // On the wire before this call: the acknowledgements written with the read ahead, then the
  // read ahead. Written now: the acknowledgements since and, while batches come full, the next
  // read ahead; their replies are read by the next call (Redis answers a pipeline only once it
  // executed all of it, so waiting for them now would wait for the next read too).
  Acks done;
  {
    std::lock_guard lock(done_->mu);
    done.swap(done_->done);
  }
  std::vector<Command> acks;
  ackCommands(done, acks);
  std::string bytes;
  for (const Command& c : acks) redis::appendCommand(bytes, c.args);
  Ahead current = std::exchange(ahead_, Ahead{});
  Ahead next;
  if (current.full && !claimDue()) appendRead(bytes, max, next);
  auto conn = client_->server();
  const auto deadline = redis::Clock::now() + options_.connection.timeout;
  auto lost = [&](const Status& s, const char* what) {
    requeue(done);
    requeue(current.acks);
    return unavailable(s, what);
  };
  if (!conn.isOk()) return lost(conn.status(), "reading ahead");
  if (!bytes.empty())
    if (Status s = conn.value()->write(bytes, deadline); !s.isOk()) return lost(s, "reading ahead");
  auto readAcks = [&](std::size_t count, Acks& which) -> Status {
    std::vector<Reply> replies;
    replies.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      auto r = conn.value()->read(deadline);
      if (!r.isOk()) return r.status();
      replies.push_back(std::move(*r));
    }
    acknowledged(which, replies);
    which.clear();
    return Status::ok();
  };
  if (Status s = readAcks(current.ackReplies, current.acks); !s.isOk()) return lost(s, "acknowledging");
  std::size_t n = 0;
  if (mode_ == Mode::kStream) {
    auto r = conn.value()->read(deadline);
    if (!r.isOk()) return lost(r.status(), "XREADGROUP (read ahead)");
    if (r->isError()) {
      if (r->errorPrefix() == "NOGROUP") groupsReady_ = false;
      return lost(Status::unavailable("XREADGROUP: " + r->describe()), "XREADGROUP (read ahead)");
    }
    if (r->isArray())
      for (Reply& st : r->elements)
        if (st.isArray() && st.elements.size() == 2) n += streamEntries(st.elements[0].str, st.elements[1], out);
  } else {
    for (std::size_t i = 0; i < current.replies; ++i) {
      auto r = conn.value()->read(deadline);
      if (!r.isOk()) return lost(r.status(), "LMOVE (read ahead)");
      if (r->isError())
        return lost(Status::unavailable("LMOVE " + current.list + ": " + r->describe()), "LMOVE (read ahead)");
      if (r->isString()) {
        emitListElement(current.list, std::move(r->str), out);
        ++n;
      }
    }
  }
  if (next.replies == 0) {
    // No read ahead any more: the acknowledgements' replies are read now.
    if (Status s = readAcks(acks.size(), done); !s.isOk()) return lost(s, "acknowledging");
    return n;
  }
  next.full = n == current.max;
  next.ackReplies = acks.size();
  next.acks = std::move(done);
  ahead_ = std::move(next);
  return n;
}

void RedisSourceTask::settleAhead() {
  if (ahead_.replies == 0 || !client_) return;
  auto conn = client_->server();
  const auto deadline = redis::Clock::now() + options_.connection.timeout;
  std::vector<Reply> acks;
  for (std::size_t i = 0; conn.isOk() && i < ahead_.ackReplies + ahead_.replies; ++i) {
    auto r = conn.value()->read(deadline);
    if (!r.isOk()) {
      client_.reset();
      requeue(ahead_.acks);
      break;
    }
    if (i < ahead_.ackReplies) acks.push_back(std::move(*r));
    if (i + 1 == ahead_.ackReplies) acknowledged(ahead_.acks, acks);
  }
  // Entries read and not delivered stay in the consumer's pending list, elements in the
  // processing list: the next run delivers them.
  ahead_ = Ahead{};
}

Result<std::size_t> RedisSourceTask::pollStreams(std::vector<Record>& out, std::size_t max,
                                                 std::chrono::milliseconds wait) {
  // 1. What this consumer was given before and never acknowledged (a restart, a crash).
  bool pendingLeft = false;
  for (const std::string& stream : sources_) {
    std::string& from = pendingFrom_[stream];
    if (from.empty()) continue;
    pendingLeft = true;
    auto r = client_->command(Command{{"XREADGROUP", "GROUP", group_, consumer_, "COUNT", std::to_string(max),
                                       "STREAMS", stream, from},
                                      stream});
    if (!r.isOk()) return unavailable(r.status(), "XREADGROUP");
    if (r->isError()) return Status::unavailable("RedisSource: XREADGROUP " + stream + ": " + r->describe());
    Reply* entries = nullptr;
    if (r->isArray() && !r->elements.empty() && r->elements[0].isArray() && r->elements[0].elements.size() == 2)
      entries = &r->elements[0].elements[1];
    if (entries == nullptr || entries->elements.empty()) {
      from.clear();  // our pending list is read
      continue;
    }
    from = entries->elements.back().isArray() && !entries->elements.back().elements.empty()
               ? entries->elements.back().elements[0].str
               : std::string();
    std::size_t n = streamEntries(stream, *entries, out, false);
    if (n > 0) return n;
  }
  if (pendingLeft) return std::size_t{0};
  // 2. Entries another consumer left pending too long.
  const auto now = std::chrono::steady_clock::now();
  if (claimMinIdle_.count() > 0 && now >= nextClaim_) {
    bool passDone = true;
    std::size_t n = 0;
    for (const std::string& stream : sources_) {
      std::string& cursor = claimCursor_[stream];
      if (cursor.empty()) cursor = "0-0";
      auto r = client_->command(Command{{"XAUTOCLAIM", stream, group_, consumer_, std::to_string(claimMinIdle_.count()),
                                         cursor, "COUNT", std::to_string(max)},
                                        stream});
      if (!r.isOk()) return unavailable(r.status(), "XAUTOCLAIM");
      if (r->isError() || !r->isArray() || r->elements.size() < 2) {
        if (r->isError()) log_->warn("{}: XAUTOCLAIM {}: {}", context_->connectorName(), stream, r->describe());
        cursor = "0-0";
        continue;
      }
      cursor = r->elements[0].str;
      if (cursor != "0-0") passDone = false;
      const std::size_t got = streamEntries(stream, r->elements[1], out, false);
      if (got > 0)
        log_->info("{} task {}: took over {} entries of {} pending longer than {} ms with another consumer",
                   context_->connectorName(), context_->taskId(), got, stream, claimMinIdle_.count());
      n += got;
    }
    if (passDone) nextClaim_ = now + claimInterval_;
    if (n > 0) return n;
  }
  // 3. New entries.
  const bool oneCall = !client_->cluster() || sources_.size() == 1;
  if (oneCall) {
    std::vector<std::string> args{"XREADGROUP", "GROUP", group_, consumer_, "COUNT", std::to_string(max)};
    if (wait.count() > 0) {
      args.push_back("BLOCK");
      args.push_back(std::to_string(wait.count()));
    }
    args.push_back("STREAMS");
    for (const auto& s : sources_) args.push_back(s);
    for (std::size_t i = 0; i < sources_.size(); ++i) args.push_back(">");
    auto r = client_->command(Command{std::move(args), sources_.front()}, wait);
    if (!r.isOk()) return unavailable(r.status(), "XREADGROUP");
    if (r->isError()) {
      // NOGROUP: the stream or group was deleted meanwhile; create it again next time.
      if (r->errorPrefix() == "NOGROUP") groupsReady_ = false, (void)connect();
      return Status::unavailable("RedisSource: XREADGROUP: " + r->describe());
    }
    std::size_t n = 0;
    if (r->isArray())
      for (Reply& s : r->elements)
        if (s.isArray() && s.elements.size() == 2) n += streamEntries(s.elements[0].str, s.elements[1], out);
    if (n == max) sendAhead(max);  // a full batch: more is likely waiting
    return n;
  }
  // A cluster with streams in several slots: one XREADGROUP per stream, the wait shared out.
  const auto each = std::chrono::milliseconds(std::max<long long>(1, wait.count() / static_cast<long long>(sources_.size())));
  std::size_t n = 0;
  for (const std::string& stream : sources_) {
    std::vector<std::string> args{"XREADGROUP", "GROUP", group_, consumer_, "COUNT", std::to_string(max - n)};
    if (wait.count() > 0 && n == 0) {
      args.push_back("BLOCK");
      args.push_back(std::to_string(each.count()));
    }
    args.insert(args.end(), {"STREAMS", stream, ">"});
    auto r = client_->command(Command{std::move(args), stream}, each);
    if (!r.isOk()) return unavailable(r.status(), "XREADGROUP");
    if (r->isError()) return Status::unavailable("RedisSource: XREADGROUP " + stream + ": " + r->describe());
    if (r->isArray())
      for (Reply& s : r->elements)
        if (s.isArray() && s.elements.size() == 2) n += streamEntries(s.elements[0].str, s.elements[1], out);
    if (n >= max) break;
  }
  return n;
}

void RedisSourceTask::emitListElement(const std::string& list, std::string element, std::vector<Record>& out) {
  Record r;
  r.topic = topicFor(list);
  r.headers.add("redis.list", list);
  r.value = Bytes(element);
  r.acknowledger = std::make_shared<QueueAck>(done_, list, std::move(element));
  out.push_back(std::move(r));
}

Result<std::size_t> RedisSourceTask::pollLists(std::vector<Record>& out, std::size_t max,
                                               std::chrono::milliseconds wait) {
  auto emit = [&](const std::string& list, std::string element) { emitListElement(list, std::move(element), out); };
  if (!recovered_) {
    // What a previous run of this task took and never finished: oldest (tail) first.
    std::size_t n = 0;
    for (const std::string& list : sources_) {
      auto r = client_->command(Command{{"LRANGE", processing_[list], "0", "-1"}, processing_[list]});
      if (!r.isOk()) return unavailable(r.status(), "LRANGE");
      if (r->isError()) return Status::unavailable("RedisSource: LRANGE: " + r->describe());
      for (auto it = r->elements.rbegin(); it != r->elements.rend(); ++it) {
        emit(list, it->str);
        ++n;
      }
    }
    recovered_ = true;
    if (n > 0) {
      log_->info("{} task {}: {} elements found in the processing lists (taken before a restart or a lost "
                 "connection and not acknowledged) delivered again",
                 context_->connectorName(), context_->taskId(), n);
      return n;
    }
  }
  const std::string& list = sources_[nextList_++ % sources_.size()];
  const std::string& proc = processing_[list];
  std::vector<Command> cmds(std::min(max, batch_), Command{{"LMOVE", list, proc, "RIGHT", "LEFT"}, list});
  auto replies = client_->pipeline(cmds);
  if (!replies.isOk()) return unavailable(replies.status(), "LMOVE");
  std::size_t n = 0;
  for (Reply& r : *replies) {
    if (r.isError()) return Status::unavailable("RedisSource: LMOVE " + list + ": " + r.describe());
    if (r.isString()) {
      emit(list, std::move(r.str));
      ++n;
    }
  }
  if (n == cmds.size()) sendAhead(max);  // a full batch: more is likely waiting
  if (n > 0 || wait.count() <= 0) return n;
  // Empty: wait on this list (BLMOVE takes seconds, fractions allowed).
  const std::string seconds = std::to_string(std::max<long long>(wait.count(), 10) / 1000.0);
  auto r = client_->command(Command{{"BLMOVE", list, proc, "RIGHT", "LEFT", seconds}, list}, wait);
  if (!r.isOk()) return unavailable(r.status(), "BLMOVE");
  if (r->isError()) return Status::unavailable("RedisSource: BLMOVE " + list + ": " + r->describe());
  if (r->isString()) {
    emit(list, std::move(r->str));
    return std::size_t{1};
  }
  return std::size_t{0};
}

Result<std::size_t> RedisSourceTask::pollPubSub(std::vector<Record>& out, std::size_t max,
                                                std::chrono::milliseconds wait) {
  std::size_t n = 0;
  auto deadline = redis::Clock::now() + wait;
  while (n < max) {
    auto r = subscription_->tryRead(deadline);
    if (!r.isOk()) return n > 0 ? Result<std::size_t>(n) : unavailable(r.status(), "reading the subscription");
    if (!*r) break;
    const Reply& m = **r;
    deadline = redis::Clock::now();  // got one: take what is there, do not wait for more
    if (!m.isArray() || m.elements.size() < 3) continue;
    const std::string& kind = m.elements[0].str;
    Record rec;
    if (kind == "message") {
      rec.topic = topicFor(m.elements[1].str);
      rec.headers.add("redis.channel", m.elements[1].str);
      rec.value = Bytes(m.elements[2].str);
    } else if (kind == "pmessage" && m.elements.size() >= 4) {
      rec.topic = topicFor(m.elements[2].str);
      rec.headers.add("redis.channel", m.elements[2].str);
      rec.headers.add("redis.pattern", m.elements[1].str);
      rec.value = Bytes(m.elements[3].str);
    } else {
      continue;  // subscribe confirmations and the like
    }
    out.push_back(std::move(rec));
    ++n;
  }
  return n;
}

Result<std::size_t> RedisSourceTask::poll(std::vector<Record>& out, std::size_t maxRecords,
                                          std::chrono::milliseconds maxWait) {
  if (context_ == nullptr) return Status::failedPrecondition("RedisSource: poll() before start()");
  if (Status s = connect(); !s.isOk()) return unavailable(s, "connecting");
  const std::size_t max = std::max<std::size_t>(1, std::min(maxRecords, batch_));
  if (ahead_.replies > 0) return takeAhead(out, max);
  if (Status s = flushAcks(); !s.isOk()) return unavailable(s, "acknowledging");
  switch (mode_) {
    case Mode::kStream: return pollStreams(out, max, maxWait);
    case Mode::kList: return pollLists(out, max, maxWait);
    case Mode::kPubSub: return pollPubSub(out, max, maxWait);
  }
  return std::size_t{0};
}

void RedisSourceTask::stop() {
  // Acknowledge what is already safe; the rest stays pending in Redis for the next run.
  settleAhead();
  if (client_) {
    if (Status s = flushAcks(); !s.isOk())
      log_->warn("RedisSource: acknowledgements not sent at stop (delivered again later): {}", s.toString());
  }
  subscription_.reset();
  client_.reset();
}

}  // namespace ferry::connectors
