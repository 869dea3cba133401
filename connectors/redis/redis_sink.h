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
// Delivery: put() sends the batch as pipelines (at most redis.batch.max.commands commands each,
// grouped per cluster node) and returns only when every reply is in, so everything put is
// written when put() returns and flush() has nothing left to wait for; the runtime commits a
// sink offset only behind written records. A connection failure makes put() fail retriably: the
// runtime retries the same batch, and commands that were done before the failure are done again
// (at-least-once; SET/HSET/DEL are idempotent, XADD/LPUSH/RPUSH/PUBLISH may duplicate). A
// command Redis refuses (WRONGTYPE, a key template that cannot be rendered, ...) is a bad record:
// errors.tolerance and the dead-letter topic decide. MOVED/ASK during a slot migration are
// followed (redis/client.h).
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
  Status flush() override { return Status::ok(); }
  void stop() override;

  enum class Kind { kSet, kHset, kXadd, kPublish, kLpush, kRpush };

 private:
  // The command(s) for `r`: its main command, and PEXPIRE when a TTL applies. Nothing when the
  // record is skipped. InvalidArgument when a template cannot be rendered.
  Status commandsFor(const Record& r, std::vector<redis::Command>& out) const;
  Status ensureClient();

  std::shared_ptr<spdlog::logger> log_;
  SinkTaskContext* context_ = nullptr;
  redis::ClientOptions options_;
  std::unique_ptr<redis::Client> client_;
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
