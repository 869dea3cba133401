// RocketMQ remoting protocol: the wire format (frames, both header encodings, message encodings).
// Pure functions and value types; no I/O. See ../../../../shared/spec/rocketmq-remoting.md (the
// section numbers below refer to it) and README.md in this folder.
//
// Why our own: no C++ RocketMQ client is packaged in Debian; the protocol is small and stable.
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/record.h"
#include "ferry/result.h"

namespace ferry::rocketmq {

enum class SerializeType : std::uint8_t { kJson = 0, kRocketmq = 1 };

inline constexpr std::int32_t kFlagResponse = 0x1;
inline constexpr std::int32_t kFlagOneway = 0x2;
inline constexpr std::size_t kMaxFrameBytes = 16u << 20;  // 4 + frameLength must not exceed this
inline constexpr std::int32_t kLanguageCpp = 1;
inline constexpr std::int32_t kVersion = 479;             // V5_3_3 (§1.8)

// The `version` header field is the ordinal of Java's MQVersion.Version (the same enum in the
// 4.9.7, 5.3.3 and 5.5.0 jars: V3_0_0_SNAPSHOT = 0 ... V5_9_9 = 611, HIGHER_VERSION = 612). A
// server writes its own version into every command it creates (the broker and NameServer set
// rocketmq.remoting.version at start-up), so any response tells the peer's version.
inline constexpr std::int32_t kVersion4_0_0Snapshot = 212;
inline constexpr std::int32_t kVersion4_9_7 = 407;
inline constexpr std::int32_t kVersion5_0_0Snapshot = 412;
inline constexpr std::int32_t kVersion5_3_3 = 479;
inline constexpr std::int32_t kVersion5_5_0 = 513;
inline constexpr std::int32_t kVersionHigher = 612;  // HIGHER_VERSION
// "4.9.7", "5.5.0-SNAPSHOT", "3.x" (before 4.0.0, whose ordinals are irregular), "newer than
// 5.9.9" (HIGHER_VERSION and beyond), "unknown" for a negative ordinal.
std::string mqVersionName(std::int32_t ordinal);
// True for a 4.x (or older) server: it speaks the 4.x dialect of the admin headers
// (removeOffset, no setZeroIfNotFound) and its ACL 1.0 answers refusals with SYSTEM_ERROR.
inline bool isV4OrOlder(std::int32_t ordinal) { return ordinal < kVersion5_0_0Snapshot; }

// One request or response (§1.3).
struct RemotingCommand {
  std::int32_t code = 0;
  std::int32_t language = kLanguageCpp;  // binary code (§1.8); JSON carries the enum name
  std::int32_t version = kVersion;
  std::int32_t opaque = 0;
  std::int32_t flag = 0;
  std::optional<std::string> remark;
  std::map<std::string, std::string> extFields;
  std::string body;

