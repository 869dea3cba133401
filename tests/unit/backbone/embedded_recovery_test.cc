// The embedded log under damage: what survives a bit flip, a zero-filled or garbage-filled range,
// a torn tail, a deleted segment or a group offset beyond the end, and what is reported. Every
// record carries its sequence number as its value ("m<i>", written at offset i), so a record read
// back proves itself at its offset.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <map>
#include <set>

#include "backbone/embedded/embedded.h"
#include "backbone/embedded/segment_codec.h"
#include "tests/unit/temp_files.h"

namespace ferry::backbone {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

using TempDir = ferry::testing::TempDir;

std::string readBytes(const std::string& path) { return ferry::testing::readText(path); }
void writeBytes(const std::string& path, const std::string& data) { ferry::testing::writeText(path, data); }

// Frame boundaries of a segment file: (position, offset) of every record.
std::vector<std::pair<std::size_t, std::int64_t>> frames(const std::string& data) {
  std::vector<std::pair<std::size_t, std::int64_t>> out;
  std::size_t pos = 0;
  while (pos < data.size()) {
    segment::DecodeState st;
    std::int64_t off = 0;
    const std::size_t n = segment::checkFrame(std::string_view(data).substr(pos), st, &off);
    if (n == 0) break;
    out.emplace_back(pos, off);
    pos += n;
  }
  return out;
}

class RecoveryTest : public ::testing::Test {
 protected:
  static constexpr int kRecords = 300;

