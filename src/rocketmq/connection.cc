// Connection: all state is touched on the io thread only, so there is no lock; public entry
// points post there. A `generation_` counter tags each socket incarnation so completion handlers
// of a dropped socket cannot disturb its successor.
#include "rocketmq/connection.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "core/backoff.h"
#include "core/logging.h"

namespace ferry::rocketmq {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kMaxWriteBatchFrames = 512;
constexpr std::size_t kMaxWriteBatchBytes = 4u << 20;
constexpr std::chrono::milliseconds kFirstBackoff{100};
constexpr std::int32_t kRequestCodeNotSupported = 3;
constexpr std::int32_t kSystemError = 1;

std::uint32_t readBe32(const std::string& b, std::size_t at) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(b[at])) << 24 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 1])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 2])) << 8 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 3]));
}

// The integer value of top-level key `key` in a JSON header written by encodeFrame. Only a
// number follows the quoted key there: string values escape their quotes and the extFields
// values are strings, so `"key":` followed by a digit is the top-level member.
std::optional<std::int64_t> jsonHeaderInt(std::string_view header, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\":";
  for (std::size_t at = header.find(needle); at != std::string_view::npos;
       at = header.find(needle, at + 1)) {
    std::size_t i = at + needle.size();
    const bool negative = i < header.size() && header[i] == '-';
    if (negative) ++i;
    if (i >= header.size() || header[i] < '0' || header[i] > '9') continue;
    std::int64_t v = 0;
    while (i < header.size() && header[i] >= '0' && header[i] <= '9' && v < (1LL << 40)) {
      v = v * 10 + (header[i++] - '0');
    }
    return negative ? -v : v;
  }
  return std::nullopt;
}

// The opaque of a frame this connection encoded, if it is a request that expects a response
// (neither a response nor oneway); read back from the header bytes because the write queue holds
// encoded frames only. nullopt (write it) when it is not one or cannot be read.
std::optional<std::int32_t> requestOpaque(const std::string& frame, SerializeType type) {
  if (frame.size() < 8) return std::nullopt;
  const std::size_t headerLength = readBe32(frame, 4) & 0xFFFFFFu;
  if (8 + headerLength > frame.size()) return std::nullopt;
  std::int64_t opaque = 0;
  std::int64_t flag = 0;
  if (type == SerializeType::kRocketmq) {
    // code int16, language byte, version int16, opaque int32, flag int32 (§1.5).
    if (headerLength < 13) return std::nullopt;
    opaque = static_cast<std::int32_t>(readBe32(frame, 13));
    flag = static_cast<std::int32_t>(readBe32(frame, 17));
  } else {
    const std::string_view header(frame.data() + 8, headerLength);
    auto o = jsonHeaderInt(header, "opaque");
    auto f = jsonHeaderInt(header, "flag");
    if (!o || !f) return std::nullopt;
    opaque = *o;
    flag = *f;
  }
  if ((flag & (kFlagResponse | kFlagOneway)) != 0) return std::nullopt;
  return static_cast<std::int32_t>(opaque);
}

const char* responseCodeName(std::int32_t code) {
  switch (code) {
    case 0: return "SUCCESS";
    case 1: return "SYSTEM_ERROR";
    case 2: return "SYSTEM_BUSY";
    case 3: return "REQUEST_CODE_NOT_SUPPORTED";
    case 10: return "FLUSH_DISK_TIMEOUT";
    case 11: return "SLAVE_NOT_AVAILABLE";
    case 12: return "FLUSH_SLAVE_TIMEOUT";
    case 13: return "MESSAGE_ILLEGAL";
    case 14: return "SERVICE_NOT_AVAILABLE";
    case 15: return "VERSION_NOT_SUPPORTED";
    case 16: return "NO_PERMISSION";
    case 17: return "TOPIC_NOT_EXIST";
    case 18: return "TOPIC_EXIST_ALREADY";
    case 19: return "PULL_NOT_FOUND";
    case 22: return "QUERY_NOT_FOUND";
    case 26: return "SUBSCRIPTION_GROUP_NOT_EXIST";
    case 29: return "INVALID_PARAMETER";
    case 1500: return "GO_AWAY";
    default: return nullptr;
  }
}

std::shared_ptr<spdlog::logger> log() {
  static auto l = core::logger("rocketmq");
  return l;
}

}  // namespace

bool isV4AclRefusal(const RemotingCommand& response) {
  return response.code == kSystemError && response.remark &&
         response.remark->find("AclException") != std::string::npos;
}

