// Memory stores (store.h): the shared state values of state.h behind one mutex each.
// For tests and for throw-away workers; nothing survives the process.
#include <mutex>

#include "store/state.h"
#include "store/store.h"

namespace ferry::store {
namespace {

class MemoryConfigStore final : public ConfigStore {
 public:
  Result<std::map<std::string, ConnectorEntry>> loadAll() override {
    std::lock_guard lock(mu_);
    return state_.connectors;
  }
  Status putConnector(const std::string& name, const StringMap& config,
                      TargetState target) override {
    std::lock_guard lock(mu_);
    return state_.putConnector(name, config, target);
  }
  Status putTargetState(const std::string& name, TargetState target) override {
    std::lock_guard lock(mu_);
    return state_.putTargetState(name, target);
  }
  Status putTaskConfigs(const std::string& name, const std::vector<StringMap>& tasks) override {
    std::lock_guard lock(mu_);
    return state_.putTaskConfigs(name, tasks);
  }
  Status removeConnector(const std::string& name) override {
    std::lock_guard lock(mu_);
    return state_.removeConnector(name);
  }

 private:
  std::mutex mu_;
  internal::ConfigState state_;  // guarded by mu_
};

class MemoryPositionStore final : public PositionStore {
 public:
  Result<std::optional<StringMap>> get(const std::string& connector,
                                       const StringMap& partition) override {
    std::lock_guard lock(mu_);
    return state_.get(connector, partition);
  }
  Result<std::vector<Position>> getAll(const std::string& connector) override {
    std::lock_guard lock(mu_);
    return state_.getAll(connector);
  }
  Status put(const std::string& connector, const std::vector<Position>& positions) override {
    std::lock_guard lock(mu_);
    state_.put(connector, positions);
    return Status::ok();
  }
  Status removeConnector(const std::string& connector) override {
    std::lock_guard lock(mu_);
    state_.removeConnector(connector);
    return Status::ok();
  }

 private:
  std::mutex mu_;
  internal::PositionState state_;  // guarded by mu_
};

class MemoryStatusStore final : public StatusStore {
 public:
  Status putConnector(const std::string& connector, const StatusEntry& status) override {
    std::lock_guard lock(mu_);
    state_.putConnector(connector, status);
    return Status::ok();
  }
  Status putTask(const std::string& connector, int task, const StatusEntry& status) override {
    std::lock_guard lock(mu_);
    return state_.putTask(connector, task, status);
  }
  std::optional<StatusEntry> connector(const std::string& connector) override {
    std::lock_guard lock(mu_);
    return state_.connector(connector);
  }
  std::map<int, StatusEntry> tasks(const std::string& connector) override {
    std::lock_guard lock(mu_);
    return state_.tasks(connector);
  }
  Status removeConnector(const std::string& connector) override {
    std::lock_guard lock(mu_);
    state_.removeConnector(connector);
    return Status::ok();
  }

 private:
  std::mutex mu_;
  internal::StatusState state_;  // guarded by mu_
};

}  // namespace

std::unique_ptr<ConfigStore> makeMemoryConfigStore() {
  return std::make_unique<MemoryConfigStore>();
}
std::unique_ptr<PositionStore> makeMemoryPositionStore() {
  return std::make_unique<MemoryPositionStore>();
}
std::unique_ptr<StatusStore> makeMemoryStatusStore() {
  return std::make_unique<MemoryStatusStore>();
}

}  // namespace ferry::store
