// RESP2, the Redis protocol: replies (parsed by hiredis's reader) and commands (written here).
//
// Why hiredis's reader and not hiredis's connections: Debian's hiredis is 0.14, which has no TLS,
// and its synchronous context cannot bound a read by a deadline and a size. So ferry keeps its
// own sockets (connection.h: TCP or TLS through OpenSSL, every read and write bounded by a
// deadline) and uses hiredis for what it is best at, the reply parser, through its object
// functions: replies are built straight into ferry's Reply tree, and an array longer than
// Limits::maxElements or input beyond Limits::maxBufferBytes is refused before anything is
// allocated for it (hiredis 0.14 itself has neither bound). Commands are written here, appended
// to one pipeline buffer without an allocation per command (hiredis's formatter mallocs each).
//
// Thread-safety: Reply is a value. A ReplyReader belongs to one connection and its thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

struct redisReader;

namespace ferry::redis {

struct Reply {
  enum class Type : std::uint8_t { kNil, kString, kStatus, kError, kInteger, kArray };
  Type type = Type::kNil;
  std::string str;              // kString, kStatus, kError
  long long integer = 0;        // kInteger
  std::vector<Reply> elements;  // kArray

  bool isNil() const noexcept { return type == Type::kNil; }
  bool isError() const noexcept { return type == Type::kError; }
  bool isArray() const noexcept { return type == Type::kArray; }
  bool isString() const noexcept { return type == Type::kString || type == Type::kStatus; }
  // "MOVED 3999 127.0.0.1:6381" -> "MOVED"; "" when not an error.
  std::string_view errorPrefix() const noexcept;
  // A short text for messages: errors and strings as they are (at most 200 bytes), integers,
  // "(nil)", "[array of N]".
  std::string describe() const;
};

class ReplyReader {
 public:
  struct Limits {
    std::size_t maxBufferBytes = std::size_t{512} << 20;  // one reply (Redis caps strings at 512 MB)
    std::size_t maxElements = std::size_t{1} << 24;       // per array
  };
  explicit ReplyReader(Limits limits);
  ReplyReader() : ReplyReader(Limits{}) {}
  ~ReplyReader();
  ReplyReader(const ReplyReader&) = delete;
  ReplyReader& operator=(const ReplyReader&) = delete;

  // Adds bytes read from the server. InvalidArgument when the unparsed bytes would exceed
  // maxBufferBytes (the connection must then be closed: the stream is out of sync).
  Status feed(const char* data, std::size_t n);
  // The next complete reply, nullopt when more bytes are needed, or InvalidArgument for a
  // protocol error (the connection must be closed).
  Result<std::optional<Reply>> next();
  // Bytes fed and not yet parsed into a reply.
  std::size_t buffered() const noexcept;

 private:
  Limits limits_;
  redisReader* reader_ = nullptr;
  bool tooManyElements_ = false;
};

// Appends one command in RESP (an array of bulk strings) to `out`.
void appendCommand(std::string& out, const std::vector<std::string>& args);
void appendCommand(std::string& out, const std::string_view* args, std::size_t count);

// The Redis Cluster hash slot of `key` (CRC16/XMODEM of the key or of its {hash tag}, mod 16384).
std::uint16_t keySlot(std::string_view key) noexcept;

}  // namespace ferry::redis
