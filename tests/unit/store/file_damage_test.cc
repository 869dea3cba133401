// Unit tests of the file stores against damaged files (src/store/file_store.cc): a bit flip that
// leaves valid JSON is never loaded as true, the previous copy is used when the current one is
// damaged, configs and positions refuse to start only when no copy is usable, status (a cache)
// starts empty instead; truncation, a missing current copy, format 1 files, a crash between the
// steps of a write, and file modes.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "tests/unit/temp_files.h"
#include "store/store.h"

namespace ferry::store {
namespace {

namespace fs = std::filesystem;
using ferry::testing::modeOf;
using ferry::testing::readText;
using ferry::testing::writeText;

using ferry::testing::TempDir;

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

// A comparable picture of what a store holds.
std::string describe(const StringMap& m) {
  std::string out = "{";
  for (const auto& [k, v] : m) out += k + "=" + v + ";";
  return out + "}";
}

std::string describeConfigs(ConfigStore& s) {
  auto all = s.loadAll();
  if (!all.isOk()) return "error: " + all.status().toString();
  std::string out;
  for (const auto& [name, e] : *all) {
    out += name + ":" + describe(e.config) + " target=" + targetStateName(e.target) +
           " gen=" + std::to_string(e.generation) + " tasks=";
    for (const auto& t : e.taskConfigs) out += describe(t);
    out += "\n";
  }
  return out;
}

std::string describePositions(PositionStore& s, const std::vector<std::string>& connectors) {
  std::string out;
  for (const auto& c : connectors) {
    auto all = s.getAll(c);
    if (!all.isOk()) return "error: " + all.status().toString();
    for (const auto& p : *all) {
      out += c + ":" + describe(p.partition) + "->" + describe(p.offset) + "\n";
    }
  }
  return out;
}

std::string describeStatus(StatusStore& s, const std::vector<std::string>& connectors) {
  std::string out;
  auto entry = [](const StatusEntry& e) {
    return std::string(stateName(e.state)) + "/" + e.trace + "/" + e.workerId + "/" +
           std::to_string(e.sinceMs) + "/" + std::to_string(e.generation);
  };
  for (const auto& c : connectors) {
    auto conn = s.connector(c);
    out += c + ":" + (conn ? entry(*conn) : "none");
    for (const auto& [id, t] : s.tasks(c)) out += " " + std::to_string(id) + "=" + entry(t);
    out += "\n";
  }
  return out;
}

// Two changes, so that the current file holds the second and .prev the first. Returns what the
// store held after each.
struct TwoStates {
  std::string first, second;
};

TwoStates writeConfigs(const std::string& dir) {
  auto s = openFileConfigStore(dir);
  EXPECT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_TRUE((*s)->putConnector("sink", {{"connector.class", "FileStreamSink"},
                                          {"topics", "corr"},
                                          {"sasl.password", "s3cret"}},
                                 TargetState::kStarted)
                  .isOk());
  EXPECT_TRUE((*s)->putTaskConfigs("sink", {{{"topics", "corr"}, {"task.id", "0"}}}).isOk());
  TwoStates out;
  out.first = describeConfigs(**s);
  EXPECT_TRUE((*s)->putTargetState("sink", TargetState::kPaused).isOk());
  out.second = describeConfigs(**s);
  return out;
}

TwoStates writePositions(const std::string& dir) {
  auto s = openFilePositionStore(dir);
  EXPECT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_TRUE((*s)->put("src", {Position{{{"filename", "/var/log/a.log"}},
                                           {{"position", "12000"}}}})
                  .isOk());
  TwoStates out;
  out.first = describePositions(**s, {"src"});
  EXPECT_TRUE((*s)->put("src", {Position{{{"filename", "/var/log/a.log"}},
                                           {{"position", "12480"}}}})
                  .isOk());
  out.second = describePositions(**s, {"src"});
  return out;
}

TwoStates writeStatuses(const std::string& dir) {
  auto s = openFileStatusStore(dir);
  EXPECT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_TRUE(
      (*s)->putConnector("sink", StatusEntry{State::kRunning, "", "w1:8083", 1000, 1}).isOk());
  TwoStates out;
  out.first = describeStatus(**s, {"sink"});
  EXPECT_TRUE(
      (*s)->putTask("sink", 0, StatusEntry{State::kFailed, "boom", "w1:8083", 2000, 1}).isOk());
  out.second = describeStatus(**s, {"sink"});
  return out;
}

// ------------------------------------------------------------------------------------------------
// The defects as found: a flip inside a value that leaves valid JSON.

TEST(FileStoreDamage, SinkTopicFlipCorrToCmrrIsNotLoaded) {
  TempDir dir;
  TwoStates states = writeConfigs(dir.path());
  std::string path = dir.file("configs.json");
  std::string text = readText(path);
  std::size_t at = text.find("\"corr\"");
  ASSERT_NE(at, std::string::npos);
  text[at + 2] ^= 0x02;  // "corr" -> "cmrr"
  writeText(path, text);
  auto s = openFileConfigStore(dir.path());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  std::string loaded = describeConfigs(**s);
  EXPECT_EQ(loaded.find("cmrr"), std::string::npos) << loaded;
  EXPECT_EQ(loaded, states.first);  // the previous copy: the last change (pause) is missing
}

TEST(FileStoreDamage, PositionFlipJumpingAheadIsNotLoaded) {
  TempDir dir;
  TwoStates states = writePositions(dir.path());
  std::string path = dir.file("positions.json");
  std::string text = readText(path);
  std::size_t at = text.find("\"12480\"");
  ASSERT_NE(at, std::string::npos);
  text[at + 1] ^= 0x08;  // "12480" -> "92480": 80,000 bytes ahead, records would be skipped
  writeText(path, text);
  auto s = openFilePositionStore(dir.path());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(describePositions(**s, {"src"}), states.first);
}

TEST(FileStoreDamage, DamagedStatusIsNotFatal) {
  TempDir dir;
  writeStatuses(dir.path());
  writeText(dir.file("status.json"), "{\"format\": 2, \"connectors\": {\"sink\": {\"conn");
  writeText(dir.file("status.json.prev"), "");
  auto s = openFileStatusStore(dir.path());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(describeStatus(**s, {"sink"}), "sink:none\n");  // starts empty
  // And it works from there on.
  ASSERT_TRUE((*s)->putTask("sink", 0, StatusEntry{State::kRunning, "", "w", 1, 1}).isOk());
  auto again = openFileStatusStore(dir.path());
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ((*again)->tasks("sink").size(), 1u);
}

TEST(FileStoreDamage, EveryStoreFileIs0600) {
  TempDir dir;
  writeConfigs(dir.path());
  writePositions(dir.path());
  writeStatuses(dir.path());
  for (const char* name : {"configs.json", "positions.json", "status.json", "configs.json.prev",
                           "positions.json.prev", "status.json.prev"}) {
    EXPECT_EQ(modeOf(dir.file(name)), 0600u) << name;
  }
}

TEST(FileStoreDamage, Existing0644FileBecomes0600AtNextWrite) {
  TempDir dir;
  writeConfigs(dir.path());
  ::chmod(dir.file("configs.json").c_str(), 0644);
  ::chmod(dir.file("configs.json.prev").c_str(), 0644);
  auto s = openFileConfigStore(dir.path());
  ASSERT_TRUE(s.isOk());
  ASSERT_TRUE((*s)->putTargetState("sink", TargetState::kStarted).isOk());
  EXPECT_EQ(modeOf(dir.file("configs.json")), 0600u);
  EXPECT_EQ(modeOf(dir.file("configs.json.prev")), 0600u);  // the copy that was 0644
}

// ------------------------------------------------------------------------------------------------
// Bit flips at every byte of each file: never loaded as true.

// Flips one bit of every byte of `file` in turn (the bit chosen by the position, so every bit is
// used across the file) and checks what `open` loads: the current state when the flip changed no
// data, else the previous one.
void flipEveryByte(const TempDir& dir, const std::string& file, const TwoStates& states,
                   const std::function<std::string(std::vector<std::string>*)>& open) {
  const std::string path = dir.file(file);
  const std::string good = readText(path);
  ASSERT_FALSE(good.empty());
  int previous = 0;
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (int bit : {static_cast<int>(i % 8), static_cast<int>((i + 3) % 8)}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      writeText(path, bad);
      std::vector<std::string> warnings;
      std::string loaded = open(&warnings);
      if (loaded == states.first) {
        ++previous;
        EXPECT_NE(joined(warnings).find(file + ".prev"), std::string::npos)
            << "byte " << i << " bit " << bit << ": " << joined(warnings);
      } else {
        EXPECT_EQ(loaded, states.second) << "byte " << i << " bit " << bit;
      }
    }
  }
  EXPECT_GT(previous, static_cast<int>(good.size()));  // most flips are caught
  writeText(path, good);
}

TEST(FileStoreDamage, ConfigBitFlipsAreNeverLoadedAsTrue) {
  TempDir dir;
  TwoStates states = writeConfigs(dir.path());
  flipEveryByte(dir, "configs.json", states, [&](std::vector<std::string>* warnings) {
    auto s = openFileConfigStore(dir.path());
    if (!s.isOk()) return "open failed: " + s.status().toString();
    *warnings = (*s)->openWarnings();
    return describeConfigs(**s);
  });
}

TEST(FileStoreDamage, PositionBitFlipsAreNeverLoadedAsTrue) {
  TempDir dir;
  TwoStates states = writePositions(dir.path());
  flipEveryByte(dir, "positions.json", states, [&](std::vector<std::string>* warnings) {
    auto s = openFilePositionStore(dir.path());
    if (!s.isOk()) return "open failed: " + s.status().toString();
    *warnings = (*s)->openWarnings();
    return describePositions(**s, {"src"});
  });
}

TEST(FileStoreDamage, StatusBitFlipsAreNeverLoadedAsTrue) {
  TempDir dir;
  TwoStates states = writeStatuses(dir.path());
  flipEveryByte(dir, "status.json", states, [&](std::vector<std::string>* warnings) {
    auto s = openFileStatusStore(dir.path());
    if (!s.isOk()) return "open failed: " + s.status().toString();
    *warnings = (*s)->openWarnings();
    return describeStatus(**s, {"sink"});
  });
}

// ------------------------------------------------------------------------------------------------
// Fallback and its limits

TEST(FileStoreDamage, FallbackIsLoggedAsAWarningThatSaysWhatMayBeMissing) {
  TempDir dir;
  TwoStates states = writeConfigs(dir.path());
  writeText(dir.file("configs.json"), "{\"format\": 2, \"conn");
  auto s = openFileConfigStore(dir.path());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(describeConfigs(**s), states.first);
  std::string w = joined((*s)->openWarnings());
  EXPECT_NE(w.find(dir.file("configs.json")), std::string::npos) << w;
  EXPECT_NE(w.find("not valid JSON"), std::string::npos) << w;
  EXPECT_NE(w.find(dir.file("configs.json.prev")), std::string::npos) << w;
  EXPECT_NE(w.find("may be missing"), std::string::npos) << w;
  // The next change writes a good current copy and keeps the good .prev.
  ASSERT_TRUE((*s)->putTargetState("sink", TargetState::kStopped).isOk());
  auto again = openFileConfigStore(dir.path());
  ASSERT_TRUE(again.isOk());
  EXPECT_TRUE((*again)->openWarnings().empty()) << joined((*again)->openWarnings());
  EXPECT_NE(describeConfigs(**again).find("target=STOPPED"), std::string::npos);
}

TEST(FileStoreDamage, BothConfigCopiesDamagedIsDataLossNamingBothAndTheFix) {
  TempDir dir;
  writeConfigs(dir.path());
  writeText(dir.file("configs.json"), "");
  std::string prev = readText(dir.file("configs.json.prev"));
  prev[prev.find("corr") + 1] ^= 0x02;
  writeText(dir.file("configs.json.prev"), prev);
  auto s = openFileConfigStore(dir.path());
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss);
  const std::string& m = s.status().message();
  EXPECT_NE(m.find(dir.file("configs.json") + " is damaged: the file is empty"), std::string::npos)
      << m;
  EXPECT_NE(m.find(dir.file("configs.json.prev") + " is damaged: checksum mismatch"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("backup"), std::string::npos) << m;
}

TEST(FileStoreDamage, BothPositionCopiesDamagedIsDataLoss) {
  TempDir dir;
  writePositions(dir.path());
  writeText(dir.file("positions.json"), "{");
  writeText(dir.file("positions.json.prev"), "[]");
  auto s = openFilePositionStore(dir.path());
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(s.status().message().find(dir.file("positions.json.prev")), std::string::npos)
      << s.status().message();
}

TEST(FileStoreDamage, BothStatusCopiesDamagedStartsEmptyWithWarning) {
  TempDir dir;
  writeStatuses(dir.path());
  writeText(dir.file("status.json"), "garbage");
  writeText(dir.file("status.json.prev"), "{\"format\": 2}");
  auto s = openFileStatusStore(dir.path());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(describeStatus(**s, {"sink"}), "sink:none\n");
  std::string w = joined((*s)->openWarnings());
  EXPECT_NE(w.find(dir.file("status.json")), std::string::npos) << w;
  EXPECT_NE(w.find("empty"), std::string::npos) << w;
}

TEST(FileStoreDamage, DamagedCurrentStatusUsesPrevious) {
  TempDir dir;
  TwoStates states = writeStatuses(dir.path());
  writeText(dir.file("status.json"), "");
  auto s = openFileStatusStore(dir.path());
  ASSERT_TRUE(s.isOk());
  EXPECT_EQ(describeStatus(**s, {"sink"}), states.first);
  EXPECT_FALSE((*s)->openWarnings().empty());
}

TEST(FileStoreDamage, TruncatedCurrentFilesFallBack) {
  TempDir dir;
  TwoStates configs = writeConfigs(dir.path());
  TwoStates positions = writePositions(dir.path());
  const std::string c = readText(dir.file("configs.json"));
  const std::string p = readText(dir.file("positions.json"));
  for (std::size_t n = 0; n + 1 < c.size(); n += 7) {
    writeText(dir.file("configs.json"), c.substr(0, n));
    auto s = openFileConfigStore(dir.path());
    ASSERT_TRUE(s.isOk()) << n << ": " << s.status().toString();
    EXPECT_EQ(describeConfigs(**s), configs.first) << n;
  }
  for (std::size_t n = 0; n + 1 < p.size(); n += 5) {
    writeText(dir.file("positions.json"), p.substr(0, n));
    auto s = openFilePositionStore(dir.path());
    ASSERT_TRUE(s.isOk()) << n << ": " << s.status().toString();
    EXPECT_EQ(describePositions(**s, {"src"}), positions.first) << n;
  }
}

TEST(FileStoreDamage, TruncatedWithoutPrevIsDataLoss) {
  TempDir dir;
  {
    auto s = openFileConfigStore(dir.path());
    ASSERT_TRUE(s.isOk());
    ASSERT_TRUE((*s)->putConnector("a", {{"k", "v"}}, TargetState::kStarted).isOk());
  }
  std::string c = readText(dir.file("configs.json"));
  writeText(dir.file("configs.json"), c.substr(0, c.size() / 2));
  auto s = openFileConfigStore(dir.path());
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(s.status().message().find(dir.file("configs.json.prev") + " is missing"),
            std::string::npos)
      << s.status().message();
}

TEST(FileStoreDamage, MissingCurrentWithPrevUsesPrev) {
  TempDir dir;
  TwoStates configs = writeConfigs(dir.path());
  TwoStates positions = writePositions(dir.path());
  fs::remove(dir.file("configs.json"));
  fs::remove(dir.file("positions.json"));
  auto c = openFileConfigStore(dir.path());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(describeConfigs(**c), configs.first);
  EXPECT_NE(joined((*c)->openWarnings()).find("is missing"), std::string::npos);
  auto p = openFilePositionStore(dir.path());
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_EQ(describePositions(**p, {"src"}), positions.first);
  EXPECT_NE(joined((*p)->openWarnings()).find("positions"), std::string::npos);
}

// A checksummed file whose contents are not a store document (a bug, or an edit that kept the
// checksum line and happened to match): the previous copy is used, as for any other damage.
TEST(FileStoreDamage, WrongShapeCurrentFallsBackToPrev) {
  TempDir dir;
  TwoStates configs = writeConfigs(dir.path());
  writeText(dir.file("configs.json"),
            R"({"format": 1, "connectors": {"a": {"config": {"k": 1}}}})");
  auto s = openFileConfigStore(dir.path());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(describeConfigs(**s), configs.first);
  EXPECT_NE(joined((*s)->openWarnings()).find("connectors.a"), std::string::npos)
      << joined((*s)->openWarnings());
  // The next change does not make the unloadable copy the previous one.
  const std::string prev = readText(dir.file("configs.json.prev"));
  ASSERT_TRUE((*s)->putTargetState("sink", TargetState::kStopped).isOk());
  EXPECT_EQ(readText(dir.file("configs.json.prev")), prev);
}

// ------------------------------------------------------------------------------------------------
// Format 1 (older versions) and the crash states of a write

TEST(FileStoreDamage, Format1FilesLoadUncheckedAndAreRewrittenAsFormat2) {
  TempDir dir;
  const std::string v1 = R"({
 "connectors": {
  "sink": {
   "config": {"connector.class": "FileStreamSink", "topics": "corr"},
   "generation": 2,
   "target": "STARTED",
   "tasks": [{"topics": "corr"}]
  }
 },
 "format": 1
}
)";
  writeText(dir.file("configs.json"), v1);
  ::chmod(dir.file("configs.json").c_str(), 0644);
  writeText(dir.file("positions.json"),
            R"({"format": 1, "connectors": {"src": [
                {"partition": {"f": "a"}, "offset": {"p": "7"}}]}})");
  auto s = openFileConfigStore(dir.path());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(describeConfigs(**s),
            "sink:{connector.class=FileStreamSink;topics=corr;} target=STARTED gen=2 "
            "tasks={topics=corr;}\n");
  std::string w = joined((*s)->openWarnings());
  EXPECT_NE(w.find(dir.file("configs.json")), std::string::npos) << w;
  EXPECT_NE(w.find("checksum"), std::string::npos) << w;
  auto p = openFilePositionStore(dir.path());
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_EQ(describePositions(**p, {"src"}), "src:{f=a;}->{p=7;}\n");
  EXPECT_FALSE((*p)->openWarnings().empty());

  ASSERT_TRUE((*s)->putTargetState("sink", TargetState::kPaused).isOk());
  std::string now = readText(dir.file("configs.json"));
  EXPECT_NE(now.find("\"format\": 2"), std::string::npos) << now;
  EXPECT_NE(now.find("\"checksum\": \"crc32c:"), std::string::npos) << now;
  EXPECT_EQ(readText(dir.file("configs.json.prev")), v1);  // the old version's file, to go back
  EXPECT_EQ(modeOf(dir.file("configs.json")), 0600u);
  auto reopened = openFileConfigStore(dir.path());
  ASSERT_TRUE(reopened.isOk());
  EXPECT_TRUE((*reopened)->openWarnings().empty()) << joined((*reopened)->openWarnings());
}