  EmbeddedOptions options() {
    EmbeddedOptions o;
    o.dir = dir_.path();
    o.segmentBytes = 2048;  // about 50 records per segment: several segments
    return o;
  }
  std::unique_ptr<Backbone> open() { return open(options()); }
  std::unique_ptr<Backbone> open(EmbeddedOptions o) {
    auto b = openEmbeddedBackbone(o);
    EXPECT_TRUE(b.isOk()) << b.status().toString();
    return b.isOk() ? std::move(*b) : nullptr;
  }
  // Writes m<from>..m<to-1> to queue 0 of `t`, one send per record, `batch` records per flush
  // (each flush is one write, so segments fill in steps).
  void produce(Backbone& b, int from, int to, int batch = 10) {
    auto p = b.createProducer({});
    ASSERT_TRUE(p.isOk());
    for (int i = from; i < to; ++i) {
      Message m;
      m.topic = "t";
      m.queue = 0;
      m.value = Bytes("m" + std::to_string(i));
      ASSERT_TRUE((*p)->send(std::move(m), nullptr).isOk());
      if ((i - from + 1) % batch == 0) {
        ASSERT_TRUE((*p)->flush(10s).isOk());
      }
    }
    ASSERT_TRUE((*p)->flush(10s).isOk());
  }
  void writeLog() {
    auto b = open();
    ASSERT_TRUE(b->admin().ensureTopic("t", 1).isOk());
    produce(*b, 0, kRecords);
    b->close();
  }
  std::vector<std::string> segments() {
    std::vector<std::string> out;
    for (auto& e : fs::directory_iterator(dir_.path() + "/topics/t/0")) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
  // Everything a new group reads: offset -> value.
  std::map<std::int64_t, std::string> readAll(Backbone& b, const std::string& group,
                                              std::vector<StorageIssue>* skipped = nullptr) {
    std::map<std::int64_t, std::string> out;
    auto c = b.createConsumer(group, "m", {});
    EXPECT_TRUE(c.isOk());
    EXPECT_TRUE((*c)->subscribe({"t"}, nullptr).isOk());
    std::vector<Message> batch;
    for (int round = 0; round < 1000; ++round) {
      batch.clear();
      auto n = (*c)->poll(batch, 100, 50ms);
      EXPECT_TRUE(n.isOk()) << n.status().toString();
      if (!n.isOk() || *n == 0) break;
      for (auto& m : batch) {
        EXPECT_TRUE(out.emplace(m.offset, m.value.str()).second) << "offset " << m.offset << " read twice";
      }
    }
    if (skipped) *skipped = (*c)->takeSkipped();
    (*c)->close();
    return out;
  }
  // Every record read is the one written at its offset; returns the offsets missing below `end`.
  std::set<std::int64_t> check(const std::map<std::int64_t, std::string>& got, std::int64_t end) {
    std::set<std::int64_t> missing;
    for (std::int64_t i = 0; i < end; ++i) {
      auto it = got.find(i);
      if (it == got.end()) {
        missing.insert(i);
      } else {
        EXPECT_EQ(it->second, "m" + std::to_string(i)) << "offset " << i;
      }
    }
    return missing;
  }
  std::int64_t end(Backbone& b) { return b.admin().endOffsets("t")->at({"t", 0}); }
  static bool reported(const Backbone& b, const std::string& kind, std::int64_t offset = -1) {
    for (const auto& i : b.storageIssues())
      if (i.kind == kind && (offset < 0 || (i.firstOffset <= offset && offset <= i.lastOffset))) return true;
    return false;
  }
  // New records written after the damage get offsets after every old one and reach a reader
  // that resumes where an earlier commit left it.
  void newRecordsArrive(Backbone& b, std::int64_t oldEnd) {
    EXPECT_GE(end(b), oldEnd);
    const std::int64_t before = end(b);
    produce(b, 100000, 100020);
    EXPECT_EQ(end(b), before + 20);
    auto got = readAll(b, "fresh-after");
    int fresh = 0;
    for (const auto& [off, v] : got)
      if (v.rfind("m1000", 0) == 0) {
        EXPECT_GE(off, oldEnd) << v << " reuses an old offset";
        ++fresh;
      }
    EXPECT_EQ(fresh, 20);
  }

  TempDir dir_{"ferry-rec"};
};

TEST_F(RecoveryTest, ABitFlipInAnyRecordOfAnySegmentLosesOnlyThatRecord) {
  writeLog();
  const auto segs = segments();
  ASSERT_GE(segs.size(), 4u);
  const fs::path pristine = fs::path(dir_.path()).parent_path() / (fs::path(dir_.path()).filename().string() + "-copy");
  fs::remove_all(pristine);
  fs::copy(dir_.path(), pristine, fs::copy_options::recursive);
  const std::vector<std::size_t> whichSeg{0, segs.size() / 2, segs.size() - 1};
  for (std::size_t si : whichSeg) {
    for (int which = 0; which < 3; ++which) {
      fs::remove_all(dir_.path());
      fs::copy(pristine, dir_.path(), fs::copy_options::recursive);
      const std::string seg = segments()[si];
      std::string data = readBytes(seg);
      const auto fr = frames(data);
      ASSERT_FALSE(fr.empty());
      const std::size_t r = which == 0 ? 0 : which == 1 ? fr.size() / 2 : fr.size() - 1;
      const std::size_t frameEnd = r + 1 < fr.size() ? fr[r + 1].first : data.size();
      const std::size_t at = fr[r].first + (frameEnd - fr[r].first) / 2;  // inside its payload
      data[at] = static_cast<char>(data[at] ^ 0x10);
      writeBytes(seg, data);
      const std::int64_t victim = fr[r].second;
      SCOPED_TRACE("segment " + std::to_string(si) + " record " + std::to_string(r) + " offset " +
                   std::to_string(victim));

      auto b = open();
      const auto missing = check(readAll(*b, "g"), kRecords);
      EXPECT_EQ(missing, std::set<std::int64_t>{victim});
      const bool tail = si == segs.size() - 1 && r == fr.size() - 1;
      EXPECT_TRUE(reported(*b, tail ? "missing" : "damaged", victim));
      EXPECT_EQ(end(*b), kRecords) << "the end never moves back";
      newRecordsArrive(*b, kRecords);
      b->close();
    }
  }
  fs::remove_all(pristine);
}

TEST_F(RecoveryTest, ZeroAndGarbageFilledRangesSkipOnlyTheRecordsTheyCover) {
  for (const char fill : {'\0', 'g'}) {
    fs::remove_all(dir_.path());
    fs::create_directories(dir_.path());
    writeLog();
    const auto segs = segments();
    // 256 bytes from the middle of the first segment, and of a middle one.
    std::set<std::int64_t> covered;
    for (std::size_t si : {std::size_t{0}, segs.size() / 2}) {
      std::string data = readBytes(segs[si]);
      const auto fr = frames(data);
      const std::size_t from = data.size() / 3, to = std::min(data.size(), from + 256);
      for (std::size_t i = 0; i < fr.size(); ++i) {
        const std::size_t fe = i + 1 < fr.size() ? fr[i + 1].first : data.size();
        if (fr[i].first < to && fe > from) covered.insert(fr[i].second);
      }
      std::fill(data.begin() + static_cast<std::ptrdiff_t>(from), data.begin() + static_cast<std::ptrdiff_t>(to), fill);
      writeBytes(segs[si], data);
    }
    SCOPED_TRACE(fill == '\0' ? "zeros" : "garbage");
    auto b = open();
    std::vector<StorageIssue> skipped;
    const auto missing = check(readAll(*b, "g", &skipped), kRecords);
    EXPECT_EQ(missing, covered);
    for (std::int64_t off : covered) EXPECT_TRUE(reported(*b, "damaged", off)) << off;
    // The reader was told what it stepped over.
    std::set<std::int64_t> told;
    for (const auto& s : skipped)
      for (std::int64_t o = s.firstOffset; o <= s.lastOffset; ++o) told.insert(o);
    EXPECT_EQ(told, covered);
    EXPECT_EQ(end(*b), kRecords);
    newRecordsArrive(*b, kRecords);
    b->close();
    // The damaged bytes are kept (never deleted), and reported again at the next open.
    auto again = open();
    EXPECT_EQ(check(readAll(*again, "g2"), kRecords), covered);
  }
}

TEST_F(RecoveryTest, TornTailIsCutButTheEndStaysWhereTheCheckpointSawIt) {
  writeLog();
  const std::string last = segments().back();
  const std::string data = readBytes(last);
  const auto fr = frames(data);
  const std::size_t lastStart = fr.back().first;
  for (std::size_t cut = lastStart; cut < data.size(); cut += 3) {
    writeBytes(last, data.substr(0, cut));
    auto b = open();
    EXPECT_EQ(check(readAll(*b, "g" + std::to_string(cut)), kRecords), std::set<std::int64_t>{kRecords - 1})
        << "cut at " << cut;
    EXPECT_EQ(end(*b), kRecords) << "cut at " << cut << ": offset " << kRecords - 1 << " would be handed out again";
    EXPECT_TRUE(reported(*b, "missing", kRecords - 1));
    b->close();
    writeBytes(last, data);
    fs::remove_all(dir_.path() + "/quarantine");
  }
}

TEST_F(RecoveryTest, TornTailBytesAreKeptInQuarantine) {
  writeLog();
  const std::string last = segments().back();
  std::string data = readBytes(last);
  const std::string torn = "\x40\x00\x00\x00\x01\x02\x03\x04half a record";
  writeBytes(last, data + torn);
  auto b = open();
  EXPECT_EQ(fs::file_size(last), data.size());
  EXPECT_TRUE(reported(*b, "torn-tail"));
  std::string kept;
  for (auto& e : fs::recursive_directory_iterator(dir_.path() + "/quarantine"))
    if (e.is_regular_file()) kept = readBytes(e.path());
  EXPECT_EQ(kept, torn);
}

TEST_F(RecoveryTest, PastTheLastCheckpointAGapEndsTheLogLikeATornWrite) {
  // A power loss keeps a later page of an unfinished write and loses an earlier one: zeros, then
  // records that were never acknowledged. Past the recovery point that is a torn write (cut and
  // quarantined, no loss reported); before it, the same bytes would be damage (kept around).
  writeLog();
  const fs::path saved = fs::path(dir_.path()) / "saved-checkpoint";
  fs::create_directories(saved);
  for (const char* f : {"checkpoint.json", "checkpoint.json.prev"})
    if (fs::exists(dir_.path() + "/" + f)) fs::copy_file(dir_.path() + "/" + f, saved / f);
  {
    auto b = open();
    produce(*b, kRecords, kRecords + 20, 20);  // one write past the checkpoint
    b->close();
  }
  for (const char* f : {"checkpoint.json", "checkpoint.json.prev"}) {
    fs::remove(dir_.path() + "/" + f);
    if (fs::exists(saved / f)) fs::copy_file(saved / f, dir_.path() + "/" + f);
  }
  fs::remove_all(saved);
  const std::string last = segments().back();
  std::string data = readBytes(last);
  const auto fr = frames(data);
  std::size_t gapAt = 0;
  std::int64_t firstCut = -1;
  for (const auto& [pos, off] : fr)
    if (off == kRecords + 5) {
      gapAt = pos;
      firstCut = off;
    }
  ASSERT_GT(gapAt, 0u);
  std::fill(data.begin() + static_cast<std::ptrdiff_t>(gapAt), data.begin() + static_cast<std::ptrdiff_t>(gapAt + 60),
            '\0');
  writeBytes(last, data);
  auto b = open();
  EXPECT_EQ(fs::file_size(last), gapAt);
  EXPECT_TRUE(reported(*b, "torn-tail"));
  EXPECT_FALSE(reported(*b, "damaged"));
  EXPECT_EQ(end(*b), firstCut);
  auto got = readAll(*b, "g");
  EXPECT_EQ(got.size(), static_cast<std::size_t>(firstCut));
  EXPECT_EQ(got.rbegin()->second, "m" + std::to_string(firstCut - 1));
  std::string kept;
  for (auto& e : fs::recursive_directory_iterator(dir_.path() + "/quarantine"))
    if (e.is_regular_file()) kept = readBytes(e.path());
  EXPECT_EQ(kept.size(), data.size() - gapAt) << "the cut bytes, intact-looking records included, are kept";
}

TEST_F(RecoveryTest, AGroupOffsetBecomesVisibleOnlyOnceItIsOnDisk) {
  auto b = open();
  ASSERT_TRUE(b->admin().ensureTopic("t", 1).isOk());
  produce(*b, 0, 10);
  fs::remove_all(dir_.path() + "/groups");  // the write of the group file fails
  auto c = b->createConsumer("g", "m", {});
  ASSERT_TRUE((*c)->subscribe({"t"}, nullptr).isOk());
  EXPECT_FALSE((*c)->commit({{{"t", 0}, 10}}).isOk());
  auto committed = b->admin().committedOffsets("g");
  ASSERT_TRUE(committed.isOk());
  EXPECT_EQ(committed->count({"t", 0}), 0u) << "an offset that never reached the disk was shown as committed";
}

TEST_F(RecoveryTest, AGroupOffsetBeyondTheEndIsNeverReused) {
  // What a power loss with unsynced data leaves: the group's offset file (fsynced at every commit)
  // is ahead of the log. Without a checkpoint to say where the log ended, the group's offset must.
  EmbeddedOptions o = options();
  o.fsync = FsyncPolicy::kNever;
  {
    auto b = open(o);
    ASSERT_TRUE(b->admin().ensureTopic("t", 1).isOk());
    produce(*b, 0, 20);
    auto c = b->createConsumer("sink", "m", {});
    ASSERT_TRUE((*c)->subscribe({"t"}, nullptr).isOk());
    std::vector<Message> batch;
    ASSERT_EQ(*(*c)->poll(batch, 100, 1s), 20u);
    ASSERT_TRUE((*c)->commit({{{"t", 0}, 20}}).isOk());
    (*c)->close();
    b->close();
  }
  const std::string last = segments().back();
  fs::resize_file(last, fs::file_size(last) - 10);
  fs::remove(dir_.path() + "/checkpoint.json");
  auto b = open(o);
  EXPECT_TRUE(reported(*b, "group-ahead", 19));
  EXPECT_EQ(end(*b), 20);
  produce(*b, 20, 40);
  auto c = b->createConsumer("sink", "m", {});
  ASSERT_TRUE((*c)->subscribe({"t"}, nullptr).isOk());
  std::vector<Message> batch, all;
  for (int i = 0; i < 20 && all.size() < 20; ++i) {
    batch.clear();
    ASSERT_TRUE((*c)->poll(batch, 100, 300ms).isOk());
    all.insert(all.end(), batch.begin(), batch.end());
  }
  ASSERT_EQ(all.size(), 20u) << "the sink missed new records that reused offsets below its commit";
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].value.str(), "m" + std::to_string(20 + i));
    EXPECT_EQ(all[i].offset, static_cast<std::int64_t>(20 + i));
  }
}

