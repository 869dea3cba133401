// The embedded backbone: a durable local log (see ../README.md for the design).
//
// Threading: producers append under a per-queue mutex; one flusher thread writes, fsyncs and runs
// callbacks (no lock held while calling out); the backbone mutex guards topics and groups, and a
// separate one orders group-offset file writes. A consumer is used by one thread; it talks to its
// group only through the backbone's locked methods. Consumers wait on one condition variable that
// every write, rebalance and queue release signals.
#include "backbone/embedded/embedded.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <unordered_map>

#include "core/allocation.h"
#include "backbone/embedded/segment_codec.h"
#include "core/clock.h"
#include "core/checked_file.h"
#include "core/crc32c.h"
#include "core/fs.h"
#include "core/logging.h"
#include "core/thread.h"

namespace ferry::backbone {

std::optional<FsyncPolicy> parseFsyncPolicy(std::string_view s) {
  if (s == "always") return FsyncPolicy::kAlways;
  if (s == "interval") return FsyncPolicy::kInterval;
  if (s == "never") return FsyncPolicy::kNever;
  return std::nullopt;
}

namespace {

using namespace std::chrono_literals;
constexpr std::size_t kIndexEvery = 64;                // records between sparse index entries
constexpr std::size_t kFlushNowBytes = 256u << 10;     // pending bytes that wake the flusher at once
constexpr std::size_t kFirstReadChunk = 64u << 10;      // a poll reads this much first, then doubles
constexpr std::size_t kMaxReadChunk = 1u << 20;
constexpr std::int64_t kHandoverTimeoutMs = 30000;     // then a queue is taken from a silent owner
constexpr std::int64_t kMaxRaise = 1ll << 40;          // a group offset further beyond the end is implausible
constexpr std::size_t kMaxIssues = 10000;              // storage issues kept for reports

std::string segmentName(std::int64_t base) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%020lld.log", static_cast<long long>(base));
  return buf;
}

Status validTopicName(const std::string& t) {
  if (t.empty() || t.size() > 249 || t == "." || t == "..")
    return Status::invalidArgument("invalid topic name '" + t + "'");
  for (unsigned char c : t)
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-'))
      return Status::invalidArgument("invalid topic name '" + t + "': use letters, digits, '.', '_' and '-'");
  return Status::ok();
}

std::string fileSafe(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// The file name of a group's offsets: its name made file-safe, or, when that would not fit a
// file name, a prefix and a 64-bit hash of the whole name (the file holds the full name).
std::string groupFileName(const std::string& group) {
  std::string safe = fileSafe(group);
  if (safe.size() <= 200) return safe + ".json";
  char hash[32];
  std::snprintf(hash, sizeof(hash), "~%08x%08x", core::crc32c(group), core::crc32c(group, 0x9e3779b9u));
  return safe.substr(0, 180) + hash + ".json";
}

// The embedded backbone's small state files (topics.json, groups/*.json, checkpoint.json) are
// checked files (core/checked_file.h): a checksum, and the previous good copy to fall back to.
// The shape checks below are their `accept`: a copy of the wrong shape counts as damaged too.
Result<nlohmann::json> readStateFile(const std::string& path, const core::JsonCheck& accept) {
  FERRY_ASSIGN_OR_RETURN(core::CheckedJson c, core::readCheckedJson(path, accept));
  if (!c.warning.empty()) core::logger("backbone")->warn("{}", c.warning);
  return std::move(c.doc);
}

Status shapeError(const std::string& file, const std::string& what) {
  return Status::dataLoss(file + ": damaged: " + what);
}
Status topicsShape(const nlohmann::json& j, const std::string& file) {
  if (!j.contains("topics") || !j["topics"].is_object()) return shapeError(file, "no \"topics\" object");
  for (const auto& [name, q] : j["topics"].items())
    if (!q.is_number_integer() || q.get<std::int64_t>() < 1 || q.get<std::int64_t>() > 4096)
      return shapeError(file, "topic " + name + " has no valid queue count");
  return Status::ok();
}
Status groupShape(const nlohmann::json& j, const std::string& file) {
  if (!j.contains("group") || !j["group"].is_string()) return shapeError(file, "no \"group\" name");
  if (!j.contains("offsets") || !j["offsets"].is_array()) return shapeError(file, "no \"offsets\" list");
  for (const auto& o : j["offsets"])
    if (!o.is_object() || !o.contains("topic") || !o["topic"].is_string() || !o.contains("queue") ||
        !o["queue"].is_number_integer() || !o.contains("offset") || !o["offset"].is_number_integer() ||
        o["offset"].get<std::int64_t>() < 0)
      return shapeError(file, "an offset entry is not {topic, queue, offset}");
  return Status::ok();
}
Status checkpointShape(const nlohmann::json& j, const std::string& file) {
  if (!j.contains("queues") || !j["queues"].is_object()) return shapeError(file, "no \"queues\" object");
  for (const auto& [topic, queues] : j["queues"].items()) {
    if (!queues.is_object()) return shapeError(file, "topic " + topic + " is not an object");
    for (const auto& [q, v] : queues.items()) {
      if (q.empty() || q.size() > 4 || q.find_first_not_of("0123456789") != std::string::npos)
        return shapeError(file, "queue '" + q + "' is not a number");
      if (!v.is_object() || !v.contains("start") || !v["start"].is_number_integer() || !v.contains("end") ||
          !v["end"].is_number_integer())
        return shapeError(file, "queue " + topic + "-" + q + " has no start and end");
    }
  }
  return Status::ok();
}

// Bytes of a segment that did not decode, found at open or by a reader. Readers step over them;
// the records around them stay readable. Offsets firstLost..lastLost (inclusive; none when
// firstLost > lastLost) are the ones whose records were in these bytes.
struct DamagedRange {
  std::int64_t pos = 0;
  std::int64_t len = 0;
  std::int64_t firstLost = 0;
  std::int64_t lastLost = -1;
};

// One segment file. Shared so that a reader keeps the descriptor open while retention deletes it.
struct Segment {
  std::int64_t base = 0;
  std::string path;
  int fd = -1;
  std::int64_t size = 0;  // bytes written (readable)
  std::vector<std::pair<std::int64_t, std::int64_t>> index;  // sparse (offset, file position)
  std::vector<DamagedRange> damaged;                           // sorted by pos
  ~Segment() {
    if (fd >= 0) ::close(fd);
  }
};
using SegmentPtr = std::shared_ptr<Segment>;

struct PendingCallback {
  SendCallback cb;
  std::int32_t queue;
  std::int64_t offset;
};

// What the last checkpoint said about a queue (see EmbeddedBackbone::writeCheckpoint).
struct QueueCheckpoint {
  std::int64_t start = 0;  // first offset stored then
  std::int64_t end = 0;    // next offset to assign then
};

using IssueSink = std::function<void(StorageIssue)>;

std::string offsetsText(std::int64_t first, std::int64_t last) {
  if (first > last) return "no record";
  if (first == last) return "the record at offset " + std::to_string(first);
  return std::to_string(last - first + 1) + " records (offsets " + std::to_string(first) + ".." + std::to_string(last) + ")";
}

std::optional<std::int64_t> segmentBase(const std::string& name) {
  if (name.size() != 24 || name.compare(20, 4, ".log") != 0) return std::nullopt;
  std::int64_t base = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + 20, base);
  if (ec != std::errc() || p != name.data() + 20 || base < 0) return std::nullopt;
  return base;
}

// One queue of a topic: its segments, the offsets it assigned and the bytes waiting to be written.
class QueueLog {
 public:
  QueueLog(std::string dir, std::string topic, std::int32_t queue, const EmbeddedOptions& o, std::string quarantine,
           IssueSink report)
      : dir_(std::move(dir)),
        topic_(std::move(topic)),
        queue_(queue),
        o_(o),
        quarantine_(std::move(quarantine)),
        report_(std::move(report)) {}

