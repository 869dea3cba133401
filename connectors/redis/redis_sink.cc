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
  batchMax_ = static_cast<std::size_t>(p.getInt("redis.batch.max.commands"));
  FERRY_ASSIGN_OR_RETURN(options_, redisc::clientOptions(
                                         p, redisc::safeName("ferry-" + context.connectorName() + "-" +
                                                             std::to_string(context.taskId()))));
  // The first connection is made now, so that a wrong password or address fails the task at once
  // with the reason; a server that is down is retried (retriable Unavailable).
  Status s = ensureClient();
  if (!s.isOk()) return s.withContext("RedisSink");
  log_->info("{} task {}: {} to Redis {} ({})", context.connectorName(), context.taskId(),
             upper(p.getString("redis.command")), client_->nodes().empty() ? "" : client_->nodes().front(),
             options_.cluster ? "cluster" : "standalone");
  return Status::ok();
}

Status RedisSinkTask::ensureClient() {
  if (client_) return Status::ok();
  FERRY_ASSIGN_OR_RETURN(client_, redis::Client::connect(options_));
  return Status::ok();
}

Status RedisSinkTask::commandsFor(const Record& r, std::vector<redis::Command>& out) const {
  FERRY_ASSIGN_OR_RETURN(std::string key, key_->render(r));
  if (key.empty()) return Status::invalidArgument("redis.key rendered an empty key");
  const bool tombstone = r.value.isNull();
  if (tombstone && (!deleteOnNull_ || (kind_ != Kind::kSet && kind_ != Kind::kHset))) return Status::ok();
  redis::Command c;
  c.key = key;
  switch (kind_) {
    case Kind::kSet:
      if (tombstone) {
        c.args = {"DEL", key};
      } else {
        c.args = {"SET", key, r.value.str()};
        if (ttlMs_ > 0) {
          c.args.push_back("PX");
          c.args.push_back(std::to_string(ttlMs_));
        }
      }
      out.push_back(std::move(c));
      return Status::ok();
    case Kind::kHset: {
      FERRY_ASSIGN_OR_RETURN(std::string field, field_->render(r));
      if (tombstone) c.args = {"HDEL", key, std::move(field)};
      else c.args = {"HSET", key, std::move(field), r.value.str()};
      break;
    }
    case Kind::kXadd:
      c.args = {"XADD", key};
      if (maxLen_ > 0) {
        c.args.push_back("MAXLEN");
        c.args.push_back("~");
        c.args.push_back(std::to_string(maxLen_));
      }
      c.args.push_back("*");
      if (!r.key.isNull()) {
        c.args.push_back("key");
        c.args.push_back(r.key.str());
      }
      c.args.push_back("value");
      c.args.push_back(r.value.str());
      // Headers become fields of their own (a header named key or value is left out).
      for (const Header& h : r.headers) {
        if (h.key == "key" || h.key == "value" || h.value.isNull()) continue;
        c.args.push_back(h.key);
        c.args.push_back(h.value.str());
      }
      break;
    case Kind::kPublish: c.args = {"PUBLISH", key, r.value.str()}; break;
    case Kind::kLpush: c.args = {"LPUSH", key, r.value.str()}; break;
    case Kind::kRpush: c.args = {"RPUSH", key, r.value.str()}; break;
  }
  out.push_back(std::move(c));
  if (ttlMs_ > 0 && !tombstone) out.push_back(redis::Command{{"PEXPIRE", key, std::to_string(ttlMs_)}, key});
  return Status::ok();
}

Status RedisSinkTask::put(std::vector<Record>& records) {
  if (context_ == nullptr) return Status::failedPrecondition("RedisSink: put() before start()");
  if (Status s = ensureClient(); !s.isOk()) {
    if (s.code() == StatusCode::kInvalidArgument) return s.withContext("RedisSink");
    return Status::retriable("RedisSink: " + s.toString());
  }
  std::vector<redis::Command> commands;
  std::vector<std::size_t> owner;  // record index of each command
  commands.reserve(std::min(records.size(), batchMax_) + 8);
  std::size_t next = 0;
  while (next < records.size()) {
    commands.clear();
    owner.clear();
    std::size_t end = next;
    for (; end < records.size() && commands.size() < batchMax_; ++end) {
      const std::size_t before = commands.size();
      if (Status s = commandsFor(records[end], commands); !s.isOk()) {
        commands.resize(before);
        FERRY_RETURN_IF_ERROR(context_->reportBadRecord(records[end], s.withContext("RedisSink")));
        continue;
      }
      if (commands.size() == before) ++skipped_;
      owner.resize(commands.size(), end);
    }
    if (!commands.empty()) {
      auto replies = client_->pipeline(commands);
      if (!replies.isOk()) {
        // Which commands were done is not known: the runtime retries the batch (at-least-once).
        const Status& s = replies.status();
        client_.reset();
        if (s.code() == StatusCode::kInvalidArgument) return s.withContext("RedisSink");
        return Status::retriable("RedisSink: " + s.toString());
      }
      std::size_t lastBad = records.size();
      for (std::size_t i = 0; i < replies->size(); ++i) {
        const redis::Reply& r = (*replies)[i];
        if (!r.isError()) continue;
        if (transientError(r.errorPrefix()))
          return Status::retriable("RedisSink: Redis answered " + r.describe());
        if (owner[i] == lastBad) continue;  // one report per record
        lastBad = owner[i];
        FERRY_RETURN_IF_ERROR(context_->reportBadRecord(
            records[owner[i]],
            Status::invalidArgument("RedisSink: Redis refused " + commands[i].args[0] + " " + commands[i].key + ": " +
                                    r.describe())));
      }
    }
    next = end;
  }
  return Status::ok();
}

void RedisSinkTask::stop() {
  if (skipped_ > 0 && context_ != nullptr)
    log_->info("{} task {}: {} tombstones skipped", context_->connectorName(), context_->taskId(), skipped_);
  client_.reset();
}

}  // namespace ferry::connectors
