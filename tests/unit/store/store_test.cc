// Unit tests of the config / position / status stores (src/store): behaviour shared by the memory
// and file stores (parameterised), and the file stores' durability: reopen, damaged files,
// failed writes.
#include "store/store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace ferry::store {
namespace {

namespace fs = std::filesystem;

// A fresh folder below the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ferry-store-XXXXXX").string();
    char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

void writeText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

enum class Kind { kMemory, kFile };

std::string kindName(const testing::TestParamInfo<Kind>& info) {
  return info.param == Kind::kMemory ? "Memory" : "File";
}

// Stores of one kind; for file stores, all three in one temp folder.
class StoreTest : public testing::TestWithParam<Kind> {
 protected:
  std::unique_ptr<ConfigStore> configs() {
    if (GetParam() == Kind::kMemory) return makeMemoryConfigStore();
    auto r = openFileConfigStore(dir_.path());
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return std::move(r).value();
  }
  std::unique_ptr<PositionStore> positions() {
    if (GetParam() == Kind::kMemory) return makeMemoryPositionStore();
    auto r = openFilePositionStore(dir_.path());
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return std::move(r).value();
  }
  std::unique_ptr<StatusStore> statuses() {
    if (GetParam() == Kind::kMemory) return makeMemoryStatusStore();
    auto r = openFileStatusStore(dir_.path());
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return std::move(r).value();
  }

  TempDir dir_;
};

INSTANTIATE_TEST_SUITE_P(Kinds, StoreTest, testing::Values(Kind::kMemory, Kind::kFile), kindName);

// ------------------------------------------------------------------------------------------------
// Config store

TEST_P(StoreTest, ConfigStoreStartsEmpty) {
  auto s = configs();
  auto all = s->loadAll();
  ASSERT_TRUE(all.isOk());
  EXPECT_TRUE(all->empty());
}

TEST_P(StoreTest, PutConnectorCreatesGenerationOne) {
  auto s = configs();
  ASSERT_TRUE(s->putConnector("a", {{"connector.class", "X"}}, TargetState::kPaused).isOk());
  auto all = s->loadAll();
  ASSERT_TRUE(all.isOk());
  ASSERT_EQ(all->size(), 1u);
  const ConnectorEntry& e = all->at("a");
  EXPECT_EQ(e.config, (StringMap{{"connector.class", "X"}}));
  EXPECT_EQ(e.target, TargetState::kPaused);
  EXPECT_EQ(e.generation, 1);
  EXPECT_TRUE(e.taskConfigs.empty());
}

TEST_P(StoreTest, SameConfigKeepsTaskConfigsAndBumpsGeneration) {
  auto s = configs();
  StringMap cfg{{"connector.class", "X"}, {"tasks.max", "2"}};
  ASSERT_TRUE(s->putConnector("a", cfg, TargetState::kStarted).isOk());
  ASSERT_TRUE(s->putTaskConfigs("a", {{{"t", "0"}}, {{"t", "1"}}}).isOk());
  ASSERT_TRUE(s->putConnector("a", cfg, TargetState::kStopped).isOk());
  auto all = s->loadAll();
  ASSERT_TRUE(all.isOk());
  const ConnectorEntry& e = all->at("a");
  EXPECT_EQ(e.generation, 2);
  EXPECT_EQ(e.target, TargetState::kStopped);
  ASSERT_EQ(e.taskConfigs.size(), 2u);
  EXPECT_EQ(e.taskConfigs[1].at("t"), "1");
}

TEST_P(StoreTest, ChangedConfigClearsTaskConfigs) {
  auto s = configs();
  ASSERT_TRUE(s->putConnector("a", {{"k", "1"}}, TargetState::kStarted).isOk());
  ASSERT_TRUE(s->putTaskConfigs("a", {{{"t", "0"}}}).isOk());
  ASSERT_TRUE(s->putConnector("a", {{"k", "2"}}, TargetState::kStarted).isOk());
  auto all = s->loadAll();
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(all->at("a").generation, 2);
  EXPECT_EQ(all->at("a").config.at("k"), "2");
  EXPECT_TRUE(all->at("a").taskConfigs.empty());
}

TEST_P(StoreTest, PutTargetStateChangesOnlyTheTarget) {
  auto s = configs();
  ASSERT_TRUE(s->putConnector("a", {{"k", "1"}}, TargetState::kStarted).isOk());
  ASSERT_TRUE(s->putTaskConfigs("a", {{{"t", "0"}}}).isOk());
  ASSERT_TRUE(s->putTargetState("a", TargetState::kPaused).isOk());
  auto all = s->loadAll();
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(all->at("a").target, TargetState::kPaused);
  EXPECT_EQ(all->at("a").generation, 1);
  EXPECT_EQ(all->at("a").taskConfigs.size(), 1u);
}

TEST_P(StoreTest, UnknownConnectorIsNotFound) {
  auto s = configs();
  Status st = s->putTargetState("ghost", TargetState::kPaused);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("ghost"), std::string::npos);
  EXPECT_EQ(s->putTaskConfigs("ghost", {}).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->removeConnector("ghost").code(), StatusCode::kNotFound);
  auto all = s->loadAll();
  ASSERT_TRUE(all.isOk());
  EXPECT_TRUE(all->empty());
}

