// Parse once, write once: the JSON forms of a record's key and value shared by the steps of a
// transform chain (ferry::TransformCache). A step asks for the parsed document, edits it in place
// and marks it changed; the next JSON step gets the same document without parsing, and the bytes
// are written once, when a step that reads bytes comes next or the chain ends (flush).
//
// A cached document stays valid exactly as long as the record still holds the buffer it was
// parsed from (the cache keeps that buffer alive, so a new buffer can never be mistaken for it):
// a step that replaces the bytes by itself needs no call to invalidate anything.
//
// JsonTransform is the base of the built-in transforms that read JSON: it implements both entry
// points of ferry::Transform over one applyJson(record, cache).
//
// Threading: one cache per record passing one chain, on the task's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ferry/transform.h"
#include "transforms/json_util.h"

namespace ferry::transforms {

enum class Side { kKey, kValue };

class JsonCache final : public TransformCache {
 public:
  // The side parsed as JSON: nullptr when it is null (a tombstone) or not JSON. Parses the bytes
  // at most once while they stay the record's.
  Json* get(Record& record, Side side);
  // The document get() returned was changed in place: the record's bytes are stale.
  void changed(Side side) { slot(side).dirty = true; }
  // Replaces the side by `doc` (written at the next flush).
  void set(Record& record, Side side, Json doc);
  // Replaces the side by `bytes` now (raw text, a tombstone), dropping any parsed form.
  void setBytes(Record& record, Side side, Bytes bytes);
  // True when get() would return a document without parsing.
  bool hasDocument(const Record& record, Side side) const;
  Status flush(Record& record) override;
  // Writes one side back (a step that reads that side's bytes and the other side's document).
  void flush(Record& record, Side side);
  // How many times this cache parsed bytes and wrote a document back (for the chain's counters).
  std::uint64_t parses() const { return parses_; }
  std::uint64_t writes() const { return writes_; }

 private:
  struct Slot {
    std::shared_ptr<const std::string> from;  // the buffer `doc` was parsed from (or written to)
    std::optional<Json> doc;                  // nullopt: `from` is not JSON
    bool dirty = false;                       // doc changed since it was written to the bytes
  };
  Slot& slot(Side s) { return s == Side::kKey ? key_ : value_; }
  const Slot& slot(Side s) const { return s == Side::kKey ? key_ : value_; }
  static Bytes& bytesOf(Record& r, Side s) { return s == Side::kKey ? r.key : r.value; }
  static const Bytes& bytesOf(const Record& r, Side s) { return s == Side::kKey ? r.key : r.value; }
  bool current(const Record& record, Side side) const;

  Slot key_, value_;
  std::uint64_t parses_ = 0;
  std::uint64_t writes_ = 0;
};

class JsonTransform : public Transform {
 public:
  // Standalone use (tests, tools): a cache of its own, flushed before returning.
  Result<bool> apply(Record& record) final;
  // In a chain: shares the chain's cache when it is a JsonCache.
  Result<bool> apply(Record& record, TransformCache& cache) final;

 protected:
  virtual Result<bool> applyJson(Record& record, JsonCache& cache) = 0;
};

}  // namespace ferry::transforms
