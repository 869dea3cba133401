// Taps: a sampled, bounded view of the records a connector's tasks hand on (after their
// transforms), for the web console's live view and any REST client (POST /connectors/{name}/tap,
// GET and DELETE /taps/{id}: src/rest/README.md).
//
// A task holds its connector's TapPoint (TaskEnv::tap). With no tap open, offering a record costs
// one relaxed atomic load. With taps open, each takes at most its own rate of records per second
// (a token bucket) into a ring of at most `capacity` records; records sampled out or pushed out
// of a full ring are counted, never waited for: a tap can never slow a task. A record's key and
// value are held by reference (shared buffers) up to kTapInlineBytes each, and as a copied prefix
// beyond it, so an open tap holds at most about capacity * 2 * kTapInlineBytes bytes.
//
// A tap not read for `idleMs` is closed (a closed page releases its tap); at most kMaxTaps are
// open on a worker at once.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"

namespace ferry::runtime {

inline constexpr std::size_t kTapInlineBytes = 4096;
inline constexpr std::size_t kMaxTaps = 16;
inline constexpr std::size_t kMaxTapCapacity = 500;
inline constexpr double kMaxTapRate = 100;

struct TapOptions {
  double recordsPerSecond = 10;  // (0, kMaxTapRate]
  std::size_t capacity = 100;    // [1, kMaxTapCapacity]
  std::int64_t idleMs = 15000;   // closed when not read for this long
};

struct TappedRecord {
  int task = 0;
  std::string topic;
  Bytes key, value;  // at most kTapInlineBytes each (a prefix when truncated)
  bool keyTruncated = false, valueTruncated = false;
  std::size_t keySize = 0, valueSize = 0;  // the whole sizes
  bool keyNull = true, valueNull = true;
  Headers headers;
  std::int64_t timestampMs = 0;
  std::int64_t tappedAtMs = 0;
};

// A bounded copy of a record for showing it (a tap, a look at a topic): key and value up to
// kTapInlineBytes each, at most 32 headers (names up to 256 bytes, values up to kTapInlineBytes).
TappedRecord boundedCopy(int task, const std::string& topic, const Bytes& key, const Bytes& value,
                         const Headers& headers, std::int64_t timestampMs);

struct TapBatch {
  std::string connector;
  std::vector<TappedRecord> records;  // oldest first
  std::uint64_t sampledOut = 0;      // over the rate since the last read
  std::uint64_t overflowed = 0;      // pushed out of a full ring since the last read
};

class Tap;

// One connector's tapping point, shared by its tasks and the hub.
class TapPoint {
 public:
  explicit TapPoint(std::string connector) : connector_(std::move(connector)) {}
  bool active() const noexcept { return active_.load(std::memory_order_relaxed) > 0; }
  // Called by a task for each record it hands on; cheap when no tap is open.
  void offer(int task, const Record& record) {
    if (active()) offerSlow(task, record);
  }
  const std::string& connector() const { return connector_; }

 private:
  friend class TapHub;
  void offerSlow(int task, const Record& record);
  const std::string connector_;
  std::atomic<int> active_{0};
  std::mutex mu_;
  std::vector<std::shared_ptr<Tap>> taps_;  // guarded by mu_
};

class TapHub {
 public:
  // The tapping point of `connector` (made on first use; one per connector name).
  std::shared_ptr<TapPoint> point(const std::string& connector);
  // Opens a tap under `id` (the caller's unguessable name for it: the REST layer uses 128 random
  // bits). InvalidArgument for options out of range, ResourceExhausted when kMaxTaps are open.
  Status open(const std::string& id, const std::string& connector, const TapOptions& options);
  // What the tap took since the last read (and the tap's idle timer restarts). NotFound for an
  // unknown, closed or expired id.
  Result<TapBatch> read(const std::string& id);
  bool close(const std::string& id);
  std::size_t openTaps();

 private:
  void expireLocked(std::int64_t now);
  void detachLocked(const std::string& id);
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<TapPoint>> points_;
  std::map<std::string, std::shared_ptr<Tap>> taps_;
};

// Whether `text` is valid UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF): simdjson's
// validator.
bool tapValidUtf8(std::string_view text);

}  // namespace ferry::runtime