  // Scans every segment (see ../README.md, "Recovery"): intact records are indexed whatever lies
  // between them; bad bytes followed by intact records are kept and skipped by readers; bad bytes
  // after the last intact record of the newest segment are a torn write: copied to quarantine/
  // and cut off. The end never goes below what `checkpoint` recorded, so no offset is handed out
  // twice.
  Status open(const std::optional<QueueCheckpoint>& checkpoint) {
    FERRY_RETURN_IF_ERROR(core::ensureDir(dir_));
    std::vector<std::pair<std::int64_t, std::string>> files;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (auto base = segmentBase(n)) files.emplace_back(*base, n);
      }
      ::closedir(d);
    }
    std::sort(files.begin(), files.end());
    std::int64_t expect = -1;  // next offset the previous segment leads us to expect
    for (std::size_t i = 0; i < files.size(); ++i) {
      const bool last = i + 1 == files.size();
      auto seg = std::make_shared<Segment>();
      seg->base = files[i].first;
      seg->path = dir_ + "/" + files[i].second;
      seg->fd = ::open(seg->path.c_str(), O_RDWR | O_CLOEXEC);
      if (seg->fd < 0) return core::errnoStatus("open", seg->path, errno);
      FERRY_ASSIGN_OR_RETURN(std::string data, core::readFile(seg->path));
      segment::Recovered rec = segment::recoverSegment(data, seg->base, kIndexEvery);
      if (last && checkpoint) pastRecoveryPoint(rec, data.size(), checkpoint->end);
      for (const auto& [off, pos] : rec.index) seg->index.emplace_back(off, static_cast<std::int64_t>(pos));
      if (expect >= 0 && seg->base > expect)
        report("missing", expect, seg->base - 1, 0,
               seg->path + " starts at offset " + std::to_string(seg->base) + " but the segment before it ends at " +
                   std::to_string(expect) + " (a segment file was deleted, or a write failed)");
      if (rec.firstOffset > seg->base && (expect < 0 || rec.firstOffset > std::max(expect, seg->base)))
        report("missing", std::max(expect, seg->base), rec.firstOffset - 1, 0,
               seg->path + ": its first record has offset " + std::to_string(rec.firstOffset));
      for (const auto& d : rec.damage) {
        DamagedRange r{static_cast<std::int64_t>(d.pos), static_cast<std::int64_t>(d.len), d.afterOffset + 1,
                       d.nextOffset - 1};
        seg->damaged.push_back(r);
        report("damaged", r.firstLost, r.lastLost, r.len,
               seg->path + ": " + std::to_string(d.len) + " damaged bytes at byte " + std::to_string(d.pos) + " (" +
                   d.error + ") are skipped; the records after them are kept");
      }
      seg->size = static_cast<std::int64_t>(data.size());
      std::int64_t segEnd = rec.lastOffset + 1;
      if (rec.tail) {
        const auto& t = *rec.tail;
        if (last) {
          FERRY_RETURN_IF_ERROR(quarantineTail(*seg, t.pos, std::string_view(data).substr(t.pos)));
          if (::ftruncate(seg->fd, static_cast<off_t>(t.pos)) != 0) return core::errnoStatus("truncate", seg->path, errno);
          ::fdatasync(seg->fd);
          seg->size = static_cast<std::int64_t>(t.pos);
          report("torn-tail", -1, -1, static_cast<std::int64_t>(t.len),
                 seg->path + ": an incomplete last write (" + std::to_string(t.len) + " bytes after byte " +
                     std::to_string(t.pos) + ", " + t.error + ") was cut off");
        } else {
          const std::int64_t nextBase = files[i + 1].first;
          DamagedRange r{static_cast<std::int64_t>(t.pos), static_cast<std::int64_t>(t.len), t.afterOffset + 1,
                         nextBase - 1};
          seg->damaged.push_back(r);
          report("damaged", r.firstLost, r.lastLost, r.len,
                 seg->path + ": its last " + std::to_string(t.len) + " bytes (from byte " + std::to_string(t.pos) +
                     ", " + t.error + ") are damaged and skipped");
          segEnd = std::max(segEnd, nextBase);
        }
      }
      expect = std::max(segEnd, seg->base);
      next_ = std::max(next_, expect);
      activeNext_ = std::max(segEnd, seg->base);
      segs_.push_back(std::move(seg));
    }
    if (checkpoint) {
      const std::int64_t first = segs_.empty() ? next_ : segs_.front()->base;
      if (first > checkpoint->start && checkpoint->start < std::max(next_, checkpoint->end))
        report("missing", checkpoint->start, std::min(first, std::max(next_, checkpoint->end)) - 1, 0,
               dir_ + ": the log starts at offset " + std::to_string(first) + " but started at " +
                   std::to_string(checkpoint->start) + " at the last checkpoint (segment files were deleted)");
      if (checkpoint->end > next_) {
        report("missing", std::max(next_, first), checkpoint->end - 1, 0,
               dir_ + ": the log ends at offset " + std::to_string(next_) + " but ended at " +
                   std::to_string(checkpoint->end) + " at the last checkpoint; it continues from there");
        next_ = checkpoint->end;
      }
    }
    flushed_ = next_;
    return Status::ok();
  }

  // The checkpoint's end is the recovery point (Kafka's term): bytes of the newest segment past
  // it may not have been synced when the process or machine stopped. A frame that does not decode
  // there ends the log like a torn tail, whatever intact-looking frames follow it: a power loss
  // can keep a later page of an unfinished write and lose an earlier one, and nothing past an
  // unsynced page was acknowledged (fsync=always) or committed (interval syncs first). Before the
  // recovery point the same bytes are damage, and the records after them are kept.
  static void pastRecoveryPoint(segment::Recovered& rec, std::size_t size, std::int64_t recoveryPoint) {
    for (std::size_t k = 0; k < rec.damage.size(); ++k) {
      if (rec.damage[k].afterOffset + 1 < recoveryPoint) continue;
      segment::Damage tail = rec.damage[k];
      tail.len = size - tail.pos;
      tail.nextOffset = -1;
      tail.error += ", past the last checkpoint (offset " + std::to_string(recoveryPoint) + ")";
      rec.damage.resize(k);
      std::erase_if(rec.index, [&](const auto& e) { return e.second >= tail.pos; });
      rec.lastOffset = tail.afterOffset;
      rec.goodEnd = tail.pos;
      rec.tail = std::move(tail);
      return;
    }
  }

  // Never hands out an offset below `to` (a group committed up to it). Before any append.
  void raiseEnd(std::int64_t to) {
    std::lock_guard lock(mu_);
    if (to <= next_ || !pendingCbs_.empty()) return;
    next_ = to;
    flushed_ = to;
  }

  // Assigns the next offset and queues the framed record. Returns the pending byte count, or
  // nothing when the log was closed (the callback is then never called).
  std::optional<std::size_t> append(const Message& m, SendCallback cb) {
    std::lock_guard lock(mu_);
    if (closed_) return std::nullopt;
    const std::int64_t offset = next_++;
    if (pendingCbs_.empty()) pendingFirst_ = offset;
    if ((offset - pendingFirst_) % static_cast<std::int64_t>(kIndexEvery) == 0)
      pendingIndex_.emplace_back(offset, static_cast<std::int64_t>(pending_.size()));
    segment::encode(m, offset, pending_);
    pendingCbs_.push_back(PendingCallback{std::move(cb), queue_, offset});
    return pending_.size();
  }

  // Writes the pending bytes (flusher thread only, or close() after the flusher stopped); the
  // callbacks to run (unlocked) are appended to `done`. The write and any fsync happen outside
  // the queue's mutex so producers keep appending meanwhile. `closing` refuses later appends.
  void flush(std::vector<std::pair<PendingCallback, Status>>& done, bool closing = false) {
    Batch batch;
    {
      std::lock_guard lock(mu_);
      if (closing) closed_ = true;
      if (pendingCbs_.empty()) return;
      batch.bytes.swap(pending_);
      batch.cbs.swap(pendingCbs_);
      batch.index.swap(pendingIndex_);
      batch.first = pendingFirst_;
      batch.end = next_;
    }
    Status s = writeBatch(batch);
    for (auto& cb : batch.cbs) done.emplace_back(std::move(cb), s);
    {
      // Hand the (cleared) buffers back so their capacity is reused.
      std::lock_guard lock(mu_);
      if (pending_.empty() && pendingCbs_.empty()) {
        batch.bytes.clear();
        batch.cbs.clear();
        batch.index.clear();
        pending_.swap(batch.bytes);
        pendingCbs_.swap(batch.cbs);
        pendingIndex_.swap(batch.index);
      }
    }
  }

  // fdatasyncs what was written since the last sync. Any thread; concurrent calls are safe.
  Status sync() {
    SegmentPtr active;
    {
      std::lock_guard lock(mu_);
      if (!dirty_ || segs_.empty()) return Status::ok();
      dirty_ = false;
      active = segs_.back();
    }
    if (::fdatasync(active->fd) != 0) {
      const int err = errno;
      std::lock_guard lock(mu_);
      dirty_ = true;
      return core::errnoStatus("fsync", active->path, err);
    }
    return Status::ok();
  }

  // Reads messages from `from` on (only bytes already written). Sets `from` to the next offset.
  // Damaged bytes and offsets without records are stepped over; each range stepped over is
  // appended to `skipped` (when given).
  Status read(std::int64_t& from, std::size_t max, std::vector<Message>& out, std::vector<StorageIssue>* skipped) {
    std::vector<SegmentPtr> segs;
    std::int64_t end;
    {
      std::lock_guard lock(mu_);
      end = flushed_;
      if (from >= end || segs_.empty()) return Status::ok();
      if (from < segs_.front()->base) {
        core::logger("backbone")->warn("{}-{}: offset {} was deleted by retention; continuing at {}", topic_, queue_,
                                       from, segs_.front()->base);
        from = segs_.front()->base;
      }
      auto it = std::upper_bound(segs_.begin(), segs_.end(), from,
                                 [](std::int64_t o, const SegmentPtr& s) { return o < s->base; });
      if (it != segs_.begin()) --it;
      segs.assign(it, segs_.end());
    }
    auto skip = [&](const char* kind, std::int64_t first, std::int64_t last, std::int64_t bytes, std::string why) {
      first = std::max(first, from);
      if (first > last) return;
      if (skipped) skipped->push_back(StorageIssue{topic_, queue_, kind, first, last, bytes, std::move(why)});
    };
    std::size_t taken = 0;
    for (std::size_t si = 0; si < segs.size() && taken < max && from < end; ++si) {
      const SegmentPtr& seg = segs[si];
      std::int64_t segSize;
      std::int64_t pos = 0;
      std::int64_t lastSeen;  // offset of the last intact record before `pos`
      std::vector<DamagedRange> damaged;
      {
        std::lock_guard lock(mu_);
        segSize = seg->size;
        damaged = seg->damaged;
        lastSeen = seg->base - 1;
        auto ix = std::upper_bound(seg->index.begin(), seg->index.end(), std::make_pair(from, INT64_MAX));
        if (ix != seg->index.begin()) {
          pos = std::prev(ix)->second;
          lastSeen = std::prev(ix)->first - 1;
        }
      }
      if (si > 0 && seg->base > from) {
        skip("missing", from, seg->base - 1, 0, "no records stored at these offsets");
        from = seg->base;
      }
      std::string buf;
      std::size_t chunk = kFirstReadChunk;
      while (pos < segSize && taken < max && from < end) {
        // Step over a damaged range that starts here (or that `pos` fell into).
        auto dmg = std::find_if(damaged.begin(), damaged.end(),
                                [&](const DamagedRange& d) { return pos >= d.pos && pos < d.pos + d.len; });
        if (dmg != damaged.end()) {
          skip("damaged", dmg->firstLost, dmg->lastLost, dmg->len,
               seg->path + ": damaged bytes " + std::to_string(dmg->pos) + ".." +
                   std::to_string(dmg->pos + dmg->len - 1));
          if (dmg->lastLost >= from) from = dmg->lastLost + 1;
          pos = dmg->pos + dmg->len;
          continue;
        }
        // Read up to the next damaged range.
        std::int64_t limit = segSize;
        for (const auto& d : damaged)
          if (d.pos > pos) limit = std::min(limit, d.pos);
        std::size_t want = static_cast<std::size_t>(std::min<std::int64_t>(limit - pos, static_cast<std::int64_t>(chunk)));
        chunk = std::min(chunk * 2, kMaxReadChunk);
        buf.resize(want);
        ssize_t got = ::pread(seg->fd, buf.data(), want, pos);
        if (got <= 0) return core::errnoStatus("read", seg->path, got < 0 ? errno : EIO);
        buf.resize(static_cast<std::size_t>(got));
        std::size_t p = 0;
        bool bad = false;
        while (p < buf.size() && taken < max) {
          auto d = segment::decodeOne(std::string_view(buf).substr(p));
          if (d.state == segment::DecodeState::kTruncated) {
            if (p != 0) break;  // the next chunk starts with it
            // One record larger than the chunk: read exactly its frame, when it fits before `limit`.
            std::uint32_t len = 0;
            if (buf.size() >= segment::kFrameHeader) std::memcpy(&len, buf.data(), 4);
            if (buf.size() < segment::kFrameHeader || len > segment::kMaxPayload ||
                pos + static_cast<std::int64_t>(segment::kFrameHeader + len) > limit) {
              bad = true;
              break;
            }
            buf.resize(segment::kFrameHeader + len);
            got = ::pread(seg->fd, buf.data(), buf.size(), pos);
            if (got != static_cast<ssize_t>(buf.size())) return Status::dataLoss(seg->path + ": short read");
            continue;
          }
          if (d.state == segment::DecodeState::kCorrupt || d.message.offset <= lastSeen) {
            bad = true;
            break;
          }
          p += d.consumed;
          lastSeen = d.message.offset;
          if (d.message.offset < from) continue;
          if (d.message.offset >= end) break;
          if (d.message.offset > from)
            skip("missing", from, d.message.offset - 1, 0, "no records stored at these offsets");
          d.message.topic = topic_;
          d.message.queue = queue_;
          from = d.message.offset + 1;
          out.push_back(std::move(d.message));
          ++taken;
        }
        pos += static_cast<std::int64_t>(p);
        if (bad) {
          // Damage that appeared after open (a bad sector, a write by someone else): find where
          // the intact records resume, remember the range and step over it from now on.
          FERRY_ASSIGN_OR_RETURN(DamagedRange r, discoverDamage(*seg, pos, limit, lastSeen));
          damaged.push_back(r);
          continue;
        }
        if (p == 0) break;
      }
    }
    return Status::ok();
  }

  std::int64_t endOffset() {
    std::lock_guard lock(mu_);
    return flushed_;
  }
  std::int64_t startOffset() {
    std::lock_guard lock(mu_);
    return segs_.empty() ? flushed_ : segs_.front()->base;
  }
  QueueCheckpoint checkpoint() {
    std::lock_guard lock(mu_);
    return QueueCheckpoint{segs_.empty() ? flushed_ : segs_.front()->base, flushed_};
  }

  // Takes the segments retention wants gone out of the list; the caller records the new start
  // (checkpoint) before it deletes their files.
  std::vector<SegmentPtr> takeExpired(std::int64_t nowMs) {
    std::vector<SegmentPtr> victims;
    std::lock_guard lock(mu_);
    std::int64_t total = 0;
    for (const auto& s : segs_) total += s->size;
    while (segs_.size() > 1) {
      const SegmentPtr& oldest = segs_.front();
      bool expired = false;
      if (o_.retentionMs >= 0) {
        struct stat st {};
        if (::fstat(oldest->fd, &st) == 0)
          expired = static_cast<std::int64_t>(st.st_mtime) * 1000 < nowMs - o_.retentionMs;
      }
      const bool tooBig = o_.retentionBytes >= 0 && total - oldest->size >= o_.retentionBytes;
      if (!expired && !tooBig) break;
      total -= oldest->size;
      victims.push_back(oldest);
      segs_.erase(segs_.begin());
    }
    return victims;
  }

 private:
  struct Batch {
    std::string bytes;
    std::vector<PendingCallback> cbs;
    std::vector<std::pair<std::int64_t, std::int64_t>> index;  // (offset, position in bytes)
    std::int64_t first = 0;  // offset of the first record in `bytes`
    std::int64_t end = 0;    // one past the last
  };

  void report(const char* kind, std::int64_t first, std::int64_t last, std::int64_t bytes, std::string detail) {
    report_(StorageIssue{topic_, queue_, kind, first, last, bytes, std::move(detail)});
  }

  // Copies a torn tail to quarantine/ (unless it is only zeros, what a file system leaves for
  // blocks it never wrote) and makes the copy durable before the segment is cut.
  Status quarantineTail(const Segment& seg, std::size_t pos, std::string_view tail) {
    if (tail.find_first_not_of('\0') == std::string_view::npos) return Status::ok();
    FERRY_RETURN_IF_ERROR(core::ensureDir(quarantine_));
    return core::atomicWriteFile(quarantine_ + "/" + segmentName(seg.base) + "." + std::to_string(pos) + ".torn", tail);
  }

  // A reader met bytes at `pos` that do not decode: finds the next intact record before `limit`,
  // records the range on the segment (so later reads step over it at once) and reports it.
  Result<DamagedRange> discoverDamage(Segment& seg, std::int64_t pos, std::int64_t limit, std::int64_t lastSeen) {
    FERRY_ASSIGN_OR_RETURN(const std::string data, core::readAt(seg.fd, static_cast<std::uint64_t>(pos),
                                                                 static_cast<std::size_t>(limit - pos), seg.path));
    std::int64_t nextOff = -1;
    const std::size_t next = segment::findNextFrame(data, 1, lastSeen, &nextOff);
    DamagedRange r{pos, static_cast<std::int64_t>(next), lastSeen + 1, next < data.size() ? nextOff - 1 : -1};
    if (next >= data.size()) {
      // Nothing intact up to `limit`: the offsets lost run to the first record after it.
      std::lock_guard lock(mu_);
      r.lastLost = flushed_ - 1;
      for (const auto& s : segs_)
        if (s->base > seg.base) {
          r.lastLost = s->base - 1;
          break;
        }
      for (const auto& d : seg.damaged)
        if (d.pos == limit) r.lastLost = std::min(r.lastLost, d.firstLost - 1);
      for (const auto& [off, ipos] : seg.index)
        if (ipos >= limit) {
          r.lastLost = std::min(r.lastLost, off - 1);
          break;
        }
    }
    {
      std::lock_guard lock(mu_);
      bool known = false;
      for (const auto& d : seg.damaged) known = known || d.pos == r.pos;
      if (!known) {
        seg.damaged.push_back(r);
        std::sort(seg.damaged.begin(), seg.damaged.end(),
                  [](const DamagedRange& a, const DamagedRange& b) { return a.pos < b.pos; });
      }
    }
    report("damaged", r.firstLost, r.lastLost, r.len,
           seg.path + ": " + std::to_string(r.len) + " damaged bytes at byte " + std::to_string(pos) +
               " met while reading; they are skipped");
    return r;
  }

  // Appends a batch to the active segment (rolling first when it is full, or when the batch does
  // not continue it: offsets inside a segment are contiguous). Only one thread writes at a time,
  // so the segment list's tail and its size change only here.
  Status writeBatch(const Batch& batch) {
    SegmentPtr seg;
    {
      std::lock_guard lock(mu_);
      if (!segs_.empty()) seg = segs_.back();
    }
    if (!seg || seg->size >= o_.segmentBytes || batch.first != activeNext_) {
      // The previous segment must reach the disk before a later one can (no holes after a power
      // loss), unless fsync=never.
      if (seg && o_.fsync != FsyncPolicy::kNever) {
        bool dirty;
        {
          std::lock_guard lock(mu_);
          dirty = dirty_;
          dirty_ = false;
        }
        if (dirty) ::fdatasync(seg->fd);
      }
      auto fresh = std::make_shared<Segment>();
      fresh->base = batch.first;
      fresh->path = dir_ + "/" + segmentName(fresh->base);
      // Never truncate: a file of that name can only be an empty segment left behind.
      fresh->fd = ::open(fresh->path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fresh->fd < 0 && errno == EEXIST) {
        fresh->fd = ::open(fresh->path.c_str(), O_RDWR | O_CLOEXEC);
        struct stat st {};
        if (fresh->fd >= 0 && (::fstat(fresh->fd, &st) != 0 || st.st_size != 0)) {
          ::close(fresh->fd);
          fresh->fd = -1;
          errno = EEXIST;
        }
      }
      if (fresh->fd < 0) return failBatch(batch, core::errnoStatus("create", fresh->path, errno));
      SegmentPtr empty;
      {
        std::lock_guard lock(mu_);
        // An empty segment left behind by a gap would only make the next open report the gap twice.
        if (seg && seg->size == 0 && seg->path != fresh->path) {
          empty = seg;
          segs_.pop_back();
        }
        segs_.push_back(fresh);
      }
      if (empty) ::unlink(empty->path.c_str());
      core::syncDir(dir_).isOk();
      seg = fresh;
    }
    const char* p = batch.bytes.data();
    std::size_t left = batch.bytes.size();
    std::int64_t at = seg->size;  // stable: only this thread grows it
    while (left > 0) {
      ssize_t w = ::pwrite(seg->fd, p, left, at);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = errno;
        if (::ftruncate(seg->fd, seg->size) != 0) { /* keep the write error */ }
        return failBatch(batch, core::errnoStatus("write", seg->path, err ? err : EIO));
      }
      p += w;
      left -= static_cast<std::size_t>(w);
      at += w;
    }
    if (o_.fsync == FsyncPolicy::kAlways && ::fdatasync(seg->fd) != 0) {
      const int err = errno;
      if (::ftruncate(seg->fd, seg->size) != 0) { /* keep the fsync error */ }
      return failBatch(batch, core::errnoStatus("fsync", seg->path, err));
    }
    std::lock_guard lock(mu_);
    for (const auto& [off, rel] : batch.index) seg->index.emplace_back(off, seg->size + rel);
    seg->size = at;
    flushed_ = batch.end;
    activeNext_ = batch.end;
    if (o_.fsync != FsyncPolicy::kAlways) dirty_ = true;
    return Status::ok();
  }

  // A batch that could not be written: its offsets are handed out again when nothing was
  // appended since; otherwise they stay a gap (readers skip it; the next batch starts a segment).
  Status failBatch(const Batch& batch, Status s) {
    std::lock_guard lock(mu_);
    if (next_ == batch.end && pendingCbs_.empty()) {
      next_ = batch.first;
    } else {
      flushed_ = batch.end;  // later records must stay readable past the gap
    }
    core::logger("backbone")->error("{}: {} record(s) not stored: {}", dir_, batch.cbs.size(), s.toString());
    return s;
  }

  const std::string dir_;
  const std::string topic_;
  const std::int32_t queue_;
  const EmbeddedOptions& o_;
  const std::string quarantine_;
  const IssueSink report_;
  std::mutex mu_;
  std::vector<SegmentPtr> segs_;
  std::int64_t next_ = 0;        // next offset to assign
  std::int64_t flushed_ = 0;     // offsets below are written and readable
  std::int64_t activeNext_ = 0;  // flusher only: the offset that continues the active segment
  std::string pending_;
  std::vector<PendingCallback> pendingCbs_;
  std::vector<std::pair<std::int64_t, std::int64_t>> pendingIndex_;  // (offset, position in pending_)
  std::int64_t pendingFirst_ = 0;
  bool dirty_ = false;   // written since the last fdatasync
  bool closed_ = false;  // append() refuses once the backbone closed
};