bool isAclRefusal(const RemotingCommand& response) {
  return response.code == 16 || isV4AclRefusal(response);
}

const char* requiredPermission(std::int32_t requestCode) {
  switch (requestCode) {
    case 10: case 310: case 320:  // SEND_MESSAGE, _V2, SEND_BATCH_MESSAGE
      return "PUB";
    case 11: case 12: case 14: case 15: case 34: case 35: case 36: case 38: case 41:
      // PULL, QUERY_MESSAGE, QUERY/UPDATE_CONSUMER_OFFSET, HEART_BEAT, UNREGISTER_CLIENT,
      // CONSUMER_SEND_MSG_BACK, GET_CONSUMER_LIST_BY_GROUP, LOCK_BATCH_MQ
      return "SUB";
    case 17: case 25: case 200: case 207: case 208: case 215:
      // UPDATE_AND_CREATE_TOPIC, UPDATE_BROKER_CONFIG, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
      // DELETE_SUBSCRIPTIONGROUP, GET_CONSUME_STATS, DELETE_TOPIC_IN_BROKER
      return "admin";
    default:
      return "";
  }
}

Status responseStatus(const RemotingCommand& response, const std::string& what) {
  if (response.code == 0) return Status::ok();
  std::string msg = what + ": broker/namesrv answered code " + std::to_string(response.code);
  if (const char* name = responseCodeName(response.code)) msg += std::string(" ") + name;
  if (response.remark && !response.remark->empty()) msg += " (" + *response.remark + ")";
  if (isAclRefusal(response)) return Status::failedPrecondition("permission denied: " + msg);
  switch (response.code) {
    case 2:
    case 1500: return Status::unavailable(std::move(msg));
    case 17: return Status::notFound(std::move(msg));
    case 1:
    case 14: return Status::retriable(std::move(msg));
    case 13:
    case 29: return Status::invalidArgument(std::move(msg));
    default: return Status::failedPrecondition(std::move(msg));
  }
}

Connection::Connection(asio::io_context& io, std::string address, ConnectionContext context)
    : io_(io),
      address_(std::move(address)),
      context_(std::move(context)),
      socket_(io),
      resolver_(io),
      connectTimer_(io),
      backoffTimer_(io),
      chunk_(kReadChunk) {}

Connection::~Connection() = default;

void Connection::invokeAsync(RemotingCommand cmd, std::chrono::milliseconds timeout,
                             ResponseCallback callback) {
  cmd.opaque = context_.nextOpaque();
  cmd.flag &= ~(kFlagResponse | kFlagOneway);
  asio::post(io_, [self = shared_from_this(), cmd = std::move(cmd), timeout,
                   callback = std::move(callback)]() mutable {
    self->enqueueOnIo(std::move(cmd), timeout, std::move(callback));
  });
}

void Connection::invokeOneway(RemotingCommand cmd) {
  cmd.opaque = context_.nextOpaque();
  cmd.flag = (cmd.flag & ~kFlagResponse) | kFlagOneway;
  asio::post(io_, [self = shared_from_this(), cmd = std::move(cmd)]() mutable {
    self->enqueueOnIo(std::move(cmd), std::chrono::milliseconds(0), nullptr);
  });
}

void Connection::enqueueOnIo(RemotingCommand cmd, std::chrono::milliseconds timeout,
                             ResponseCallback callback) {
  if (state_ == State::kClosed) {
    if (callback) callback(Status::cancelled("rocketmq client is shut down"));
    return;
  }
  std::string frame = encodeFrame(cmd, context_.serializeType);
  if (frame.size() > kMaxFrameBytes) {
    // The peer would drop the connection (and every other request on it): refuse locally.
    if (callback) {
      callback(Status::invalidArgument(
          "request code " + std::to_string(cmd.code) + " to RocketMQ at " + address_ + " is a " +
          std::to_string(frame.size()) + "-byte frame, over the 16 MiB limit"));
    }
    return;
  }
  if (callback) {
    Pending p;
    p.code = cmd.code;
    p.deadline = Clock::now() + timeout;
    p.callback = std::move(callback);
    deadlines_.emplace(p.deadline, cmd.opaque);
    pending_[cmd.opaque] = std::move(p);
    pendingCount_.store(pending_.size());
  }
  writeQueue_.push_back(std::move(frame));
  if (state_ == State::kConnected) {
    startWrite();
  } else {
    ensureConnected();
  }
}

