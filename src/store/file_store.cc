// File stores (store.h): each store keeps its whole state in one JSON file below its folder
// (configs.json, positions.json, status.json), written by core::writeCheckedJson: a CRC32C member
// in the file, the copy it replaced kept as <file>.prev, mode 0600 (configs hold credentials).
//
// Every mutation is applied to a copy of the state, the copy is written (temp file + fsync +
// renames + fsync(folder)), and only then replaces the in-memory state: a call that returns OK is
// on disk, a call that fails changed nothing. Rewriting the whole file is cheap at standalone
// scale (positions are committed about once a second per task; configs and statuses change on
// user actions and task state changes only).
//
// Open reads the current copy, or the previous one when the current one is damaged (logged, and
// kept for openWarnings()). Configs and positions refuse to open only when neither copy is
// usable; status is a cache of what tasks report, so it then starts empty.
//
// Thread-safety: one mutex per store guards the state and serialises writes to its file (which
// writeCheckedJson requires: one writer per path).
#include <filesystem>
#include <mutex>
#include <optional>
#include <utility>

#include "core/checked_file.h"
#include "core/fs.h"
#include "core/logging.h"
#include "core/private_paths.h"
#include "store/state.h"
#include "store/store.h"

namespace ferry::store {
namespace {

using nlohmann::json;

// What a store file holds, for the messages of an open that found damage.
struct FileRole {
  const char* file;         // "configs.json"
  const char* what;         // "connector configs"
  const char* fallbackCost; // what using the previous copy can lose
  const char* fix;          // what an operator can do when no copy is usable
  bool cache;               // no usable copy: start empty with a warning instead of refusing
};

const FileRole kConfigsRole{
    "configs.json", "connector configs",
    "the last connector change (create, config update, pause/resume/stop, delete, or new task "
    "configs) may be missing: check the connectors and apply it again",
    "restore configs.json from a backup; or repair it by hand and delete its \"checksum\" line "
    "(a file without one is loaded unchecked); or move configs.json and configs.json.prev away "
    "to start with no connectors",
    false};

const FileRole kPositionsRole{
    "positions.json", "source positions",
    "the last committed source positions may be missing: sources resume from the positions "
    "before them and may deliver some records again",
    "restore positions.json from a backup; or repair it by hand and delete its \"checksum\" "
    "line (a file without one is loaded unchecked); or move positions.json and "
    "positions.json.prev away to start with no positions (each source then starts as a new "
    "one: it may read data again or skip it, depending on the connector)",
    false};

const FileRole kStatusRole{
    "status.json", "connector and task status",
    "the last status changes may be missing (status is a cache: connectors and tasks report "
    "theirs again as they run)",
    "", true};

// A store's parse as a check of a document (the state it builds is dropped).
template <typename Parse>
core::JsonCheck checkWith(Parse parse) {
  return [parse](const json& doc, const std::string& file) { return parse(doc, file).status(); };
}

template <typename StateT>
struct Loaded {
  StateT state;
  std::vector<std::string> warnings;
};

// Loads the state from `path` in `dir` (created if missing): the current copy, else the previous
// one, each checked by its checksum and then by `parse`. A missing file is an empty state.
template <typename StateT, typename Parse>
Result<Loaded<StateT>> loadState(const std::string& dir, const std::string& path, Parse parse,
                                 const FileRole& role) {
  Status made = core::ensureDir(dir);
  if (!made.isOk()) return made;
  std::optional<StateT> parsed;  // set by the last copy that parsed: the one returned
  Result<core::CheckedJson> read =
      core::readCheckedJson(path, [&](const json& doc, const std::string& file) -> Status {
        Result<StateT> s = parse(doc, file);
        if (!s.isOk()) return s.status();
        parsed = std::move(s).value();
        return Status::ok();
      });
  Loaded<StateT> out;
  if (!read.isOk()) {
    const Status& st = read.status();
    if (st.code() == StatusCode::kNotFound) return out;
    if (st.code() == StatusCode::kDataLoss && role.cache) {
      out.warnings.push_back(std::string(role.what) + ": " + st.message() +
                             "; starting with an empty status cache (it is rebuilt as "
                             "connectors and tasks start)");
    } else if (st.code() == StatusCode::kDataLoss) {
      return Status::dataLoss("cannot load the " + std::string(role.what) + ": " + st.message() +
                              ". To start: " + role.fix);
    } else if (st.code() == StatusCode::kIncompatible) {
      return st;
    } else {
      return Status::unavailable("cannot load the " + std::string(role.what) + ": " +
                                 st.message() + " (check the file's permissions)");
    }
  } else {
    if (!parsed) return Status::internal("store file " + path + " was read but not parsed");
    out.state = std::move(*parsed);
    switch (read->from) {
      case core::CheckedJson::From::kCurrent:
        break;
      case core::CheckedJson::From::kUnchecked:
        out.warnings.push_back(read->warning +
                               "; it is written with a checksum at the next change");
        break;
      case core::CheckedJson::From::kPrevious:
        out.warnings.push_back(read->warning + ": " + role.fallbackCost);
        break;
    }
  }
  for (const std::string& w : out.warnings) core::logger("store")->warn("{}", w);
  return out;
}

// The state of one store and the file that holds it.
template <typename StateT>
class FileBacked {
 public:
  // `check` is the store's parse as a core::JsonCheck: the file being replaced becomes .prev only
  // when it is a copy an open could load.
  FileBacked(std::string path, Loaded<StateT> loaded, core::JsonCheck check)
      : path_(std::move(path)),
        check_(std::move(check)),
        warnings_(std::move(loaded.warnings)),
        state_(std::move(loaded.state)) {}

