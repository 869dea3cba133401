// Unit tests of checked JSON state files (src/core/checked_file.h): checksum, the previous copy,
// fallback and its limits, damage of every kind (bit flips, truncation, NUL bytes, a damaged
// checksum member), crashes between the steps of a write, file modes.
#include "tests/unit/temp_files.h"
#include "core/checked_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/crc32c.h"
#include "core/fs.h"

namespace ferry::core {
namespace {

namespace fs = std::filesystem;
using ferry::testing::modeOf;
using ferry::testing::readText;
using ferry::testing::writeText;

using ferry::testing::TempDir;
using nlohmann::json;
using From = CheckedJson::From;

json firstDoc() {
  return json{{"format", 2},
              {"connectors",
               {{"sink", {{"config", {{"topics", "corr"}, {"password", "s3cret"}}}}},
                {"src", {{"offset", {{"position", "1024"}}}, {"generation", 3}}}}}};
}

json secondDoc() {
  json d = firstDoc();
  d["connectors"]["src"]["offset"]["position"] = "2048";
  return d;
}

TEST(CheckedFile, WriteThenReadIsCurrentWithChecksum) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  auto r = readCheckedJson(path);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->from, From::kCurrent);
  EXPECT_EQ(r->warning, "");
  EXPECT_EQ(r->doc, firstDoc());
  std::string text = readText(path);
  std::string sum = *jsonChecksum(firstDoc());
  char expected[16];
  std::snprintf(expected, sizeof expected, "%08x",
                static_cast<unsigned>(crc32c(firstDoc().dump())));
  EXPECT_EQ(sum, std::string("crc32c:") + expected);
  EXPECT_NE(text.find("\"checksum\": \"" + sum + "\""), std::string::npos) << text;
  EXPECT_NE(text.find("\n \"connectors\": {"), std::string::npos) << "indented: " << text;
  EXPECT_EQ(modeOf(path), 0600u);
  EXPECT_FALSE(fs::exists(path + ".prev"));  // nothing was replaced yet
}

TEST(CheckedFile, SecondWriteKeepsFirstAsPrev) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  std::string firstText = readText(path);
  ASSERT_TRUE(writeCheckedJson(path, secondDoc()).isOk());
  EXPECT_EQ(readText(path + ".prev"), firstText);
  EXPECT_EQ(modeOf(path + ".prev"), 0600u);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_FALSE(fs::exists(path + ".prev.tmp"));
  auto r = readCheckedJson(path);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->doc, secondDoc());
}

TEST(CheckedFile, OldWideModeFileBecomes0600IncludingPrev) {
  TempDir dir;
  std::string path = dir.file("state.json");
  writeText(path, firstDoc().dump(1));  // an older format file, no checksum, 0644
  ::chmod(path.c_str(), 0644);
  ASSERT_TRUE(writeCheckedJson(path, secondDoc()).isOk());
  EXPECT_EQ(modeOf(path), 0600u);
  EXPECT_EQ(modeOf(path + ".prev"), 0600u);
  EXPECT_EQ(json::parse(readText(path + ".prev")), firstDoc());
}

TEST(CheckedFile, FileWithoutChecksumIsUncheckedWithWarning) {
  TempDir dir;
  std::string path = dir.file("state.json");
  writeText(path, firstDoc().dump(2));
  auto r = readCheckedJson(path);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->from, From::kUnchecked);
  EXPECT_EQ(r->doc, firstDoc());
  EXPECT_NE(r->warning.find(path), std::string::npos) << r->warning;
  EXPECT_NE(r->warning.find("checksum"), std::string::npos) << r->warning;
}

TEST(CheckedFile, OperatorEditWithChecksumLineRemovedIsUnchecked) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  json edited = firstDoc();
  edited["connectors"]["sink"]["config"]["topics"] = "other";
  writeText(path, edited.dump(1));
  auto r = readCheckedJson(path);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->from, From::kUnchecked);
  EXPECT_EQ(r->doc, edited);
}

