// Stores: where a worker keeps connector configs, source positions and status.
//
// Standalone mode keeps them in local files (one JSON file per store with a CRC32C checksum,
// replaced by write-to-temp + fsync + rename + fsync(dir), so a crash leaves the old or the new
// file, never a torn one; the replaced copy is kept as <file>.prev and used when the current one
// is damaged: see README.md). Distributed mode keeps them on the backbone (later). Memory stores serve tests.
//
// Thread-safety: every store is thread-safe; each call is atomic with respect to the others.
// Durability: a call that returns OK has persisted its change (for file stores: fsynced).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"
#include "ferry/status.h"

namespace ferry::store {

enum class TargetState { kStarted, kPaused, kStopped };
const char* targetStateName(TargetState s) noexcept;            // "STARTED", "PAUSED", "STOPPED"
std::optional<TargetState> parseTargetState(std::string_view s) noexcept;  // case-insensitive

struct ConnectorEntry {
  StringMap config;
  TargetState target = TargetState::kStarted;
  std::vector<StringMap> taskConfigs;  // as last produced by the connector
  std::int64_t generation = 0;         // bumped on every config change
};

class ConfigStore {
 public:
  virtual ~ConfigStore() = default;
  // What opening the store found and worked around (a file store's fallback to the previous
  // copy, a file without checksum, a damaged status cache dropped): one sentence each, already
  // logged at open; empty when all was well, and for memory stores.
  virtual std::vector<std::string> openWarnings() const { return {}; }
  virtual Result<std::map<std::string, ConnectorEntry>> loadAll() = 0;
  virtual Status putConnector(const std::string& name, const StringMap& config, TargetState target) = 0;
  virtual Status putTargetState(const std::string& name, TargetState target) = 0;
  virtual Status putTaskConfigs(const std::string& name, const std::vector<StringMap>& tasks) = 0;
  virtual Status removeConnector(const std::string& name) = 0;
};

// Source positions, per connector: partition -> last committed offset.
class PositionStore {
 public:
  virtual ~PositionStore() = default;
  // As ConfigStore::openWarnings.
  virtual std::vector<std::string> openWarnings() const { return {}; }
  virtual Result<std::optional<StringMap>> get(const std::string& connector, const StringMap& partition) = 0;
  virtual Result<std::vector<Position>> getAll(const std::string& connector) = 0;
  // Stores every position in one atomic, durable step. An empty offset map deletes a partition.
  virtual Status put(const std::string& connector, const std::vector<Position>& positions) = 0;
  // put() without waiting for it: `done` runs once with put()'s result, on any thread, after the
  // positions are durable (and readable through get()). A task on the worker's shared threads
  // commits this way, so a commit waiting for a broker holds no thread. The default runs put()
  // on the caller's thread.
  virtual void putAsync(const std::string& connector, std::vector<Position> positions,
                        std::function<void(Status)> done) {
    done(put(connector, positions));
  }
  virtual Status removeConnector(const std::string& connector) = 0;
};

enum class State { kUnassigned, kRunning, kPaused, kStopped, kFailed, kRestarting, kDestroyed };
const char* stateName(State s) noexcept;  // Kafka Connect's names: "UNASSIGNED", "RUNNING", ...

struct StatusEntry {
  State state = State::kUnassigned;
  std::string trace;     // the error, for FAILED
  std::string workerId;
  std::int64_t sinceMs = 0;
  std::int64_t generation = 0;
};

class StatusStore {
 public:
  virtual ~StatusStore() = default;
  // As ConfigStore::openWarnings.
  virtual std::vector<std::string> openWarnings() const { return {}; }
  virtual Status putConnector(const std::string& connector, const StatusEntry& status) = 0;
  virtual Status putTask(const std::string& connector, int task, const StatusEntry& status) = 0;
  virtual std::optional<StatusEntry> connector(const std::string& connector) = 0;
  virtual std::map<int, StatusEntry> tasks(const std::string& connector) = 0;
  virtual Status removeConnector(const std::string& connector) = 0;
};

std::unique_ptr<ConfigStore> makeMemoryConfigStore();
std::unique_ptr<PositionStore> makeMemoryPositionStore();
std::unique_ptr<StatusStore> makeMemoryStatusStore();

// Each keeps its state in one file below `dir` (configs.json, positions.json, status.json, each
// with a .prev copy), loaded on open: the current copy, or the previous one when the current one
// is damaged (a warning in the log and in openWarnings()). Configs and positions are DataLoss
// when no copy is usable (the message names both files and what to do); status is a cache and
// starts empty instead. A file newer than this build reads is Incompatible.
Result<std::unique_ptr<ConfigStore>> openFileConfigStore(const std::string& dir);
Result<std::unique_ptr<PositionStore>> openFilePositionStore(const std::string& dir);
Result<std::unique_ptr<StatusStore>> openFileStatusStore(const std::string& dir);

}  // namespace ferry::store
