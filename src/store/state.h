// Internal to src/store: the state of each store as a plain value, the mutations every store
// implementation applies to it, and its JSON form (the file stores' format).
//
// The memory and file stores share these so they behave the same; a file store applies a
// mutation to a copy, writes the copy, and only then swaps it in (a failed write changes nothing).
//
// Thread-safety: plain values, no locking; the stores serialise access.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"
#include "ferry/status.h"
#include "store/store.h"

namespace ferry::store::internal {

// Version of the JSON files. 1: no checksum (older versions); 2: the same document with a
// "checksum" member (core/checked_file.h). A file with a higher version is refused
// (kIncompatible); a version 1 file is read as it is and written as version 2 at the next change.
inline constexpr int kFormatVersion = 2;

struct ConfigState {
  std::map<std::string, ConnectorEntry> connectors;

  Status putConnector(const std::string& name, const StringMap& config, TargetState target);
  Status putTargetState(const std::string& name, TargetState target);
  Status putTaskConfigs(const std::string& name, const std::vector<StringMap>& tasks);
  Status removeConnector(const std::string& name);
};

struct PositionState {
  // connector -> partition -> offset. A StringMap orders itself, so it is its own canonical key.
  std::map<std::string, std::map<StringMap, StringMap>> connectors;

  std::optional<StringMap> get(const std::string& connector, const StringMap& partition) const;
  std::vector<Position> getAll(const std::string& connector) const;
  void put(const std::string& connector, const std::vector<Position>& positions);
  void removeConnector(const std::string& connector);
};

struct StatusState {
  struct Connector {
    std::optional<StatusEntry> connector;
    std::map<int, StatusEntry> tasks;
  };
  std::map<std::string, Connector> connectors;

  void putConnector(const std::string& connector, const StatusEntry& status);
  Status putTask(const std::string& connector, int task, const StatusEntry& status);  // task >= 0
  std::optional<StatusEntry> connector(const std::string& connector) const;
  std::map<int, StatusEntry> tasks(const std::string& connector) const;
  void removeConnector(const std::string& connector);
};

// JSON forms (without the checksum, which core::writeCheckedJson adds). toJson never throws; the
// *FromJson functions return kDataLoss for a damaged document (wrong shape or types; the message
// is "damaged: <where>", to follow a file name) and kIncompatible for a newer format version
// (the message names `what`, a file path, and what to do).
nlohmann::json toJson(const ConfigState& s);
nlohmann::json toJson(const PositionState& s);
nlohmann::json toJson(const StatusState& s);
Result<ConfigState> configStateFromJson(const nlohmann::json& j, const std::string& what);
Result<PositionState> positionStateFromJson(const nlohmann::json& j, const std::string& what);
Result<StatusState> statusStateFromJson(const nlohmann::json& j, const std::string& what);

// File text -> state for one copy, as an open checks each copy: core::parseCheckedJson (the
// checksum, or none in a format 1 file) and then the *FromJson parse. Never throws, whatever
// the bytes (the store_file fuzz target feeds them arbitrary bytes).
Result<ConfigState> configStateFromText(std::string_view text, const std::string& what);
Result<PositionState> positionStateFromText(std::string_view text, const std::string& what);
Result<StatusState> statusStateFromText(std::string_view text, const std::string& what);

std::optional<State> parseState(std::string_view s) noexcept;

}  // namespace ferry::store::internal
