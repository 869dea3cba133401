// RedisSink: writes records to Redis (standalone, TLS, Cluster) with one command per record.
//
//   redis.command  SET     SET <key> <value> [PX ttl]         tombstone: DEL <key>
//                  HSET    HSET <key> <field> <value>         tombstone: HDEL <key> <field>
//                  XADD    XADD <key> [MAXLEN ~ n] * key <k> value <v> <header> <value> ...
//                  PUBLISH PUBLISH <key> <value>
//                  LPUSH / RPUSH <key> <value>
//   redis.key and redis.hash.field are templates over the record (core/record_template.h:
//   ${topic}, ${key}, ${value:<json path>}, ${header:<name>}, ...). With redis.ttl.ms the key
//   expires (SET ... PX; PEXPIRE after the others but PUBLISH). A tombstone (null value) of XADD,
//   PUBLISH, LPUSH or RPUSH is skipped, as is every tombstone when redis.delete.on.null is false.
//
// Delivery: put() encodes the batch as pipelines of at most redis.batch.max.commands commands.
// Standalone: one pipeline stays in flight — put() writes its pipelines and reads the replies of
// the one before, so Redis executes a batch while the runtime prepares the next; flush() reads
// the last replies, so everything put is written once flush() returns, and the runtime commits
// (a sink offset, a direct task's source position) only behind a flush. Cluster: the pipelines
// are grouped per node and put() returns when every reply is in (redirections are followed one
// command at a time, redis/client.h). A connection failure or an answer that says Redis cannot
// take commands now (LOADING, OOM, READONLY, ...) makes put() or flush() fail retriably; the
// pipeline still in flight is sent again before anything newer, and the runtime retries its
// batch, so commands done before the failure are done again (at-least-once; SET/HSET/DEL are
// idempotent, XADD/LPUSH/RPUSH/PUBLISH may duplicate) and the order of commands is kept. A
// command Redis refuses (WRONGTYPE, ...) or a key template that cannot be rendered is a bad
// record: errors.tolerance and the dead-letter topic decide (a refusal is reported when its
// reply is read: in the next put() or flush()).
//
// Threading: the task thread only.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/record_template.h"
#include "ferry/connector.h"
#include "redis/client.h"

namespace spdlog {
class logger;
}

namespace ferry::connectors {

class RedisSinkConnector final : public SinkConnector {
 public:
  static const ConfigDef& definition();
  std::string version() const override;
  const ConfigDef& configDef() const override { return definition(); }
  void validate(const StringMap& config, ConfigValidation& validation) const override;
  Status start(const StringMap& config, ConnectorContext& context) override;
  Result<std::vector<StringMap>> taskConfigs(int maxTasks) override;
  void stop() override {}
  std::unique_ptr<SinkTask> createTask() override;

 private:
  StringMap config_;
};

class RedisSinkTask final : public SinkTask {
 public:
  RedisSinkTask();
  ~RedisSinkTask() override;
  std::string version() const override;
  Status start(const StringMap& config, SinkTaskContext& context) override;
  Status put(std::vector<Record>& records) override;
  Status flush() override;
  void stop() override;

  enum class Kind { kSet, kHset, kXadd, kPublish, kLpush, kRpush };

 private:
  // A pipeline: commands in RESP and the record each is for.
  struct Pipeline {
    std::vector<Record> records;                  // owned once the put() it came from returned
    const std::vector<Record>* source = nullptr;  // the records `owner` indexes
    std::string bytes;                    // standalone: the commands in RESP
    std::vector<redis::Command> commands;  // cluster: the commands, routed by key
    std::vector<std::uint32_t> owner;  // record index per command
    std::vector<bool> expire;          // per command: the PEXPIRE after the record's command
    bool sent = false;                 // written on the current connection
  };

  // The record's command in argv_ (views into the record, keyBuf_, fieldBuf_ and constants):
  // false when the record is skipped. InvalidArgument when a template cannot be rendered.
  Result<bool> buildArgs(const Record& r);
  // Encodes records [from, ...) into `p` (RESP bytes, or commands in a cluster) until it holds
  // batchMax_ commands; returns where it stopped. Records that cannot be rendered are reported
  // as bad records.
  Result<std::size_t> encode(std::vector<Record>& records, std::size_t from, Pipeline& p);
  // Reports the record of p's command i, which Redis refused with `reply`.
  Status refused(const Pipeline& p, std::size_t i, const redis::Reply& reply);
  // Reads p's replies (standalone) and reports refused commands. A failure leaves p to be sent
  // again and drops the connection.
  Status collect(Pipeline& p);
  // Writes p on the server's connection.
  Status send(Pipeline& p);
  // Sends the in-flight pipeline again after a failure and reads its replies.
  Status resendInflight();
  Status putCluster(std::vector<Record>& records);
  // Connects when not connected; reports the connection (SinkTaskContext::reportConnection).
  Status ensureClient();
  // The connection failed with `why`: dropped, and reported reconnecting (not for a refused login).
  void lost(const Status& why);
  Status retriable(const Status& s);
  // The name of the record's command (for messages).
  std::string_view argv0(const Record& r) const;

  std::shared_ptr<spdlog::logger> log_;
  SinkTaskContext* context_ = nullptr;
  redis::ClientOptions options_;
  std::unique_ptr<redis::Client> client_;
  std::optional<Pipeline> inflight_;  // standalone: written, replies not read yet
  Pipeline spare_;                    // the next pipeline's buffers, kept for their capacity
  std::vector<std::string_view> argv_;
  std::string keyBuf_;
  std::string fieldBuf_;
  std::string ttlText_;
  std::string maxLenText_;
  Kind kind_ = Kind::kSet;
  std::optional<core::RecordTemplate> key_;
  std::optional<core::RecordTemplate> field_;
  std::int64_t ttlMs_ = 0;
  std::int64_t maxLen_ = 0;
  bool deleteOnNull_ = true;
  std::size_t batchMax_ = 500;
  std::uint64_t skipped_ = 0;
};

}  // namespace ferry::connectors
