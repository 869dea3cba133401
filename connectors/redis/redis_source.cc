// RedisSource (see redis_source.h).
#include "connectors/redis/redis_source.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <mutex>

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
             "List keys read as reliable queues: LMOVE into a processing list, LREM once safe (at-least-once).");
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
  Status s = connect();
  if (!s.isOk()) return s.withContext("RedisSource");
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
  if (s.code() == StatusCode::kInvalidArgument) return s.withContext(std::string("RedisSource: ") + what);
  return Status::unavailable(std::string("RedisSource: ") + what + ": " + s.toString());
}

std::string RedisSourceTask::topicFor(const std::string& source) const {
  std::string t = topic_;
  for (std::size_t at = t.find("${source}"); at != std::string::npos; at = t.find("${source}", at + source.size()))
    t.replace(at, 9, source);
  return t;
}

Status RedisSourceTask::flushAcks() {
  std::vector<std::pair<std::string, std::string>> done;
  {
    std::lock_guard lock(done_->mu);
    done.swap(done_->done);
  }
  if (done.empty() || !client_) {
    if (!done.empty()) {
      std::lock_guard lock(done_->mu);  // not connected: keep them for the next call
      done_->done.insert(done_->done.begin(), done.begin(), done.end());
    }
    return Status::ok();
  }
  std::vector<Command> cmds;
  if (mode_ == Mode::kStream) {
    std::map<std::string, std::vector<std::string>> bySource;
    for (auto& [source, id] : done) bySource[source].push_back(std::move(id));
    for (auto& [stream, ids] : bySource) {
      for (std::size_t i = 0; i < ids.size(); i += 1000) {
        Command c{{"XACK", stream, group_}, stream};
        for (std::size_t j = i; j < std::min(ids.size(), i + 1000); ++j) c.args.push_back(ids[j]);
        cmds.push_back(std::move(c));
      }
    }
  } else {
    for (auto& [list, element] : done) {
      const std::string& proc = processing_[list];
      // -1: from the tail, where the oldest elements (acknowledged first) are; from the head, each
      // LREM would scan everything taken since.
      cmds.push_back(Command{{"LREM", proc, "-1", element}, proc});
    }
  }
  auto replies = client_->pipeline(cmds);
  if (!replies.isOk()) {
    {
      std::lock_guard lock(done_->mu);
      done_->done.insert(done_->done.begin(), done.begin(), done.end());
    }
    return replies.status();
  }
  for (const Reply& r : *replies)
    if (r.isError()) log_->warn("{}: acknowledging in Redis failed: {}", context_->connectorName(), r.describe());
  if (mode_ == Mode::kStream)
    for (auto& [stream, id] : done) inFlight_[stream].erase(id);
  return Status::ok();
}

Status RedisSourceTask::commit() {
  if (!client_) return Status::ok();
  Status s = flushAcks();
  if (!s.isOk()) (void)unavailable(s, "acknowledging");
  return Status::ok();
}

std::size_t RedisSourceTask::streamEntries(const std::string& stream, const Reply& entries, std::vector<Record>& out) {
  std::size_t n = 0;
  if (!entries.isArray()) return 0;
  auto& flying = inFlight_[stream];
  for (const Reply& e : entries.elements) {
    if (!e.isArray() || e.elements.size() < 2 || !e.elements[0].isString()) continue;
    const std::string& id = e.elements[0].str;
    const Reply& fields = e.elements[1];
    if (flying.count(id) != 0) continue;  // already given out, not yet acknowledged
    if (!fields.isArray()) {
      // Deleted (XDEL / trimmed) while pending: nothing to deliver; acknowledge it.
      std::lock_guard lock(done_->mu);
      done_->done.emplace_back(stream, id);
      flying.insert(id);
      continue;
    }
    Record r;
    r.topic = topicFor(stream);
    r.timestampMs = idMillis(id);
    nlohmann::json obj = nlohmann::json::object();
    for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
      const std::string& f = fields.elements[i].str;
      const std::string& v = fields.elements[i + 1].str;
      if (valueAsJson_) {
        obj[f] = v;
        if (f == keyField_) r.key = Bytes::copyOf(v);
      } else if (f == valueField_) {
        r.value = Bytes::copyOf(v);
      } else if (f == keyField_) {
        r.key = Bytes::copyOf(v);
      } else {
        r.headers.add(f, v);
      }
    }
    if (valueAsJson_) r.value = Bytes(obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    r.headers.add("redis.stream", stream);
    r.headers.add("redis.id", id);
    r.position.partition = {{"redis.stream", stream}};
    r.position.offset = {{"id", id}};
    r.acknowledger = std::make_shared<QueueAck>(done_, stream, id);
    flying.insert(id);
    out.push_back(std::move(r));
    ++n;
  }
  return n;
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
    const Reply* entries = nullptr;
    if (r->isArray() && !r->elements.empty() && r->elements[0].isArray() && r->elements[0].elements.size() == 2)
      entries = &r->elements[0].elements[1];
    if (entries == nullptr || entries->elements.empty()) {
      from.clear();  // our pending list is read
      continue;
    }
    from = entries->elements.back().isArray() && !entries->elements.back().elements.empty()
               ? entries->elements.back().elements[0].str
               : std::string();
    std::size_t n = streamEntries(stream, *entries, out);
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
      const std::size_t got = streamEntries(stream, r->elements[1], out);
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
      for (const Reply& s : r->elements)
        if (s.isArray() && s.elements.size() == 2) n += streamEntries(s.elements[0].str, s.elements[1], out);
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
      for (const Reply& s : r->elements)
        if (s.isArray() && s.elements.size() == 2) n += streamEntries(s.elements[0].str, s.elements[1], out);
    if (n >= max) break;
  }
  return n;
}

Result<std::size_t> RedisSourceTask::pollLists(std::vector<Record>& out, std::size_t max,
                                               std::chrono::milliseconds wait) {
  auto emit = [&](const std::string& list, std::string element) {
    Record r;
    r.topic = topicFor(list);
    r.headers.add("redis.list", list);
    r.value = Bytes(element);
    r.acknowledger = std::make_shared<QueueAck>(done_, list, std::move(element));
    out.push_back(std::move(r));
  };
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
      log_->info("{} task {}: {} elements left in processing lists by an earlier run delivered again",
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
  if (Status s = flushAcks(); !s.isOk()) return unavailable(s, "acknowledging");
  const std::size_t max = std::max<std::size_t>(1, std::min(maxRecords, batch_));
  switch (mode_) {
    case Mode::kStream: return pollStreams(out, max, maxWait);
    case Mode::kList: return pollLists(out, max, maxWait);
    case Mode::kPubSub: return pollPubSub(out, max, maxWait);
  }
  return std::size_t{0};
}

void RedisSourceTask::stop() {
  // Acknowledge what is already safe; the rest stays pending in Redis for the next run.
  if (client_) {
    if (Status s = flushAcks(); !s.isOk())
      log_->warn("RedisSource: acknowledgements not sent at stop (delivered again later): {}", s.toString());
  }
  subscription_.reset();
  client_.reset();
}

}  // namespace ferry::connectors