struct Topic {
  std::string name;
  std::vector<std::unique_ptr<QueueLog>> queues;
  std::atomic<std::uint32_t> roundRobin{0};
};

class EmbeddedBackbone;

class EmbeddedConsumer final : public Consumer {
 public:
  EmbeddedConsumer(EmbeddedBackbone& b, std::string group, std::string member, bool latest)
      : b_(b), group_(std::move(group)), member_(std::move(member)), latest_(latest) {}
  ~EmbeddedConsumer() override { close(); }
  Status subscribe(const std::vector<std::string>& topics, RebalanceListener* listener) override;
  Result<std::size_t> poll(std::vector<Message>& out, std::size_t maxMessages, std::chrono::milliseconds maxWait) override;
  Status commit(const OffsetMap& offsets) override;
  Status seek(const TopicQueue& queue, std::int64_t offset) override {
    if (!positions_.count(queue)) return Status::failedPrecondition(queue.toString() + " is not assigned");
    positions_[queue] = offset;
    return Status::ok();
  }
  std::vector<TopicQueue> assignment() const override { return assignment_; }
  void close() override;
  std::vector<StorageIssue> takeSkipped() override { return std::exchange(skipped_, {}); }
  bool setWaker(std::function<void()> wake) override {
    waker_ = std::move(wake);
    return true;
  }

