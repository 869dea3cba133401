// RedisSink (see redis_sink.h).
#include "connectors/redis/redis_sink.h"

#include <cctype>

#include "connectors/common.h"
#include "connectors/redis/redis_common.h"
#include "core/logging.h"

namespace ferry::connectors {
namespace {

using Kind = RedisSinkTask::Kind;

Result<Kind> kindOf(const std::string& name) {
  if (name == "SET") return Kind::kSet;
  if (name == "HSET") return Kind::kHset;
  if (name == "XADD") return Kind::kXadd;
  if (name == "PUBLISH") return Kind::kPublish;
  if (name == "LPUSH") return Kind::kLpush;
  if (name == "RPUSH") return Kind::kRpush;
  return Status::invalidArgument("redis.command: unknown command '" + name + "'");
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The key template's default per command: SET writes the record's key, the others a key named
// after the topic.
std::string defaultKey(Kind k) { return k == Kind::kSet ? "${key}" : "${topic}"; }

// Errors that say the server cannot take the command now, not that the record is wrong.
bool transientError(std::string_view prefix) {
  return prefix == "LOADING" || prefix == "BUSY" || prefix == "MASTERDOWN" || prefix == "READONLY" ||
         prefix == "TRYAGAIN" || prefix == "CLUSTERDOWN" || prefix == "MOVED" || prefix == "ASK" ||
         prefix == "OOM" || prefix == "NOAUTH" || prefix == "NOREPLICAS";
}


}  // namespace

std::string_view RedisSinkTask::argv0(const Record& r) const {
  const bool tombstone = r.value.isNull();
  switch (kind_) {
    case Kind::kSet: return tombstone ? "DEL" : "SET";
    case Kind::kHset: return tombstone ? "HDEL" : "HSET";
    case Kind::kXadd: return "XADD";
    case Kind::kPublish: return "PUBLISH";
    case Kind::kLpush: return "LPUSH";
    case Kind::kRpush: return "RPUSH";
  }
  return "?";
}

const ConfigDef& RedisSinkConnector::definition() {
  static const ConfigDef def = [] {
    ConfigDef d;
    redisc::defineConnectionKeys(d);
    d.define("redis.command", ConfigType::kString, "SET", Importance::kHigh,
             "What each record becomes: SET, HSET, XADD, PUBLISH, LPUSH or RPUSH.",
             validators::oneOf({"SET", "HSET", "XADD", "PUBLISH", "LPUSH", "RPUSH"}));
    d.define("redis.key", ConfigType::kString, "", Importance::kHigh,
             "The Redis key (the channel for PUBLISH): a template with ${topic}, ${key}, ${value:<json path>}, "
             "${header:<name>}, ${queue}, ${offset}, ${timestamp}. Empty: ${key} for SET, ${topic} for the others.");
    d.define("redis.hash.field", ConfigType::kString, "${key}", Importance::kMedium,
             "HSET: the hash field, a template as redis.key.");
    d.define("redis.ttl.ms", ConfigType::kLong, "0", Importance::kMedium,
             "Expire the key this long after each write (SET ... PX, else PEXPIRE); 0: never. Not for PUBLISH.",
             validators::atLeast(0));
    d.define("redis.stream.maxlen", ConfigType::kLong, "0", Importance::kMedium,
             "XADD: trim the stream to about this many entries (MAXLEN ~); 0: no trimming.", validators::atLeast(0));
    d.define("redis.delete.on.null", ConfigType::kBool, "true", Importance::kMedium,
             "A tombstone (null value) deletes: DEL for SET, HDEL for HSET. Off: tombstones are skipped.");
    d.define("redis.batch.max.commands", ConfigType::kInt, "500", Importance::kLow,
             "Commands per pipeline (one round trip per node).", validators::between(1, 100000));
    return d;
  }();
  return def;
}

std::string RedisSinkConnector::version() const { return kVersion; }

void RedisSinkConnector::validate(const StringMap& config, ConfigValidation& v) const {
  auto p = definition().parse(config, false);
  if (!p.isOk()) return;
  redisc::validateConnectionKeys(*p, v);
  for (const char* key : {"redis.key", "redis.hash.field"}) {
    std::string text = p->getString(key);
    if (text.empty()) continue;
    if (auto t = core::RecordTemplate::parse(text); !t.isOk()) v.errors[key].push_back(t.status().message());
  }
  if (p->getLong("redis.ttl.ms") > 0 && upper(p->getString("redis.command")) == "PUBLISH")
    v.errors["redis.ttl.ms"].push_back("PUBLISH writes no key to expire");
}

Status RedisSinkConnector::start(const StringMap& config, ConnectorContext& context) {
  (void)context;
  FERRY_ASSIGN_OR_RETURN(auto parsed, parseConfig(definition(), config, "RedisSink"));
  ConfigValidation v;
  validate(config, v);
  if (!v.errors.empty()) return Status::invalidArgument("RedisSink: " + v.summary());
  config_ = config;
  return Status::ok();
}

Result<std::vector<StringMap>> RedisSinkConnector::taskConfigs(int maxTasks) {
  return std::vector<StringMap>(static_cast<std::size_t>(std::max(1, maxTasks)), config_);
}

std::unique_ptr<SinkTask> RedisSinkConnector::createTask() { return std::make_unique<RedisSinkTask>(); }

RedisSinkTask::RedisSinkTask() : log_(core::logger("redis-sink")) {}

RedisSinkTask::~RedisSinkTask() { stop(); }

std::string RedisSinkTask::version() const { return kVersion; }

Status RedisSinkTask::start(const StringMap& config, SinkTaskContext& context) {
  FERRY_ASSIGN_OR_RETURN(auto p, parseConfig(RedisSinkConnector::definition(), config, "RedisSink task"));
  context_ = &context;
  FERRY_ASSIGN_OR_RETURN(kind_, kindOf(upper(p.getString("redis.command"))));
  std::string keyText = p.getString("redis.key");
  if (keyText.empty()) keyText = defaultKey(kind_);
  FERRY_ASSIGN_OR_RETURN(auto key, core::RecordTemplate::parse(keyText));
  key_ = std::move(key);
  if (kind_ == Kind::kHset) {
    FERRY_ASSIGN_OR_RETURN(auto field, core::RecordTemplate::parse(p.getString("redis.hash.field")));
    field_ = std::move(field);
  }
  ttlMs_ = kind_ == Kind::kPublish ? 0 : p.getLong("redis.ttl.ms");
  maxLen_ = p.getLong("redis.stream.maxlen");
  deleteOnNull_ = p.getBool("redis.delete.on.null");
  ttlText_ = std::to_string(ttlMs_);
  maxLenText_ = std::to_string(maxLen_);
  batchMax_ = static_cast<std::size_t>(p.getInt("redis.batch.max.commands"));
  FERRY_ASSIGN_OR_RETURN(options_, redisc::clientOptions(
                                         p, redisc::safeName("ferry-" + context.connectorName() + "-" +
                                                             std::to_string(context.taskId()))));
  // The first connection is made now, so that a refused login or certificate fails the task at
  // once with the reason. A server that is down or does not answer is tried again at each put():
  // the task runs, its status showing the connection reconnecting with the reason.
  Status s = ensureClient();
  if (!s.isOk()) {
    if (s.code() == StatusCode::kInvalidArgument) return s.withContext("RedisSink");
    log_->warn("{} task {}: Redis not reachable yet (tried again with the first records): {}",
               context.connectorName(), context.taskId(), s.toString());
    return Status::ok();
  }
  log_->info("{} task {}: {} to Redis {} ({})", context.connectorName(), context.taskId(),
             upper(p.getString("redis.command")), client_->nodes().empty() ? "" : client_->nodes().front(),
             options_.cluster ? "cluster" : "standalone");
  return Status::ok();
}

Status RedisSinkTask::ensureClient() {
  if (client_) return Status::ok();
  auto c = redis::Client::connect(options_);
  if (!c.isOk()) {
    lost(c.status());
    return c.status();
  }
  client_ = std::move(*c);
  context_->reportConnection(ConnectionHealth{});  // once per connect; the runtime keeps changes only
  return Status::ok();
}

void RedisSinkTask::lost(const Status& why) {
  client_.reset();
  if (why.code() == StatusCode::kInvalidArgument) return;  // the task fails with it
  context_->reportConnection({ConnectionHealth::State::kReconnecting, why.toString()});
}

Status RedisSinkTask::retriable(const Status& s) {
  if (s.code() == StatusCode::kInvalidArgument) return s.withContext("RedisSink");
  return Status::retriable("RedisSink: " + s.toString());
}

Result<bool> RedisSinkTask::buildArgs(const Record& r) {
  keyBuf_.clear();
  FERRY_RETURN_IF_ERROR(key_->renderTo(r, keyBuf_));
  if (keyBuf_.empty()) return Status::invalidArgument("redis.key rendered an empty key");
  const bool tombstone = r.value.isNull();
  if (tombstone && (!deleteOnNull_ || (kind_ != Kind::kSet && kind_ != Kind::kHset))) return false;
  argv_.clear();
  switch (kind_) {
    case Kind::kSet:
      if (tombstone) {
        argv_.insert(argv_.end(), {"DEL", keyBuf_});
      } else {
        argv_.insert(argv_.end(), {"SET", keyBuf_, r.value.view()});
        if (ttlMs_ > 0) argv_.insert(argv_.end(), {"PX", ttlText_});
      }
      break;
    case Kind::kHset:
      fieldBuf_.clear();
      FERRY_RETURN_IF_ERROR(field_->renderTo(r, fieldBuf_));
      if (tombstone) argv_.insert(argv_.end(), {"HDEL", keyBuf_, fieldBuf_});
      else argv_.insert(argv_.end(), {"HSET", keyBuf_, fieldBuf_, r.value.view()});
      break;
    case Kind::kXadd:
      argv_.insert(argv_.end(), {"XADD", keyBuf_});
      if (maxLen_ > 0) argv_.insert(argv_.end(), {"MAXLEN", "~", maxLenText_});
      argv_.push_back("*");
      if (!r.key.isNull()) argv_.insert(argv_.end(), {"key", r.key.view()});
      argv_.insert(argv_.end(), {"value", r.value.view()});
      // Headers become fields of their own (a header named key or value is left out).
      for (const Header& h : r.headers) {
        if (h.key == "key" || h.key == "value" || h.value.isNull()) continue;
        argv_.insert(argv_.end(), {h.key, h.value.view()});
      }
      break;
    case Kind::kPublish: argv_.insert(argv_.end(), {"PUBLISH", keyBuf_, r.value.view()}); break;
    case Kind::kLpush: argv_.insert(argv_.end(), {"LPUSH", keyBuf_, r.value.view()}); break;
    case Kind::kRpush: argv_.insert(argv_.end(), {"RPUSH", keyBuf_, r.value.view()}); break;
  }
  return true;
}

// Whether the record's command is followed by a PEXPIRE of its key.
namespace {
bool expires(RedisSinkTask::Kind kind, std::int64_t ttlMs, const Record& r) {
  return ttlMs > 0 && kind != RedisSinkTask::Kind::kSet && !r.value.isNull();
}
}  // namespace

Result<std::size_t> RedisSinkTask::encode(std::vector<Record>& records, std::size_t from, Pipeline& p) {
  p.records.clear();
  p.source = &records;
  p.bytes.clear();
  p.commands.clear();
  p.owner.clear();
  p.expire.clear();
  p.sent = false;
  const bool cluster = client_->cluster();
  auto add = [&](const std::string_view* args, std::size_t n, std::size_t record, bool expire) {
    if (cluster) p.commands.push_back(redis::Command{{args, args + n}, keyBuf_});  // routed by key
    else redis::appendCommand(p.bytes, args, n);
    p.owner.push_back(static_cast<std::uint32_t>(record));
    p.expire.push_back(expire);
  };
  std::size_t i = from;
  for (; i < records.size() && p.owner.size() < batchMax_; ++i) {
    auto built = buildArgs(records[i]);
    if (!built.isOk()) {
      FERRY_RETURN_IF_ERROR(context_->reportBadRecord(records[i], built.status().withContext("RedisSink")));
      continue;
    }
    if (!*built) {
      ++skipped_;
      continue;
    }
    add(argv_.data(), argv_.size(), i, false);
    if (expires(kind_, ttlMs_, records[i])) {
      const std::string_view expire[] = {"PEXPIRE", keyBuf_, ttlText_};
      add(expire, 3, i, true);
    }
  }
  return i;
}

// Reports the record of a command Redis refused (once per record); `reply` is its answer.
Status RedisSinkTask::refused(const Pipeline& p, std::size_t i, const redis::Reply& reply) {
  const Record& rec = (*p.source)[p.owner[i]];
  auto key = key_->render(rec);
  return context_->reportBadRecord(
      rec, Status::invalidArgument("RedisSink: Redis refused " +
                                   std::string(p.expire[i] ? std::string_view("PEXPIRE") : argv0(rec)) + " " +
                                   (key.isOk() ? *key : std::string()) + ": " + reply.describe()));
}

Status RedisSinkTask::send(Pipeline& p) {
  if (Status s = ensureClient(); !s.isOk()) return retriable(s);
  auto conn = client_->server();
  Status s = conn.isOk() ? conn.value()->write(p.bytes, redis::Clock::now() + options_.connection.timeout)
                         : conn.status();
  if (!s.isOk()) {
    lost(s);
    return retriable(s);
  }
  p.sent = true;
  return Status::ok();
}

Status RedisSinkTask::collect(Pipeline& p) {
  // The replies are on the connection p was written to; a client dropped since took them along.
  auto conn = client_ ? client_->server() : Result<redis::Connection*>(Status::unavailable("connection lost"));
  if (!conn.isOk() || !p.sent) {
    p.sent = false;
    client_.reset();
    return Status::retriable("RedisSink: the replies of a pipeline were lost with its connection");
  }
  const auto deadline = redis::Clock::now() + options_.connection.timeout;
  const std::vector<Record>& records = *p.source;
  std::size_t lastBad = records.size();
  std::string transient;
  for (std::size_t i = 0; i < p.owner.size(); ++i) {
    auto reply = conn.value()->read(deadline);
    if (!reply.isOk()) {
      p.sent = false;
      lost(reply.status());
      return retriable(reply.status());
    }
    const redis::Reply& r = reply.value();
    if (!r.isError()) continue;
    if (transientError(r.errorPrefix())) {
      // The rest is read (the connection stays in step), then the whole pipeline goes again.
      if (transient.empty()) transient = r.describe();
      continue;
    }
    if (!transient.empty() || p.owner[i] == lastBad) continue;  // one report per record
    lastBad = p.owner[i];
    FERRY_RETURN_IF_ERROR(refused(p, i, r));
  }
  if (!transient.empty()) {
    p.sent = false;
    return Status::retriable("RedisSink: Redis answered " + transient);
  }
  return Status::ok();
}

Status RedisSinkTask::resendInflight() {
  if (!inflight_ || inflight_->sent) return Status::ok();
  FERRY_RETURN_IF_ERROR(send(*inflight_));
  FERRY_RETURN_IF_ERROR(collect(*inflight_));
  inflight_.reset();
  return Status::ok();
}

Status RedisSinkTask::put(std::vector<Record>& records) {
  if (context_ == nullptr) return Status::failedPrecondition("RedisSink: put() before start()");
  if (Status s = ensureClient(); !s.isOk()) return retriable(s);
  if (client_->cluster()) return putCluster(records);
  // What was in flight when a connection failed goes first, again.
  FERRY_RETURN_IF_ERROR(resendInflight());
  std::size_t next = 0;
  while (next < records.size()) {
    Pipeline cur = std::move(spare_);
    auto end = encode(records, next, cur);
    if (!end.isOk()) return end.status();
    next = *end;
    if (cur.owner.empty()) {
      spare_ = std::move(cur);
      continue;
    }
    // Written before the replies of the one in flight are read: Redis works on it meanwhile.
    Status s = send(cur);
    if (s.isOk() && inflight_) {
      s = collect(*inflight_);
      if (s.isOk()) {
        spare_ = std::move(*inflight_);
        inflight_.reset();
      }
    }
    if (!s.isOk()) {
      // A pipeline of an earlier put() goes again first next time (as it was: not sent); one of
      // this put()'s own is covered by the runtime's retry of the whole batch.
      client_.reset();
      if (inflight_ && inflight_->source == &records) inflight_.reset();
      if (inflight_) inflight_->sent = false;
      return s;
    }
    inflight_ = std::move(cur);
  }
  // The records of the pipeline in flight are kept until its replies are read (put() may change
  // the batch; the runtime drops it after put() returns).
  if (inflight_ && inflight_->source == &records) {
    inflight_->records = std::move(records);
    inflight_->source = &inflight_->records;
  }
  return Status::ok();
}

Status RedisSinkTask::flush() {
  if (context_ == nullptr || !inflight_) return Status::ok();
  if (!inflight_->sent) return resendInflight();
  FERRY_RETURN_IF_ERROR(collect(*inflight_));
  inflight_.reset();
  return Status::ok();
}

Status RedisSinkTask::putCluster(std::vector<Record>& records) {
  Pipeline& p = spare_;
  std::size_t next = 0;
  while (next < records.size()) {
    FERRY_ASSIGN_OR_RETURN(next, encode(records, next, p));
    if (p.commands.empty()) continue;
    auto replies = client_->pipeline(p.commands);
    if (!replies.isOk()) {
      // Which commands were done is not known: the runtime retries the batch (at-least-once).
      lost(replies.status());
      return retriable(replies.status());
    }
    std::size_t lastBad = records.size();
    for (std::size_t i = 0; i < replies->size(); ++i) {
      const redis::Reply& r = (*replies)[i];
      if (!r.isError()) continue;
      if (transientError(r.errorPrefix())) return Status::retriable("RedisSink: Redis answered " + r.describe());
      if (p.owner[i] == lastBad) continue;  // one report per record
      lastBad = p.owner[i];
      FERRY_RETURN_IF_ERROR(refused(p, i, r));
    }
  }
  p.source = nullptr;
  return Status::ok();
}

void RedisSinkTask::stop() {
  inflight_.reset();  // not flushed: the runtime sends those records again (nothing was committed)
  if (skipped_ > 0 && context_ != nullptr)
    log_->info("{} task {}: {} tombstones skipped", context_->connectorName(), context_->taskId(), skipped_);
  client_.reset();
}

}  // namespace ferry::connectors
