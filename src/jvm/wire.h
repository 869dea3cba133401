// The worker's side of the channel to the JVM connector host (jvm/README.md, "The channel"):
// frames of [u32 length][u32 request id][u8 type][payload], big-endian; strings as [i32 length, or
// -1 for null][UTF-8]; maps as [i32 count] then key, value pairs; lists as [i32 count] then items.
//
// Reader parses bytes the JVM sent: every read is bounded by what is left, and a malformed
// payload is a Status naming what was wrong (never a crash, never a huge allocation).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"

namespace ferry::jvm {

// Message types (requests; an answer is type | 0x80, a failure kFailed).
enum : std::uint8_t {
  kHello = 1,
  kPlugins = 2,
  kConfigDef = 3,
  kValidate = 4,
  kConnectorStart = 5,
  kTaskConfigs = 6,
  kConnectorStop = 7,
  kSourceTaskStart = 8,
  kSourcePoll = 9,
  kSourceCommit = 10,
  kSinkTaskStart = 11,
  kSinkOpen = 12,
  kSinkClose = 13,
  kSinkPut = 14,
  kSinkPreCommit = 15,
  kSinkFlush = 16,
  kTaskStop = 17,
  // The host's own frames: a request the worker answers, and events (request id 0, no answer).
  kOffsetsRead = 0x40,
  kEvent = 0x41,
  kReady = 0x42,
  kFailed = 0xFF,
};

// The protocol version HELLO answers (jvm/host Main.PROTOCOL_VERSION).
inline constexpr std::int32_t kProtocolVersion = 3;

inline constexpr std::uint32_t kMaxFrameBytes = 64u << 20;

class Writer {
 public:
  // Starts a frame; finish() fills in its length.
  Writer(std::uint32_t id, std::uint8_t type);
  Writer& u8(std::uint8_t v);
  Writer& i32(std::int32_t v);
  Writer& i64(std::int64_t v);
  Writer& str(std::string_view s);
  Writer& nullStr();
  // Bytes (a null Bytes as a null string).
  Writer& bytes(const Bytes& b);
  // A map, or count -1 for nullopt.
  Writer& optMap(const std::optional<StringMap>& m);
  Writer& map(const StringMap& m);
  Writer& strings(const std::vector<std::string>& v);
  std::string finish();  // the frame; the writer is empty afterwards

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view payload) : in_(payload) {}
  Result<std::uint8_t> u8();
  Result<bool> boolean();
  Result<std::int32_t> i32();
  Result<std::int64_t> i64();
  // nullopt for a null string.
  Result<std::optional<std::string>> optStr();
  // A null string is refused ("what" names the field in the message).
  Result<std::string> str(const char* what);
  Result<std::int32_t> count(const char* what);
  Result<StringMap> map(const char* what);
  // A map, nullopt for count -1.
  Result<std::optional<StringMap>> optMap(const char* what);
  // Bytes (null for a null string).
  Result<Bytes> bytes();
  Result<std::vector<std::string>> strings(const char* what);
  std::size_t left() const { return in_.size(); }

 private:
  std::string_view in_;
};

// A frame's header, read from its first 9 bytes after the length: id and type.
struct FrameHead {
  std::uint32_t id = 0;
  std::uint8_t type = 0;
};
// Splits a frame body (what follows the length) into its head and payload.
Result<std::pair<FrameHead, std::string_view>> splitFrame(std::string_view body);

// A failure answer's payload: the Java exception's class, message and stack trace, and whether
// it is retriable.
struct JavaFailure {
  std::string exceptionClass;
  std::string message;
  std::string stackTrace;
  bool retriable = false;  // a Kafka RetriableException: the call may be made again
};
Result<JavaFailure> readFailure(std::string_view payload);

}  // namespace ferry::jvm