  bool isResponse() const noexcept { return (flag & kFlagResponse) != 0; }
  bool isOneway() const noexcept { return (flag & kFlagOneway) != 0; }
  // extFields lookups (nullopt when absent or unparsable).
  std::optional<std::string> ext(const std::string& key) const;
  std::optional<std::int64_t> extInt(const std::string& key) const;
};

// Encodes a whole frame (§1.2) with the given header encoding.
std::string encodeFrame(const RemotingCommand& cmd, SerializeType type = SerializeType::kJson);

// Result of looking at the start of a byte stream.
struct FrameDecode {
  enum class State { kOk, kNeedMore, kInvalid } state = State::kNeedMore;
  RemotingCommand command;   // kOk
  SerializeType type = SerializeType::kJson;
  std::size_t consumed = 0;  // bytes of the frame (kOk)
  std::string error;         // kInvalid: why (the connection must be closed)
};
// Decodes one frame from the start of `data`: kNeedMore when incomplete, kInvalid for an
// oversize frame, unknown serialize type, bad header length or malformed header.
FrameDecode decodeFrame(std::string_view data);

// Header encodings on their own (exposed for tests and fuzzing).
std::string encodeJsonHeader(const RemotingCommand& cmd);
// encodeJsonHeader's two ways: the plain path writes the header directly (escaping as the full
// one does) when every string in it is ASCII, nullopt otherwise; the full one builds a json
// object (UTF-8 checks). Where both encode, their bytes are equal (unit test and fuzz target).
std::optional<std::string> encodeJsonHeaderPlain(const RemotingCommand& cmd);
std::string encodeJsonHeaderFull(const RemotingCommand& cmd);
std::string encodeBinaryHeader(const RemotingCommand& cmd);
Status decodeJsonHeader(std::string_view header, RemotingCommand& out);
// decodeJsonHeader's fast path: the flat header every broker writes (plain ASCII strings without
// escapes, integers, true/false/null, an extFields object of scalars, no repeated key). Returns
// false, leaving `out` alone, for anything else; decodeJsonHeader then takes the full parser, and
// where both decode they agree (the rocketmq_frame fuzz target checks it).
bool decodeJsonHeaderFast(std::string_view header, RemotingCommand& out);
// The full parser alone (fastjson's dialect, every JSON value kind).
Status decodeJsonHeaderFull(std::string_view header, RemotingCommand& out);
Status decodeBinaryHeader(std::string_view header, RemotingCommand& out);

// Message properties string (§4.1).
std::string encodeProperties(const std::map<std::string, std::string>& props);
std::map<std::string, std::string> decodeProperties(std::string_view data);

// A message as stored by the broker (§4.4), decoded from a PULL_MESSAGE body.
struct StoredMessage {
  std::string topic;
  std::int32_t queueId = 0;
  std::int32_t flag = 0;
  std::int64_t queueOffset = 0;
  std::int64_t commitLogOffset = 0;
  std::int32_t sysFlag = 0;
  std::int64_t bornTimestamp = 0;
  std::string bornHost;   // "ip:port"
  std::int64_t storeTimestamp = 0;
  std::string storeHost;  // "ip:port"
  std::int32_t reconsumeTimes = 0;
  std::int64_t preparedTransactionOffset = 0;
  std::uint32_t bodyCrc = 0;
  std::string body;       // decompressed when the COMPRESSED flag was set
  std::map<std::string, std::string> properties;
  std::string offsetMsgId;  // §4.4.1
};

struct StoredDecode {
  std::vector<StoredMessage> messages;
  bool complete = true;  // false when decoding stopped at a malformed record
  std::string error;
};
// Decodes every stored message of a pull body; stops at the first malformed record (§4.4 rule 1).
// Inner batches (INNER_BATCH|NEED_UNWRAP) are expanded.
StoredDecode decodeStoredMessages(std::string_view body);

// A message to send: the parts a batch entry or SEND_MESSAGE carries.
struct OutgoingMessage {
  std::string topic;
  std::int32_t flag = 0;
  std::string body;
  std::map<std::string, std::string> properties;  // TAGS, KEYS, UNIQ_KEY, user properties...
};
// Encodes the body of SEND_BATCH_MESSAGE (§4.6).
std::string encodeBatchBody(const std::vector<OutgoingMessage>& messages);
// Decodes a batch body (for inner batches and tests).
Result<std::vector<OutgoingMessage>> decodeBatchBody(std::string_view body);

// Body compression (§4.8): sysFlag bits say which codec. Only zlib is required to decode;
// others give Incompatible.
Result<std::string> decompressBody(std::string_view body, std::int32_t sysFlag);
Result<std::string> compressZlib(std::string_view body, int level = 5);

// CRC-32 (zlib polynomial) masked with 0x7FFFFFFF, as stored in BODYCRC.
std::uint32_t bodyCrc(std::string_view body);

// Tag hash used by broker-side filtering (§4.9).
std::int64_t tagHash(std::string_view tag);

// A client message id (UNIQ_KEY, §4.7) unique per process.
std::string newUniqKey();

}  // namespace ferry::rocketmq
