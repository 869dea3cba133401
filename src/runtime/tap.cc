// Taps (tap.h).
#include "runtime/tap.h"

#include <algorithm>
#include <deque>

#include <simdjson.h>

#include "core/clock.h"

namespace ferry::runtime {

class Tap {
 public:
  Tap(std::string connector, TapOptions o) : connector(std::move(connector)), options(o), tokens(o.recordsPerSecond) {}
  const std::string connector;
  const TapOptions options;
  // Guarded by the TapPoint's mutex (taking) and then by its own (reading); both are taken in
  // that order only by the point, the reader takes only its own.
  std::mutex mu;
  std::deque<TappedRecord> ring;
  double tokens;
  std::int64_t refilledAtMs = 0;
  std::uint64_t sampledOut = 0, overflowed = 0;
  std::int64_t lastReadMs = 0;  // guarded by the hub's mutex
};

namespace {

void keep(const Bytes& in, Bytes& out, bool& truncated, std::size_t& size, bool& null) {
  null = in.isNull();
  size = in.size();
  truncated = in.size() > kTapInlineBytes;
  out = truncated ? Bytes::copyOf(in.view().substr(0, kTapInlineBytes)) : in;
}

}  // namespace

TappedRecord boundedCopy(int task, const std::string& topic, const Bytes& key, const Bytes& value,
                         const Headers& headers, std::int64_t timestampMs) {
  TappedRecord t;
  t.task = task;
  t.topic = topic;
  keep(key, t.key, t.keyTruncated, t.keySize, t.keyNull);
  keep(value, t.value, t.valueTruncated, t.valueSize, t.valueNull);
  for (const auto& h : headers) {
    if (t.headers.size() >= 32) break;
    t.headers.add(h.key.substr(0, 256), h.value.size() > kTapInlineBytes
                                             ? Bytes::copyOf(h.value.view().substr(0, kTapInlineBytes))
                                             : h.value);
  }
  t.timestampMs = timestampMs;
  t.tappedAtMs = core::nowMs();
  return t;
}

void TapPoint::offerSlow(int task, const Record& record) {
  std::lock_guard lock(mu_);
  if (taps_.empty()) return;
  const std::int64_t now = core::monotonicMs();
  for (const auto& tap : taps_) {
    std::lock_guard tl(tap->mu);
    if (tap->refilledAtMs == 0) tap->refilledAtMs = now;
    tap->tokens = std::min(tap->options.recordsPerSecond,
                           tap->tokens + static_cast<double>(now - tap->refilledAtMs) * tap->options.recordsPerSecond / 1000.0);
    tap->refilledAtMs = now;
    if (tap->tokens < 1.0) {
      ++tap->sampledOut;
      continue;
    }
    tap->tokens -= 1.0;
    TappedRecord t = boundedCopy(task, record.topic, record.key, record.value, record.headers, record.timestampMs);
    if (tap->ring.size() >= tap->options.capacity) {
      tap->ring.pop_front();
      ++tap->overflowed;
    }
    tap->ring.push_back(std::move(t));
  }
}

std::shared_ptr<TapPoint> TapHub::point(const std::string& connector) {
  std::lock_guard lock(mu_);
  auto& w = points_[connector];
  if (auto p = w.lock()) return p;
  auto p = std::make_shared<TapPoint>(connector);
  w = p;
  // Forget points no task holds any more (connectors deleted), now and then.
  if (points_.size() > 64)
    for (auto it = points_.begin(); it != points_.end();) it = it->second.expired() ? points_.erase(it) : std::next(it);
  // Taps opened before the connector's tasks started (or restarted) are attached to the new point.
  for (auto& [id, tap] : taps_)
    if (tap->connector == connector) {
      std::lock_guard pl(p->mu_);
      p->taps_.push_back(tap);
      p->active_.fetch_add(1, std::memory_order_relaxed);
    }
  return p;
}

Status TapHub::open(const std::string& id, const std::string& connector, const TapOptions& o) {
  if (!(o.recordsPerSecond > 0 && o.recordsPerSecond <= kMaxTapRate))
    return Status::invalidArgument("max_records_per_second must be above 0 and at most " +
                                   std::to_string(static_cast<int>(kMaxTapRate)));
  if (o.capacity < 1 || o.capacity > kMaxTapCapacity)
    return Status::invalidArgument("buffer must be between 1 and " + std::to_string(kMaxTapCapacity));
  if (o.idleMs < 1000 || o.idleMs > 300000) return Status::invalidArgument("idle timeout must be between 1 s and 5 min");
  std::lock_guard lock(mu_);
  const std::int64_t now = core::monotonicMs();
  expireLocked(now);
  if (taps_.size() >= kMaxTaps)
    return Status::resourceExhausted(std::to_string(kMaxTaps) + " taps are open on this worker; close one (DELETE /taps/{id}) or wait for an unread one to expire");
  if (id.empty() || taps_.count(id)) return Status::alreadyExists("tap id in use");
  auto tap = std::make_shared<Tap>(connector, o);
  tap->lastReadMs = now;
  taps_[id] = tap;
  auto it = points_.find(connector);
  if (it != points_.end())
    if (auto p = it->second.lock()) {
      std::lock_guard pl(p->mu_);
      p->taps_.push_back(tap);
      p->active_.fetch_add(1, std::memory_order_relaxed);
    }
  return Status::ok();
}

Result<TapBatch> TapHub::read(const std::string& id) {
  std::shared_ptr<Tap> tap;
  {
    std::lock_guard lock(mu_);
    const std::int64_t now = core::monotonicMs();
    expireLocked(now);
    auto it = taps_.find(id);
    if (it == taps_.end()) return Status::notFound("no tap " + id.substr(0, 64) + " (closed, or not read for its idle timeout)");
    tap = it->second;
    tap->lastReadMs = now;
  }
  TapBatch b;
  b.connector = tap->connector;
  std::lock_guard tl(tap->mu);
  b.records.assign(std::make_move_iterator(tap->ring.begin()), std::make_move_iterator(tap->ring.end()));
  tap->ring.clear();
  b.sampledOut = std::exchange(tap->sampledOut, 0);
  b.overflowed = std::exchange(tap->overflowed, 0);
  return b;
}

bool TapHub::close(const std::string& id) {
  std::lock_guard lock(mu_);
  if (!taps_.count(id)) return false;
  detachLocked(id);
  return true;
}

std::size_t TapHub::openTaps() {
  std::lock_guard lock(mu_);
  expireLocked(core::monotonicMs());
  return taps_.size();
}

void TapHub::expireLocked(std::int64_t now) {
  std::vector<std::string> expired;
  for (const auto& [id, tap] : taps_)
    if (now - tap->lastReadMs > tap->options.idleMs) expired.push_back(id);
  for (const auto& id : expired) detachLocked(id);
}

void TapHub::detachLocked(const std::string& id) {
  auto it = taps_.find(id);
  if (it == taps_.end()) return;
  auto tap = it->second;
  taps_.erase(it);
  auto p = points_.find(tap->connector);
  if (p == points_.end()) return;
  if (auto point = p->second.lock()) {
    std::lock_guard pl(point->mu_);
    auto n = std::erase(point->taps_, tap);
    point->active_.fetch_sub(static_cast<int>(n), std::memory_order_relaxed);
  }
}

bool tapValidUtf8(std::string_view s) { return simdjson::validate_utf8(s); }

}  // namespace ferry::runtime