// The defect this helper exists for: a flip inside a value that keeps the JSON valid.
TEST(CheckedFile, ValueBitFlipIsRejectedAndPrevUsed) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  ASSERT_TRUE(writeCheckedJson(path, secondDoc()).isOk());
  std::string text = readText(path);
  std::size_t at = text.find("\"corr\"");
  ASSERT_NE(at, std::string::npos);
  text[at + 2] ^= 0x02;  // corr -> cmrr: still valid JSON
  writeText(path, text);
  auto r = readCheckedJson(path);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->from, From::kPrevious);
  EXPECT_EQ(r->doc, firstDoc());
  EXPECT_NE(r->warning.find("checksum mismatch"), std::string::npos) << r->warning;
  EXPECT_NE(r->warning.find(path + ".prev"), std::string::npos) << r->warning;
}

// Every single-bit flip of every byte: the data read is never anything but one of the two
// documents written, and the current one only when the flip changed no data.
TEST(CheckedFile, NoBitFlipIsEverLoadedAsTrue) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  ASSERT_TRUE(writeCheckedJson(path, secondDoc()).isOk());
  const std::string good = readText(path);
  int usedPrev = 0, usedCurrent = 0;
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      writeText(path, bad);
      auto r = readCheckedJson(path);
      ASSERT_TRUE(r.isOk()) << "byte " << i << " bit " << bit << ": " << r.status().toString();
      if (r->from == From::kPrevious) {
        EXPECT_EQ(r->doc, firstDoc()) << "byte " << i << " bit " << bit;
        ++usedPrev;
      } else {
        EXPECT_EQ(r->doc, secondDoc()) << "byte " << i << " bit " << bit;
        ++usedCurrent;
      }
    }
  }
  EXPECT_GT(usedPrev, static_cast<int>(good.size()) * 7);  // nearly every flip is detected
  writeText(path, good);
}

TEST(CheckedFile, BitFlipWithoutPrevIsDataLossOrTheOriginal) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  const std::string good = readText(path);
  int lost = 0;
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    writeText(path, bad);
    auto r = readCheckedJson(path);
    if (r.isOk()) {
      EXPECT_EQ(r->doc, firstDoc()) << "byte " << i;
    } else {
      EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().toString();
      EXPECT_NE(r.status().message().find(path), std::string::npos);
      EXPECT_NE(r.status().message().find(path + ".prev is missing"), std::string::npos)
          << r.status().message();
      ++lost;
    }
  }
  EXPECT_GT(lost, 0);
}

TEST(CheckedFile, DamagedChecksumMemberNameIsDamageNotUnchecked) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  std::string text = readText(path);
  std::size_t at = text.find("\"checksum\"");
  ASSERT_NE(at, std::string::npos);
  text[at + 3] ^= 0x04;  // "checksum" -> "chacksum"
  writeText(path, text);
  auto r = readCheckedJson(path);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
}

TEST(CheckedFile, TruncationsAreNeverLoaded) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  ASSERT_TRUE(writeCheckedJson(path, secondDoc()).isOk());
  const std::string good = readText(path);
  for (std::size_t n = 0; n + 1 < good.size(); ++n) {  // the last byte is the newline
    writeText(path, good.substr(0, n));
    auto r = readCheckedJson(path);
    ASSERT_TRUE(r.isOk()) << n;
    EXPECT_EQ(r->from, From::kPrevious) << n;
    EXPECT_EQ(r->doc, firstDoc()) << n;
  }
}

TEST(CheckedFile, NulByteAndTrailingBytesAreDamage) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  std::string good = readText(path);
  writeText(path, good + std::string("\0{\"x\":1}", 8));
  EXPECT_EQ(readCheckedJson(path).status().code(), StatusCode::kDataLoss);
  writeText(path, good + "{}");
  EXPECT_EQ(readCheckedJson(path).status().code(), StatusCode::kDataLoss);
}

TEST(CheckedFile, DeepNestingIsDamageNotACrash) {
  EXPECT_EQ(parseCheckedJson(std::string(100000, '[')).status().code(), StatusCode::kDataLoss);
  std::string deep = "{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}";
  EXPECT_EQ(parseCheckedJson(deep).status().code(), StatusCode::kDataLoss);
  // Brackets inside strings do not count.
  auto ok = parseCheckedJson("{\"a\":\"" + std::string(5000, '[') + "\"}");
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_FALSE(ok->checked);
}