void Connection::ensureConnected() {
  if (state_ != State::kIdle) return;
  auto now = Clock::now();
  if (now >= nextAttempt_) {
    startConnect();
    return;
  }
  if (backoffArmed_) return;
  backoffArmed_ = true;
  backoffTimer_.expires_at(nextAttempt_);
  backoffTimer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    self->backoffArmed_ = false;
    if (ec || self->state_ != State::kIdle) return;
    if (!self->pending_.empty() || !self->writeQueue_.empty()) self->startConnect();
  });
}

void Connection::startConnect() {
  auto colon = address_.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address_.size()) {
    onConnectFailed("address is not host:port");
    return;
  }
  std::string host = address_.substr(0, colon);
  std::string port = address_.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  state_ = State::kResolving;
  const std::uint64_t gen = ++generation_;
  connectTimer_.expires_after(context_.connectTimeout);
  connectTimer_.async_wait([self = shared_from_this(), gen](const asio::error_code& ec) {
    if (ec || gen != self->generation_) return;
    if (self->state_ != State::kResolving && self->state_ != State::kConnecting) return;
    self->onConnectFailed("connect timed out after " +
                          std::to_string(self->context_.connectTimeout.count()) + " ms");
  });
  resolver_.async_resolve(
      host, port,
      [self = shared_from_this(), gen](const asio::error_code& ec,
                                       asio::ip::tcp::resolver::results_type results) {
        if (gen != self->generation_ || self->state_ != State::kResolving) return;
        if (ec) {
          self->onConnectFailed("cannot resolve: " + ec.message());
          return;
        }
        self->state_ = State::kConnecting;
        asio::async_connect(self->socket_, results,
                            [self, gen](const asio::error_code& ec2, const asio::ip::tcp::endpoint&) {
                              if (gen != self->generation_ ||
                                  self->state_ != State::kConnecting) {
                                return;
                              }
                              if (ec2) {
                                self->onConnectFailed(ec2.message());
                              } else {
                                self->onConnected();
                              }
                            });
      });
}

void Connection::onConnectFailed(const std::string& why) {
  ++generation_;
  asio::error_code ignored;
  resolver_.cancel();
  socket_.close(ignored);
  connectTimer_.cancel();
  state_ = State::kIdle;
  peerVersion_.store(-1);
  backoff_ = std::chrono::milliseconds(core::backoffDelay(kFirstBackoff.count(), context_.maxBackoff.count(),
                                                          connectFailures_ < 62 ? connectFailures_++ : connectFailures_));
  nextAttempt_ = Clock::now() + backoff_;
  writeQueue_.clear();
  log()->debug("cannot connect to {}: {} (next attempt in {} ms)", address_, why,
               backoff_.count());
  failAll(Status::unavailable("cannot connect to RocketMQ at " + address_ + ": " + why));
}

void Connection::onConnected() {
  connectTimer_.cancel();
  state_ = State::kConnected;
  peerVersion_.store(-1);
  backoff_ = std::chrono::milliseconds(0);
  connectFailures_ = 0;
  connectedFlag_.store(true);
  asio::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  readBuffer_.clear();
  log()->debug("connected to {}", address_);
  startRead();
  startWrite();
}

void Connection::startRead() {
  const std::uint64_t gen = generation_;
  socket_.async_read_some(asio::buffer(chunk_), [self = shared_from_this(), gen](
                                                    const asio::error_code& ec, std::size_t n) {
    if (gen != self->generation_ || self->state_ != State::kConnected) return;
    if (ec) {
      self->lose(ec == asio::error::eof ? std::string("closed by peer") : ec.message());
      return;
    }
    self->onData(n);
    if (gen == self->generation_ && self->state_ == State::kConnected) self->startRead();
  });
}

void Connection::onData(std::size_t n) {
  readBuffer_.append(chunk_.data(), n);
  const std::uint64_t gen = generation_;
  std::size_t offset = 0;
  while (offset < readBuffer_.size()) {
    FrameDecode d = decodeFrame(std::string_view(readBuffer_).substr(offset));
    if (d.state == FrameDecode::State::kNeedMore) break;
    if (d.state == FrameDecode::State::kInvalid) {
      lose("invalid frame: " + d.error);
      return;
    }
    offset += d.consumed;
    handleFrame(std::move(d.command));
    if (gen != generation_) return;  // a handler dropped the connection
  }
  readBuffer_.erase(0, offset);
}

