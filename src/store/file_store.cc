// File stores (store.h): each store keeps its whole state in one JSON file below its folder
// (configs.json, positions.json, status.json).
//
// Every mutation is applied to a copy of the state, the copy is written with
// core::atomicWriteFile (temp file + fsync + rename + fsync(folder)), and only then replaces the
// in-memory state: a call that returns OK is on disk, a call that fails changed nothing. Rewriting
// the whole file is cheap at standalone scale (positions are committed about once a second per
// task; configs and statuses change on user actions and task state changes only).
//
// Thread-safety: one mutex per store guards the state and serialises writes to its file (which
// atomicWriteFile requires: one writer per path).
#include <filesystem>
#include <mutex>
#include <utility>

#include "core/fs.h"
#include "store/state.h"
#include "store/store.h"

namespace ferry::store {
namespace {

using nlohmann::json;

// Reads `file` in `dir` (created if missing). A missing file is an empty document (nullopt).
Result<std::optional<json>> readDocument(const std::string& dir, const std::string& path) {
  Status made = core::ensureDir(dir);
  if (!made.isOk()) return made;
  Result<std::string> text = core::readFile(path);
  if (!text.isOk()) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<json>();
    return Status::dataLoss("cannot read " + path + " (" + text.status().message() +
                            "): check its permissions, or move it away to start empty");
  }
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Status::dataLoss(path + " is damaged (not valid JSON" +
                            std::string(text->empty() ? ", empty file" : "") +
                            "): restore it from a backup, or move it away to start empty");
  }
  return std::optional<json>(std::move(j));
}

// The state of one store and the file that holds it.
template <typename StateT>
class FileBacked {
 public:
  FileBacked(std::string path, StateT state) : path_(std::move(path)), state_(std::move(state)) {}

  // Applies `fn(StateT&) -> Status` to a copy, persists it, then makes it current.
  template <typename Fn>
  Status mutate(Fn fn) {
    std::lock_guard lock(mu_);
    StateT next = state_;
    Status applied = fn(next);
    if (!applied.isOk()) return applied;
    Result<std::string> text = internal::dumpJson(internal::toJson(next), path_);
    if (!text.isOk()) return text.status();
    Status written = core::atomicWriteFile(path_, *text);
    if (!written.isOk()) {
      return Status::unavailable("could not save " + path_ + ": " + written.message());
    }
    state_ = std::move(next);
    return Status::ok();
  }

  // Calls `fn(const StateT&)` under the lock.
  template <typename Fn>
  auto read(Fn fn) {
    std::lock_guard lock(mu_);
    return fn(static_cast<const StateT&>(state_));
  }

 private:
  const std::string path_;
  std::mutex mu_;
  StateT state_;  // guarded by mu_; always equal to the file's contents
};

template <typename StateT, typename Parse>
Result<StateT> loadState(const std::string& dir, const std::string& path, Parse parse) {
  FERRY_ASSIGN_OR_RETURN(std::optional<json> doc, readDocument(dir, path));
  if (!doc) return StateT{};
  return parse(*doc, path);
}

std::string pathIn(const std::string& dir, const char* file) {
  return (std::filesystem::path(dir) / file).string();
}

class FileConfigStore final : public ConfigStore {
 public:
  FileConfigStore(std::string path, internal::ConfigState s)
      : file_(std::move(path), std::move(s)) {}

  Result<std::map<std::string, ConnectorEntry>> loadAll() override {
    return file_.read([](const internal::ConfigState& s) { return s.connectors; });
  }
  Status putConnector(const std::string& name, const StringMap& config,
                      TargetState target) override {
    return file_.mutate(
        [&](internal::ConfigState& s) { return s.putConnector(name, config, target); });
  }
  Status putTargetState(const std::string& name, TargetState target) override {
    return file_.mutate([&](internal::ConfigState& s) { return s.putTargetState(name, target); });
  }
  Status putTaskConfigs(const std::string& name, const std::vector<StringMap>& tasks) override {
    return file_.mutate([&](internal::ConfigState& s) { return s.putTaskConfigs(name, tasks); });
  }
  Status removeConnector(const std::string& name) override {
    return file_.mutate([&](internal::ConfigState& s) { return s.removeConnector(name); });
  }