TEST(CheckedFile, MissingCurrentWithPrevUsesPrev) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  ASSERT_TRUE(writeCheckedJson(path, secondDoc()).isOk());
  fs::remove(path);
  auto r = readCheckedJson(path);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->from, From::kPrevious);
  EXPECT_EQ(r->doc, firstDoc());
  EXPECT_NE(r->warning.find("is missing"), std::string::npos) << r->warning;
}

TEST(CheckedFile, NeitherFileIsNotFound) {
  TempDir dir;
  EXPECT_EQ(readCheckedJson(dir.file("none.json")).status().code(), StatusCode::kNotFound);
}

TEST(CheckedFile, BothDamagedIsDataLossNamingBoth) {
  TempDir dir;
  std::string path = dir.file("state.json");
  writeText(path, "{\"format\": 2, \"checksum\": \"crc32c:00000000\"}");
  writeText(path + ".prev", "");
  auto r = readCheckedJson(path);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find(path + " is damaged: checksum mismatch"), std::string::npos) << m;
  EXPECT_NE(m.find(path + ".prev is damaged: the file is empty"), std::string::npos) << m;
}

TEST(CheckedFile, PrevWithoutChecksumIsUsedAndSaysSo) {
  TempDir dir;
  std::string path = dir.file("state.json");
  writeText(path + ".prev", firstDoc().dump());
  writeText(path, "{");
  auto r = readCheckedJson(path);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->from, From::kPrevious);
  EXPECT_NE(r->warning.find("no checksum"), std::string::npos) << r->warning;
}

TEST(CheckedFile, UnreadableCurrentIsAnErrorNotAFallback) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  ASSERT_TRUE(writeCheckedJson(path, secondDoc()).isOk());
  fs::remove(path);
  fs::create_directory(path);  // cannot be read as a file (root ignores permission bits)
  auto r = readCheckedJson(path);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().toString();
  EXPECT_NE(r.status().message().find(path), std::string::npos);
}

TEST(CheckedFile, DamagedCurrentDoesNotReplaceGoodPrev) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  ASSERT_TRUE(writeCheckedJson(path, secondDoc()).isOk());
  const std::string prevText = readText(path + ".prev");
  writeText(path, "{\"broken\": ");
  json third = secondDoc();
  third["format"] = 3;
  ASSERT_TRUE(writeCheckedJson(path, third).isOk());
  EXPECT_EQ(readText(path + ".prev"), prevText);  // still the last good copy
  auto r = readCheckedJson(path);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->doc, third);
}

// A crash can stop a write after any step; each leaves a state that loads, and the next write
// completes normally.
TEST(CheckedFile, CrashBetweenStepsLeavesLoadableState) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  ASSERT_TRUE(writeCheckedJson(path, secondDoc()).isOk());
  json third = secondDoc();
  third["connectors"]["src"]["offset"]["position"] = "4096";

  auto expectLoads = [&](const json& want, const char* step) {
    auto r = readCheckedJson(path);
    ASSERT_TRUE(r.isOk()) << step << ": " << r.status().toString();
    EXPECT_EQ(r->from, From::kCurrent) << step;
    EXPECT_EQ(r->doc, want) << step;
  };
  // 1. The temp file half written (not yet fsynced when the power went).
  writeText(path + ".tmp", "{\"format\": 2, \"conn");
  expectLoads(secondDoc(), "temp file torn");
  // 2. The temp file whole, the link made but not yet renamed over .prev.
  fs::create_hard_link(path, path + ".prev.tmp");
  expectLoads(secondDoc(), "link made");
  // 3. The link renamed over .prev (current and .prev are the same file now).
  fs::rename(path + ".prev.tmp", path + ".prev");
  expectLoads(secondDoc(), ".prev replaced");
  // The next write after each of these completes and cleans up.
  fs::create_hard_link(path, path + ".prev.tmp");
  ASSERT_TRUE(writeCheckedJson(path, third).isOk());
  expectLoads(third, "next write");
  EXPECT_EQ(json::parse(readText(path + ".prev")).value("connectors", json())["src"]["offset"]
                ["position"],
            "2048");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_FALSE(fs::exists(path + ".prev.tmp"));
}

