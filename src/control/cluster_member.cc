// Cluster membership (see cluster_member.h).
#include "control/cluster_member.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "core/clock.h"
#include "core/logging.h"
#include "core/thread.h"

namespace ferry::control {
namespace {

std::shared_ptr<spdlog::logger> log() {
  static auto l = core::logger("cluster");
  return l;
}

std::string randomId() {
  std::random_device rd;
  std::mt19937_64 g((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(core::nowMs()));
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 16; ++i) s.push_back(hex[g() % 16]);
  return s;
}

}  // namespace

ClusterMember::ClusterMember(backbone::SharedLog& log, backbone::SharedLog& snapshots, ClusterMemberOptions options,
                             OnChange onChange)
    : log_(log), snapshots_(snapshots), o_(std::move(options)), onChange_(std::move(onChange)) {
  if (o_.incarnation.empty()) o_.incarnation = randomId();
}

ClusterMember::~ClusterMember() { stop(false); }

Status ClusterMember::bootstrap() {
  FERRY_ASSIGN_OR_RETURN(auto fresh, cluster::ClusterState::create(o_.cluster));
  state_ = std::make_unique<cluster::ClusterState>(std::move(fresh));
  next_ = 0;
  // The latest snapshot, if any: the last entries of the snapshot log.
  FERRY_ASSIGN_OR_RETURN(std::int64_t snapEnd, snapshots_.endOffset());
  if (snapEnd > 0) {
    FERRY_ASSIGN_OR_RETURN(std::string text, latestSnapshot(snapEnd));
    if (!text.empty()) {
      auto s = cluster::ClusterState::fromSnapshot(text);
      if (s.isOk() && s->options().sessionTimeoutMs == o_.cluster.sessionTimeoutMs &&
          s->options().strategy == o_.cluster.strategy) {
        state_ = std::make_unique<cluster::ClusterState>(std::move(*s));
        next_ = state_->offset() + 1;
        log()->info("cluster: bootstrapped from the snapshot at log offset {}", state_->offset());
      } else {
        log()->warn("cluster: latest snapshot not used ({}); replaying the whole log",
                    s.isOk() ? "other session timeout or strategy" : s.status().toString());
      }
    }
  }
  // Catch up to the end as of now before joining.
  const std::int64_t t0 = core::monotonicMs();
  FERRY_ASSIGN_OR_RETURN(std::int64_t end, log_.endOffset());
  std::int64_t events = 0;
  while (next_ < end) {
    std::vector<backbone::SharedLog::Entry> batch;
    FERRY_ASSIGN_OR_RETURN(std::size_t n, log_.read(next_, batch, 1000, std::chrono::milliseconds(1000)));
    if (n == 0 && core::monotonicMs() - t0 > 60000)
      return Status::timeout("cluster: the log did not deliver offsets " + std::to_string(next_) + ".." +
                             std::to_string(end) + " within 60 s");
    std::lock_guard lock(mu_);
    for (const auto& e : batch) {
      applyEntry(e);
      ++events;
    }
  }
  {
    std::lock_guard lock(mu_);
    publishLocked();
    confirmedSentMs_ = pendingConfirmedMs_;
  }
  applied_ = next_ - 1;
  syncedAtMs_ = t0;  // everything appended before the end was asked for is applied
  log()->info("cluster: caught up to log offset {} ({} events in {} ms)", next_ - 1, events,
              core::monotonicMs() - t0);
  return Status::ok();
}

Status ClusterMember::start() {
  FERRY_RETURN_IF_ERROR(bootstrap());
  stop_ = false;
  heartbeater_ = core::namedThread("member-beat", [this] { heartbeatLoop(); });
  tailer_ = core::namedThread("member-tail", [this] { tailLoop(); });
  syncer_ = core::namedThread("member-sync", [this] { syncLoop(); });
  return Status::ok();
}

void ClusterMember::stop(bool graceful) {
  if (stop_.exchange(true)) return;
  if (graceful) {
    cluster::Event e;
    e.type = cluster::EventType::kLeave;
    e.worker = o_.workerId;
    e.incarnation = o_.incarnation;
    if (auto r = log_.append(Bytes(cluster::encode(e)), std::chrono::seconds(10)); !r.isOk())
      log()->warn("cluster: could not append the leave: {}", r.status().toString());
  }
  {
    std::lock_guard lock(mu_);  // the syncer checks stop_ under mu_: no wake-up is lost
    syncCv_.notify_all();
    appliedCv_.notify_all();
  }
  if (heartbeater_.joinable()) heartbeater_.join();
  if (tailer_.joinable()) tailer_.join();
  if (syncer_.joinable()) syncer_.join();  // at most one end query in flight (bounded by the client)
}

Result<std::int64_t> ClusterMember::append(const cluster::Event& e) {
  return log_.append(Bytes(cluster::encode(e)), std::chrono::seconds(30));
}

Result<std::int64_t> ClusterMember::appendAll(const std::vector<cluster::Event>& events) {
  std::vector<Bytes> values;
  values.reserve(events.size());
  for (const auto& e : events) values.emplace_back(cluster::encode(e));
  return log_.appendAll(values, std::chrono::seconds(30));
}

void ClusterMember::post(const cluster::Event& e) {
  log_.appendAsync(Bytes(cluster::encode(e)), [type = cluster::eventTypeName(e.type)](Result<std::int64_t> r) {
    if (!r.isOk()) core::logger("cluster")->warn("cluster event {} not appended: {}", type, r.status().toString());
  });
}

bool ClusterMember::waitApplied(std::int64_t offset, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return appliedCv_.wait_for(lock, timeout, [&] { return applied_.load() >= offset; });
}

void ClusterMember::publishLocked() { published_ = std::make_shared<const cluster::ClusterState>(*state_); }

ClusterMember::StateRef ClusterMember::state() const {
  std::lock_guard lock(mu_);
  return published_;
}

ClusterMember::StateRef ClusterMember::syncedState(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mu_);
  // Without the lease our heartbeats do not come back: the log is unreachable (or this worker
  // too slow to read it). Waiting would not make the answer fresher, only late; the caller
  // tells how stale it is (stateAgeMs()).
  if (stop_.load() || !leaseValid()) return published_;
  const std::uint64_t want = ++syncAsked_;
  syncCv_.notify_one();
  while (true) {
    if (syncAnswered_ >= want) {
      if (syncEnd_ < 0) break;  // the query failed: what is applied is all there is
      if (applied_.load() >= syncEnd_ - 1) {
        syncedAtMs_ = std::max(syncedAtMs_.load(), syncSentMs_);
        break;
      }
    }
    // The lease ends with time, not with an event: looked at every 50 ms.
    if (stop_.load() || !leaseValid()) break;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      log()->warn("cluster: read served at log offset {} (the log ends at {})", applied_.load(),
                  syncAnswered_ >= want ? std::to_string(syncEnd_) : std::string("an offset not yet known"));
      break;
    }
    appliedCv_.wait_until(lock, std::min(deadline, now + std::chrono::milliseconds(50)));
  }
  return published_;
}