TEST_P(StoreTest, RemoveConnectorRemovesOnlyIt) {
  auto s = configs();
  ASSERT_TRUE(s->putConnector("a", {{"k", "1"}}, TargetState::kStarted).isOk());
  ASSERT_TRUE(s->putConnector("b", {{"k", "2"}}, TargetState::kStarted).isOk());
  ASSERT_TRUE(s->removeConnector("a").isOk());
  auto all = s->loadAll();
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(all->count("a"), 0u);
  EXPECT_EQ(all->count("b"), 1u);
  // A connector created again under a removed name starts afresh.
  ASSERT_TRUE(s->putConnector("a", {{"k", "1"}}, TargetState::kStarted).isOk());
  auto again = s->loadAll();
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again->at("a").generation, 1);
}

// ------------------------------------------------------------------------------------------------
// Position store

TEST_P(StoreTest, PositionMissingIsNullopt) {
  auto s = positions();
  auto got = s->get("c", {{"file", "a"}});
  ASSERT_TRUE(got.isOk());
  EXPECT_FALSE(got->has_value());
  auto all = s->getAll("c");
  ASSERT_TRUE(all.isOk());
  EXPECT_TRUE(all->empty());
}

TEST_P(StoreTest, PositionPutAndGet) {
  auto s = positions();
  ASSERT_TRUE(s->put("c", {Position{{{"file", "a"}}, {{"line", "1"}}},
                           Position{{{"file", "b"}}, {{"line", "7"}}}})
                  .isOk());
  auto a = s->get("c", {{"file", "a"}});
  ASSERT_TRUE(a.isOk());
  ASSERT_TRUE(a->has_value());
  EXPECT_EQ(a->value().at("line"), "1");
  ASSERT_TRUE(s->put("c", {Position{{{"file", "a"}}, {{"line", "2"}}}}).isOk());
  auto a2 = s->get("c", {{"file", "a"}});
  ASSERT_TRUE(a2.isOk());
  EXPECT_EQ(a2->value().at("line"), "2");
  // Other connectors do not see it.
  auto other = s->get("d", {{"file", "a"}});
  ASSERT_TRUE(other.isOk());
  EXPECT_FALSE(other->has_value());
}

TEST_P(StoreTest, PartitionKeyIgnoresInsertionOrder) {
  auto s = positions();
  StringMap p1;
  p1["topic"] = "t";
  p1["queue"] = "3";
  StringMap p2;
  p2["queue"] = "3";
  p2["topic"] = "t";
  ASSERT_TRUE(s->put("c", {Position{p1, {{"offset", "10"}}}}).isOk());
  auto got = s->get("c", p2);
  ASSERT_TRUE(got.isOk());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(got->value().at("offset"), "10");
  // Partitions differing in one value are distinct.
  auto other = s->get("c", {{"topic", "t"}, {"queue", "4"}});
  ASSERT_TRUE(other.isOk());
  EXPECT_FALSE(other->has_value());
}

