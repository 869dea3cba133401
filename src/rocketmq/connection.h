// One TCP connection to a RocketMQ NameServer or Broker (§1.1, §1.7): async connect with a
// timeout, frames read with decodeFrame, queued writes, requests matched to responses by opaque,
// deadlines, and server-initiated requests dispatched to handlers.
//
// Threading: every Connection lives on its client's io_context, which one thread runs. The
// public methods may be called from any thread (they post to the io thread); callbacks and request
// handlers run on the io thread and must not block (in particular they must not call the
// synchronous RocketmqClient::invoke). A Connection is shared (shared_ptr) by all users of the
// client; after a loss the next request reconnects, with a backoff of 100 ms doubling to 5 s
// (ClientOptions::reconnectBackoffMaxMs)
// between failed connection attempts.
//
// Failure: connection loss fails all pending requests with kUnavailable; a passed deadline with
// kTimeout; an undecodable frame closes the connection (pending requests fail kUnavailable).
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rocketmq/remoting.h"
#include "ferry/result.h"

namespace ferry::rocketmq {

using ResponseCallback = std::function<void(Result<RemotingCommand>)>;
// Answers a server-initiated request; the returned command's code/remark/extFields/body are sent
// back (opaque and flag are filled in). For oneway requests the return value is ignored.
using RequestHandler = std::function<RemotingCommand(const RemotingCommand& request)>;

// What a Connection needs from its owner (the client). Both functions are thread-safe.
struct ConnectionContext {
  std::function<std::int32_t()> nextOpaque;
  // The handler for a server-initiated request code, or an empty function.
  std::function<RequestHandler(std::int32_t code)> handlerFor;
  SerializeType serializeType = SerializeType::kJson;
  std::chrono::milliseconds connectTimeout{3000};
  std::chrono::milliseconds maxBackoff{5000};  // of failed connection attempts
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Clock = std::chrono::steady_clock;

  // `address` is "host:port".
  Connection(asio::io_context& io, std::string address, ConnectionContext context);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& address() const { return address_; }

  // Sends `cmd` (its opaque is replaced by a fresh one) and calls `callback` exactly once, on the
  // io thread, with the response (whatever its code), or kTimeout / kUnavailable / kCancelled.
  void invokeAsync(RemotingCommand cmd, std::chrono::milliseconds timeout,
                   ResponseCallback callback);
  // Sends `cmd` with the oneway flag; no response is expected. Queued until connected.
  void invokeOneway(RemotingCommand cmd);
  // Fails every pending request whose deadline is <= now with kTimeout. Io thread only.
  void sweepTimeouts(Clock::time_point now);
  // Closes for good: pending requests fail with kCancelled, later calls fail immediately.
  // Io thread only (the client calls it while stopping).
  void shutdown();
  // Drops the socket (as on a loss); the next call reconnects. For tests and error handling.
  void resetConnection();

  // The `version` field (MQVersion ordinal) of the last response read on the current socket, or
  // -1 when none arrived since it connected: the server's version. Reset on every (re)connect and
  // loss, since the peer at this address may have been upgraded meanwhile. Thread-safe.
  std::int32_t peerVersion() const { return peerVersion_.load(); }

  // Thread-safe snapshot for tests/metrics.
  std::size_t pendingCount() const { return pendingCount_.load(); }
  bool connected() const { return connectedFlag_.load(); }

 private:
  enum class State { kIdle, kResolving, kConnecting, kConnected, kClosed };
  struct Pending {
    std::int32_t code = 0;
    Clock::time_point deadline;
    ResponseCallback callback;
  };

  void enqueueOnIo(RemotingCommand cmd, std::chrono::milliseconds timeout,
                   ResponseCallback callback);
  void ensureConnected();
  void startConnect();
  void onConnectFailed(const std::string& why);
  void onConnected();
  void startRead();
  void onData(std::size_t n);
  void handleFrame(RemotingCommand cmd);
  void startWrite();
  void lose(const std::string& why);
  void failAll(const Status& status);

  asio::io_context& io_;
  const std::string address_;
  const ConnectionContext context_;
  // Io-thread state below.
  asio::ip::tcp::socket socket_;
  asio::ip::tcp::resolver resolver_;
  asio::steady_timer connectTimer_;
  asio::steady_timer backoffTimer_;
  State state_ = State::kIdle;
  std::uint64_t generation_ = 0;  // bumps on every (re)connect so stale handlers are ignored
  std::chrono::milliseconds backoff_{0};
  int connectFailures_ = 0;  // failed connection attempts since the last success (core/backoff.h)
  Clock::time_point nextAttempt_{};
  bool backoffArmed_ = false;
  std::string readBuffer_;
  std::vector<char> chunk_;
  std::deque<std::string> writeQueue_;   // frames not yet handed to the socket
  bool writeInFlight_ = false;
  std::unordered_map<std::int32_t, Pending> pending_;
  std::set<std::pair<Clock::time_point, std::int32_t>> deadlines_;
  // Cross-thread views.
  std::atomic<std::size_t> pendingCount_{0};
  std::atomic<bool> connectedFlag_{false};
  std::atomic<std::int32_t> peerVersion_{-1};
};

// Maps a response code to a Status: 0 -> OK; 2 SYSTEM_BUSY and 1500 GO_AWAY -> kUnavailable;
// 17 TOPIC_NOT_EXIST -> kNotFound; 1 SYSTEM_ERROR and 14 SERVICE_NOT_AVAILABLE -> kRetriable;
// 13 MESSAGE_ILLEGAL and 29 INVALID_PARAMETER -> kInvalidArgument; anything else ->
// kFailedPrecondition. An ACL refusal (isAclRefusal) is kFailedPrecondition whatever its code:
// retrying with the same credentials cannot succeed. The message names `what`, the code (and its
// name when known) and the remark.
Status responseStatus(const RemotingCommand& response, const std::string& what);

// A 4.x broker with ACL 1.0 answers a refused request with 1 SYSTEM_ERROR whose remark is the
// AclException ("org.apache.rocketmq.acl.common.AclException: ..."), 5.x with 16 NO_PERMISSION.
bool isV4AclRefusal(const RemotingCommand& response);
bool isAclRefusal(const RemotingCommand& response);
// The permission a request code needs from the broker's ACL, for error messages: "PUB" (sends),
// "SUB" (pulls, offsets, heartbeats, group membership), "admin" (topic/group changes, consume
// stats), or "" when the code is none of those.
const char* requiredPermission(std::int32_t requestCode);

}  // namespace ferry::rocketmq
