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
#include "core/fs.h"
#include "core/logging.h"

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

// One segment file. Shared so that a reader keeps the descriptor open while retention deletes it.
struct Segment {
  std::int64_t base = 0;
  std::string path;
  int fd = -1;
  std::int64_t size = 0;  // bytes written (readable)
  std::vector<std::pair<std::int64_t, std::int64_t>> index;  // sparse (offset, file position)
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

// One queue of a topic: its segments, the offsets it assigned and the bytes waiting to be written.
class QueueLog {
 public:
  QueueLog(std::string dir, std::int32_t queue, const EmbeddedOptions& o)
      : dir_(std::move(dir)), queue_(queue), o_(o) {}

  Status open() {
    FERRY_RETURN_IF_ERROR(core::ensureDir(dir_));
    std::vector<std::string> files;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n.size() == 24 && n.compare(20, 4, ".log") == 0) files.push_back(n);
      }
      ::closedir(d);
    }
    std::sort(files.begin(), files.end());
    for (std::size_t i = 0; i < files.size(); ++i) {
      auto seg = std::make_shared<Segment>();
      seg->base = std::stoll(files[i].substr(0, 20));
      seg->path = dir_ + "/" + files[i];
      seg->fd = ::open(seg->path.c_str(), O_RDWR | O_CLOEXEC);
      if (seg->fd < 0) return core::errnoStatus("open", seg->path, errno);
      FERRY_ASSIGN_OR_RETURN(std::string data, core::readFile(seg->path));
      // Index every segment; the last one is where a crash can leave a torn tail.
      std::size_t pos = 0, n = 0;
      std::int64_t next = seg->base;
      while (pos < data.size()) {
        segment::DecodeState st;
        std::int64_t off = 0;
        const std::size_t sz = segment::checkFrame(std::string_view(data).substr(pos), st, &off);
        if (sz == 0) break;
        if (n % kIndexEvery == 0) seg->index.emplace_back(off, static_cast<std::int64_t>(pos));
        next = off + 1;
        pos += sz;
        ++n;
      }
      if (pos < data.size()) {
        if (i + 1 != files.size())
          core::logger("backbone")->warn("{}: damaged record at byte {} inside an older segment; {} bytes after it "
                                         "are skipped", seg->path, pos, data.size() - pos);
        else
          core::logger("backbone")->warn("{}: torn tail after a crash: truncated {} bytes after the last good record "
                                         "(byte {})", seg->path, data.size() - pos, pos);
        if (::ftruncate(seg->fd, static_cast<off_t>(pos)) != 0)
          return core::errnoStatus("truncate", seg->path, errno);
        ::fdatasync(seg->fd);
      }
      seg->size = static_cast<std::int64_t>(pos);
      next_ = std::max(next_, next);
      segs_.push_back(std::move(seg));
    }
    if (!segs_.empty()) next_ = std::max(next_, segs_.back()->base);
    flushed_ = next_;
    return Status::ok();
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

  void sync() {
    SegmentPtr active;
    {
      std::lock_guard lock(mu_);
      if (!dirty_ || segs_.empty()) return;
      dirty_ = false;
      active = segs_.back();
    }
    ::fdatasync(active->fd);
  }

  // Reads messages from `from` on (only bytes already written). Sets `from` to the next offset.
  Status read(std::int64_t& from, std::size_t max, std::vector<Message>& out, const std::string& topic) {
    std::vector<SegmentPtr> segs;
    std::int64_t end;
    {
      std::lock_guard lock(mu_);
      end = flushed_;
      if (from >= end || segs_.empty()) return Status::ok();
      if (from < segs_.front()->base) {
        core::logger("backbone")->warn("{}-{}: offset {} was deleted by retention; continuing at {}", topic, queue_,
                                       from, segs_.front()->base);
        from = segs_.front()->base;
      }
      auto it = std::upper_bound(segs_.begin(), segs_.end(), from,
                                 [](std::int64_t o, const SegmentPtr& s) { return o < s->base; });
      if (it != segs_.begin()) --it;
      segs.assign(it, segs_.end());
    }
    std::size_t taken = 0;
    for (std::size_t si = 0; si < segs.size() && taken < max && from < end; ++si) {
      const SegmentPtr& seg = segs[si];
      std::int64_t segSize;
      std::int64_t pos = 0;
      {
        std::lock_guard lock(mu_);
        segSize = seg->size;
        auto ix = std::upper_bound(seg->index.begin(), seg->index.end(), std::make_pair(from, INT64_MAX));
        if (ix != seg->index.begin()) pos = std::prev(ix)->second;
      }
      std::string buf;
      std::size_t chunk = kFirstReadChunk;
      while (pos < segSize && taken < max && from < end) {
        std::size_t want = static_cast<std::size_t>(std::min<std::int64_t>(segSize - pos, static_cast<std::int64_t>(chunk)));
        chunk = std::min(chunk * 2, kMaxReadChunk);
        buf.resize(want);
        ssize_t got = ::pread(seg->fd, buf.data(), want, pos);
        if (got <= 0) return core::errnoStatus("read", seg->path, got < 0 ? errno : EIO);
        buf.resize(static_cast<std::size_t>(got));
        std::size_t p = 0;
        while (p < buf.size() && taken < max) {
          auto d = segment::decodeOne(std::string_view(buf).substr(p));
          if (d.state == segment::DecodeState::kTruncated) {
            if (p == 0) {  // one record larger than the chunk: read exactly its frame
              if (buf.size() < segment::kFrameHeader) return Status::dataLoss(seg->path + ": short read");
              std::uint32_t len = 0;
              std::memcpy(&len, buf.data(), 4);
              buf.resize(segment::kFrameHeader + len);
              got = ::pread(seg->fd, buf.data(), buf.size(), pos);
              if (got != static_cast<ssize_t>(buf.size())) return Status::dataLoss(seg->path + ": short read");
              continue;
            }
            break;
          }
          if (d.state == segment::DecodeState::kCorrupt)
            return Status::dataLoss(seg->path + " at byte " + std::to_string(pos + static_cast<std::int64_t>(p)) +
                                    ": " + d.error);
          p += d.consumed;
          if (d.message.offset < from) continue;
          if (d.message.offset >= end) break;
          d.message.topic = topic;
          d.message.queue = queue_;
          from = d.message.offset + 1;
          out.push_back(std::move(d.message));
          ++taken;
        }
        pos += static_cast<std::int64_t>(p);
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

  void applyRetention(std::int64_t nowMs) {
    std::vector<SegmentPtr> victims;
    {
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
    }
    for (const auto& v : victims) {
      core::logger("backbone")->info("retention: deleting {}", v->path);
      ::unlink(v->path.c_str());
    }
  }

 private:
  struct Batch {
    std::string bytes;
    std::vector<PendingCallback> cbs;
    std::vector<std::pair<std::int64_t, std::int64_t>> index;  // (offset, position in bytes)
    std::int64_t first = 0;  // offset of the first record in `bytes`
    std::int64_t end = 0;    // one past the last
  };

  // Appends a batch to the active segment (rolling first when it is full). Only one thread
  // writes at a time, so the segment list's tail and its size change only here.
  Status writeBatch(const Batch& batch) {
    SegmentPtr seg;
    {
      std::lock_guard lock(mu_);
      if (!segs_.empty()) seg = segs_.back();
    }
    if (!seg || seg->size >= o_.segmentBytes) {
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
      fresh->fd = ::open(fresh->path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fresh->fd < 0) return failBatch(batch, core::errnoStatus("create", fresh->path, errno));
      core::syncDir(dir_).isOk();
      seg = fresh;
      std::lock_guard lock(mu_);
      segs_.push_back(std::move(fresh));
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
    if (o_.fsync != FsyncPolicy::kAlways) dirty_ = true;
    return Status::ok();
  }

  // A batch that could not be written: its offsets are handed out again when nothing was
  // appended since; otherwise they stay a gap (readers skip it).
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
  const std::int32_t queue_;
  const EmbeddedOptions& o_;
  std::mutex mu_;
  std::vector<SegmentPtr> segs_;
  std::int64_t next_ = 0;     // next offset to assign
  std::int64_t flushed_ = 0;  // offsets below are written and readable
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
    auto meta = core::readFile(o_.dir + "/topics.json");
    if (meta.isOk()) {
      try {
        auto j = nlohmann::json::parse(*meta);
        for (auto& [name, queues] : j.at("topics").items())
          FERRY_RETURN_IF_ERROR(createTopicLocked(name, queues.get<std::int32_t>(), /*persist=*/false));
      } catch (const std::exception& e) {
        return Status::dataLoss(o_.dir + "/topics.json: " + e.what());
      }
    }
    if (DIR* d = ::opendir((o_.dir + "/groups").c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n.size() < 6 || n.compare(n.size() - 5, 5, ".json") != 0) continue;
        auto text = core::readFile(o_.dir + "/groups/" + n);
        if (!text.isOk()) continue;
        try {
          auto j = nlohmann::json::parse(*text);
          Group& g = groups_[j.at("group").get<std::string>()];
          for (auto& o : j.at("offsets"))
            g.committed[TopicQueue{o.at("topic").get<std::string>(), o.at("queue").get<std::int32_t>()}] =
                o.at("offset").get<std::int64_t>();
        } catch (const std::exception& e) {
          ::closedir(d);
          return Status::dataLoss(o_.dir + "/groups/" + n + ": " + e.what());
        }
      }
      ::closedir(d);
    }
    retention(core::nowMs());
    flusher_ = std::thread([this] { flushLoop(); });
    return Status::ok();
  }

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
    syncAll();
    dataCv_.notify_all();
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
    g.committed = offsets;
    return persistGroup(group, g.committed);
  }
  Status deleteGroup(const std::string& group) override { return setCommittedOffsets(group, {}); }

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
    std::lock_guard persist(persistMu_);
    OffsetMap snapshot;
    {
      std::lock_guard lock(mu_);
      Group& g = groups_[group];
      for (const auto& [tq, o] : offsets) g.committed[tq] = o;
      snapshot = g.committed;
    }
    return persistGroup(group, snapshot);
  }
  // Waits until new data was written or `deadline`, or the consumer's assignment changed.
  void waitForData(std::uint64_t seenVersion, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(dataMu_);
    dataCv_.wait_until(lock, deadline, [&] { return dataVersion_.load() != seenVersion || closed_; });
  }
  std::uint64_t dataVersion() const { return dataVersion_.load(); }
  void wakeConsumers() {
    {
      std::lock_guard lock(dataMu_);
      dataVersion_.fetch_add(1);
    }
    dataCv_.notify_all();
  }

 private:
  Status createTopicLocked(const std::string& name, std::int32_t queues, bool persist) {
    FERRY_RETURN_IF_ERROR(validTopicName(name));
    if (queues < 1 || queues > 4096) return Status::invalidArgument("topic " + name + ": queues must be 1..4096");
    auto t = std::make_unique<Topic>();
    t->name = name;
    for (std::int32_t q = 0; q < queues; ++q) {
      auto log = std::make_unique<QueueLog>(o_.dir + "/topics/" + name + "/" + std::to_string(q), q, o_);
      FERRY_RETURN_IF_ERROR(log->open().withContext("topic " + name));
      t->queues.push_back(std::move(log));
    }
    topics_[name] = std::move(t);
    if (!persist) return Status::ok();
    nlohmann::json j;
    for (const auto& [n, tp] : topics_) j["topics"][n] = tp->queues.size();
    return core::atomicWriteFile(o_.dir + "/topics.json", j.dump());
  }

  Status persistGroup(const std::string& group, const OffsetMap& committed) {
    const std::string path = o_.dir + "/groups/" + fileSafe(group) + ".json";
    if (committed.empty()) {
      ::unlink(path.c_str());
      return core::syncDir(o_.dir + "/groups");
    }
    nlohmann::json j;
    j["group"] = group;
    j["offsets"] = nlohmann::json::array();
    for (const auto& [tq, o] : committed) j["offsets"].push_back({{"topic", tq.topic}, {"queue", tq.queue}, {"offset", o}});
    return core::atomicWriteFile(path, j.dump());
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
    for (Topic* t : allTopics())
      for (auto& q : t->queues) q->flush(done, closing);
    if (done.empty()) return;
    wakeConsumers();
    for (auto& [cb, s] : done)
      if (cb.cb) cb.cb(s, cb.queue, cb.offset);
  }
  void syncAll() {
    for (Topic* t : allTopics())
      for (auto& q : t->queues) q->sync();
  }
  void retention(std::int64_t now) {
    if (o_.retentionBytes < 0 && o_.retentionMs < 0) return;
    for (Topic* t : allTopics())
      for (auto& q : t->queues) q->applyRetention(now);
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
      if (o_.fsync == FsyncPolicy::kInterval && now - lastSync >= o_.fsyncIntervalMs) {
        syncAll();
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
    if (b_.closed()) return Status::unavailable("backbone closed");
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
    if (m.timestampMs == 0) m.timestampMs = core::nowMs();
    {
      std::lock_guard lock(state_->mu);
      ++state_->outstanding;
    }
    auto state = state_;
    const auto pending =
        t->queues[static_cast<std::size_t>(q)]->append(m, [state, cb = std::move(cb)](const Status& s, std::int32_t qq,
                                                                                   std::int64_t off) {
          if (cb) cb(s, qq, off);
          std::lock_guard lock(state->mu);
          if (--state->outstanding == 0) state->cv.notify_all();
        });
    if (!pending) {  // the backbone closed meanwhile: refused, the callback will not run
      std::lock_guard lock(state_->mu);
      if (--state_->outstanding == 0) state_->cv.notify_all();
      return Status::unavailable("backbone closed");
    }
    b_.notePending(*pending);
    return Status::ok();
  }

  Status flush(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(state_->mu);
    if (!state_->cv.wait_for(lock, timeout, [&] { return state_->outstanding == 0; }))
      return Status::timeout(std::to_string(state_->outstanding) + " message(s) not yet acknowledged");
    return Status::ok();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::int64_t outstanding = 0;
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
      FERRY_RETURN_IF_ERROR(t->queues[static_cast<std::size_t>(q.queue)]->read(pos, maxMessages - taken, out, q.topic));
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
      FERRY_RETURN_IF_ERROR(t->queues[0]->read(pos, max, msgs, topic_));
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