TEST_P(StoreTest, LaterPositionInOneBatchWins) {
  auto s = positions();
  StringMap p{{"file", "a"}};
  ASSERT_TRUE(s->put("c", {Position{p, {{"line", "1"}}}, Position{p, {{"line", "5"}}}}).isOk());
  auto got = s->get("c", p);
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ(got->value().at("line"), "5");
}

TEST_P(StoreTest, EmptyOffsetDeletesPartition) {
  auto s = positions();
  ASSERT_TRUE(s->put("c", {Position{{{"file", "a"}}, {{"line", "1"}}},
                           Position{{{"file", "b"}}, {{"line", "2"}}}})
                  .isOk());
  ASSERT_TRUE(s->put("c", {Position{{{"file", "a"}}, {}}}).isOk());
  auto a = s->get("c", {{"file", "a"}});
  ASSERT_TRUE(a.isOk());
  EXPECT_FALSE(a->has_value());
  auto all = s->getAll("c");
  ASSERT_TRUE(all.isOk());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(all->at(0).partition.at("file"), "b");
}

TEST_P(StoreTest, GetAllReturnsEveryPosition) {
  auto s = positions();
  std::vector<Position> put;
  for (int i = 0; i < 5; ++i) {
    put.push_back(Position{{{"q", std::to_string(i)}}, {{"o", std::to_string(i * 10)}}});
  }
  ASSERT_TRUE(s->put("c", put).isOk());
  ASSERT_TRUE(s->put("other", {Position{{{"q", "x"}}, {{"o", "1"}}}}).isOk());
  auto all = s->getAll("c");
  ASSERT_TRUE(all.isOk());
  ASSERT_EQ(all->size(), 5u);
  for (const Position& p : put) {
    EXPECT_NE(std::find(all->begin(), all->end(), p), all->end()) << p.partition.at("q");
  }
}

TEST_P(StoreTest, PositionRemoveConnector) {
  auto s = positions();
  ASSERT_TRUE(s->put("c", {Position{{{"f", "a"}}, {{"l", "1"}}}}).isOk());
  ASSERT_TRUE(s->put("d", {Position{{{"f", "a"}}, {{"l", "2"}}}}).isOk());
  ASSERT_TRUE(s->removeConnector("c").isOk());
  ASSERT_TRUE(s->removeConnector("never-there").isOk());
  auto c = s->getAll("c");
  ASSERT_TRUE(c.isOk());
  EXPECT_TRUE(c->empty());
  auto d = s->get("d", {{"f", "a"}});
  ASSERT_TRUE(d.isOk());
  EXPECT_EQ(d->value().at("l"), "2");
}

TEST_P(StoreTest, ConcurrentPositionPutsAllLand) {
  auto s = positions();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&s, t] {
      for (int i = 0; i < 20; ++i) {
        Status st = s->put("c", {Position{{{"task", std::to_string(t)}, {"i", std::to_string(i)}},
                                          {{"n", std::to_string(i)}}}});
        EXPECT_TRUE(st.isOk()) << st.toString();
      }
    });
  }
  for (auto& th : threads) th.join();
  auto all = s->getAll("c");
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(all->size(), 80u);
}

// ------------------------------------------------------------------------------------------------
// Status store

TEST_P(StoreTest, StatusPutAndRead) {
  auto s = statuses();
  EXPECT_FALSE(s->connector("c").has_value());
  EXPECT_TRUE(s->tasks("c").empty());
  StatusEntry running{State::kRunning, "", "w1", 100, 3};
  StatusEntry failed{State::kFailed, "boom\nat line 2", "w2", 200, 3};
  ASSERT_TRUE(s->putConnector("c", running).isOk());
  ASSERT_TRUE(s->putTask("c", 0, running).isOk());
  ASSERT_TRUE(s->putTask("c", 1, failed).isOk());
  auto c = s->connector("c");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->state, State::kRunning);
  EXPECT_EQ(c->workerId, "w1");
  auto tasks = s->tasks("c");
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks.at(1).state, State::kFailed);
  EXPECT_EQ(tasks.at(1).trace, "boom\nat line 2");
  // A task can be reported before its connector.
  ASSERT_TRUE(s->putTask("d", 2, running).isOk());
  EXPECT_FALSE(s->connector("d").has_value());
  EXPECT_EQ(s->tasks("d").size(), 1u);
}

