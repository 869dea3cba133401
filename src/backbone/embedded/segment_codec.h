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
#include <string>
#include <string_view>

#include "backbone/backbone.h"
#include "core/crc32c.h"

namespace ferry::backbone::segment {

inline constexpr std::size_t kFrameHeader = 8;
inline constexpr std::uint32_t kMaxPayload = 256u << 20;  // a frame claiming more is corrupt

using core::crc32c;  // core/crc32c.h

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
