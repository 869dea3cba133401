// Source positions in a backbone topic (see log_position_store.h).
#include "runtime/log_position_store.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/json_bounds.h"
#include "core/logging.h"
#include "core/thread.h"

namespace ferry::runtime {
namespace {

nlohmann::json toJson(const StringMap& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : m) j[k] = v;
  return j;
}

// Kafka Connect writes numbers and booleans in its offsets; ferry's maps hold strings.
std::optional<StringMap> fromJson(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  StringMap m;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it->is_string()) m[it.key()] = it->get<std::string>();
    else if (it->is_null()) m[it.key()] = "";
    else m[it.key()] = it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return m;
}

}  // namespace

std::string LogPositionStore::encodeKey(const std::string& connector, const StringMap& partition) {
  return nlohmann::json::array({connector, toJson(partition)})
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string LogPositionStore::encodeValue(const StringMap& offset) {
  return toJson(offset).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<StringMap> LogPositionStore::decodeValue(std::string_view value) {
  auto j = core::parseJsonBounded<nlohmann::json>(value);
  return j.isOk() ? fromJson(*j) : std::nullopt;
}

std::optional<std::pair<std::string, StringMap>> LogPositionStore::decodeKey(std::string_view key) {
  auto parsed = core::parseJsonBounded<nlohmann::json>(key);
  if (!parsed.isOk()) return std::nullopt;
  const nlohmann::json& j = *parsed;
  if (!j.is_array() || j.size() != 2 || !j[0].is_string()) return std::nullopt;
  auto part = fromJson(j[1]);
  if (!part) return std::nullopt;
  return std::make_pair(j[0].get<std::string>(), std::move(*part));
}

Result<std::unique_ptr<LogPositionStore>> LogPositionStore::open(backbone::Backbone& backbone, std::string topic,
                                                                 std::int32_t partitions,
                                                                 std::chrono::milliseconds timeout, bool readNow) {
  std::unique_ptr<LogPositionStore> s(new LogPositionStore(backbone, std::move(topic), partitions, timeout));
  if (readNow) FERRY_RETURN_IF_ERROR(s->reload(/*waitForOpen=*/false));
  return s;
}

LogPositionStore::~LogPositionStore() {
  {
    std::lock_guard lock(followMu_);
    stopFollowing_ = true;
  }
  followCv_.notify_all();
  const std::int64_t t0 = core::monotonicMs();
  if (follower_.joinable()) follower_.join();
  // putAsync()'s callbacks refer to this store: none may run after it.
  std::lock_guard lock(asyncMu_);
  Status flushed = asyncView_ ? asyncView_->flush(std::chrono::milliseconds(1000)) : Status::ok();
  if (!flushed.isOk()) {
    // Said on stderr (the loggers may be shut down by now): a worker that is slow to exit shows why.
    std::fprintf(stderr, "ferry: position store %s: waiting up to %lld ms at exit for position writes (%s)\n",
                 topic_.c_str(), static_cast<long long>(timeout_.count()), flushed.toString().c_str());
    flushed = asyncView_->flush(timeout_);
    std::fprintf(stderr, "ferry: position store %s: %s after %lld ms\n", topic_.c_str(),
                 flushed.isOk() ? "written" : flushed.toString().c_str(),
                 static_cast<long long>(core::monotonicMs() - t0));
  } else if (core::monotonicMs() - t0 > 1000) {
    std::fprintf(stderr, "ferry: position store %s: its reader took %lld ms to stop at exit\n", topic_.c_str(),
                 static_cast<long long>(core::monotonicMs() - t0));
  }
}

void LogPositionStore::follow(std::chrono::milliseconds every) {
  if (follower_.joinable()) return;
  follower_ = core::namedThread("pos-follow", [this, every] {
    std::unique_lock lock(followMu_);
    while (!stopFollowing_) {
      lock.unlock();
      const std::int64_t t0 = core::monotonicMs();
      if (Status s = reload(/*waitForOpen=*/false); !s.isOk())
        core::logger("runtime")->warn("{}: following source positions: {}", topic_, s.toString());
      else if (core::monotonicMs() - t0 > 1000)
        core::logger("runtime")->info("{}: source positions read in {} ms", topic_, core::monotonicMs() - t0);
      lock.lock();
      if (every.count() <= 0) break;
      followCv_.wait_for(lock, every, [&] { return stopFollowing_; });
    }
  });
}

Status LogPositionStore::reload(bool waitForOpen) {
  // Incremental: only what was written since the last read (the topic only grows; the last
  // record of a key is its position). Changes are applied once the read reached its end.
  std::lock_guard reading(reloadMu_);
  std::map<std::int32_t, std::int64_t> cursor = cursor_;
  std::vector<std::pair<std::string, Position>> changes;
  std::size_t skipped = 0;
  FERRY_RETURN_IF_ERROR(backbone_.readCommitted(
      topic_, partitions_,
      [&](const backbone::Message& m) {
        auto key = m.key.isNull() ? std::nullopt : decodeKey(m.key.view());
        if (!key) {
          ++skipped;
          return;
        }
        if (m.value.isNull() || m.value.size() == 0) {  // a delete (a backbone without nulls keeps it empty)
          changes.push_back({key->first, Position{key->second, {}}});
          return;
        }
        auto off = decodeValue(m.value.view());
        if (!off) {
          ++skipped;
          return;
        }
        changes.push_back({key->first, Position{key->second, std::move(*off)}});
      },
      waitForOpen, timeout_, &cursor).withContext("reading source positions from " + topic_));
  if (skipped > 0)
    core::logger("runtime")->warn("{}: {} record(s) that are not source positions were skipped", topic_, skipped);
  std::lock_guard lock(mu_);
  for (const auto& [connector, p] : changes) applyLocked(connector, {p});
  cursor_ = std::move(cursor);
  return Status::ok();
}

Result<std::optional<StringMap>> LogPositionStore::get(const std::string& connector, const StringMap& partition) {
  std::lock_guard lock(mu_);
  auto c = positions_.find(connector);
  if (c == positions_.end()) return std::optional<StringMap>();
  auto p = c->second.find(partition);
  if (p == c->second.end()) return std::optional<StringMap>();
  return std::optional<StringMap>(p->second);
}

Result<std::vector<Position>> LogPositionStore::getAll(const std::string& connector) {
  std::lock_guard lock(mu_);
  std::vector<Position> out;
  if (auto c = positions_.find(connector); c != positions_.end())
    for (const auto& [part, off] : c->second) out.push_back(Position{part, off});
  return out;
}

std::vector<backbone::Message> LogPositionStore::encode(const std::string& connector,
                                                        const std::vector<Position>& positions) const {
  std::vector<backbone::Message> out;
  out.reserve(positions.size());
  for (const auto& p : positions) {
    if (p.partition.empty()) continue;
    backbone::Message m;
    m.topic = topic_;
    m.key = Bytes(encodeKey(connector, p.partition));
    if (!p.offset.empty()) m.value = Bytes(encodeValue(p.offset));
    out.push_back(std::move(m));
  }
  return out;
}

void LogPositionStore::applyLocked(const std::string& connector, const std::vector<Position>& positions) {
  auto& mine = positions_[connector];
  for (const auto& p : positions) {
    if (p.partition.empty()) continue;
    if (p.offset.empty()) mine.erase(p.partition);
    else mine[p.partition] = p.offset;
  }
  if (mine.empty()) positions_.erase(connector);
}

void LogPositionStore::applyCommitted(const std::string& connector, const std::vector<Position>& positions) {
  std::lock_guard lock(mu_);
  applyLocked(connector, positions);
}

Status LogPositionStore::put(const std::string& connector, const std::vector<Position>& positions) {
  // putAsync() waited for; not under mu_: tasks commit in parallel, each waiting for its own only.
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Status> result;
  };
  auto wait = std::make_shared<Wait>();
  putAsync(connector, positions, [wait](Status s) {
    std::lock_guard l(wait->mu);
    wait->result = std::move(s);
    wait->cv.notify_all();
  });
  std::unique_lock l(wait->mu);
  if (!wait->cv.wait_for(l, timeout_, [&] { return wait->result.has_value(); }))
    return Status::timeout("writing source positions to " + topic_ + ": not acknowledged within " +
                           std::to_string(timeout_.count()) + " ms");
  return *wait->result;
}

void LogPositionStore::putAsync(const std::string& connector, std::vector<Position> positions,
                                std::function<void(Status)> done) {
  backbone::Producer* producer = nullptr;
  {
    std::lock_guard lock(asyncMu_);
    if (!asyncView_) {
      auto view = producers_.view();
      if (!view.isOk()) return done(view.status().withContext("writing source positions to " + topic_));
      asyncView_ = std::move(*view);
    }
    producer = asyncView_.get();
  }
  auto messages = encode(connector, positions);
  // The last acknowledgement applies the positions and reports; a send refused at once counts as
  // acknowledged with its error, and so do the messages after it, never sent.
  struct Put {
    std::mutex mu;
    std::size_t left = 0;
    Status failed;
    std::string connector;
    std::vector<Position> positions;
    std::function<void(Status)> done;
  };
  auto put = std::make_shared<Put>();
  put->left = messages.size();
  put->connector = connector;
  put->positions = std::move(positions);
  put->done = std::move(done);
  auto settle = [this, put](const Status& s, std::size_t n) {
    {
      std::lock_guard l(put->mu);
      if (!s.isOk() && put->failed.isOk()) put->failed = s;
      put->left -= n;
      if (put->left > 0) return;
    }
    if (put->failed.isOk()) {
      std::lock_guard lock(mu_);
      applyLocked(put->connector, put->positions);
    }
    put->done(put->failed.isOk() ? Status::ok() : put->failed.withContext("writing source positions to " + topic_));
  };
  if (messages.empty()) return settle(Status::ok(), 0);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    Status sent = producer->send(std::move(messages[i]), [settle](const Status& s, std::int32_t, std::int64_t) {
      settle(s, 1);
    });
    if (!sent.isOk()) return settle(sent, messages.size() - i);
  }
}

Status LogPositionStore::removeConnector(const std::string& connector) {
  std::vector<Position> gone;
  {
    std::lock_guard lock(mu_);
    auto c = positions_.find(connector);
    if (c == positions_.end()) return Status::ok();
    for (const auto& [part, off] : c->second) gone.push_back(Position{part, {}});
  }
  return put(connector, gone);
}

}  // namespace ferry::runtime