TEST_P(StoreTest, StatusOverwriteAndRemove) {
  auto s = statuses();
  ASSERT_TRUE(s->putTask("c", 0, StatusEntry{State::kRunning, "", "w", 1, 1}).isOk());
  ASSERT_TRUE(s->putTask("c", 0, StatusEntry{State::kPaused, "", "w", 2, 1}).isOk());
  EXPECT_EQ(s->tasks("c").at(0).state, State::kPaused);
  ASSERT_TRUE(s->putConnector("c", StatusEntry{State::kRunning, "", "w", 1, 1}).isOk());
  ASSERT_TRUE(s->removeConnector("c").isOk());
  ASSERT_TRUE(s->removeConnector("never-there").isOk());
  EXPECT_FALSE(s->connector("c").has_value());
  EXPECT_TRUE(s->tasks("c").empty());
}

TEST_P(StoreTest, NegativeTaskNumberRefused) {
  auto s = statuses();
  EXPECT_EQ(s->putTask("c", -1, StatusEntry{}).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s->tasks("c").empty());
}

// ------------------------------------------------------------------------------------------------
// Names

TEST(StoreNames, TargetStatesRoundTrip) {
  for (TargetState t : {TargetState::kStarted, TargetState::kPaused, TargetState::kStopped}) {
    auto parsed = parseTargetState(targetStateName(t));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_STREQ(targetStateName(TargetState::kPaused), "PAUSED");
  EXPECT_EQ(parseTargetState("stopped"), TargetState::kStopped);
  EXPECT_EQ(parseTargetState("Paused"), TargetState::kPaused);
  EXPECT_FALSE(parseTargetState("PAUSE").has_value());
  EXPECT_FALSE(parseTargetState("").has_value());
}

TEST(StoreNames, StateNamesAreKafkaConnects) {
  EXPECT_STREQ(stateName(State::kUnassigned), "UNASSIGNED");
  EXPECT_STREQ(stateName(State::kRunning), "RUNNING");
  EXPECT_STREQ(stateName(State::kPaused), "PAUSED");
  EXPECT_STREQ(stateName(State::kStopped), "STOPPED");
  EXPECT_STREQ(stateName(State::kFailed), "FAILED");
  EXPECT_STREQ(stateName(State::kRestarting), "RESTARTING");
  EXPECT_STREQ(stateName(State::kDestroyed), "DESTROYED");
}

// ------------------------------------------------------------------------------------------------
// File stores: durability

TEST(FileStore, ConfigsSurviveReopen) {
  TempDir dir;
  {
    auto s = openFileConfigStore(dir.path());
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    ASSERT_TRUE((*s)->putConnector("a", {{"k", "1"}, {"x", "ü ∑"}}, TargetState::kStarted).isOk());
    ASSERT_TRUE((*s)->putConnector("a", {{"k", "1"}, {"x", "ü ∑"}}, TargetState::kStarted).isOk());
    ASSERT_TRUE((*s)->putTaskConfigs("a", {{{"t", "0"}}, {{"t", "1"}, {"u", ""}}}).isOk());
    ASSERT_TRUE((*s)->putTargetState("a", TargetState::kPaused).isOk());
    ASSERT_TRUE((*s)->putConnector("b", {{"k", "2"}}, TargetState::kStopped).isOk());
    ASSERT_TRUE((*s)->putConnector("gone", {{"k", "3"}}, TargetState::kStarted).isOk());
    ASSERT_TRUE((*s)->removeConnector("gone").isOk());
  }
  auto s = openFileConfigStore(dir.path());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  auto all = (*s)->loadAll();
  ASSERT_TRUE(all.isOk());
  ASSERT_EQ(all->size(), 2u);
  const ConnectorEntry& a = all->at("a");
  EXPECT_EQ(a.config, (StringMap{{"k", "1"}, {"x", "ü ∑"}}));
  EXPECT_EQ(a.target, TargetState::kPaused);
  EXPECT_EQ(a.generation, 2);
  ASSERT_EQ(a.taskConfigs.size(), 2u);
  EXPECT_EQ(a.taskConfigs[1], (StringMap{{"t", "1"}, {"u", ""}}));
  EXPECT_EQ(all->at("b").target, TargetState::kStopped);
  EXPECT_EQ(all->count("gone"), 0u);
  // The generation keeps counting after a reopen.
  ASSERT_TRUE((*s)->putConnector("a", {{"k", "9"}}, TargetState::kStarted).isOk());
  auto after = (*s)->loadAll();
  ASSERT_TRUE(after.isOk());
  EXPECT_EQ(after->at("a").generation, 3);
}

TEST(FileStore, PositionsSurviveReopen) {
  TempDir dir;
  {
    auto s = openFilePositionStore(dir.path());
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    ASSERT_TRUE((*s)->put("c", {Position{{{"file", "a"}}, {{"line", "1"}}},
                                Position{{{"file", "b"}, {"host", "h"}}, {{"line", "2"}}},
                                Position{{{"file", "z"}}, {{"line", "3"}}}})
                    .isOk());
    ASSERT_TRUE((*s)->put("c", {Position{{{"file", "z"}}, {}}}).isOk());
    ASSERT_TRUE((*s)->put("d", {Position{{}, {{"n", "5"}}}}).isOk());
  }
  auto s = openFilePositionStore(dir.path());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  auto all = (*s)->getAll("c");
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(all->size(), 2u);
  auto b = (*s)->get("c", {{"host", "h"}, {"file", "b"}});
  ASSERT_TRUE(b.isOk());
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ(b->value().at("line"), "2");
  auto z = (*s)->get("c", {{"file", "z"}});
  ASSERT_TRUE(z.isOk());
  EXPECT_FALSE(z->has_value());
  auto d = (*s)->get("d", {});  // an empty partition is a partition too
  ASSERT_TRUE(d.isOk());
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ(d->value().at("n"), "5");
}

TEST(FileStore, StatusesSurviveReopen) {
  TempDir dir;
  {
    auto s = openFileStatusStore(dir.path());
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    ASSERT_TRUE(
        (*s)->putConnector("c", StatusEntry{State::kRunning, "", "w1:8083", 1000, 4}).isOk());
    ASSERT_TRUE(
        (*s)->putTask("c", 0, StatusEntry{State::kFailed, "oops\n\tdeep", "w1", 1234, 4}).isOk());
    ASSERT_TRUE((*s)->putTask("c", 12, StatusEntry{State::kPaused, "", "w2", 5, 4}).isOk());
    ASSERT_TRUE((*s)->putTask("only-tasks", 0, StatusEntry{State::kRunning, "", "w", 1, 1}).isOk());
  }
  auto s = openFileStatusStore(dir.path());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  auto c = (*s)->connector("c");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->state, State::kRunning);
  EXPECT_EQ(c->workerId, "w1:8083");
  EXPECT_EQ(c->sinceMs, 1000);
  EXPECT_EQ(c->generation, 4);
  auto tasks = (*s)->tasks("c");
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks.at(0).state, State::kFailed);
  EXPECT_EQ(tasks.at(0).trace, "oops\n\tdeep");
  EXPECT_EQ(tasks.at(0).sinceMs, 1234);
  EXPECT_EQ(tasks.at(12).workerId, "w2");
  EXPECT_FALSE((*s)->connector("only-tasks").has_value());
  EXPECT_EQ((*s)->tasks("only-tasks").size(), 1u);
}