  // Guarded by the backbone's mutex.
  std::vector<std::string> topics;
  std::vector<TopicQueue> target;
  std::uint64_t targetGen = 0;
  bool evicted = false;  // another consumer took over this member id

 private:
  void applyRebalance();
  EmbeddedBackbone& b_;
  const std::string group_;
  const std::string member_;
  const bool latest_;
  RebalanceListener* listener_ = nullptr;
  std::vector<TopicQueue> target_;                  // what the allocation gives this member
  std::vector<TopicQueue> assignment_;              // the part of target_ it holds
  std::map<TopicQueue, std::int64_t> waiting_;      // target_ queues still held by another: since (ms)
  std::map<TopicQueue, std::int64_t> positions_;
  std::uint64_t appliedGen_ = 0;
  bool evicted_ = false;
  std::size_t rr_ = 0;
  bool joined_ = false;
  std::vector<StorageIssue> skipped_;  // ranges poll() stepped over, until takeSkipped()
  std::function<void()> waker_;        // setWaker(): registered with the backbone at subscribe()
};

struct Group {
  std::map<std::string, EmbeddedConsumer*> members;
  OffsetMap committed;
  // Who reads each queue now. A member takes a queue only once the previous owner released it
  // (after its onRevoked, where it commits) or left, so the new owner starts from that commit.
  struct Owner {
    std::string member;
    const EmbeddedConsumer* consumer;
  };
  std::map<TopicQueue, Owner> owner;
  bool live(const Owner& o) const {
    auto it = members.find(o.member);
    return it != members.end() && it->second == o.consumer;
  }
};

class EmbeddedBackbone final : public Backbone, public Admin {
 public:
  explicit EmbeddedBackbone(EmbeddedOptions o) : o_(std::move(o)) {}
  ~EmbeddedBackbone() override { close(); }

  Status open() {
    FERRY_RETURN_IF_ERROR(core::ensureDir(o_.dir));
    FERRY_RETURN_IF_ERROR(core::ensureDir(o_.dir + "/topics"));
    FERRY_RETURN_IF_ERROR(core::ensureDir(o_.dir + "/groups"));
    FERRY_RETURN_IF_ERROR(loadCheckpoint());
    FERRY_RETURN_IF_ERROR(loadTopics());
    FERRY_RETURN_IF_ERROR(loadGroups());
    // A group that committed beyond a queue's end read records that are gone now (lost with
    // unsynced writes, cut off as a torn tail, or a deleted segment): the queue continues from the
    // group's offset, so an offset the group has passed is never given to a new record.
    for (auto& [group, g] : groups_) {
      for (auto& [tq, off] : g.committed) {
        auto t = topics_.find(tq.topic);
        if (t == topics_.end() || tq.queue < 0 || tq.queue >= static_cast<std::int32_t>(t->second->queues.size()))
          continue;
        QueueLog& log = *t->second->queues[static_cast<std::size_t>(tq.queue)];
        const std::int64_t end = log.endOffset();
        if (off <= end) continue;
        if (off - end > kMaxRaise) {
          report(StorageIssue{tq.topic, tq.queue, "group-ahead", end, off - 1, 0,
                              "group " + group + " committed offset " + std::to_string(off) + " but the log ends at " +
                                  std::to_string(end) + "; that is implausible, so the group continues at the end"});
          off = end;
          continue;
        }
        report(StorageIssue{tq.topic, tq.queue, "group-ahead", end, off - 1, 0,
                            "group " + group + " committed offset " + std::to_string(off) + " but the log ends at " +
                                std::to_string(end) + "; the log continues at " + std::to_string(off)});
        log.raiseEnd(off);
      }
    }
    FERRY_RETURN_IF_ERROR(writeCheckpoint(/*force=*/true));
    retention(core::nowMs());
    flusher_ = core::namedThread("log-flush", [this] { flushLoop(); });
    return Status::ok();
  }

  std::vector<StorageIssue> storageIssues() const override {
    std::lock_guard lock(issuesMu_);
    return issues_;
  }
  Status validateTopicName(const std::string& name) const override { return validTopicName(name); }

  std::string kind() const override { return "embedded"; }
  Result<std::unique_ptr<Producer>> createProducer(const StringMap& overrides) override;
  Result<std::unique_ptr<SharedLog>> openSharedLog(const std::string& topic) override;
  Result<std::unique_ptr<Consumer>> createConsumer(const std::string& group, const std::string& memberId,
                                                   const StringMap& overrides) override {
    if (closed_) return Status::unavailable("backbone closed");
    auto it = overrides.find("auto.offset.reset");
    const bool latest = it != overrides.end() && it->second == "latest";
    return std::unique_ptr<Consumer>(std::make_unique<EmbeddedConsumer>(*this, group, memberId, latest));
  }
  Admin& admin() override { return *this; }

  void close() override {
    if (closed_.exchange(true)) return;
    {
      std::lock_guard lock(flushMu_);
      stopFlusher_ = true;
    }
    flushCv_.notify_all();
    if (flusher_.joinable()) flusher_.join();
    flushAll(/*closing=*/true);
    syncAll().isOk();
    writeCheckpoint(/*force=*/false).isOk();
    wakeConsumers();  // waiting polls and watchers see closed() now
  }