TEST(FileStoreDamage, CrashBetweenWriteStepsLeavesLoadableState) {
  TempDir dir;
  TwoStates states = writeConfigs(dir.path());
  const std::string path = dir.file("configs.json");
  // What each step of a write leaves when the process dies right after it.
  writeText(path + ".tmp", "{\"format\": 2, \"connectors\": {\"sink\": {\"con");  // torn temp
  fs::create_hard_link(path, path + ".prev.tmp");                            // link made
  {
    auto s = openFileConfigStore(dir.path());
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    EXPECT_EQ(describeConfigs(**s), states.second);
    EXPECT_TRUE((*s)->openWarnings().empty()) << joined((*s)->openWarnings());
  }
  fs::rename(path + ".prev.tmp", path + ".prev");  // .prev replaced, current not yet
  {
    auto s = openFileConfigStore(dir.path());
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    EXPECT_EQ(describeConfigs(**s), states.second);
    // The next write completes and leaves no temporary files.
    ASSERT_TRUE((*s)->putTargetState("sink", TargetState::kStopped).isOk());
  }
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_FALSE(fs::exists(path + ".prev.tmp"));
  auto s = openFileConfigStore(dir.path());
  ASSERT_TRUE(s.isOk());
  EXPECT_NE(describeConfigs(**s).find("target=STOPPED"), std::string::npos);
}

}  // namespace
}  // namespace ferry::store