TEST(FileStore, ThreeStoresShareOneFolder) {
  TempDir dir;
  auto c = openFileConfigStore(dir.path());
  auto p = openFilePositionStore(dir.path());
  auto st = openFileStatusStore(dir.path());
  ASSERT_TRUE(c.isOk() && p.isOk() && st.isOk());
  ASSERT_TRUE((*c)->putConnector("a", {{"k", "v"}}, TargetState::kStarted).isOk());
  ASSERT_TRUE((*p)->put("a", {Position{{{"p", "0"}}, {{"o", "1"}}}}).isOk());
  ASSERT_TRUE((*st)->putConnector("a", StatusEntry{State::kRunning, "", "w", 1, 1}).isOk());
  EXPECT_TRUE(fs::exists(dir.file("configs.json")));
  EXPECT_TRUE(fs::exists(dir.file("positions.json")));
  EXPECT_TRUE(fs::exists(dir.file("status.json")));
  // Nothing but the three files: no temp file is left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 3);
}

TEST(FileStore, OpenCreatesMissingFolder) {
  TempDir dir;
  std::string nested = dir.file("a/b/c");
  auto s = openFileConfigStore(nested);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  ASSERT_TRUE((*s)->putConnector("x", {{"k", "v"}}, TargetState::kStarted).isOk());
  EXPECT_TRUE(fs::exists(nested + "/configs.json"));
}