std::int64_t ClusterMember::stateAgeMs() const {
  const std::int64_t at = std::max(confirmedSentMs_.load(), syncedAtMs_.load());
  return at < 0 ? -1 : std::max<std::int64_t>(0, core::monotonicMs() - at);
}

// The syncer thread: one end query at a time, answering every reader that asked before it left.
void ClusterMember::syncLoop() {
  std::unique_lock lock(mu_);
  while (!stop_.load()) {
    if (syncAsked_ == syncAnswered_) {
      syncCv_.wait_for(lock, std::chrono::milliseconds(200));
      continue;
    }
    const std::uint64_t generation = syncAsked_;
    lock.unlock();
    const std::int64_t sent = core::monotonicMs();
    auto end = log_.endOffset();
    lock.lock();
    syncAnswered_ = generation;
    syncEnd_ = end.isOk() ? *end : -1;
    syncSentMs_ = sent;
    appliedCv_.notify_all();
  }
}

bool ClusterMember::leaseValid() const {
  const std::int64_t confirmed = confirmedSentMs_.load();
  return confirmed >= 0 &&
         core::monotonicMs() < confirmed + o_.cluster.sessionTimeoutMs - o_.leaseMarginMs;
}

bool ClusterMember::owns(const cluster::Unit& unit, std::int64_t epoch) const {
  const StateRef s = state();
  auto it = s->assignment().find(unit);
  return it != s->assignment().end() && it->second.owner == o_.workerId &&
         it->second.incarnation == o_.incarnation && it->second.epoch == epoch;
}

