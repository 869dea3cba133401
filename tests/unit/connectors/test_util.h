// Helpers for the connector tests: a temporary folder, fake task contexts, file helpers, and
// creating plugins through the built-in descriptor (as the runtime does).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "connectors/builtins.h"
#include "core/confined_path.h"
#include "ferry/connector.h"

namespace ferry::connectors::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/ferry-connectors-XXXXXX";
    char* p = mkdtemp(tmpl.data());
    if (p == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void writeFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}
inline void appendFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::app);
  f << data;
}
inline std::string readAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
inline std::string inodeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_ino);
}

class FakeSourceContext : public SourceTaskContext {
 public:
  explicit FakeSourceContext(int taskId = 0) : taskId_(taskId) {}
  const std::string& connectorName() const override { return name_; }
  int taskId() const override { return taskId_; }
  std::optional<StringMap> committedOffset(const StringMap& partition) override {
    ++lookups;
    auto it = committed.find(partition);
    if (it == committed.end()) return std::nullopt;
    return it->second;
  }
  // Unconfined (allowed: /), as the runtime's confinement with every folder allowed.
  Result<LocalFile> openLocalFile(const std::string& path, LocalPath access) override {
    return core::PathConfinement({"/"}, {}, {}).open(path, access);
  }
  std::map<StringMap, StringMap> committed;
  int lookups = 0;

 private:
  std::string name_ = "test-source";
  int taskId_;
};

class FakeSinkContext : public SinkTaskContext {
 public:
  const std::string& connectorName() const override { return name_; }
  int taskId() const override { return 0; }
  void requestCommit() override {}
  Status reportBadRecord(const Record&, const Status& reason) override { return reason; }
  // The task's saved state, kept in memory (what the runtime keeps with the positions).
  Result<std::optional<StringMap>> loadState() override { return state; }
  Status saveState(const StringMap& s) override {
    if (stateless) return SinkTaskContext::saveState(s);
    state = s;
    ++saves;
    return Status::ok();
  }
  Result<LocalFile> openLocalFile(const std::string& path, LocalPath access) override {
    return core::PathConfinement({"/"}, {}, {}).open(path, access);
  }
  std::optional<StringMap> state;
  bool stateless = false;  // act as a runtime that keeps no sink state
  int saves = 0;

 private:
  std::string name_ = "test-sink";
};

class FakeConnectorContext : public ConnectorContext {
 public:
  const std::string& connectorName() const override { return name_; }
  void requestTaskReconfiguration() override {}
  void raiseError(const Status&) override {}

 private:
  std::string name_ = "test-connector";
};

inline const PluginEntry* findEntry(const std::string& name) {
  const PluginDescriptor& d = builtinPlugins();
  for (std::size_t i = 0; i < d.entryCount; ++i) {
    const PluginEntry& e = d.entries[i];
    if (name == e.className) return &e;
    for (const char* const* a = e.aliases; a && *a; ++a)
      if (name == *a) return &e;
  }
  return nullptr;
}

template <typename Base>
using Owned = std::unique_ptr<Base, std::function<void(Base*)>>;

// Creates the connector `name` (class name or alias) through the descriptor.
template <typename Base>
Owned<Base> create(const std::string& name) {
  const PluginEntry* e = findEntry(name);
  if (e == nullptr) return Owned<Base>(nullptr, [](Base*) {});
  auto destroy = e->destroy;
  return Owned<Base>(static_cast<Base*>(e->create()), [destroy](Base* p) { destroy(p); });
}

// Polls until `want` records were collected or `polls` polls returned nothing new.
inline std::vector<Record> pollAll(SourceTask& task, std::size_t want, int polls = 5,
                                   std::size_t maxRecords = 100000) {
  std::vector<Record> all;
  for (int i = 0; i < polls && all.size() < want; ++i) {
    std::vector<Record> out;
    auto n = task.poll(out, maxRecords, std::chrono::milliseconds(0));
    EXPECT_TRUE(n.isOk()) << n.status().toString();
    if (!n.isOk()) break;
    EXPECT_EQ(*n, out.size());
    for (auto& r : out) all.push_back(std::move(r));
  }
  return all;
}

inline std::vector<std::string> values(const std::vector<Record>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(r.value.str());
  return out;
}

}  // namespace ferry::connectors::testing