TEST(FileStore, CorruptFilesAreDataLossNamingTheFile) {
  TempDir dir;
  writeText(dir.file("configs.json"), "{\"format\": 1, \"connectors\": {");
  writeText(dir.file("positions.json"), "not json at all");
  writeText(dir.file("status.json"), "");
  auto c = openFileConfigStore(dir.path());
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(c.status().message().find(dir.file("configs.json")), std::string::npos)
      << c.status().message();
  auto p = openFilePositionStore(dir.path());
  ASSERT_FALSE(p.isOk());
  EXPECT_EQ(p.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(p.status().message().find(dir.file("positions.json")), std::string::npos);
  // Status is a cache: a damaged file is a warning, and the store starts empty.
  auto st = openFileStatusStore(dir.path());
  ASSERT_TRUE(st.isOk()) << st.status().toString();
  ASSERT_EQ((*st)->openWarnings().size(), 1u);
  EXPECT_NE((*st)->openWarnings()[0].find(dir.file("status.json")), std::string::npos);
}

TEST(FileStore, WrongShapeIsDataLoss) {
  TempDir dir;
  // Valid JSON, wrong contents: each must be refused, never half-loaded.
  const char* bad[] = {
      "[1, 2]",
      R"({"format": 1})",
      R"({"format": 1, "connectors": {"a": {"config": {"k": 1}, "target": "STARTED",
          "generation": 1, "tasks": []}}})",
      R"({"format": 1, "connectors": {"a": {"config": {}, "target": "SLEEPING",
          "generation": 1, "tasks": []}}})",
      R"({"format": 1, "connectors": {"a": {"config": {}, "target": "STARTED",
          "generation": "1", "tasks": []}}})",
  };
  for (const char* text : bad) {
    writeText(dir.file("configs.json"), text);
    auto c = openFileConfigStore(dir.path());
    ASSERT_FALSE(c.isOk()) << text;
    EXPECT_EQ(c.status().code(), StatusCode::kDataLoss) << text;
    EXPECT_NE(c.status().message().find("configs.json"), std::string::npos);
  }
  writeText(dir.file("positions.json"),
            R"({"format": 1, "connectors": {"c": [{"partition": {"f": "a"}}]}})");
  auto p = openFilePositionStore(dir.path());
  ASSERT_FALSE(p.isOk());
  EXPECT_EQ(p.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(p.status().message().find("offset"), std::string::npos) << p.status().message();
  writeText(dir.file("status.json"),
            R"({"format": 1, "connectors": {"c": {"connector": null, "tasks": {"x": {}}}}})");
  auto st = openFileStatusStore(dir.path());
  ASSERT_TRUE(st.isOk());
  EXPECT_TRUE((*st)->tasks("c").empty());
  ASSERT_EQ((*st)->openWarnings().size(), 1u);
  EXPECT_NE((*st)->openWarnings()[0].find("tasks.x"), std::string::npos)
      << (*st)->openWarnings()[0];
}