 private:
  FileBacked<internal::ConfigState> file_;
};

class FilePositionStore final : public PositionStore {
 public:
  FilePositionStore(std::string path, internal::PositionState s)
      : file_(std::move(path), std::move(s)) {}

  Result<std::optional<StringMap>> get(const std::string& connector,
                                       const StringMap& partition) override {
    return file_.read(
        [&](const internal::PositionState& s) { return s.get(connector, partition); });
  }
  Result<std::vector<Position>> getAll(const std::string& connector) override {
    return file_.read([&](const internal::PositionState& s) { return s.getAll(connector); });
  }
  Status put(const std::string& connector, const std::vector<Position>& positions) override {
    if (positions.empty()) return Status::ok();
    return file_.mutate([&](internal::PositionState& s) {
      s.put(connector, positions);
      return Status::ok();
    });
  }
  Status removeConnector(const std::string& connector) override {
    bool present = file_.read(
        [&](const internal::PositionState& s) { return s.connectors.count(connector) > 0; });
    if (!present) return Status::ok();  // nothing to rewrite
    return file_.mutate([&](internal::PositionState& s) {
      s.removeConnector(connector);
      return Status::ok();
    });
  }

 private:
  FileBacked<internal::PositionState> file_;
};

class FileStatusStore final : public StatusStore {
 public:
  FileStatusStore(std::string path, internal::StatusState s)
      : file_(std::move(path), std::move(s)) {}

  Status putConnector(const std::string& connector, const StatusEntry& status) override {
    return file_.mutate([&](internal::StatusState& s) {
      s.putConnector(connector, status);
      return Status::ok();
    });
  }
  Status putTask(const std::string& connector, int task, const StatusEntry& status) override {
    return file_.mutate(
        [&](internal::StatusState& s) { return s.putTask(connector, task, status); });
  }
  std::optional<StatusEntry> connector(const std::string& connector) override {
    return file_.read([&](const internal::StatusState& s) { return s.connector(connector); });
  }
  std::map<int, StatusEntry> tasks(const std::string& connector) override {
    return file_.read([&](const internal::StatusState& s) { return s.tasks(connector); });
  }
  Status removeConnector(const std::string& connector) override {
    bool present = file_.read(
        [&](const internal::StatusState& s) { return s.connectors.count(connector) > 0; });
    if (!present) return Status::ok();
    return file_.mutate([&](internal::StatusState& s) {
      s.removeConnector(connector);
      return Status::ok();
    });
  }

 private:
  FileBacked<internal::StatusState> file_;
};

}  // namespace

Result<std::unique_ptr<ConfigStore>> openFileConfigStore(const std::string& dir) {
  std::string path = pathIn(dir, "configs.json");
  FERRY_ASSIGN_OR_RETURN(internal::ConfigState s, loadState<internal::ConfigState>(
                                                      dir, path, internal::configStateFromJson));
  return std::unique_ptr<ConfigStore>(std::make_unique<FileConfigStore>(path, std::move(s)));
}

Result<std::unique_ptr<PositionStore>> openFilePositionStore(const std::string& dir) {
  std::string path = pathIn(dir, "positions.json");
  FERRY_ASSIGN_OR_RETURN(
      internal::PositionState s,
      loadState<internal::PositionState>(dir, path, internal::positionStateFromJson));
  return std::unique_ptr<PositionStore>(std::make_unique<FilePositionStore>(path, std::move(s)));
}

Result<std::unique_ptr<StatusStore>> openFileStatusStore(const std::string& dir) {
  std::string path = pathIn(dir, "status.json");
  FERRY_ASSIGN_OR_RETURN(internal::StatusState s, loadState<internal::StatusState>(
                                                      dir, path, internal::statusStateFromJson));
  return std::unique_ptr<StatusStore>(std::make_unique<FileStatusStore>(path, std::move(s)));
}

}  // namespace ferry::store