void ClusterMember::setLoads(std::map<std::string, double> loads) {
  std::lock_guard lock(loadsMu_);
  loads_ = std::move(loads);
}

// The tailer thread (or bootstrap, before it starts).
void ClusterMember::applyEntry(const backbone::SharedLog::Entry& entry) {
  next_ = entry.offset + 1;
  auto e = cluster::decode(entry.value.view());
  if (!e.isOk()) {
    ++skipped_;
    log()->warn("cluster: log entry {} skipped: {}", entry.offset, e.status().message());
    return;
  }
  state_->apply(entry.offset, entry.timestampMs, *e);
  ++sinceSnapshot_;
  if (e->type == cluster::EventType::kHeartbeat && e->worker == o_.workerId && e->incarnation == o_.incarnation)
    pendingConfirmedMs_ = std::max(pendingConfirmedMs_, e->sentMs);  // counts once published
}

// The member with the smallest id writes snapshots (all agree on who that is at each offset).
void ClusterMember::maybeSnapshot() {
  if (sinceSnapshot_ < o_.snapshotEveryEvents) return;
  sinceSnapshot_ = 0;
  const auto& members = state_->members();  // the tailer's own state: no lock
  if (members.empty() || members.begin()->first != o_.workerId ||
      members.begin()->second.incarnation != o_.incarnation)
    return;  // someone else writes it
  const std::string snap = state_->toSnapshot();
  // In parts no larger than a broker takes (Kafka: 1 MB by default), written one after the other
  // by this member alone; each names the snapshot (its log offset) and its place.
  const std::size_t parts = std::max<std::size_t>(1, (snap.size() + kSnapshotPartBytes - 1) / kSnapshotPartBytes);
  for (std::size_t i = 0; i < parts; ++i) {
    std::string entry = std::string(kSnapshotMagic) + " " + std::to_string(state_->offset()) + " " + std::to_string(i) +
                        " " + std::to_string(parts) + "\n";
    entry.append(snap, i * kSnapshotPartBytes, kSnapshotPartBytes);
    if (auto r = snapshots_.append(Bytes(std::move(entry)), std::chrono::seconds(30)); !r.isOk()) {
      log()->warn("cluster: snapshot not written: {}", r.status().toString());
      return;
    }
  }
}

// The text of the latest complete snapshot ("" when there is none): its last part is the log's
// last entry, the parts before it precede it. Entries without the header are whole snapshots.
Result<std::string> ClusterMember::latestSnapshot(std::int64_t end) {
  auto header = [](std::string_view v, std::int64_t& id, std::size_t& i, std::size_t& n) -> std::size_t {
    const std::string_view magic = kSnapshotMagic;
    if (v.substr(0, magic.size()) != magic) return 0;
    const auto nl = v.find('\n');
    if (nl == std::string_view::npos) return 0;
    long long a = -1;
    unsigned long b = 0, c = 0;
    const std::string h(v.substr(magic.size(), nl - magic.size()));
    if (std::sscanf(h.c_str(), " %lld %lu %lu", &a, &b, &c) != 3 || c == 0 || b >= c) return 0;
    id = a;
    i = b;
    n = c;
    return nl + 1;
  };
  std::vector<backbone::SharedLog::Entry> last;
  FERRY_RETURN_IF_ERROR(snapshots_.read(end - 1, last, 1, std::chrono::milliseconds(2000)).status());
  if (last.empty()) return std::string();
  std::int64_t id = -1;
  std::size_t idx = 0, n = 0;
  const std::string_view v = last.back().value.view();
  const std::size_t body = header(v, id, idx, n);
  if (body == 0) return std::string(v);  // a whole snapshot
  if (idx != n - 1 || end < static_cast<std::int64_t>(n)) return std::string();  // torn: the writer died mid-way
  std::vector<backbone::SharedLog::Entry> parts;
  const std::int64_t first = end - static_cast<std::int64_t>(n);
  while (static_cast<std::int64_t>(parts.size()) < static_cast<std::int64_t>(n)) {
    std::vector<backbone::SharedLog::Entry> got;
    FERRY_ASSIGN_OR_RETURN(std::size_t k, snapshots_.read(first + static_cast<std::int64_t>(parts.size()), got,
                                                          n - parts.size(), std::chrono::milliseconds(2000)));
    if (k == 0) return Status::timeout("cluster: the snapshot log did not deliver its last snapshot's parts");
    for (auto& e : got) parts.push_back(std::move(e));
  }
  std::string text;
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t pid = -1;
    std::size_t pi = 0, pn = 0;
    const std::string_view pv = parts[i].value.view();
    const std::size_t pb = header(pv, pid, pi, pn);
    if (pb == 0 || pid != id || pi != i || pn != n) return std::string();  // interleaved or torn: not used
    text.append(pv.substr(pb));
  }
  return text;
}