// A reader's own check: a copy it calls damaged is skipped like a checksum mismatch; any other
// verdict (a newer format) stops the search.
TEST(CheckedFile, AcceptCheckIsPartOfUsable) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  ASSERT_TRUE(writeCheckedJson(path, json{{"format", "two"}}).isOk());
  std::vector<std::string> seen;
  auto formatIsNumber = [&](const json& doc, const std::string& file) -> Status {
    seen.push_back(file);
    if (!doc["format"].is_number_integer()) {
      return Status::dataLoss("damaged: format is not a number");
    }
    if (doc["format"].get<int>() > 2) return Status::incompatible(file + " is too new");
    return Status::ok();
  };
  auto r = readCheckedJson(path, formatIsNumber);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->from, From::kPrevious);
  EXPECT_EQ(r->doc, firstDoc());
  EXPECT_NE(r->warning.find("format is not a number"), std::string::npos) << r->warning;
  EXPECT_EQ(seen, (std::vector<std::string>{path, path + ".prev"}));

  ASSERT_TRUE(writeCheckedJson(path, json{{"format", 3}}).isOk());
  auto newer = readCheckedJson(path, formatIsNumber);
  EXPECT_EQ(newer.status().code(), StatusCode::kIncompatible);

  writeText(path, "{");
  writeText(path + ".prev", "{\"format\": \"x\"}");
  auto none = readCheckedJson(path, formatIsNumber);
  EXPECT_EQ(none.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(none.status().message().find(".prev is damaged: format is not a number"),
            std::string::npos)
      << none.status().message();
}

TEST(CheckedFile, WriteKeepsPrevWhenTheReadersCheckRefusesCurrent) {
  TempDir dir;
  std::string path = dir.file("state.json");
  auto formatTwo = [](const json& doc, const std::string&) -> Status {
    return doc.value("format", 0) == 2 ? Status::ok() : Status::dataLoss("damaged: not format 2");
  };
  ASSERT_TRUE(writeCheckedJson(path, firstDoc(), formatTwo).isOk());
  ASSERT_TRUE(writeCheckedJson(path, json{{"format", 7}}, formatTwo).isOk());
  const std::string prev = readText(path + ".prev");  // firstDoc
  ASSERT_TRUE(writeCheckedJson(path, secondDoc(), formatTwo).isOk());
  EXPECT_EQ(readText(path + ".prev"), prev);  // {"format": 7} was not kept
  ASSERT_TRUE(writeCheckedJson(path, firstDoc(), formatTwo).isOk());
  EXPECT_EQ(json::parse(readText(path + ".prev")).value("connectors", json()),
            secondDoc()["connectors"]);
}

TEST(CheckedFile, BadDocumentsAreRefusedAndNothingIsWritten) {
  TempDir dir;
  std::string path = dir.file("state.json");
  ASSERT_TRUE(writeCheckedJson(path, firstDoc()).isOk());
  const std::string before = readText(path);
  EXPECT_EQ(writeCheckedJson(path, json::array({1, 2})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(writeCheckedJson(path, json{{"checksum", "x"}}).code(), StatusCode::kInvalidArgument);
  Status s = writeCheckedJson(path, json{{"k", std::string("\xff\xfe", 2)}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("UTF-8"), std::string::npos) << s.message();
  json deep = json::array();
  for (int i = 0; i < kMaxCheckedDepth; ++i) deep = json::array({deep});
  EXPECT_EQ(writeCheckedJson(path, json{{"deep", deep}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(readText(path), before);
  EXPECT_FALSE(fs::exists(path + ".prev"));
}

TEST(CheckedFile, WriteIntoMissingFolderFailsNamingIt) {
  TempDir dir;
  std::string path = dir.file("gone/state.json");
  Status s = writeCheckedJson(path, firstDoc());
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ferry::core