TEST(FileStore, NewerFormatIsIncompatible) {
  TempDir dir;
  writeText(dir.file("configs.json"), R"({"format": 3, "connectors": {}, "extra": true})");
  auto c = openFileConfigStore(dir.path());
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), StatusCode::kIncompatible);
  EXPECT_NE(c.status().message().find("configs.json"), std::string::npos);
}

TEST(FileStore, FailedWriteChangesNothing) {
  TempDir dir;
  std::string sub = dir.file("state");
  auto c = openFileConfigStore(sub);
  auto p = openFilePositionStore(sub);
  auto st = openFileStatusStore(sub);
  ASSERT_TRUE(c.isOk() && p.isOk() && st.isOk());
  ASSERT_TRUE((*c)->putConnector("a", {{"k", "1"}}, TargetState::kStarted).isOk());
  ASSERT_TRUE((*p)->put("a", {Position{{{"f", "x"}}, {{"l", "1"}}}}).isOk());
  ASSERT_TRUE((*st)->putTask("a", 0, StatusEntry{State::kRunning, "", "w", 1, 1}).isOk());
  // Pull the folder away: every write must now fail, and leave memory as it was.
  fs::remove_all(sub);
  Status s1 = (*c)->putConnector("a", {{"k", "2"}}, TargetState::kPaused);
  EXPECT_FALSE(s1.isOk());
  EXPECT_NE(s1.message().find("configs.json"), std::string::npos) << s1.message();
  EXPECT_FALSE((*c)->putConnector("b", {{"k", "1"}}, TargetState::kStarted).isOk());
  EXPECT_FALSE((*c)->removeConnector("a").isOk());
  auto all = (*c)->loadAll();
  ASSERT_TRUE(all.isOk());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(all->at("a").config.at("k"), "1");
  EXPECT_EQ(all->at("a").generation, 1);
  EXPECT_EQ(all->at("a").target, TargetState::kStarted);

  EXPECT_FALSE((*p)->put("a", {Position{{{"f", "x"}}, {{"l", "2"}}}}).isOk());
  auto pos = (*p)->get("a", {{"f", "x"}});
  ASSERT_TRUE(pos.isOk());
  EXPECT_EQ(pos->value().at("l"), "1");

  EXPECT_FALSE((*st)->putTask("a", 0, StatusEntry{State::kFailed, "x", "w", 2, 1}).isOk());
  EXPECT_EQ((*st)->tasks("a").at(0).state, State::kRunning);
}

TEST(FileStore, NonUtf8ValueRefusedAndNothingChanges) {
  TempDir dir;
  auto c = openFileConfigStore(dir.path());
  ASSERT_TRUE(c.isOk());
  ASSERT_TRUE((*c)->putConnector("a", {{"k", "1"}}, TargetState::kStarted).isOk());
  Status s = (*c)->putConnector("a", {{"k", std::string("\xff\xfe", 2)}}, TargetState::kStarted);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("UTF-8"), std::string::npos) << s.message();
  auto all = (*c)->loadAll();
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(all->at("a").config.at("k"), "1");
  // The file is still whole and loadable.
  auto reopened = openFileConfigStore(dir.path());
  ASSERT_TRUE(reopened.isOk()) << reopened.status().toString();
  auto again = (*reopened)->loadAll();
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again->at("a").config.at("k"), "1");
}

TEST(FileStore, FileIsReadableJsonWithFormatVersion) {
  TempDir dir;
  auto c = openFileConfigStore(dir.path());
  ASSERT_TRUE(c.isOk());
  ASSERT_TRUE((*c)->putConnector("a", {{"connector.class", "X"}}, TargetState::kStarted).isOk());
  std::string text = readText(dir.file("configs.json"));
  EXPECT_NE(text.find("\"format\": 2"), std::string::npos) << text;
  EXPECT_NE(text.find("\"checksum\": \"crc32c:"), std::string::npos) << text;
  EXPECT_NE(text.find("\"connector.class\": \"X\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"target\": \"STARTED\""), std::string::npos) << text;
}

}  // namespace
}  // namespace ferry::store