  // ----- Admin
  Status ensureTopic(const std::string& name, std::int32_t queues) override {
    std::lock_guard lock(mu_);
    if (topics_.count(name)) return Status::ok();
    if (closed_) return Status::unavailable("backbone closed");
    return createTopicLocked(name, queues, true);
  }
  Result<std::vector<TopicInfo>> listTopics() override {
    std::lock_guard lock(mu_);
    std::vector<TopicInfo> out;
    for (const auto& [n, t] : topics_) out.push_back(TopicInfo{n, static_cast<std::int32_t>(t->queues.size())});
    return out;
  }
  Result<TopicInfo> describeTopic(const std::string& name) override {
    Topic* t = findTopic(name);
    if (!t) return Status::notFound("topic " + name + " not found");
    return TopicInfo{name, static_cast<std::int32_t>(t->queues.size())};
  }
  Result<OffsetMap> endOffsets(const std::string& topic) override {
    Topic* t = findTopic(topic);
    if (!t) return Status::notFound("topic " + topic + " not found");
    OffsetMap out;
    for (std::size_t i = 0; i < t->queues.size(); ++i)
      out[TopicQueue{topic, static_cast<std::int32_t>(i)}] = t->queues[i]->endOffset();
    return out;
  }
  Result<OffsetMap> startOffsets(const std::string& topic) override {
    Topic* t = findTopic(topic);
    if (!t) return Status::notFound("topic " + topic + " not found");
    OffsetMap out;
    for (std::size_t i = 0; i < t->queues.size(); ++i)
      out[TopicQueue{topic, static_cast<std::int32_t>(i)}] = t->queues[i]->startOffset();
    return out;
  }
  Result<OffsetMap> committedOffsets(const std::string& group) override {
    std::lock_guard lock(mu_);
    auto it = groups_.find(group);
    if (it == groups_.end()) return OffsetMap{};
    return it->second.committed;
  }
  Status setCommittedOffsets(const std::string& group, const OffsetMap& offsets) override {
    std::lock_guard persist(persistMu_);
    std::lock_guard lock(mu_);
    Group& g = groups_[group];
    if (!g.members.empty())
      return Status::failedPrecondition("group " + group + " has " + std::to_string(g.members.size()) +
                                        " live member(s); stop them first");
    FERRY_RETURN_IF_ERROR(persistGroup(group, offsets));
    g.committed = offsets;
    return Status::ok();
  }
  Status deleteGroup(const std::string& group) override { return setCommittedOffsets(group, {}); }

  Status peek(const std::string& topic, std::size_t perQueue, const std::function<void(const Message&)>& fn,
              std::chrono::milliseconds timeout) override {
    (void)timeout;  // reads local files only
    Topic* t = findTopic(topic);
    if (!t) return Status::notFound("topic " + topic + " not found");
    for (auto& q : t->queues) {
      const std::int64_t end = q->endOffset();
      std::int64_t from = std::max(q->startOffset(), end - static_cast<std::int64_t>(perQueue));
      std::vector<Message> got;
      while (from < end) {
        const std::int64_t before = from;
        got.clear();
        FERRY_RETURN_IF_ERROR(q->read(from, static_cast<std::size_t>(end - from), got, nullptr));
        for (const auto& m : got)
          if (m.offset < end) fn(m);
        if (from == before) break;  // nothing more readable (the rest not flushed yet)
      }
    }
    return Status::ok();
  }

  // ----- used by producers and consumers
  Topic* findTopic(const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = topics_.find(name);
    return it == topics_.end() ? nullptr : it->second.get();
  }
  Result<Topic*> topicForSend(const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = topics_.find(name);
    if (it != topics_.end()) return it->second.get();
    if (!o_.autoCreateTopics) return Status::notFound("topic " + name + " does not exist");
    if (closed_) return Status::unavailable("backbone closed");
    FERRY_RETURN_IF_ERROR(createTopicLocked(name, o_.defaultQueues, true));
    return topics_.at(name).get();
  }
  void notePending(std::size_t pendingBytes) {
    if (!hasPending_.exchange(true) || pendingBytes >= kFlushNowBytes) {
      std::lock_guard lock(flushMu_);
      urgent_ = urgent_ || pendingBytes >= kFlushNowBytes;
      flushCv_.notify_one();
    }
  }
  bool closed() const { return closed_; }
  std::size_t maxRecordBytes() const { return static_cast<std::size_t>(o_.maxRecordBytes); }
  // Producer::sync(): with fsync=interval, every queue's written bytes reach the disk now.
  Status syncAcknowledged() { return o_.fsync == FsyncPolicy::kInterval ? syncAll() : Status::ok(); }

  // Group membership (consumer side).
  // Joins (or, for a member already in, changes its topics); rebalances the group.
  void join(EmbeddedConsumer* c, const std::string& group, const std::string& member,
            const std::vector<std::string>& topics) {
    std::lock_guard lock(mu_);
    c->topics = topics;
    EmbeddedConsumer*& slot = groups_[group].members[member];
    if (slot && slot != c) {  // a second consumer with the same member id replaces the first
      core::logger("backbone")->warn("group {}: a new consumer for member {} replaces the previous one", group,
                                     member);
      slot->topics.clear();
      slot->evicted = true;
    }
    slot = c;
    rebalanceLocked(group);
  }
  void leave(EmbeddedConsumer* c, const std::string& group, const std::string& member) {
    std::lock_guard lock(mu_);
    auto it = groups_.find(group);
    if (it == groups_.end()) return;
    Group& g = it->second;
    std::erase_if(g.owner, [&](const auto& kv) { return kv.second.consumer == c; });
    auto m = g.members.find(member);
    if (m == g.members.end() || m->second != c) return;  // replaced by a newer consumer already
    g.members.erase(m);
    rebalanceLocked(group);
  }
  // Takes `tq` for consumer `c` when no live member holds it (or `force`). Returns whether it did.
  bool acquire(const EmbeddedConsumer* c, const std::string& group, const std::string& member,
               const TopicQueue& tq, bool force) {
    std::lock_guard lock(mu_);
    Group& g = groups_[group];
    auto it = g.owner.find(tq);
    if (it != g.owner.end() && it->second.consumer != c && g.live(it->second)) {
      if (!force) return false;
      core::logger("backbone")->warn("group {}: {} takes {} from {}, which did not release it within {} ms", group,
                                     member, tq.toString(), it->second.member, kHandoverTimeoutMs);
    }
    g.owner[tq] = Group::Owner{member, c};
    return true;
  }
  void release(const EmbeddedConsumer* c, const std::string& group, const std::vector<TopicQueue>& queues) {
    {
      std::lock_guard lock(mu_);
      Group& g = groups_[group];
      for (const auto& tq : queues)
        if (auto it = g.owner.find(tq); it != g.owner.end() && it->second.consumer == c) g.owner.erase(it);
    }
    wakeConsumers();  // a member waiting for one of these queues can take it now
  }
  void readTarget(EmbeddedConsumer* c, std::vector<TopicQueue>& target, std::uint64_t& gen, bool& evicted) {
    std::lock_guard lock(mu_);
    target = c->evicted ? std::vector<TopicQueue>{} : c->target;
    gen = c->targetGen;
    evicted = c->evicted;
  }
  std::uint64_t targetGen(EmbeddedConsumer* c) {
    std::lock_guard lock(mu_);
    return c->targetGen;
  }
  std::optional<std::int64_t> committedOffset(const std::string& group, const TopicQueue& tq) {
    std::lock_guard lock(mu_);
    auto g = groups_.find(group);
    if (g == groups_.end()) return std::nullopt;
    auto it = g->second.committed.find(tq);
    if (it == g->second.committed.end()) return std::nullopt;
    return it->second;
  }
  // Updates the group's offsets and writes the file (fsynced) before returning. The write happens
  // outside mu_ (other groups and readers go on); persistMu_ orders the writes, and each writes
  // the state as of its own update, so the file never goes back in time.
  Status commitGroup(const std::string& group, const OffsetMap& offsets) {
    // With fsync=interval the records a group has read may still be only in the page cache: they
    // reach the disk before an offset that passes them does.
    if (o_.fsync == FsyncPolicy::kInterval) {
      for (const auto& [tq, o] : offsets) {
        Topic* t = findTopic(tq.topic);
        if (t && tq.queue >= 0 && tq.queue < static_cast<std::int32_t>(t->queues.size()))
          FERRY_RETURN_IF_ERROR(t->queues[static_cast<std::size_t>(tq.queue)]->sync());
      }
    }
    // The new offsets become visible (committedOffsets, REST) only once they are on disk: every
    // writer of a group's offsets holds persistMu_, so the snapshot is the current state.
    std::lock_guard persist(persistMu_);
    OffsetMap snapshot;
    {
      std::lock_guard lock(mu_);
      snapshot = groups_[group].committed;
    }
    for (const auto& [tq, o] : offsets) snapshot[tq] = o;
    FERRY_RETURN_IF_ERROR(persistGroup(group, snapshot));
    std::lock_guard lock(mu_);
    groups_[group].committed = std::move(snapshot);
    return Status::ok();
  }
  // Waits until new data was written or `deadline`, or the consumer's assignment changed.
  void waitForData(std::uint64_t seenVersion, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(dataMu_);
    dataCv_.wait_until(lock, deadline, [&] { return dataVersion_.load() != seenVersion || closed_; });
  }
  std::uint64_t dataVersion() const { return dataVersion_.load(); }
  // Wakes every consumer: waiting polls, and every watcher (a rebalance, a release, closing).
  void wakeConsumers() {
    {
      std::lock_guard lock(dataMu_);
      dataVersion_.fetch_add(1);
    }
    dataCv_.notify_all();
    wakeWatchers(nullptr);
  }
  // New data on `topics`: waiting polls re-read, and the watchers of those topics are woken.
  void dataArrived(const std::set<std::string>& topics) {
    {
      std::lock_guard lock(dataMu_);
      dataVersion_.fetch_add(1);
    }
    dataCv_.notify_all();
    wakeWatchers(&topics);
  }
  // A consumer that polls without waiting (Consumer::setWaker): `wake` is called when one of
  // `topics` gets data and on every wakeConsumers(); never after unwatch() returned.
  void watch(const void* who, const std::vector<std::string>& topics, std::function<void()> wake) {
    auto w = std::make_shared<Watch>();
    w->topics.insert(topics.begin(), topics.end());
    w->wake = std::move(wake);
    std::shared_ptr<Watch> old;
    {
      std::lock_guard lock(watchMu_);
      old = dropWatchLocked(who);
      for (const auto& t : w->topics) byTopic_[t].push_back(w);
      watches_[who] = std::move(w);
    }
    if (old) retire(*old);
  }
  void unwatch(const void* who) {
    std::shared_ptr<Watch> old;
    {
      std::lock_guard lock(watchMu_);
      old = dropWatchLocked(who);
    }
    if (old) retire(*old);
  }