void Connection::handleFrame(RemotingCommand cmd) {
  if (cmd.isResponse()) {
    auto it = pending_.find(cmd.opaque);
    if (it == pending_.end()) {
      log()->debug("{}: dropping response to unknown opaque {} (late or unsolicited)", address_,
                   cmd.opaque);
      return;
    }
    peerVersion_.store(cmd.version);
    Pending p = std::move(it->second);
    pending_.erase(it);
    deadlines_.erase({p.deadline, cmd.opaque});
    pendingCount_.store(pending_.size());
    p.callback(std::move(cmd));
    return;
  }
  RequestHandler handler = context_.handlerFor ? context_.handlerFor(cmd.code) : RequestHandler();
  RemotingCommand response;
  if (handler) {
    try {
      response = handler(cmd);
    } catch (const std::exception& e) {
      response = RemotingCommand();
      response.code = kSystemError;
      response.remark = std::string("handler failed: ") + e.what();
    }
  } else {
    response.code = kRequestCodeNotSupported;
    response.remark = "request code " + std::to_string(cmd.code) + " not supported by ferry";
  }
  if (cmd.isOneway()) return;
  response.opaque = cmd.opaque;
  response.flag = kFlagResponse;
  writeQueue_.push_back(encodeFrame(response, context_.serializeType));
  startWrite();
}

void Connection::startWrite() {
  if (state_ != State::kConnected || writeInFlight_ || writeQueue_.empty()) return;
  auto batch = std::make_shared<std::vector<std::string>>();
  std::size_t bytes = 0;
  std::size_t expired = 0;
  while (!writeQueue_.empty() && batch->size() < kMaxWriteBatchFrames &&
         (batch->empty() || bytes + writeQueue_.front().size() <= kMaxWriteBatchBytes)) {
    // A request whose caller was already answered (timed out while it waited for a connection
    // or behind a backlog) is not sent: the caller may have sent it again, and a late copy would
    // be processed twice (a duplicate message for a send).
    if (auto op = requestOpaque(writeQueue_.front(), context_.serializeType);
        op && pending_.find(*op) == pending_.end()) {
      writeQueue_.pop_front();
      ++expired;
      continue;
    }
    bytes += writeQueue_.front().size();
    batch->push_back(std::move(writeQueue_.front()));
    writeQueue_.pop_front();
  }
  if (expired > 0) {
    log()->debug("{}: dropped {} request(s) that timed out before being written", address_,
                 expired);
  }
  if (batch->empty()) return;
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(batch->size());
  for (const auto& f : *batch) buffers.push_back(asio::buffer(f));
  writeInFlight_ = true;
  const std::uint64_t gen = generation_;
  asio::async_write(socket_, buffers,
                    [self = shared_from_this(), gen, batch](const asio::error_code& ec,
                                                            std::size_t) {
                      if (gen != self->generation_) return;
                      self->writeInFlight_ = false;
                      if (ec) {
                        self->lose("write failed: " + ec.message());
                        return;
                      }
                      self->startWrite();
                    });
}

void Connection::lose(const std::string& why) {
  if (state_ != State::kConnected && state_ != State::kConnecting &&
      state_ != State::kResolving) {
    return;
  }
  ++generation_;
  asio::error_code ignored;
  socket_.close(ignored);
  connectTimer_.cancel();
  state_ = State::kIdle;
  connectedFlag_.store(false);
  peerVersion_.store(-1);
  readBuffer_.clear();
  writeQueue_.clear();
  writeInFlight_ = false;
  log()->info("connection to {} lost: {}", address_, why);
  failAll(Status::unavailable("connection to RocketMQ at " + address_ + " lost: " + why));
}

void Connection::failAll(const Status& status) {
  auto pending = std::move(pending_);
  pending_.clear();
  deadlines_.clear();
  pendingCount_.store(0);
  for (auto& [opaque, p] : pending) p.callback(status);
}

void Connection::sweepTimeouts(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const std::int32_t opaque = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());
    auto it = pending_.find(opaque);
    if (it == pending_.end()) continue;
    Pending p = std::move(it->second);
    pending_.erase(it);
    pendingCount_.store(pending_.size());
    p.callback(Status::timeout("request code " + std::to_string(p.code) + " to RocketMQ at " +
                               address_ + " got no response in time"));
  }
}

void Connection::resetConnection() {
  asio::post(io_, [self = shared_from_this()] { self->lose("reset by the client"); });
}

void Connection::shutdown() {
  ++generation_;
  state_ = State::kClosed;
  connectedFlag_.store(false);
  asio::error_code ignored;
  resolver_.cancel();
  socket_.close(ignored);
  connectTimer_.cancel();
  backoffTimer_.cancel();
  writeQueue_.clear();
  failAll(Status::cancelled("rocketmq client is shut down"));
}

}  // namespace ferry::rocketmq