TEST_F(RecoveryTest, ADeletedSegmentIsReportedAndTheEndNeverMovesBack) {
  writeLog();
  auto segs = segments();
  ASSERT_GE(segs.size(), 4u);
  const auto middle = frames(readBytes(segs[1]));
  const auto lastFrames = frames(readBytes(segs.back()));
  fs::remove(segs[1]);
  fs::remove(segs.back());
  auto b = open();
  std::set<std::int64_t> gone;
  for (const auto& f : middle) gone.insert(f.second);
  for (const auto& f : lastFrames) gone.insert(f.second);
  EXPECT_EQ(check(readAll(*b, "g"), kRecords), gone);
  EXPECT_TRUE(reported(*b, "missing", middle.front().second));
  EXPECT_TRUE(reported(*b, "missing", lastFrames.back().second));
  EXPECT_EQ(end(*b), kRecords);
  newRecordsArrive(*b, kRecords);
}

TEST_F(RecoveryTest, ADeletedFirstSegmentIsNotMistakenForRetention) {
  writeLog();
  auto segs = segments();
  const auto first = frames(readBytes(segs[0]));
  fs::remove(segs[0]);
  auto b = open();
  EXPECT_TRUE(reported(*b, "missing", first.front().second));
}

TEST_F(RecoveryTest, DamageThatAppearsWhileOpenIsSkippedByReaders) {
  auto b = open();
  ASSERT_TRUE(b->admin().ensureTopic("t", 1).isOk());
  produce(*b, 0, kRecords);
  const std::string seg = segments()[1];
  std::string data = readBytes(seg);
  const auto fr = frames(data);
  const std::size_t r = fr.size() / 2;
  data[fr[r].first + 12] = static_cast<char>(data[fr[r].first + 12] ^ 0x01);
  {
    const int fd = ::open(seg.c_str(), O_WRONLY);  // in place: the backbone keeps its descriptor
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
    ::close(fd);
  }
  std::vector<StorageIssue> skipped;
  EXPECT_EQ(check(readAll(*b, "g", &skipped), kRecords), std::set<std::int64_t>{fr[r].second});
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].firstOffset, fr[r].second);
  EXPECT_EQ(skipped[0].lastOffset, fr[r].second);
  EXPECT_TRUE(reported(*b, "damaged", fr[r].second));
  // A second reader steps over it too.
  EXPECT_EQ(check(readAll(*b, "g2"), kRecords), std::set<std::int64_t>{fr[r].second});
}

