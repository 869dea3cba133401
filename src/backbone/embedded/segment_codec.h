// The embedded log's on-disk record format. Pure functions, shared by the log, its tests and the
// fuzz target (tests/fuzz/segment).
//
// Every record is framed as
//   u32 payload length | u32 CRC32C(payload) | payload
// and the payload (all integers little-endian) is
//   i64 offset | i64 timestamp ms | i32 key length (-1 = null) | key | i32 value length | value |
//   i32 header count | per header: i32 key length | key | i32 value length (-1 = null) | value
// A record whose frame is cut short, whose CRC does not match or whose lengths do not add up is
// never returned as data.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include "backbone/backbone.h"
#include "core/crc32c.h"

namespace ferry::backbone::segment {

inline constexpr std::size_t kFrameHeader = 8;
inline constexpr std::uint32_t kMaxPayload = 256u << 20;  // a frame claiming more is corrupt

using core::crc32c;  // core/crc32c.h

// The bytes encode() appends for `m` (frame header included).
std::size_t encodedSize(const Message& m);

// Appends the framed record to `out`.
void encode(const Message& m, std::int64_t offset, std::string& out);

enum class DecodeState { kOk, kTruncated, kCorrupt };

struct Decoded {
  DecodeState state = DecodeState::kCorrupt;
  Message message;           // kOk only
  std::size_t consumed = 0;  // bytes of the frame (kOk only)
  std::string error;         // why, when not kOk
};

// Decodes the record at the start of `data`. kTruncated when `data` ends inside the frame.
Decoded decodeOne(std::string_view data);

// Reads only the frame header and checks the CRC, without building a Message (fast scans).
// Returns the frame size, or 0 with `state` set when the record is truncated or corrupt.
std::size_t checkFrame(std::string_view data, DecodeState& state, std::int64_t* offset = nullptr);

// The smallest frame: header + offset, timestamp, key length, value length, header count.
inline constexpr std::size_t kMinFrame = kFrameHeader + 8 + 8 + 4 + 4 + 4;

// Where the first intact frame at or after `from` starts whose offset lies after `after` and is
// plausible for what the bytes in between could have held (at most one record per kMinFrame bytes,
// plus `gapSlack` offsets that failed writes may have left unused). Returns data.size() when there
// is none; `offset` gets the frame's offset. Used to step over damage: a CRC32C match at a random
// position that also carries a plausible offset is not a coincidence worth worrying about.
std::size_t findNextFrame(std::string_view data, std::size_t from, std::int64_t after, std::int64_t* offset,
                          std::int64_t gapSlack = 1 << 20);

// One damaged range found by recoverSegment.
struct Damage {
  std::size_t pos = 0;            // first bad byte
  std::size_t len = 0;            // bad bytes, up to the next intact frame (or the end of the data)
  std::int64_t afterOffset = -1;  // offset of the last intact record before it (base - 1 if none)
  std::int64_t nextOffset = -1;   // offset of the first intact record after it; -1: none (a tail)
  std::string error;              // what was wrong with the first bad frame
};

// What a whole segment holds. Every intact frame is kept, whatever lies between: a bad frame
// followed by intact ones is `damage` (the records after it stay readable), bad bytes after the
// last intact frame are the `tail` (the caller decides: a torn last write in the newest segment,
// damage in an older one). Frames whose offsets do not increase count as damage.
struct Recovered {
  std::size_t records = 0;
  std::vector<std::pair<std::int64_t, std::size_t>> index;  // (offset, position) of every indexEvery-th record
  std::vector<Damage> damage;                                // each followed by an intact record
  std::optional<Damage> tail;
  std::size_t goodEnd = 0;       // end of the last intact frame
  std::int64_t firstOffset = -1; // of the first intact record, -1 when none
  std::int64_t lastOffset = -1;  // of the last intact record; base - 1 when none
};
Recovered recoverSegment(std::string_view data, std::int64_t base, std::size_t indexEvery);

struct ScanResult {
  std::size_t records = 0;
  std::size_t validBytes = 0;  // prefix made of whole, valid records
  std::int64_t firstOffset = -1;
  std::int64_t lastOffset = -1;
  DecodeState stop = DecodeState::kOk;  // why the scan stopped (kOk = clean end)
  std::string error;
};

// Scans `data` record by record and stops at the first truncated or corrupt one.
ScanResult scan(std::string_view data);

}  // namespace ferry::backbone::segment