void ClusterMember::tailLoop() {
  std::vector<backbone::SharedLog::Entry> batch;
  bool unpublished = false;
  std::int64_t lastPublish = 0;
  while (!stop_.load()) {
    batch.clear();
    // While applied events wait to be published, read no longer than until they are due.
    const std::int64_t wait =
        unpublished ? std::clamp<std::int64_t>(lastPublish + kPublishEveryMs - core::monotonicMs(), 0, 100) : 100;
    auto r = log_.read(next_, batch, 1000, std::chrono::milliseconds(wait));
    if (!r.isOk()) {
      log()->warn("cluster: reading the log at {} failed: {}", next_, r.status().toString());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    // state_ is the tailer's alone: applied and copied without the lock, which readers (every
    // task's ownership check) then hold only to take the new pointer. A copy costs the whole
    // state, so it is made at most every kPublishEveryMs while events stream in.
    for (const auto& e : batch) applyEntry(e);
    unpublished = unpublished || !batch.empty();
    StateRef fresh;
    if (unpublished && core::monotonicMs() - lastPublish >= kPublishEveryMs) {
      fresh = std::make_shared<const cluster::ClusterState>(*state_);
      lastPublish = core::monotonicMs();
      unpublished = false;
    }
    StateRef changed;
    {
      std::lock_guard lock(mu_);
      const bool published = fresh != nullptr;
      if (published) {
        published_ = std::move(fresh);
        applied_ = next_ - 1;
        // Our own heartbeats count for the lease once the state that follows them is visible:
        // a worker thawed after a freeze must not see its lease before the moves made meanwhile.
        std::int64_t prev = confirmedSentMs_.load();
        if (pendingConfirmedMs_ > prev) confirmedSentMs_ = pendingConfirmedMs_;
        appliedCv_.notify_all();
      }
      const bool lease = leaseValid();
      if (published || lease != lastLease_) changed = published_;
      if (lease != lastLease_) {
        if (!lease) log()->warn("cluster: {} lost its lease (no heartbeat of its own confirmed in time)", o_.workerId);
        else log()->info("cluster: {} holds its lease", o_.workerId);
        lastLease_ = lease;
      }
    }
    if (changed && onChange_) onChange_(changed, lastLease_);
    maybeSnapshot();
  }
}

void ClusterMember::heartbeatLoop() {
  while (!stop_.load()) {
    if (!heartbeatsPaused_.load()) {
      cluster::Event e;
      e.type = cluster::EventType::kHeartbeat;
      e.worker = o_.workerId;
      e.incarnation = o_.incarnation;
      e.url = o_.url;
      e.capacity = o_.capacity;
      e.sentMs = core::monotonicMs();
      {
        std::lock_guard lock(loadsMu_);
        e.loads = loads_;
      }
      if (unitReporter_) unitReporter_(e);
      if (auto r = log_.append(Bytes(cluster::encode(e)), std::chrono::milliseconds(o_.cluster.sessionTimeoutMs));
          !r.isOk())
        log()->warn("cluster: heartbeat not appended: {}", r.status().toString());
    }
    for (std::int64_t waited = 0; waited < o_.heartbeatIntervalMs && !stop_.load(); waited += 20)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace ferry::control