TEST_F(RecoveryTest, ARecordOverTheLimitIsRefusedAtSend) {
  EmbeddedOptions o = options();
  o.maxRecordBytes = 4096;
  auto b = open(o);
  ASSERT_TRUE(b->admin().ensureTopic("t", 1).isOk());
  auto p = b->createProducer({});
  Message big;
  big.topic = "t";
  big.value = Bytes(std::string(5000, 'x'));
  Status s = (*p)->send(std::move(big), nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("backbone.embedded.max.record.bytes"), std::string::npos) << s.toString();
  Message fits;
  fits.topic = "t";
  fits.value = Bytes(std::string(4000, 'x'));
  EXPECT_TRUE((*p)->send(std::move(fits), nullptr).isOk());
  EXPECT_TRUE((*p)->flush(10s).isOk());
}

TEST_F(RecoveryTest, ALongGroupNameStillGetsAnOffsetFile) {
  auto b = open();
  ASSERT_TRUE(b->admin().ensureTopic("t", 1).isOk());
  const std::string group = "connect-" + std::string(249, 'n');
  ASSERT_TRUE(b->admin().setCommittedOffsets(group, {{{"t", 0}, 0}}).isOk());
  b->close();
  auto again = open();
  EXPECT_EQ(again->admin().committedOffsets(group)->at({"t", 0}), 0);
}

TEST_F(RecoveryTest, TopicsAreFoundFromTheirFoldersWhenTopicsJsonIsLost) {
  writeLog();
  writeBytes(dir_.path() + "/topics.json", "{\"topics\": {\"t\": 1");  // damaged
  auto b = open();
  EXPECT_TRUE(check(readAll(*b, "g"), kRecords).empty());
}

TEST(SegmentRecovery, FindsEveryIntactRecordAroundDamage) {
  std::string data;
  for (int i = 0; i < 100; ++i) {
    Message m;
    m.value = Bytes("v" + std::to_string(i));
    segment::encode(m, 1000 + i, data);
  }
  const auto clean = segment::recoverSegment(data, 1000, 64);
  EXPECT_EQ(clean.records, 100u);
  EXPECT_FALSE(clean.tail.has_value());
  EXPECT_TRUE(clean.damage.empty());
  // Every single-byte change of every position: at most the record(s) covering it are lost.
  for (std::size_t at = 0; at < data.size(); at += 7) {
    std::string bad = data;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    const auto r = segment::recoverSegment(bad, 1000, 64);
    EXPECT_GE(r.records, 99u) << "byte " << at;
  }
}

}  // namespace
}  // namespace ferry::backbone
