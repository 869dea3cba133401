// Connection: one TCP or TLS connection to one Redis server, used by one thread, every call
// bounded by a deadline.
//
// connect() resolves the host, connects (non-blocking connect + poll), does the TLS handshake
// (OpenSSL; the server's certificate is checked against `caFile` or the system's store, and its
// name against the host unless verifyHostname is off), then AUTH (user and password, or password
// alone) and SELECT. Errors name the server and the cause: Unavailable for a refused or lost
// connection and timeouts (retriable), InvalidArgument for a refused AUTH, a bad certificate
// setting or a server certificate that does not check out (not retriable as they are).
//
// After any I/O or protocol error the connection is closed (broken() is true); the caller
// reconnects. Replies are matched to commands in order, as RESP does.
//
// Thread-safety: none; one owner thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/result.h"
#include "redis/resp.h"

namespace ferry::redis {

struct TlsOptions {
  bool enabled = false;
  std::string caFile;    // empty: the system's default verify paths
  std::string certFile;  // client certificate (mutual TLS), optional
  std::string keyFile;
  bool verifyPeer = true;
  bool verifyHostname = true;
};

struct ConnectionOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::optional<std::string> username;
  std::optional<std::string> password;
  int database = 0;
  std::string clientName;  // CLIENT SETNAME, when set
  TlsOptions tls;
  std::chrono::milliseconds connectTimeout{5000};
  std::chrono::milliseconds timeout{5000};  // one command's answer (blocking commands add their own)
  ReplyReader::Limits limits;
};

using Clock = std::chrono::steady_clock;

class Connection {
 public:
  static Result<std::unique_ptr<Connection>> connect(const ConnectionOptions& options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // "host:port" of the server.
  const std::string& address() const noexcept { return address_; }
  bool broken() const noexcept { return fd_ < 0; }

  // Writes `bytes` (one or more commands) completely by `deadline`.
  Status write(std::string_view bytes, Clock::time_point deadline);
  // Reads the next reply by `deadline`. A server error reply is a Reply of type kError, not a
  // failed Result.
  Result<Reply> read(Clock::time_point deadline);
  // As read(), but a deadline that passes before a reply arrives returns nullopt and keeps the
  // connection (pub/sub: waiting for the next message).
  Result<std::optional<Reply>> tryRead(Clock::time_point deadline);
  // One command and its reply; `extra` is added to the options' timeout (for BLOCK / BLMOVE).
  Result<Reply> command(const std::vector<std::string>& args,
                        std::chrono::milliseconds extra = std::chrono::milliseconds(0));
  // Commands written together, their replies read in order (a pipeline).
  Result<std::vector<Reply>> pipeline(const std::vector<std::vector<std::string>>& commands,
                                      std::chrono::milliseconds extra = std::chrono::milliseconds(0));
  const ConnectionOptions& options() const noexcept { return options_; }
  void close() noexcept;

 private:
  explicit Connection(ConnectionOptions options);
  Status open();
  Status handshake();
  Status fail(Status s);
  // Waits until the socket is readable (events POLLIN) or writable (POLLOUT) or `deadline`.
  Status waitFor(short events, Clock::time_point deadline, const char* what);

  ConnectionOptions options_;
  std::string address_;
  int fd_ = -1;
  void* sslCtx_ = nullptr;  // SSL_CTX*
  void* ssl_ = nullptr;     // SSL*
  ReplyReader reader_;
  std::vector<char> buffer_;
};

}  // namespace ferry::redis