  // Applies `fn(StateT&) -> Status` to a copy, persists it, then makes it current.
  template <typename Fn>
  Status mutate(Fn fn) {
    std::lock_guard lock(mu_);
    StateT next = state_;
    Status applied = fn(next);
    if (!applied.isOk()) return applied;
    Status written = core::writeCheckedJson(path_, internal::toJson(next), check_);
    if (!written.isOk()) {
      if (written.code() == StatusCode::kInvalidArgument) return written;  // names the path
      // The answer may reach a REST client: the file is named within the store's folder.
      const std::string folder = std::filesystem::path(path_).parent_path().string();
      return Status::unavailable("could not save " + core::relativeTo(path_, folder) + ": " +
                                 core::relativeTo(written.message(), folder));
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

  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  const std::string path_;
  const core::JsonCheck check_;
  const std::vector<std::string> warnings_;  // what the open found; immutable
  std::mutex mu_;
  StateT state_;  // guarded by mu_; equal to the file's contents once written
};

std::string pathIn(const std::string& dir, const char* file) {
  return (std::filesystem::path(dir) / file).string();
}

class FileConfigStore final : public ConfigStore {
 public:
  FileConfigStore(std::string path, Loaded<internal::ConfigState> s)
      : file_(std::move(path), std::move(s), checkWith(internal::configStateFromJson)) {}

  std::vector<std::string> openWarnings() const override { return file_.warnings(); }

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
  FilePositionStore(std::string path, Loaded<internal::PositionState> s)
      : file_(std::move(path), std::move(s), checkWith(internal::positionStateFromJson)) {}

  std::vector<std::string> openWarnings() const override { return file_.warnings(); }

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
  FileStatusStore(std::string path, Loaded<internal::StatusState> s)
      : file_(std::move(path), std::move(s), checkWith(internal::statusStateFromJson)) {}

  std::vector<std::string> openWarnings() const override { return file_.warnings(); }

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
  std::string path = pathIn(dir, kConfigsRole.file);
  FERRY_ASSIGN_OR_RETURN(
      Loaded<internal::ConfigState> s,
      loadState<internal::ConfigState>(dir, path, internal::configStateFromJson, kConfigsRole));
  return std::unique_ptr<ConfigStore>(std::make_unique<FileConfigStore>(path, std::move(s)));
}

Result<std::unique_ptr<PositionStore>> openFilePositionStore(const std::string& dir) {
  std::string path = pathIn(dir, kPositionsRole.file);
  FERRY_ASSIGN_OR_RETURN(Loaded<internal::PositionState> s,
                         loadState<internal::PositionState>(
                             dir, path, internal::positionStateFromJson, kPositionsRole));
  return std::unique_ptr<PositionStore>(std::make_unique<FilePositionStore>(path, std::move(s)));
}

Result<std::unique_ptr<StatusStore>> openFileStatusStore(const std::string& dir) {
  std::string path = pathIn(dir, kStatusRole.file);
  FERRY_ASSIGN_OR_RETURN(
      Loaded<internal::StatusState> s,
      loadState<internal::StatusState>(dir, path, internal::statusStateFromJson, kStatusRole));
  return std::unique_ptr<StatusStore>(std::make_unique<FileStatusStore>(path, std::move(s)));
}

}  // namespace ferry::store
