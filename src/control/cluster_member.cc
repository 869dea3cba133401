// Cluster membership (see cluster_member.h).
#include "control/cluster_member.h"

#include <random>

#include "core/clock.h"
#include "core/logging.h"

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
  // The latest snapshot, if any: the last entry of the snapshot log.
  FERRY_ASSIGN_OR_RETURN(std::int64_t snapEnd, snapshots_.endOffset());
  if (snapEnd > 0) {
    std::vector<backbone::SharedLog::Entry> last;
    FERRY_RETURN_IF_ERROR(snapshots_.read(snapEnd - 1, last, 1, std::chrono::milliseconds(2000)).status());
    if (!last.empty()) {
      auto s = cluster::ClusterState::fromSnapshot(last.back().value.view());
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
  FERRY_ASSIGN_OR_RETURN(std::int64_t end, log_.endOffset());
  const std::int64_t t0 = core::monotonicMs();
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
  applied_ = next_ - 1;
  log()->info("cluster: caught up to log offset {} ({} events in {} ms)", next_ - 1, events,
              core::monotonicMs() - t0);
  return Status::ok();
}

Status ClusterMember::start() {
  FERRY_RETURN_IF_ERROR(bootstrap());
  stop_ = false;
  heartbeater_ = std::thread([this] { heartbeatLoop(); });
  tailer_ = std::thread([this] { tailLoop(); });
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
  if (heartbeater_.joinable()) heartbeater_.join();
  if (tailer_.joinable()) tailer_.join();
}

Result<std::int64_t> ClusterMember::append(const cluster::Event& e) {
  return log_.append(Bytes(cluster::encode(e)), std::chrono::seconds(30));
}

bool ClusterMember::waitApplied(std::int64_t offset, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return appliedCv_.wait_for(lock, timeout, [&] { return applied_.load() >= offset; });
}

cluster::ClusterState ClusterMember::state() const {
  std::lock_guard lock(mu_);
  return *state_;
}

cluster::ClusterState ClusterMember::syncedState(std::chrono::milliseconds timeout) {
  auto end = log_.endOffset();
  if (end.isOk() && *end > 0 && !waitApplied(*end - 1, timeout))
    log()->warn("cluster: read served at log offset {} (the log ends at {})", applied_.load(), *end);
  return state();
}

bool ClusterMember::leaseValid() const {
  const std::int64_t confirmed = confirmedSentMs_.load();
  return confirmed >= 0 &&
         core::monotonicMs() < confirmed + o_.cluster.sessionTimeoutMs - o_.leaseMarginMs;
}

bool ClusterMember::owns(const cluster::Unit& unit, std::int64_t epoch) const {
  std::lock_guard lock(mu_);
  auto it = state_->assignment().find(unit);
  return it != state_->assignment().end() && it->second.owner == o_.workerId &&
         it->second.incarnation == o_.incarnation && it->second.epoch == epoch;
}

void ClusterMember::setLoads(std::map<std::string, double> loads) {
  std::lock_guard lock(loadsMu_);
  loads_ = std::move(loads);
}

// mu_ held.
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
  if (e->type == cluster::EventType::kHeartbeat && e->worker == o_.workerId && e->incarnation == o_.incarnation) {
    std::int64_t prev = confirmedSentMs_.load();
    while (e->sentMs > prev && !confirmedSentMs_.compare_exchange_weak(prev, e->sentMs)) {
    }
  }
}

// The member with the smallest id writes snapshots (all agree on who that is at each offset).
void ClusterMember::maybeSnapshot() {
  if (sinceSnapshot_ < o_.snapshotEveryEvents) return;
  std::string snap;
  {
    std::lock_guard lock(mu_);
    const auto& members = state_->members();
    if (members.empty() || members.begin()->first != o_.workerId ||
        members.begin()->second.incarnation != o_.incarnation) {
      sinceSnapshot_ = 0;  // someone else writes it
      return;
    }
    snap = state_->toSnapshot();
    sinceSnapshot_ = 0;
  }
  if (auto r = snapshots_.append(Bytes(std::move(snap)), std::chrono::seconds(30)); !r.isOk())
    log()->warn("cluster: snapshot not written: {}", r.status().toString());
}

void ClusterMember::tailLoop() {
  std::vector<backbone::SharedLog::Entry> batch;
  while (!stop_.load()) {
    batch.clear();
    auto r = log_.read(next_, batch, 1000, std::chrono::milliseconds(100));
    if (!r.isOk()) {
      log()->warn("cluster: reading the log at {} failed: {}", next_, r.status().toString());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::unique_ptr<cluster::ClusterState> copy;
    {
      std::lock_guard lock(mu_);
      for (const auto& e : batch) applyEntry(e);
      if (!batch.empty()) {
        applied_ = next_ - 1;
        appliedCv_.notify_all();
      }
      const bool lease = leaseValid();
      if (!batch.empty() || lease != lastLease_) copy = std::make_unique<cluster::ClusterState>(*state_);
      if (lease != lastLease_) {
        if (!lease) log()->warn("cluster: {} lost its lease (no heartbeat of its own confirmed in time)", o_.workerId);
        else log()->info("cluster: {} holds its lease", o_.workerId);
        lastLease_ = lease;
      }
    }
    if (copy && onChange_) onChange_(*copy, lastLease_);
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
      if (auto r = log_.append(Bytes(cluster::encode(e)), std::chrono::milliseconds(o_.cluster.sessionTimeoutMs));
          !r.isOk())
        log()->warn("cluster: heartbeat not appended: {}", r.status().toString());
    }
    for (std::int64_t waited = 0; waited < o_.heartbeatIntervalMs && !stop_.load(); waited += 20)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace ferry::control