 private:
  Status createTopicLocked(const std::string& name, std::int32_t queues, bool persist) {
    FERRY_RETURN_IF_ERROR(validTopicName(name));
    if (queues < 1 || queues > 4096) return Status::invalidArgument("topic " + name + ": queues must be 1..4096");
    auto t = std::make_unique<Topic>();
    t->name = name;
    for (std::int32_t q = 0; q < queues; ++q) {
      auto log = std::make_unique<QueueLog>(o_.dir + "/topics/" + name + "/" + std::to_string(q), name, q, o_,
                                            o_.dir + "/quarantine/" + name + "/" + std::to_string(q),
                                            [this](StorageIssue i) { report(std::move(i)); });
      std::optional<QueueCheckpoint> cp;
      if (auto c = checkpoint_.find(name); c != checkpoint_.end())
        if (auto qc = c->second.find(q); qc != c->second.end()) cp = qc->second;
      FERRY_RETURN_IF_ERROR(log->open(cp).withContext("topic " + name));
      t->queues.push_back(std::move(log));
    }
    topics_[name] = std::move(t);
    if (!persist) return Status::ok();
    return persistTopicsLocked();
  }

  Status persistTopicsLocked() {
    nlohmann::json j;
    j["topics"] = nlohmann::json::object();
    for (const auto& [n, tp] : topics_) j["topics"][n] = tp->queues.size();
    return core::writeCheckedJson(o_.dir + "/topics.json", j, topicsShape);
  }

  // topics.json names every topic and its queue count. When it is missing or damaged (and no
  // good previous copy exists), the topics are found again from their folders, so a damaged
  // metadata file never hides the records below it.
  Status loadTopics() {
    auto meta = readStateFile(o_.dir + "/topics.json", topicsShape);
    std::map<std::string, std::int32_t> found;
    bool fromFolders = false;
    if (meta.isOk()) {
      try {
        for (auto& [name, queues] : meta->at("topics").items()) found[name] = queues.get<std::int32_t>();
      } catch (const std::exception& e) {
        core::logger("backbone")->warn("{}/topics.json: {}; finding the topics from their folders", o_.dir, e.what());
        found.clear();
        fromFolders = true;
      }
    } else {
      if (meta.status().code() != StatusCode::kNotFound)
        core::logger("backbone")->warn("{}; finding the topics from their folders", meta.status().message());
      fromFolders = true;
    }
    // Folders not listed (a topic created just before a crash, or a lost topics.json).
    std::map<std::string, std::int32_t> onDisk;
    if (DIR* d = ::opendir((o_.dir + "/topics").c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n == "." || n == ".." || !validTopicName(n).isOk()) continue;
        std::int32_t queues = 0;
        while (queues < 4096 && ::access((o_.dir + "/topics/" + n + "/" + std::to_string(queues)).c_str(), F_OK) == 0)
          ++queues;
        if (queues > 0) onDisk[n] = queues;
      }
      ::closedir(d);
    }
    bool changed = false;
    for (const auto& [n, q] : onDisk) {
      auto it = found.find(n);
      if (it == found.end() || it->second < q) {
        if (!fromFolders)
          core::logger("backbone")->warn("{}/topics/{} holds {} queue(s) that topics.json does not list; keeping them",
                                         o_.dir, n, q);
        found[n] = q;
        changed = true;
      }
    }
    for (const auto& [name, queues] : found)
      FERRY_RETURN_IF_ERROR(createTopicLocked(name, queues, /*persist=*/false));
    if (changed || fromFolders) {
      if (!found.empty()) FERRY_RETURN_IF_ERROR(persistTopicsLocked());
    }
    return Status::ok();
  }

  Status loadGroups() {
    DIR* d = ::opendir((o_.dir + "/groups").c_str());
    if (d == nullptr) return Status::ok();
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() >= 6 && n.compare(n.size() - 5, 5, ".json") == 0) names.push_back(n);
    }
    ::closedir(d);
    for (const auto& n : names) {
      const std::string path = o_.dir + "/groups/" + n;
      auto j = readStateFile(path, groupShape);
      if (!j.isOk()) {
        if (j.status().code() == StatusCode::kNotFound) continue;
        if (j.status().code() != StatusCode::kDataLoss) return j.status();
        // No good copy: the group starts again from the earliest records it can read. Records
        // are delivered twice, none is skipped; the next commit replaces the damaged file.
        report(StorageIssue{"", -1, "group-lost", -1, -1, 0,
                            j.status().message() + ": a group stored in this file reads again from the earliest "
                                                   "records (duplicates, nothing skipped)"});
        continue;
      }
      try {
        Group& g = groups_[j->at("group").get<std::string>()];
        for (auto& o : j->at("offsets"))
          g.committed[TopicQueue{o.at("topic").get<std::string>(), o.at("queue").get<std::int32_t>()}] =
              o.at("offset").get<std::int64_t>();
      } catch (const std::exception& e) {
        return Status::dataLoss(path + ": " + e.what() +
                                "; move the file away to let the group start again from the earliest records");
      }
    }
    return Status::ok();
  }

  Status persistGroup(const std::string& group, const OffsetMap& committed) {
    const std::string path = o_.dir + "/groups/" + groupFileName(group);
    if (committed.empty()) {
      for (const char* suffix : {"", ".prev", ".tmp", ".prev.tmp"}) ::unlink((path + suffix).c_str());
      return core::syncDir(o_.dir + "/groups");
    }
    nlohmann::json j;
    j["group"] = group;
    j["offsets"] = nlohmann::json::array();
    for (const auto& [tq, o] : committed) j["offsets"].push_back({{"topic", tq.topic}, {"queue", tq.queue}, {"offset", o}});
    return core::writeCheckedJson(path, j, groupShape);
  }

  // checkpoint.json: each queue's first and next offset as of the last write (every
  // fsync.interval.ms, before retention deletes a segment, at close). At open a queue whose files
  // end below its checkpoint continues from the checkpoint, and missing segments are reported.
  Status loadCheckpoint() {
    auto j = readStateFile(o_.dir + "/checkpoint.json", checkpointShape);
    if (!j.isOk()) {
      if (j.status().code() != StatusCode::kNotFound)
        core::logger("backbone")->warn("{}; offsets will not be checked against it this time", j.status().message());
      return Status::ok();
    }
    try {
      for (auto& [topic, queues] : j->at("queues").items())
        for (auto& [q, v] : queues.items())
          checkpoint_[topic][std::stoi(q)] = QueueCheckpoint{v.at("start").get<std::int64_t>(), v.at("end").get<std::int64_t>()};
    } catch (const std::exception& e) {
      checkpoint_.clear();
      core::logger("backbone")->warn("{}/checkpoint.json: {}; offsets will not be checked against it this time", o_.dir,
                                     e.what());
    }
    return Status::ok();
  }

  Status writeCheckpoint(bool force) {
    nlohmann::json j;
    j["queues"] = nlohmann::json::object();
    for (Topic* t : allTopics())
      for (std::size_t q = 0; q < t->queues.size(); ++q) {
        const QueueCheckpoint c = t->queues[q]->checkpoint();
        j["queues"][t->name][std::to_string(q)] = {{"start", c.start}, {"end", c.end}};
      }
    std::lock_guard lock(checkpointMu_);
    std::string text = j.dump();
    if (!force && text == lastCheckpoint_) return Status::ok();
    Status s = core::writeCheckedJson(o_.dir + "/checkpoint.json", j, checkpointShape);
    if (s.isOk()) lastCheckpoint_ = std::move(text);
    else core::logger("backbone")->warn("could not write the checkpoint: {}", s.toString());
    return s;
  }

  void report(StorageIssue issue) {
    const bool lostOffsets = issue.firstOffset >= 0 && issue.firstOffset <= issue.lastOffset;
    if (lostOffsets) issue.detail += "; lost: " + offsetsText(issue.firstOffset, issue.lastOffset);
    const bool loss = lostOffsets || issue.kind == "group-lost";
    const auto level = loss ? spdlog::level::err : spdlog::level::warn;
    if (issue.queue >= 0)
      core::logger("backbone")->log(level, "{}-{} {}: {}", issue.topic, issue.queue, issue.kind, issue.detail);
    else
      core::logger("backbone")->log(level, "{}: {}", issue.kind, issue.detail);
    std::lock_guard lock(issuesMu_);
    if (issues_.size() < kMaxIssues) issues_.push_back(std::move(issue));
  }

  void rebalanceLocked(const std::string& group) {
    Group& g = groups_[group];
    std::vector<std::string> members;
    std::set<std::string> topicNames;
    for (const auto& [id, c] : g.members) {
      members.push_back(id);
      topicNames.insert(c->topics.begin(), c->topics.end());
    }
    std::vector<TopicQueue> queues;
    for (const auto& t : topicNames) {
      auto it = topics_.find(t);
      if (it == topics_.end()) continue;
      for (std::size_t q = 0; q < it->second->queues.size(); ++q)
        queues.push_back(TopicQueue{t, static_cast<std::int32_t>(q)});
    }
    auto alloc = core::allocateAveragely(members, queues);
    for (auto& [id, c] : g.members) {
      std::vector<TopicQueue> mine;
      for (const auto& tq : alloc[id])
        if (std::find(c->topics.begin(), c->topics.end(), tq.topic) != c->topics.end()) mine.push_back(tq);
      c->target = std::move(mine);
      ++c->targetGen;
    }
    wakeConsumers();
  }

  std::vector<Topic*> allTopics() {
    std::lock_guard lock(mu_);
    std::vector<Topic*> out;
    for (auto& [n, t] : topics_) out.push_back(t.get());
    return out;
  }

  void flushAll(bool closing = false) {
    std::vector<std::pair<PendingCallback, Status>> done;
    std::set<std::string> arrived;
    for (Topic* t : allTopics()) {
      const std::size_t before = done.size();
      for (auto& q : t->queues) q->flush(done, closing);
      if (done.size() != before) arrived.insert(t->name);
    }
    if (done.empty()) return;
    dataArrived(arrived);
    for (auto& [cb, s] : done)
      if (cb.cb) cb.cb(s, cb.queue, cb.offset);
  }
  Status syncAll() {
    Status first;
    for (Topic* t : allTopics())
      for (auto& q : t->queues) {
        Status s = q->sync();
        if (!s.isOk() && first.isOk()) first = s;
      }
    return first;
  }
  void retention(std::int64_t now) {
    if (o_.retentionBytes < 0 && o_.retentionMs < 0) return;
    std::vector<SegmentPtr> victims;
    for (Topic* t : allTopics())
      for (auto& q : t->queues) {
        auto v = q->takeExpired(now);
        victims.insert(victims.end(), v.begin(), v.end());
      }
    if (victims.empty()) return;
    // The new start is recorded first: a crash between the two never looks like lost segments.
    writeCheckpoint(/*force=*/false).isOk();
    for (const auto& v : victims) {
      core::logger("backbone")->info("retention: deleting {}", v->path);
      ::unlink(v->path.c_str());
    }
  }

  void flushLoop() {
    std::int64_t lastSync = core::monotonicMs();
    std::int64_t lastRetention = lastSync;
    const auto idle = std::chrono::milliseconds(
        o_.fsync == FsyncPolicy::kInterval ? std::clamp<std::int64_t>(o_.fsyncIntervalMs, 1, 1000) : 1000);
    while (true) {
      {
        std::unique_lock lock(flushMu_);
        flushCv_.wait_for(lock, idle, [&] { return stopFlusher_ || hasPending_.load(); });
        if (stopFlusher_) return;
        // Let a batch gather for a moment unless a lot is waiting already.
        if (hasPending_.load() && !urgent_) flushCv_.wait_for(lock, 1ms, [&] { return stopFlusher_ || urgent_; });
        urgent_ = false;
      }
      hasPending_.store(false);
      flushAll();
      const std::int64_t now = core::monotonicMs();
      if (now - lastSync >= o_.fsyncIntervalMs) {
        if (o_.fsync == FsyncPolicy::kInterval) syncAll().isOk();
        writeCheckpoint(/*force=*/false).isOk();
        lastSync = now;
      }
      if (now - lastRetention >= 30000) {
        retention(core::nowMs());
        lastRetention = now;
      }
    }
  }

  EmbeddedOptions o_;
  std::mutex persistMu_;  // orders group file writes; taken before mu_
  std::mutex mu_;         // topics_, groups_ (and consumers' target fields)
  std::map<std::string, std::unique_ptr<Topic>> topics_;
  std::map<std::string, Group> groups_;
  std::atomic<bool> closed_{false};

  std::mutex flushMu_;
  std::condition_variable flushCv_;
  bool stopFlusher_ = false;
  bool urgent_ = false;
  std::atomic<bool> hasPending_{false};
  std::thread flusher_;

  std::mutex checkpointMu_;  // orders checkpoint writes
  std::map<std::string, std::map<std::int32_t, QueueCheckpoint>> checkpoint_;  // as loaded at open
  std::string lastCheckpoint_;                                                 // guarded by checkpointMu_

  mutable std::mutex issuesMu_;
  std::vector<StorageIssue> issues_;  // guarded by issuesMu_

  // Consumers that poll without waiting (watch()); each Watch's own mutex orders a wake-up in
  // progress before unwatch() returns.
  struct Watch {
    std::set<std::string> topics;
    std::function<void()> wake;
    std::mutex mu;
    bool alive = true;  // guarded by mu
  };
  static void retire(Watch& w) {
    std::lock_guard lock(w.mu);  // waits for a wake-up in progress
    w.alive = false;
  }
  // Removes `who`'s watch from both indexes; returns it (to retire outside watchMu_).
  std::shared_ptr<Watch> dropWatchLocked(const void* who) {
    auto it = watches_.find(who);
    if (it == watches_.end()) return nullptr;
    std::shared_ptr<Watch> w = std::move(it->second);
    watches_.erase(it);
    for (const auto& t : w->topics) {
      auto& list = byTopic_[t];
      std::erase(list, w);
      if (list.empty()) byTopic_.erase(t);
    }
    return w;
  }
  // The watchers of `topics` (null: all of them), woken outside watchMu_. A watcher of two of the
  // topics may be woken twice (allowed: wake-ups may be spurious).
  void wakeWatchers(const std::set<std::string>* topics) {
    std::vector<std::shared_ptr<Watch>> due;
    {
      std::lock_guard lock(watchMu_);
      if (watches_.empty()) return;
      if (topics == nullptr) {
        for (const auto& [who, w] : watches_) due.push_back(w);
      } else {
        for (const auto& t : *topics)
          if (auto it = byTopic_.find(t); it != byTopic_.end()) due.insert(due.end(), it->second.begin(), it->second.end());
      }
    }
    for (const auto& w : due) {
      std::lock_guard lock(w->mu);
      if (w->alive) w->wake();
    }
  }
  std::mutex watchMu_;
  std::unordered_map<const void*, std::shared_ptr<Watch>> watches_;                 // by consumer
  std::unordered_map<std::string, std::vector<std::shared_ptr<Watch>>> byTopic_;  // the same, by topic
  std::mutex dataMu_;
  std::condition_variable dataCv_;
  std::atomic<std::uint64_t> dataVersion_{0};
};

// ---------------------------------------------------------------------------------------------

class EmbeddedProducer final : public Producer {
 public:
  explicit EmbeddedProducer(EmbeddedBackbone& b) : b_(b), state_(std::make_shared<State>()) {}
  ~EmbeddedProducer() override { flush(5000ms).isOk(); }

  Status send(Message m, SendCallback cb) override {
    if (m.timestampMs == 0) m.timestampMs = core::nowMs();
    return sendFrom(m, std::move(cb));
  }
  // Encodes `m` into its queue's write buffer at once: nothing of it is kept, so the caller's copy
  // is read in place.
  Status sendFrom(const Message& m, SendCallback cb) override {
    if (m.timestampMs == 0) return send(Message(m), std::move(cb));  // stamped on a copy
    if (b_.closed()) return Status::unavailable("backbone closed");
    if (const std::size_t size = segment::encodedSize(m); size > b_.maxRecordBytes())
      return Status::invalidArgument("a record of " + std::to_string(size) + " bytes for topic " + m.topic +
                                     " is larger than backbone.embedded.max.record.bytes (" +
                                     std::to_string(b_.maxRecordBytes()) + ")");
    Topic* t = nullptr;
    {
      std::lock_guard lock(cacheMu_);
      auto it = cache_.find(m.topic);
      if (it != cache_.end()) t = it->second;
    }
    if (!t) {
      FERRY_ASSIGN_OR_RETURN(t, b_.topicForSend(m.topic));
      std::lock_guard lock(cacheMu_);
      cache_[m.topic] = t;
    }
    const auto n = static_cast<std::int32_t>(t->queues.size());
    std::int32_t q = m.queue;
    if (q >= n) return Status::invalidArgument("topic " + m.topic + " has " + std::to_string(n) + " queues, not " +
                                               std::to_string(q + 1));
    if (q < 0) {
      if (!m.key.isNull()) {
        q = static_cast<std::int32_t>(segment::crc32c(m.key.view()) % static_cast<std::uint32_t>(n));
      } else if (!m.routingHint.empty()) {
        q = static_cast<std::int32_t>(segment::crc32c(m.routingHint) % static_cast<std::uint32_t>(n));
      } else {
        q = static_cast<std::int32_t>(t->roundRobin.fetch_add(1, std::memory_order_relaxed) % n);
      }
    }
    state_->outstanding.fetch_add(1);
    auto state = state_;
    const auto pending =
        t->queues[static_cast<std::size_t>(q)]->append(m, [state, cb = std::move(cb)](const Status& s, std::int32_t qq,
                                                                                   std::int64_t off) {
          if (cb) cb(s, qq, off);
          state->done();
        });
    if (!pending) {  // the backbone closed meanwhile: refused, the callback will not run
      state_->done();
      return Status::unavailable("backbone closed");
    }
    b_.notePending(*pending);
    return Status::ok();
  }

  Status flush(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(state_->mu);
    if (!state_->cv.wait_for(lock, timeout, [&] { return state_->outstanding.load() == 0; }))
      return Status::timeout(std::to_string(state_->outstanding.load()) + " message(s) not yet acknowledged");
    return Status::ok();
  }

  Status sync() override { return b_.syncAcknowledged(); }

 private:
  // Sends under way. A counter, not a locked one: a send and its acknowledgement (the flusher's
  // thread) took the same mutex per message, and the two threads woke each other on it. Only the
  // last acknowledgement takes the mutex, to wake a flush(): a flush that saw the count above zero
  // holds the mutex until it waits, so that notify cannot come between its look and its wait.
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<std::int64_t> outstanding{0};
    void done() {
      if (outstanding.fetch_sub(1) != 1) return;
      std::lock_guard lock(mu);
      cv.notify_all();
    }
  };
  EmbeddedBackbone& b_;
  std::shared_ptr<State> state_;
  std::mutex cacheMu_;
  std::unordered_map<std::string, Topic*> cache_;
};

Result<std::unique_ptr<Producer>> EmbeddedBackbone::createProducer(const StringMap&) {
  if (closed_) return Status::unavailable("backbone closed");
  return std::unique_ptr<Producer>(std::make_unique<EmbeddedProducer>(*this));
}

// ---------------------------------------------------------------------------------------------

Status EmbeddedConsumer::subscribe(const std::vector<std::string>& topicList, RebalanceListener* listener) {
  if (b_.closed()) return Status::unavailable("backbone closed");
  for (const auto& t : topicList) {
    if (!b_.findTopic(t)) return Status::notFound("topic " + t + " does not exist");
  }
  listener_ = listener;
  if (waker_) b_.watch(this, topicList, waker_);  // before the join: its rebalance wakes us too
  // A second subscribe changes the topics in place: queues kept stay held (no revoke/assign).
  b_.join(this, group_, member_, topicList);
  joined_ = true;
  return Status::ok();
}

void EmbeddedConsumer::applyRebalance() {
  std::vector<TopicQueue> target;
  std::uint64_t gen;
  bool evicted;
  b_.readTarget(this, target, gen, evicted);
  if (gen != appliedGen_ || (evicted && !evicted_)) {
    appliedGen_ = gen;
    evicted_ = evicted;
    target_ = std::move(target);
    std::vector<TopicQueue> revoked;
    for (const auto& q : assignment_)
      if (std::find(target_.begin(), target_.end(), q) == target_.end()) revoked.push_back(q);
    if (!revoked.empty()) {
      if (listener_) listener_->onRevoked(revoked);
      for (const auto& q : revoked) {
        positions_.erase(q);
        assignment_.erase(std::find(assignment_.begin(), assignment_.end(), q));
      }
      b_.release(this, group_, revoked);
    }
    std::erase_if(waiting_, [&](const auto& kv) {
      return std::find(target_.begin(), target_.end(), kv.first) == target_.end();
    });
    const std::int64_t now = core::monotonicMs();
    for (const auto& q : target_)
      if (std::find(assignment_.begin(), assignment_.end(), q) == assignment_.end()) waiting_.emplace(q, now);
  }
  if (waiting_.empty()) return;
  std::vector<TopicQueue> assigned;
  const std::int64_t now = core::monotonicMs();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const TopicQueue& q = it->first;
    Topic* t = b_.findTopic(q.topic);
    if (!t || !b_.acquire(this, group_, member_, q, now - it->second >= kHandoverTimeoutMs)) {
      ++it;
      continue;
    }
    auto& log = *t->queues[static_cast<std::size_t>(q.queue)];
    auto committed = b_.committedOffset(group_, q);
    const std::int64_t pos = committed ? *committed : (latest_ ? log.endOffset() : log.startOffset());
    positions_[q] = std::max(pos, log.startOffset());
    assigned.push_back(q);
    it = waiting_.erase(it);
  }
  if (assigned.empty()) return;
  // Keep the assignment in allocation order (sorted by topic and queue).
  std::vector<TopicQueue> held;
  for (const auto& q : target_)
    if (positions_.count(q)) held.push_back(q);
  assignment_ = std::move(held);
  if (listener_) listener_->onAssigned(assigned);
}

Result<std::size_t> EmbeddedConsumer::poll(std::vector<Message>& out, std::size_t maxMessages,
                                           std::chrono::milliseconds maxWait) {
  if (!joined_) return Status::failedPrecondition("subscribe first");
  const auto deadline = std::chrono::steady_clock::now() + maxWait;
  while (true) {
    if (b_.closed()) return Status::unavailable("backbone closed");
    const std::uint64_t version = b_.dataVersion();
    applyRebalance();
    std::size_t taken = 0;
    const std::size_t n = assignment_.size();
    for (std::size_t i = 0; i < n && taken < maxMessages; ++i) {
      const TopicQueue& q = assignment_[(rr_ + i) % n];
      Topic* t = b_.findTopic(q.topic);
      if (!t) continue;
      std::int64_t& pos = positions_[q];
      const std::size_t before = out.size();
      FERRY_RETURN_IF_ERROR(t->queues[static_cast<std::size_t>(q.queue)]->read(pos, maxMessages - taken, out, &skipped_));
      taken += out.size() - before;
    }
    if (n) rr_ = (rr_ + 1) % n;
    if (taken > 0) return taken;
    if (std::chrono::steady_clock::now() >= deadline) return std::size_t{0};
    b_.waitForData(version, deadline);
  }
}

Status EmbeddedConsumer::commit(const OffsetMap& offsets) {
  if (b_.closed()) return Status::unavailable("backbone closed");
  return b_.commitGroup(group_, offsets);
}

void EmbeddedConsumer::close() {
  b_.unwatch(this);  // no wake-up after close() returns
  if (!joined_) return;
  if (listener_ && !assignment_.empty()) listener_->onRevoked(assignment_);
  assignment_.clear();
  target_.clear();
  waiting_.clear();
  positions_.clear();
  b_.leave(this, group_, member_);
  joined_ = false;
}

}  // namespace

// The shared log on queue 0 of a one-queue topic; entries are stamped with the append time.
class EmbeddedSharedLog final : public SharedLog {
 public:
  EmbeddedSharedLog(EmbeddedBackbone& b, std::string topic, std::unique_ptr<Producer> p)
      : b_(b), topic_(std::move(topic)), producer_(std::move(p)) {}

  Result<std::int64_t> append(const Bytes& value, std::chrono::milliseconds timeout) override {
    struct Done {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      Status status;
      std::int64_t offset = -1;
    };
    auto d = std::make_shared<Done>();
    Message m;
    m.topic = topic_;
    m.queue = 0;
    m.value = value;
    FERRY_RETURN_IF_ERROR(producer_->send(std::move(m), [d](const Status& s, std::int32_t, std::int64_t off) {
      std::lock_guard lock(d->mu);
      d->done = true;
      d->status = s;
      d->offset = off;
      d->cv.notify_all();
    }));
    std::unique_lock lock(d->mu);
    if (!d->cv.wait_for(lock, timeout, [&] { return d->done; }))
      return Status::timeout("embedded shared log " + topic_ + ": append not durable in time");
    FERRY_RETURN_IF_ERROR(d->status);
    return d->offset;
  }

  Result<std::size_t> read(std::int64_t from, std::vector<Entry>& out, std::size_t max,
                           std::chrono::milliseconds wait) override {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    std::vector<Message> msgs;
    while (true) {
      if (b_.closed()) return Status::unavailable("backbone closed");
      const std::uint64_t version = b_.dataVersion();
      Topic* t = b_.findTopic(topic_);
      if (t == nullptr) return Status::notFound("embedded shared log " + topic_ + " is gone");
      std::int64_t pos = from;
      msgs.clear();
      FERRY_RETURN_IF_ERROR(t->queues[0]->read(pos, max, msgs, nullptr));
      if (!msgs.empty()) {
        for (auto& m : msgs) out.push_back(Entry{m.offset, m.timestampMs, std::move(m.value)});
        return msgs.size();
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::size_t{0};
      b_.waitForData(version, deadline);
    }
  }

  Result<std::int64_t> endOffset() override {
    Topic* t = b_.findTopic(topic_);
    if (t == nullptr) return Status::notFound("embedded shared log " + topic_ + " is gone");
    return t->queues[0]->endOffset();
  }

 private:
  EmbeddedBackbone& b_;
  const std::string topic_;
  std::unique_ptr<Producer> producer_;
};

Result<std::unique_ptr<SharedLog>> EmbeddedBackbone::openSharedLog(const std::string& topic) {
  FERRY_RETURN_IF_ERROR(ensureTopic(topic, 1));
  FERRY_ASSIGN_OR_RETURN(auto info, describeTopic(topic));
  if (info.queues != 1)
    return Status::failedPrecondition("shared log topic " + topic + " has " + std::to_string(info.queues) +
                                      " queues; it needs exactly one (a total order)");
  FERRY_ASSIGN_OR_RETURN(auto producer, createProducer({}));
  return std::unique_ptr<SharedLog>(std::make_unique<EmbeddedSharedLog>(*this, topic, std::move(producer)));
}

Result<std::unique_ptr<Backbone>> openEmbeddedBackbone(const EmbeddedOptions& options) {
  if (options.dir.empty()) return Status::invalidArgument("embedded backbone: dir is empty");
  if (options.segmentBytes < 1024) return Status::invalidArgument("embedded backbone: segment bytes below 1024");
  auto b = std::make_unique<EmbeddedBackbone>(options);
  FERRY_RETURN_IF_ERROR(b->open());
  return std::unique_ptr<Backbone>(std::move(b));
}

}  // namespace ferry::backbone
