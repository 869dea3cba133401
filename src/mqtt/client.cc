// MqttClient (client.h): all protocol state lives on the client's io thread; public methods post
// work there. The few values other threads read (state, last error, window, counters) sit under
// `mu_`. Every socket callback carries the connection generation and is ignored when stale.
#include "mqtt/client.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include <asio.hpp>
#include <asio/ssl.hpp>

#include "core/backoff.h"
#include "core/logging.h"
#include "core/thread.h"

namespace ferry::mqtt {
namespace {

using Clock = std::chrono::steady_clock;
using tcp = asio::ip::tcp;

std::int64_t monotonicNs(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// How often a SUBSCRIBE refused because the broker holds its packet identifier is sent again with
// another one (see MqttClient::Impl::nextPacketId).
constexpr int kSubscribeIdRetries = 8;

std::string randomClientId() {
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::mt19937_64 gen((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
  std::string id = "ferry-";
  for (int i = 0; i < 16; ++i) id += kAlphabet[gen() % (sizeof(kAlphabet) - 1)];
  return id;
}

// CONNACK refusal: the reason and whether retrying may help.
Status connackError(std::uint8_t code, Version v, const std::string& reasonString) {
  std::string what;
  bool retriable = false;
  if (v == Version::k311) {
    switch (code) {
      case 1: what = "unacceptable protocol version"; break;
      case 2: what = "identifier rejected"; break;
      case 3: what = "server unavailable"; retriable = true; break;
      case 4: what = "bad user name or password"; break;
      case 5: what = "not authorized"; break;
      default: what = "refused"; break;
    }
  } else {
    switch (code) {
      case 0x80: what = "unspecified error"; break;
      case 0x81: what = "malformed packet"; break;
      case 0x82: what = "protocol error"; break;
      case 0x83: what = "implementation specific error"; break;
      case 0x84: what = "unsupported protocol version"; break;
      case 0x85: what = "client identifier not valid"; break;
      case 0x86: what = "bad user name or password"; break;
      case 0x87: what = "not authorized"; break;
      case 0x88: what = "server unavailable"; retriable = true; break;
      case 0x89: what = "server busy"; retriable = true; break;
      case 0x8A: what = "banned"; break;
      case 0x8C: what = "bad authentication method"; break;
      case 0x90: what = "topic name invalid"; break;
      case 0x95: what = "packet too large"; break;
      case 0x97: what = "quota exceeded"; retriable = true; break;
      case 0x99: what = "payload format invalid"; break;
      case 0x9A: what = "retain not supported"; break;
      case 0x9B: what = "QoS not supported"; break;
      case 0x9C: what = "use another server"; retriable = true; break;
      case 0x9D: what = "server moved"; retriable = true; break;
      case 0x9F: what = "connection rate exceeded"; retriable = true; break;
      default: what = "refused"; break;
    }
  }
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", code);
  std::string msg = "CONNACK refused the connection: " + what + " (" + hex + ")";
  if (!reasonString.empty()) msg += ": " + reasonString;
  return retriable ? Status::unavailable(msg) : Status::invalidArgument(msg);
}

std::string hexCode(std::uint8_t code) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", code);
  return hex;
}

// Names of the DISCONNECT reasons a broker sends (MQTT 5 §3.14.2.1), with a leading ": ".
std::string disconnectReason(std::uint8_t code) {
  switch (code) {
    case 0x00: return ": normal disconnection";
    case 0x80: return ": unspecified error";
    case 0x81: return ": malformed packet";
    case 0x82: return ": protocol error";
    case 0x87: return ": not authorized";
    case 0x89: return ": server busy";
    case 0x8B: return ": server shutting down";
    case 0x8D: return ": keep alive timeout";
    case 0x8E: return ": session taken over";
    case 0x93: return ": receive maximum exceeded";
    case 0x95: return ": packet too large";
    case 0x97: return ": quota exceeded";
    case 0x98: return ": administrative action";
    default: return "";
  }
}

}  // namespace

class MqttClient::Impl {
 public:
  explicit Impl(ClientOptions o)
      : options_(std::move(o)),
        sslContext_(asio::ssl::context::tls_client),
        log_(core::logger("mqtt")) {
    if (options_.clientId.empty()) options_.clientId = randomClientId();
    if (options_.maxInflight == 0) options_.maxInflight = 1;
    std::random_device rd;
    idGen_.seed((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
    jumpPacketIds();
    work_.emplace(asio::make_work_guard(io_));
    thread_ = core::namedThread("mqtt-io", [this] { io_.run(); });
  }

  ~Impl() { close(); }

  // ---- public side -------------------------------------------------------------------------

  void setMessageHandler(MessageHandler h) {
    asio::post(io_, [this, h = std::move(h)]() mutable { handler_ = std::move(h); });
  }
  void setBatchHandler(BatchHandler h) {
    asio::post(io_, [this, h = std::move(h)]() mutable { batchHandler_ = std::move(h); });
  }
  void setRoomListener(std::function<void()> listener) {
    std::lock_guard lock(mu_);
    roomListener_ = std::move(listener);
  }
  void setConnectionListener(std::function<void(const ConnectionEvent&)> listener) {
    std::lock_guard lock(mu_);
    connectionListener_ = std::move(listener);
  }

  Status connect(bool* sessionPresent) {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return Status::failedPrecondition("MQTT client closed");
      if (started_) return Status::failedPrecondition("MQTT client already connected once");
      started_ = true;
    }
    auto promise = std::make_shared<std::promise<std::pair<Status, bool>>>();
    auto future = promise->get_future();
    asio::post(io_, [this, promise] {
      connectPromise_ = promise;
      startConnect();
    });
    auto wait = std::chrono::milliseconds(options_.connectTimeoutMs + 2000);
    if (future.wait_for(wait) != std::future_status::ready) {
      return Status::timeout("MQTT connect to " + address() + " did not finish");
    }
    auto [status, present] = future.get();
    if (sessionPresent) *sessionPresent = present;
    return status;
  }

  Status subscribe(const std::vector<Subscription>& subs) {
    if (subs.empty()) return Status::ok();
    for (const auto& s : subs) {
      if (auto st = validateTopicFilter(s.filter); !st) return st;
      if (s.qos > 2) return Status::invalidArgument("QoS " + std::to_string(s.qos) + " for " + s.filter);
    }
    auto promise = std::make_shared<std::promise<Status>>();
    auto future = promise->get_future();
    asio::post(io_, [this, subs, promise] {
      if (!connected_ && everConnected_ && !stopping_) {
        // Lost after the first connection: subscribed again with the others at the next CONNACK.
        for (const auto& s : subs) subscriptions_[s.filter] = s;
      }
      sendSubscribe(subs, promise);
    });
    if (future.wait_for(std::chrono::milliseconds(options_.connectTimeoutMs)) !=
        std::future_status::ready) {
      return Status::timeout("no SUBACK from " + address() + " within " +
                             std::to_string(options_.connectTimeoutMs) + " ms");
    }
    return future.get();
  }

  // Queued; the io thread is woken only when the queue was empty, and takes all of it at once.
  void ack(std::uint64_t token) {
    if (token == 0) return;
    bool wake = false;
    {
      std::lock_guard lock(ackMu_);
      // While the io thread lingers before its next read, the read takes the acks along.
      wake = ackQueue_.empty() && !lingering_;
      ackQueue_.push_back(token);
    }
    if (wake) asio::post(io_, [this] { drainAcks(); });
  }

  void publish(OutgoingMessage m, PublishCallback done) {
    if (m.qos > 2) {
      if (done) done(Status::invalidArgument("QoS " + std::to_string(m.qos)));
      return;
    }
    bool wake = false;
    {
      std::unique_lock lock(mu_);
      if (m.qos > 0) {
        cv_.wait(lock, [&] { return stopped_ || windowUsed_ < windowLimitLocked(); });
      }
      if (stopped_) {
        lock.unlock();
        if (done) done(Status::cancelled("MQTT client closed"));
        return;
      }
      wake = enqueueLocked(std::move(m), std::move(done));
    }
    // One post per burst: the io thread takes every publish queued meanwhile (drainPublishes).
    if (wake) wakeForPublishes();
  }

  void wakeForPublishes() {
    asio::post(io_, [this] { drainPublishes(); });
    std::lock_guard lock(ackMu_);
    if (lingering_ && !lingerCut_) {
      lingerCut_ = true;
      lingerCv_.notify_one();
    }
  }

  // Queues a publish that has room (mu_ held); true when the queue was empty (the io thread
  // needs a wake).
  bool enqueueLocked(OutgoingMessage&& m, PublishCallback done) {
    if (m.qos > 0) ++windowUsed_;
    ++pendingAll_;
    const bool wasEmpty = publishQueue_.empty();
    publishQueue_.push_back({std::move(m), std::move(done)});
    return wasEmpty;
  }

  void publishBatch(std::vector<OutgoingMessage>& ms, const PublishCallback& done) {
    std::size_t i = 0;
    while (i < ms.size()) {
      bool wake = false;
      {
        std::lock_guard lock(mu_);
        for (; i < ms.size(); ++i) {
          OutgoingMessage& m = ms[i];
          // An invalid QoS, a stopped client and a full window take publish()'s path below.
          if (m.qos > 2 || stopped_ || (m.qos > 0 && windowUsed_ >= windowLimitLocked())) break;
          if (enqueueLocked(std::move(m), done)) wake = true;
        }
      }
      if (wake) wakeForPublishes();
      if (i == ms.size()) break;
      OutgoingMessage& m = ms[i];
      if (m.qos == 1 || m.qos == 2) {
        // The window is full: wait until a quarter of it (or all that is left of the batch) is
        // free, so that the rest goes in chunks, not one message per acknowledgement (each a
        // wake-up of this thread and a hand-off to the io thread).
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopped_ || windowUsed_ + std::min(ms.size() - i, chunkLocked()) <= windowLimitLocked(); });
        if (!stopped_) continue;
      }
      publish(std::move(m), done);  // an invalid QoS or a stopped client: it answers why
      ++i;
    }
    ms.clear();
  }

  void queueBatch(std::vector<OutgoingMessage>& ms, const PublishCallback& done) {
    std::vector<OutgoingMessage*> refused;  // an invalid QoS or a stopped client
    bool wake = false;
    {
      std::lock_guard lock(mu_);
      for (OutgoingMessage& m : ms) {
        if (m.qos > 2 || stopped_) refused.push_back(&m);
        else if (enqueueLocked(std::move(m), done)) wake = true;
      }
    }
    if (wake) wakeForPublishes();
    for (OutgoingMessage* m : refused) publish(std::move(*m), done);  // answers why, without waiting
    ms.clear();
  }

  bool hasRoom() {
    std::lock_guard lock(mu_);
    if (stopped_ || windowUsed_ < windowLimitLocked()) return true;
    roomWanted_ = true;
    return false;
  }

  Status flush(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return pendingAll_ == 0; })) {
      return Status::timeout(std::to_string(pendingAll_) + " MQTT publishes still outstanding");
    }
    Status s = std::move(firstError_);
    firstError_ = Status::ok();
    return s;
  }

  ClientState state() const {
    std::lock_guard lock(mu_);
    return state_;
  }
  Status lastError() const {
    std::lock_guard lock(mu_);
    return lastError_;
  }
  std::uint64_t readLingers() const { return lingers_.load(std::memory_order_relaxed); }
  std::size_t inflight() const {
    std::lock_guard lock(mu_);
    return windowUsed_;
  }
  std::size_t unacked() const { return unackedCount_.load(); }

  void close() {
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      closed_ = true;
      stopped_ = true;
    }
    cv_.notify_all();
    auto done = std::make_shared<std::promise<void>>();
    auto future = done->get_future();
    asio::post(io_, [this, done] { shutdown(done); });
    future.wait_for(std::chrono::seconds(3));
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
    // Whatever was posted but did not run: run it now (stopping_ makes it fail fast).
    io_.restart();
    closeSocket();
    io_.poll();
    drainPublishes();  // queued by a publish() whose post came after the io thread stopped
    cancelAll(Status::cancelled("MQTT client closed"));
    std::lock_guard lock(mu_);
    state_ = ClientState::kStopped;
  }

 private:
  struct Outgoing {
    Packet packet;           // PUBLISH as sent (packetId set once assigned)
    PublishCallback done;
    std::uint64_t seq = 0;   // submission order, for re-sending
    bool released = false;   // QoS 2: PUBREC received, PUBREL sent
  };
  struct Incoming {
    std::uint64_t token;
    std::uint16_t packetId;
    std::uint8_t qos;
    bool acked = false;
  };
  struct PendingSub {
    std::vector<Subscription> subs;
    std::shared_ptr<std::promise<Status>> promise;  // null for re-subscriptions
    int attempts = 0;                               // re-sends after "packet identifier in use"
  };
  // What one socket write carries: the bytes of every packet queued since the previous write,
  // and the callbacks of those that want to know (true: written on the live connection).
  struct WriteBatch {
    std::string bytes;
    std::vector<std::function<void(bool)>> callbacks;
  };
  struct QueuedPublish {
    OutgoingMessage message;
    PublishCallback done;
  };
  // While one is alive, write() only queues: the packets an io-thread turn produces (the
  // PUBACKs of a batch of acks, the PUBLISHes of a batch of publishes, the answers to one socket
  // read) leave in one write when the outermost Cork ends.
  class Cork {
   public:
    explicit Cork(Impl& impl) : impl_(impl) { ++impl_.corked_; }
    ~Cork() {
      if (--impl_.corked_ == 0 && !impl_.writing_) impl_.writeNext();
    }
    Cork(const Cork&) = delete;
    Cork& operator=(const Cork&) = delete;

   private:
    Impl& impl_;
  };

  std::string address() const { return options_.host + ":" + std::to_string(options_.port); }

  std::size_t windowLimitLocked() const {
    return std::max<std::size_t>(1, std::min<std::size_t>(options_.maxInflight, brokerReceiveMax_));
  }
  // How much room a waiting publisher waits for: a quarter of the window.
  std::size_t chunkLocked() const { return std::max<std::size_t>(1, windowLimitLocked() / 4); }

  void setState(ClientState s) {
    std::lock_guard lock(mu_);
    if (state_ != ClientState::kStopped) state_ = s;
  }

  void emitConnection(ConnectionEvent::Kind kind, std::string reason) {
    std::function<void(const ConnectionEvent&)> listener;
    {
      std::lock_guard lock(mu_);
      listener = connectionListener_;
    }
    if (listener) listener(ConnectionEvent{kind, std::move(reason)});
  }

  // A packet that was read: the broker is not (or no longer) sending unreadable ones.
  void readablePacket(PacketType type) {
    if (badPacketStreak_ == 0) return;
    const bool wasDegraded = badPacketStreak_ >= kBadPacketRepeats;
    badPacketStreak_ = 0;
    badPackets_ = 0;
    // A SUBACK ends a re-subscription, which reports for itself.
    if (wasDegraded && type != PacketType::kSuback) emitConnection(ConnectionEvent::Kind::kConnected, "");
  }

  // ---- connecting ---------------------------------------------------------------------------

  void startConnect() {
    if (stopping_) return;
    ++generation_;
    const std::uint64_t gen = generation_;
    setState(ClientState::kConnecting);
    closeSocket();
    readBuf_.clear();
    if (options_.tls.enabled) {
      if (!sslReady_) {
        if (auto st = setupSsl(); !st) {
          connectFailed(st);
          return;
        }
        sslReady_ = true;
      }
      tls_ = std::make_unique<asio::ssl::stream<tcp::socket>>(io_, sslContext_);
    } else {
      tcp_ = std::make_unique<tcp::socket>(io_);
    }
    connectTimer_.expires_after(std::chrono::milliseconds(options_.connectTimeoutMs));
    connectTimer_.async_wait([this, gen](const asio::error_code& ec) {
      if (ec || gen != generation_ || connected_) return;
      connectFailed(Status::timeout("MQTT connect to " + address() + " timed out after " +
                                    std::to_string(options_.connectTimeoutMs) + " ms"));
    });
    resolver_.async_resolve(options_.host, std::to_string(options_.port),
        [this, gen](const asio::error_code& ec, tcp::resolver::results_type results) {
          if (gen != generation_) return;
          if (ec) {
            connectFailed(Status::unavailable("cannot resolve " + options_.host + ": " + ec.message()));
            return;
          }
          asio::async_connect(lowest(), results,
              [this, gen](const asio::error_code& ec2, const tcp::endpoint&) {
                if (gen != generation_) return;
                if (ec2) {
                  connectFailed(Status::unavailable("cannot connect to " + address() + ": " + ec2.message()));
                  return;
                }
                asio::error_code ignored;
                lowest().set_option(tcp::no_delay(true), ignored);
                if (tls_) {
                  tlsHandshake(gen);
                } else {
                  sendConnect(gen);
                }
              });
        });
  }

  Status setupSsl() {
    asio::error_code ec;
    const auto& t = options_.tls;
    if (t.verifyPeer) {
      sslContext_.set_verify_mode(asio::ssl::verify_peer, ec);
      if (t.caFile.empty()) {
        sslContext_.set_default_verify_paths(ec);
      } else {
        sslContext_.load_verify_file(t.caFile, ec);
      }
      if (ec) return Status::invalidArgument("TLS CA file '" + t.caFile + "': " + ec.message());
    } else {
      sslContext_.set_verify_mode(asio::ssl::verify_none, ec);
    }
    if (!t.certFile.empty()) {
      sslContext_.use_certificate_chain_file(t.certFile, ec);
      if (ec) return Status::invalidArgument("TLS certificate '" + t.certFile + "': " + ec.message());
      sslContext_.use_private_key_file(t.keyFile.empty() ? t.certFile : t.keyFile,
                                       asio::ssl::context::pem, ec);
      if (ec) return Status::invalidArgument("TLS key '" + t.keyFile + "': " + ec.message());
    }
    return Status::ok();
  }

  void tlsHandshake(std::uint64_t gen) {
    const auto& t = options_.tls;
    asio::error_code ec;
    asio::ip::make_address(options_.host, ec);
    const bool isIp = !ec;
    if (!isIp) SSL_set_tlsext_host_name(tls_->native_handle(), options_.host.c_str());
    if (t.verifyPeer && t.verifyHostname) {
      tls_->set_verify_callback(asio::ssl::host_name_verification(options_.host));
    }
    tls_->async_handshake(asio::ssl::stream_base::client, [this, gen](const asio::error_code& ec2) {
      if (gen != generation_) return;
      if (ec2) {
        std::string why = ec2.message();
        long vr = SSL_get_verify_result(tls_->native_handle());
        if (vr != X509_V_OK) {
          why += std::string(" (certificate verification: ") + X509_verify_cert_error_string(vr) + ")";
        }
        connectFailed(Status::invalidArgument("TLS handshake with " + address() + " failed: " + why));
        return;
      }
      sendConnect(gen);
    });
  }

  tcp::socket& lowest() { return tls_ ? tls_->next_layer() : *tcp_; }

  void sendConnect(std::uint64_t gen) {
    Packet p;
    p.type = PacketType::kConnect;
    p.version = options_.version;
    p.clientId = options_.clientId;
    bool clean = options_.cleanStart;
    if (everConnected_) {
      // Later connections resume the session when one can exist.
      clean = options_.version == Version::k5 ? options_.sessionExpiryS == 0 : options_.cleanStart;
    }
    p.cleanStart = clean;
    p.keepAliveS = options_.keepAliveS;
    p.username = options_.username;
    p.password = options_.password;
    if (options_.version == Version::k5) {
      if (options_.sessionExpiryS > 0) p.properties.setNumber(prop::kSessionExpiry, options_.sessionExpiryS);
      if (options_.receiveMaximum > 0 && options_.receiveMaximum != 65535) {
        p.properties.setNumber(prop::kReceiveMaximum, options_.receiveMaximum);
      }
      if (options_.maxPacketBytes > 0 && options_.maxPacketBytes < kMaxVarint + 5) {
        p.properties.setNumber(prop::kMaximumPacketSize, static_cast<std::uint32_t>(options_.maxPacketBytes));
      }
    }
    auto bytes = encode(p, options_.version);
    if (!bytes) {
      connectFailed(bytes.status().withContext("CONNECT"));
      return;
    }
    connecting_ = true;
    startRead(gen);
    write(std::move(*bytes));
  }

  void onConnack(const Packet& p) {
    if (!connecting_) {
      lose(Status::unavailable("unexpected CONNACK"));
      return;
    }
    connecting_ = false;
    if (p.reasonCode != 0) {
      auto reason = p.properties.text(prop::kReasonString).value_or("");
      connectFailed(connackError(p.reasonCode, options_.version, reason));
      return;
    }
    connectTimer_.cancel();
    connected_ = true;
    const bool firstConnection = !everConnected_;
    everConnected_ = true;
    reconnectFailures_ = 0;
    keepAliveS_ = options_.keepAliveS;
    std::uint32_t receiveMax = 65535;
    if (options_.version == Version::k5) {
      if (auto v = p.properties.number(prop::kServerKeepAlive)) keepAliveS_ = static_cast<std::uint16_t>(*v);
      if (auto v = p.properties.number(prop::kReceiveMaximum)) receiveMax = *v;
      if (auto v = p.properties.text(prop::kAssignedClientId)) options_.clientId = *v;
    }
    {
      std::lock_guard lock(mu_);
      brokerReceiveMax_ = receiveMax;  // lastError_ stays: why the previous connection ended
    }
    cv_.notify_all();
    setState(ClientState::kConnected);
    const bool sessionPresent = p.sessionPresent;
    sessionPresent_ = sessionPresent;
    if (!sessionPresent) {
      qos2Received_.clear();
      inboundHeld_.reset();  // a new session: the broker holds none of our old messages' ids
    }
    // Re-subscribe (the session may be gone; SUBSCRIBE again is harmless when it is not). The
    // owner hears kConnected when its SUBACK grants every filter (onSuback), else now; not while
    // the broker keeps sending unreadable packets (kDegraded stands until a readable one).
    if (!firstConnection && !subscriptions_.empty()) {
      std::vector<Subscription> subs;
      for (auto& [filter, s] : subscriptions_) subs.push_back(s);
      sendSubscribe(subs, nullptr);
    } else if (badPacketStreak_ < kBadPacketRepeats) {
      emitConnection(ConnectionEvent::Kind::kConnected, "");
    }
    // Re-send what is in flight, in submission order.
    std::vector<Outgoing*> order;
    for (auto& [id, o] : inflight_) order.push_back(&o);
    std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->seq < b->seq; });
    for (Outgoing* o : order) {
      if (o->released && sessionPresent) {
        sendSimple(PacketType::kPubrel, o->packet.packetId, 0);
      } else {
        o->released = false;
        o->packet.dup = sessionPresent;
        sendPacket(o->packet);
      }
    }
    // Then what waited for a connection (or for room in the window), as far as the window goes.
    pumpWaiting();
    lastReceived_ = Clock::now();
    armKeepAlive();
    if (connectPromise_) {
      connectPromise_->set_value({Status::ok(), sessionPresent});
      connectPromise_.reset();
    }
  }

  void connectFailed(Status why) {
    if (connectPromise_) {
      // The first connection: report, do not retry.
      auto promise = std::move(connectPromise_);
      connectPromise_.reset();
      teardown(why);
      promise->set_value({why, false});
      return;
    }
    lose(std::move(why));
  }

  // Drops the connection and schedules a reconnect.
  void lose(Status why) {
    if (!connected_ && !connecting_ && !tcp_ && !tls_) return;
    if (connectPromise_) {
      connectFailed(std::move(why));
      return;
    }
    teardown(why);
    if (stopping_) return;
    scheduleReconnect();
  }

  void teardown(const Status& why) {
    ++generation_;
    connected_ = false;
    connecting_ = false;
    pingOutstanding_ = false;
    connectTimer_.cancel();
    keepAliveTimer_.cancel();
    closeSocket();
    // Queued bytes die with the connection; QoS 0 publishes among them failed.
    auto callbacks = std::move(outCallbacks_);
    outCallbacks_.clear();
    outBuf_.clear();
    writing_ = false;
    for (auto& cb : callbacks) cb(false);
    // Tokens of this connection become stale; the broker re-sends those messages (their ids stay
    // in inboundHeld_: a resumed session still holds them).
    incoming_.clear();
    unackedIds_.reset();
    unackedCount_ = 0;
    refusedIds_.clear();
    for (auto& [id, ps] : pendingSubs_) {
      if (!ps.promise) continue;
      // Subscribed again at the next CONNACK, as if granted (subscribe()'s contract).
      if (!stopping_) {
        for (const auto& s : ps.subs) subscriptions_[s.filter] = s;
      }
      ps.promise->set_value(Status::unavailable("connection lost before SUBACK: " + why.message()));
    }
    pendingSubs_.clear();
    {
      std::lock_guard lock(mu_);
      lastError_ = why;
    }
    setState(ClientState::kDisconnected);
    if (stopping_) return;
    const bool badPacket = std::exchange(lostToBadPacket_, false);
    if (!badPacket) {
      badPacketStreak_ = 0;
      badPackets_ = 0;
      emitConnection(ConnectionEvent::Kind::kLost, why.message());
      return;
    }
    // A broker that sends what we cannot read after every CONNACK: each reconnect meets it again.
    // Said at warn the first times, at error once it counts as a repeat, then every 100th.
    ++badPackets_;
    if (badPacketStreak_ < kBadPacketRepeats) ++badPacketStreak_;
    if (badPacketStreak_ < kBadPacketRepeats) {
      log_->warn("MQTT client {}: {}; reconnecting", options_.clientId, why.message());
      emitConnection(ConnectionEvent::Kind::kLost, why.message());
      return;
    }
    std::string reason = "the broker at " + address() + " sent an unreadable packet on " +
                         std::to_string(badPackets_) + " connection(s) in a row, each dropped and made again: " +
                         why.message();
    if (badPackets_ == kBadPacketRepeats || badPackets_ % 100 == 0) log_->error("MQTT client {}: {}", options_.clientId, reason);
    emitConnection(ConnectionEvent::Kind::kDegraded, std::move(reason));
  }

  void scheduleReconnect() {
    // 100 ms doubling up to reconnectMaxMs (core/backoff.h, the worker's one backoff).
    const std::int64_t delay = core::backoffDelay(100, std::max<std::int64_t>(100, options_.reconnectMaxMs),
                                                  reconnectFailures_ < 62 ? reconnectFailures_++ : reconnectFailures_);
    reconnectTimer_.expires_after(std::chrono::milliseconds(delay));
    reconnectTimer_.async_wait([this](const asio::error_code& ec) {
      if (ec || stopping_ || connected_ || connecting_) return;
      startConnect();
    });
  }

  void closeSocket() {
    asio::error_code ignored;
    resolver_.cancel();
    if (tls_) {
      tls_->next_layer().shutdown(tcp::socket::shutdown_both, ignored);
      tls_->next_layer().close(ignored);
      retired_.push_back(std::move(tls_));  // destroyed at the end, after any pending handler
      tls_.reset();
    }
    if (tcp_) {
      tcp_->shutdown(tcp::socket::shutdown_both, ignored);
      tcp_->close(ignored);
      retiredTcp_.push_back(std::move(tcp_));
      tcp_.reset();
    }
    if (retired_.size() > 4) retired_.erase(retired_.begin());
    if (retiredTcp_.size() > 4) retiredTcp_.erase(retiredTcp_.begin());
  }

  void shutdown(const std::shared_ptr<std::promise<void>>& done) {
    stopping_ = true;
    reconnectTimer_.cancel();
    keepAliveTimer_.cancel();
    cancelAll(Status::cancelled("MQTT client closed"));
    if (connectPromise_) connectFailed(Status::cancelled("MQTT client closed"));
    if (connected_) {
      Packet d;
      d.type = PacketType::kDisconnect;
      auto bytes = encode(d, options_.version);
      if (bytes) {
        write(std::move(*bytes), [this, done](bool ok) {
          if (ok) teardown(Status::cancelled("closed"));
          done->set_value();
        });
        return;
      }
    }
    teardown(Status::cancelled("closed"));
    done->set_value();
  }

  // Fails every outstanding publish and subscribe.
  void cancelAll(const Status& why) {
    auto inflight = std::move(inflight_);
    inflight_.clear();
    for (auto& [id, o] : inflight) complete(o, why);
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& o : waiting) complete(o, why);
    for (auto& [id, ps] : pendingSubs_) {
      if (ps.promise) ps.promise->set_value(why);
    }
    pendingSubs_.clear();
  }

  // ---- keep-alive ---------------------------------------------------------------------------

  void armKeepAlive() {
    if (keepAliveS_ == 0) return;
    const auto ka = std::chrono::seconds(keepAliveS_);
    auto due = pingOutstanding_ ? pingSent_ + ka : lastSent_ + ka;
    if (due < Clock::now()) due = Clock::now();
    const std::uint64_t gen = generation_;
    keepAliveTimer_.expires_at(due);
    keepAliveTimer_.async_wait([this, gen](const asio::error_code& ec) {
      if (ec || gen != generation_ || !connected_) return;
      const auto now = Clock::now();
      const auto ka2 = std::chrono::seconds(keepAliveS_);
      if (pingOutstanding_) {
        if (now - pingSent_ >= ka2) {
          lose(Status::unavailable("no PINGRESP from " + address() + " within the keep-alive of " +
                                   std::to_string(keepAliveS_) + " s"));
          return;
        }
      } else if (now - lastSent_ >= ka2 - std::chrono::milliseconds(50)) {
        Packet ping;
        ping.type = PacketType::kPingreq;
        pingOutstanding_ = true;
        pingSent_ = now;
        sendPacket(ping);
      }
      armKeepAlive();
    });
  }

  // ---- writing ------------------------------------------------------------------------------

  void sendPacket(const Packet& p, std::function<void(bool)> onWritten = nullptr) {
    auto bytes = encode(p, options_.version);
    if (!bytes) {
      lose(Status::internal(std::string("cannot encode ") + packetTypeName(p.type) + ": " +
                            bytes.status().message()));
      return;
    }
    write(std::move(*bytes), std::move(onWritten));
  }

  void sendSimple(PacketType type, std::uint16_t id, std::uint8_t reason) {
    if (reason == 0 && id != 0) {
      // PUBACK / PUBREC / PUBREL / PUBCOMP without reason and properties: the same four bytes on
      // 3.1.1 and 5 (§3.4.2.1), appended without building a Packet.
      std::uint8_t first = 0;
      switch (type) {
        case PacketType::kPuback: first = 0x40; break;
        case PacketType::kPubrec: first = 0x50; break;
        case PacketType::kPubrel: first = 0x62; break;
        case PacketType::kPubcomp: first = 0x70; break;
        default: break;
      }
      if (first != 0) {
        const char bytes[4] = {static_cast<char>(first), 2, static_cast<char>(id >> 8), static_cast<char>(id & 0xff)};
        write(std::string_view(bytes, sizeof bytes));
        return;
      }
    }
    Packet p;
    p.type = type;
    p.packetId = id;
    p.reasonCode = reason;
    sendPacket(p);
  }

  void write(std::string_view bytes, std::function<void(bool)> onWritten = nullptr) {
    lastSent_ = Clock::now();
    outBuf_.append(bytes);
    if (onWritten) outCallbacks_.push_back(std::move(onWritten));
    if (!writing_ && corked_ == 0) writeNext();
  }

  // Writes everything queued in one async_write; what is queued meanwhile goes in the next.
  void writeNext() {
    if (outBuf_.empty() || (!tcp_ && !tls_)) {
      writing_ = false;
      return;
    }
    writing_ = true;
    auto batch = std::make_shared<WriteBatch>();
    batch->bytes.swap(outBuf_);
    batch->callbacks.swap(outCallbacks_);
    if (spareBuf_.capacity() > 0) {
      outBuf_.swap(spareBuf_);  // reuse an earlier batch's buffer rather than grow a new one
      outBuf_.clear();
    }
    const std::uint64_t gen = generation_;
    auto handler = [this, gen, batch](const asio::error_code& ec, std::size_t) {
      if (gen != generation_ || ec) {
        for (auto& cb : batch->callbacks) cb(false);
        if (gen == generation_) lose(Status::unavailable("write to " + address() + " failed: " + ec.message()));
        return;
      }
      for (auto& cb : batch->callbacks) cb(true);
      if (batch->bytes.capacity() <= (4u << 20)) {
        batch->bytes.clear();
        spareBuf_.swap(batch->bytes);
      }
      writeNext();
    };
    if (tls_) {
      asio::async_write(*tls_, asio::buffer(batch->bytes), handler);
    } else {
      asio::async_write(*tcp_, asio::buffer(batch->bytes), handler);
    }
  }

  // ---- reading ------------------------------------------------------------------------------

  // Starts the next read at once, or after a linger (at most options_.readLinger) when messages
  // arrive densely enough that waiting gathers a batch in the socket buffer. The linger is what
  // it takes at the measured rate to gather kLingerBatch packets, capped at readLinger, and only
  // when at least kLingerMinBatch would arrive within readLinger: below that rate the wait adds
  // latency and saves next to nothing, so reads go at once. The rate is measured over windows of
  // at least kRateWindow, not per read: a burst read in two reads would otherwise look like a
  // rate of hundreds of thousands a second (a publisher sending 10 messages every 5 ms, 2,000/s,
  // made every other read linger). A read that itself waited readLinger or more for data found
  // the line idle: the rate starts again from zero and the next read goes at once. The io thread
  // waits out the linger on a condition variable rather than on a timer: asio watches the socket
  // edge-triggered, so a timer wait would still wake the thread for every segment that arrives.
  // A publish queued meanwhile ends the wait at once (outgoing messages are never held back);
  // acks and keep-alive wait at most the linger, and the acks queued meanwhile leave with the next
  // read's answers.
  void nextRead(std::uint64_t gen, std::size_t lastRead, std::size_t packets) {
    const auto maxLinger = options_.readLinger;
    const auto now = Clock::now();
    const bool idle = now - readStartedAt_ >= maxLinger;
    if (idle) {
      packetRate_ = 0;
      rateWindowStart_ = now;
      rateWindowPackets_ = 0;
    } else {
      rateWindowPackets_ += packets;
      if (const auto span = now - rateWindowStart_; span >= kRateWindow) {
        packetRate_ = static_cast<double>(rateWindowPackets_) / std::chrono::duration<double>(span).count();
        rateWindowStart_ = now;
        rateWindowPackets_ = 0;
      }
    }
    if (maxLinger.count() <= 0 || behind(lastRead)) {
      startRead(gen);
      return;
    }
    const double maxSeconds = std::chrono::duration<double>(maxLinger).count();
    if (idle || packetRate_ * maxSeconds < kLingerMinBatch) {
      startRead(gen);
      return;
    }
    lingers_.fetch_add(1, std::memory_order_relaxed);
    const auto linger = std::min<std::chrono::microseconds>(
        maxLinger, std::chrono::microseconds(static_cast<std::int64_t>(kLingerBatch / packetRate_ * 1e6)));
    {
      std::lock_guard lock(ackMu_);
      lingering_ = true;
    }
    lingerFromNs_ = monotonicNs(now);
    // After this turn's answers are written (the read handler's Cork ends first).
    asio::post(io_, [this, gen, linger] {
      {
        // A publish queued meanwhile cuts the wait short: outgoing messages never wait for it.
        std::unique_lock lock(ackMu_);
        if (!stopping_) lingerCv_.wait_for(lock, linger, [&] { return lingerCut_; });
        lingering_ = false;
        lingerCut_ = false;
      }
      drainAcks();  // those ack() left for this turn (stale tokens of an old connection are ignored)
      if (gen != generation_) return;
      startRead(gen);
    });
  }

  // A reader that is behind reads on at once, so the linger never caps throughput: the last read
  // filled the buffer (64 KiB), or — TLS, where a read returns one record — bytes wait inside the
  // session or its input BIO (already taken from the socket), or a lot waits in the socket. Plain
  // TCP needs no system call for this: a reader that lingered while much arrived gets a full read.
  bool behind(std::size_t lastRead) {
    if (lastRead >= chunk_.size()) return true;
    if (!tls_) return false;
    SSL* ssl = tls_->native_handle();
    if (SSL_pending(ssl) > 0 || SSL_has_pending(ssl) == 1 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0) return true;
    asio::error_code ec;
    return tls_->next_layer().available(ec) >= kBehindBytes;
  }

  void startRead(std::uint64_t gen) {
    readStartedAt_ = Clock::now();
    // The next read's messages were received when it returns, or when a linger before it began.
    const std::int64_t lingerFrom = std::exchange(lingerFromNs_, 0);
    auto handler = [this, gen, lingerFrom](const asio::error_code& ec, std::size_t n) {
      if (gen != generation_) return;
      if (ec) {
        std::string why = ec == asio::error::eof ? std::string("closed by the broker")
                                                 : ec.message();
        lose(Status::unavailable("connection to " + address() + " lost: " + why));
        return;
      }
      readBuf_.append(chunk_.data(), n);
      lastReceived_ = Clock::now();
      readAtNs_ = lingerFrom != 0 ? lingerFrom : monotonicNs(lastReceived_);
      Cork cork(*this);  // the answers to this read (PUBRELs, PUBCOMPs, ...) leave in one write
      std::size_t pos = 0;
      std::size_t packets = 0;
      while (gen == generation_) {
        std::string_view rest(readBuf_.data() + pos, readBuf_.size() - pos);
        Frame f = frame(rest, options_.maxPacketBytes);
        if (f.state == Frame::State::kNeedMore) break;
        if (f.state == Frame::State::kInvalid) {
          deliver();
          lostToBadPacket_ = true;
          lose(Status::unavailable("bad packet from " + address() + ": " + f.error));
          return;
        }
        const std::string_view bytes = rest.substr(0, f.size);
        auto packet = decode(bytes, options_.version);
        pos += f.size;
        if (!packet) {
          // A whole PUBLISH with a bad topic or properties can still be taken: the owner decides
          // and acknowledges it, so that the broker does not send it again after a reconnect.
          if (!connecting_ && connected_) {
            if (auto raw = decodeUnvalidatedPublish(bytes, options_.version)) {
              ++packets;
              onPublish(std::move(*raw), packet.status());
              continue;
            }
          }
          deliver();
          lostToBadPacket_ = true;
          lose(Status::unavailable("bad packet from " + address() + ": " + packet.status().message()));
          return;
        }
        ++packets;
        onPacket(std::move(*packet));
      }
      deliver();
      if (gen != generation_) return;
      readBuf_.erase(0, pos);
      nextRead(gen, n, packets);
    };
    if (tls_) {
      tls_->async_read_some(asio::buffer(chunk_), handler);
    } else {
      tcp_->async_read_some(asio::buffer(chunk_), handler);
    }
  }

  void onPacket(Packet p) {
    if (connecting_ && p.type != PacketType::kConnack && p.type != PacketType::kAuth) {
      lose(Status::unavailable(std::string("expected CONNACK, got ") + packetTypeName(p.type)));
      return;
    }
    if (p.type == PacketType::kPublish || p.type == PacketType::kPingresp || p.type == PacketType::kSuback ||
        p.type == PacketType::kPuback || p.type == PacketType::kPubrec || p.type == PacketType::kPubcomp) {
      readablePacket(p.type);
    }
    switch (p.type) {
      case PacketType::kConnack: onConnack(p); break;
      case PacketType::kPublish: onPublish(std::move(p)); break;
      case PacketType::kPuback: onPuback(p); break;
      case PacketType::kPubrec: onPubrec(p); break;
      case PacketType::kPubrel:
        qos2Received_.erase(p.packetId);
        inboundHeld_.reset(p.packetId);
        sendSimple(PacketType::kPubcomp, p.packetId, 0);
        break;
      case PacketType::kPubcomp: onPubcomp(p); break;
      case PacketType::kSuback: onSuback(p); break;
      case PacketType::kUnsuback: break;
      case PacketType::kPingresp: pingOutstanding_ = false; break;
      case PacketType::kDisconnect: {
        std::string msg = "the broker at " + address() + " sent DISCONNECT" + disconnectReason(p.reasonCode) + " (" +
                          hexCode(p.reasonCode) + ")";
        if (auto r = p.properties.text(prop::kReasonString)) msg += ": " + *r;
        lose(Status::unavailable(msg));
        break;
      }
      default:
        lose(Status::unavailable(std::string("unexpected ") + packetTypeName(p.type) + " from the broker"));
        break;
    }
  }

  // ---- incoming messages --------------------------------------------------------------------

  void onPublish(Packet p, Status error = Status::ok()) {
    IncomingMessage m;
    m.error = std::move(error);
    m.topic = std::move(p.topic);
    m.payload = std::move(p.payload);
    m.qos = p.qos;
    m.retain = p.retain;
    m.dup = p.dup;
    m.properties = std::move(p.properties);
    m.receivedNs = readAtNs_;
    if (p.qos == 2 && qos2Received_.count(p.packetId)) {
      // Already received and PUBREC'd: only the PUBREC again.
      sendSimple(PacketType::kPubrec, p.packetId, 0);
      return;
    }
    if (p.qos > 0) {
      if (unackedIds_.test(p.packetId)) return;  // a re-send of one not yet acked
      m.token = (static_cast<std::uint64_t>(generation_ & 0xffffffffu) << 32) | (++sequence_ & 0xffffffffu);
      incoming_.push_back({m.token, p.packetId, p.qos, false});
      inboundHeld_.set(p.packetId);
      unackedIds_.set(p.packetId);
      ++unackedCount_;
    }
    if (batchHandler_) {
      delivered_.push_back(std::move(m));  // handed over at the end of the socket read
    } else if (handler_) {
      handler_(std::move(m));
    }
  }

  // The batch handler gets what the last socket read delivered.
  void deliver() {
    if (delivered_.empty()) return;
    if (batchHandler_) batchHandler_(delivered_);
    delivered_.clear();
  }

  void drainAcks() {
    {
      std::lock_guard lock(ackMu_);
      ackTaken_.swap(ackQueue_);
    }
    Cork cork(*this);  // their PUBACKs leave in one write
    for (std::uint64_t token : ackTaken_) onAck(token);
    ackTaken_.clear();
  }

  void drainPublishes() {
    {
      std::lock_guard lock(mu_);
      publishTaken_.swap(publishQueue_);
    }
    Cork cork(*this);  // the PUBLISHes leave in one write
    for (auto& q : publishTaken_) enqueuePublish(std::move(q.message), std::move(q.done));
    publishTaken_.clear();
  }

  void onAck(std::uint64_t token) {
    if ((token >> 32) != (generation_ & 0xffffffffu) || !connected_ || incoming_.empty()) return;
    // Tokens of a connection are consecutive and incoming_ only loses its front: the token's
    // place is its distance from the front one.
    const std::uint32_t index = static_cast<std::uint32_t>(token) - static_cast<std::uint32_t>(incoming_.front().token);
    if (index >= incoming_.size() || incoming_[index].token != token || incoming_[index].acked) return;
    incoming_[index].acked = true;
    while (!incoming_.empty() && incoming_.front().acked) {
      const Incoming in = incoming_.front();
      incoming_.pop_front();
      unackedIds_.reset(in.packetId);
      --unackedCount_;
      if (in.qos == 1) {
        inboundHeld_.reset(in.packetId);
        sendSimple(PacketType::kPuback, in.packetId, 0);
      } else {
        qos2Received_.insert(in.packetId);
        sendSimple(PacketType::kPubrec, in.packetId, 0);
      }
    }
  }

  // ---- outgoing messages --------------------------------------------------------------------

  void enqueuePublish(OutgoingMessage m, PublishCallback done) {
    Outgoing o;
    o.packet.type = PacketType::kPublish;
    o.packet.topic = std::move(m.topic);
    o.packet.payload = std::move(m.payload);
    o.packet.qos = m.qos;
    o.packet.retain = m.retain;
    if (options_.version == Version::k5) o.packet.properties = std::move(m.properties);
    o.done = std::move(done);
    o.seq = ++publishSeq_;
    if (stopping_) {
      complete(o, Status::cancelled("MQTT client closed"));
      return;
    }
    if (auto st = validateTopicName(o.packet.topic); !st) {
      complete(o, st);
      return;
    }
    if (!connected_) {
      waiting_.push_back(std::move(o));
      return;
    }
    transmit(std::move(o));
  }

  // The io thread's share of the window: a QoS>0 publish goes out only while fewer than the
  // window are in flight; the rest (queueBatch()'s overshoot) waits in waiting_, in order, and
  // a QoS 0 publish waits behind them. Normally the callers' own wait for room (publish,
  // publishBatch, hasRoom) keeps waiting_ empty while connected. windowLimitLocked() needs no
  // lock here: brokerReceiveMax_ is written on this thread only (under mu_, for the callers).
  void transmit(Outgoing o) {
    if (!waiting_.empty() || (o.packet.qos > 0 && inflight_.size() >= windowLimitLocked())) {
      waiting_.push_back(std::move(o));
      return;
    }
    sendNow(std::move(o));
  }
  // Sends what waits, in order, while the window has room (after a reconnect, after a PUBACK).
  void pumpWaiting() {
    if (!connected_ || waiting_.empty()) return;
    Cork cork(*this);
    while (!waiting_.empty() && (waiting_.front().packet.qos == 0 || inflight_.size() < windowLimitLocked())) {
      Outgoing o = std::move(waiting_.front());
      waiting_.pop_front();
      sendNow(std::move(o));
    }
  }

  void sendNow(Outgoing o) {
    if (o.packet.qos == 0) {
      auto shared = std::make_shared<Outgoing>(std::move(o));
      auto bytes = encode(shared->packet, options_.version);
      if (!bytes) {
        complete(*shared, bytes.status());
        return;
      }
      write(std::move(*bytes), [this, shared](bool ok) {
        complete(*shared, ok ? Status::ok()
                             : Status::unavailable("connection lost before the QoS 0 publish was written"));
      });
      return;
    }
    const std::uint16_t id = nextPacketId();
    o.packet.packetId = id;
    auto [it, inserted] = inflight_.emplace(id, std::move(o));
    sendPacket(it->second.packet);
  }

  // A packet identifier neither we nor the broker can be holding. MQTT gives client and server
  // separate identifier spaces (MQTT 5 §2.2.1), but some brokers keep one per session: mochi-mqtt
  // 2.7.9 refuses a SUBSCRIBE whose identifier is one of its in-flight messages to us (SUBACK 0x91,
  // on 3.1.1 too) and numbers the messages it queues for a resumed session 1, 2, 3, ... So a
  // client that counted from 1 after every start collided right after a crash (issue 18). Hence
  // ids start at a random point, skip those of the broker's messages we have not fully
  // acknowledged (inboundHeld_), and those it refused on this connection (refusedIds_).
  std::uint16_t nextPacketId() {
    for (int i = 0; i < 65536; ++i) {
      nextId_ = static_cast<std::uint16_t>(nextId_ == 65535 ? 1 : nextId_ + 1);
      if (!inflight_.count(nextId_) && !pendingSubs_.count(nextId_) &&
          !inboundHeld_.test(nextId_) && !refusedIds_.count(nextId_)) {
        return nextId_;
      }
    }
    return nextId_;  // cannot happen: the windows are far below 65,535
  }

  // Continues the numbering at a random point: a broker's own ids come in runs, so the id after
  // a refused one is likely taken too.
  void jumpPacketIds() {
    nextId_ = static_cast<std::uint16_t>(std::uniform_int_distribution<int>(0, 65534)(idGen_));
  }

  // The callback runs before the publish stops counting as outstanding, so flush() returns only
  // after every callback of what it waited for has run.
  void complete(Outgoing& o, Status status) {
    auto done = std::move(o.done);
    o.done = nullptr;
    if (done) done(status);
    std::function<void()> room;
    {
      std::lock_guard lock(mu_);
      if (o.packet.qos > 0 && windowUsed_ > 0) --windowUsed_;
      if (pendingAll_ > 0) --pendingAll_;
      if (!status.isOk() && firstError_.isOk()) firstError_ = status;
      // hasRoom() said no: the owner hears once a quarter of the window is free (not per slot).
      if (roomWanted_ && windowUsed_ + chunkLocked() <= windowLimitLocked()) {
        roomWanted_ = false;
        room = roomListener_;
      }
    }
    cv_.notify_all();
    if (room) room();
  }

  Status pubError(const char* what, const Packet& p, const std::string& topic) {
    std::string msg = std::string(what) + " refused the publish to '" + topic + "' (" + hexCode(p.reasonCode) + ")";
    if (auto r = p.properties.text(prop::kReasonString)) msg += ": " + *r;
    return Status::invalidArgument(msg);
  }

  void onPuback(const Packet& p) {
    auto it = inflight_.find(p.packetId);
    if (it == inflight_.end() || it->second.packet.qos != 1) return;
    Outgoing o = std::move(it->second);
    inflight_.erase(it);
    complete(o, p.reasonCode >= 0x80 ? pubError("PUBACK", p, o.packet.topic) : Status::ok());
    pumpWaiting();
  }

  void onPubrec(const Packet& p) {
    auto it = inflight_.find(p.packetId);
    if (it == inflight_.end() || it->second.packet.qos != 2) {
      // Unknown id: release it anyway so the broker can forget it (§4.3.3).
      sendSimple(PacketType::kPubrel, p.packetId, options_.version == Version::k5 ? 0x92 : 0);
      return;
    }
    if (p.reasonCode >= 0x80) {
      Outgoing o = std::move(it->second);
      inflight_.erase(it);
      complete(o, pubError("PUBREC", p, o.packet.topic));
      pumpWaiting();
      return;
    }
    it->second.released = true;
    sendSimple(PacketType::kPubrel, p.packetId, 0);
  }

  void onPubcomp(const Packet& p) {
    auto it = inflight_.find(p.packetId);
    if (it == inflight_.end()) return;
    Outgoing o = std::move(it->second);
    inflight_.erase(it);
    complete(o, p.reasonCode >= 0x80 ? pubError("PUBCOMP", p, o.packet.topic) : Status::ok());
    pumpWaiting();
  }

  // ---- subscriptions ------------------------------------------------------------------------

  void sendSubscribe(const std::vector<Subscription>& subs,
                     std::shared_ptr<std::promise<Status>> promise, int attempts = 0) {
    if (stopping_) {
      if (promise) promise->set_value(Status::cancelled("MQTT client closed"));
      return;
    }
    if (!connected_) {
      if (promise) {
        Status last = lastError();
        promise->set_value(Status::unavailable("not connected to " + address() +
                                               (last.isOk() ? "" : ": " + last.message())));
      }
      return;
    }
    Packet p;
    p.type = PacketType::kSubscribe;
    p.packetId = nextPacketId();
    p.subscriptions = subs;
    pendingSubs_[p.packetId] = PendingSub{subs, std::move(promise), attempts};
    sendPacket(p);
  }

  void onSuback(const Packet& p) {
    auto it = pendingSubs_.find(p.packetId);
    if (it == pendingSubs_.end()) return;
    PendingSub ps = std::move(it->second);
    pendingSubs_.erase(it);
    // Refused because the broker holds this packet identifier (see nextPacketId): the same
    // filters again under another id, a bounded number of times. MQTT 5 says so with 0x91.
    // MQTT 3.1.1 has no such code (only 0x80, failure); mochi 2.7.9 sends 0x91 to 3.1.1 clients
    // anyway, and a broker that keeps to 3.1.1 can only say 0x80, so on 3.1.1 a resumed session
    // whose SUBACK refuses every filter with 0x80 is retried as well (a real refusal then costs
    // kSubscribeIdRetries round trips before it is reported as before).
    // A SUBACK that also refuses a filter for another reason is reported as it is.
    std::vector<std::size_t> retry;
    bool all80 = sessionPresent_ && options_.version == Version::k311 && !ps.subs.empty();
    bool otherRefusal = false;
    for (std::size_t i = 0; i < ps.subs.size(); ++i) {
      const std::uint8_t code = i < p.reasonCodes.size() ? p.reasonCodes[i] : 0x80;
      all80 = all80 && code == 0x80;
      if (code == 0x91) {
        retry.push_back(i);
      } else if (code >= 0x80) {
        otherRefusal = true;
      }
    }
    if (all80) {
      retry.clear();
      for (std::size_t i = 0; i < ps.subs.size(); ++i) retry.push_back(i);
    } else if (otherRefusal) {
      retry.clear();
    }
    if (!retry.empty() && ps.attempts < kSubscribeIdRetries && !stopping_) {
      refusedIds_.insert(p.packetId);
      jumpPacketIds();
      std::vector<Subscription> again;
      for (std::size_t i = 0, r = 0; i < ps.subs.size(); ++i) {
        if (r < retry.size() && retry[r] == i) {
          again.push_back(ps.subs[i]);
          ++r;
        } else if (i < p.reasonCodes.size() && p.reasonCodes[i] < 0x80) {
          subscriptions_[ps.subs[i].filter] = ps.subs[i];
        }
      }
      const std::size_t first = retry.front();
      const std::uint8_t code = first < p.reasonCodes.size() ? p.reasonCodes[first] : 0x80;
      log_->warn(
          "MQTT client {} at {}: SUBSCRIBE of {} filter(s) refused with {} under packet id {} "
          "({}); sending it again with another id (attempt {} of {})",
          options_.clientId, address(), again.size(), hexCode(code), p.packetId,
          code == 0x91 ? "packet identifier in use"
                       : "3.1.1 failure on a resumed session, maybe the same",
          ps.attempts + 1, kSubscribeIdRetries);
      sendSubscribe(again, std::move(ps.promise), ps.attempts + 1);
      return;
    }
    std::string refused;
    for (std::size_t i = 0; i < ps.subs.size(); ++i) {
      const std::uint8_t code = i < p.reasonCodes.size() ? p.reasonCodes[i] : 0x80;
      if (code >= 0x80) {
        if (!refused.empty()) refused += ", ";
        refused += "'" + ps.subs[i].filter + "' (" + hexCode(code) + ")";
      } else {
        subscriptions_[ps.subs[i].filter] = ps.subs[i];
      }
    }
    if (!ps.promise) {
      // A re-subscription after a reconnect: nobody waits for it, so it is said here. Before
      // 2026-12-08 a refusal was dropped silently and the source received nothing, "connected".
      if (refused.empty()) {
        if (badPacketStreak_ < kBadPacketRepeats) emitConnection(ConnectionEvent::Kind::kConnected, "");
      } else {
        std::string msg = "the broker at " + address() + " refused the re-subscription after a reconnect to " + refused;
        if (auto r = p.properties.text(prop::kReasonString)) msg += ": " + *r;
        msg += "; nothing arrives for those filters until the next reconnect";
        log_->warn("MQTT client {}: {}", options_.clientId, msg);
        emitConnection(ConnectionEvent::Kind::kDegraded, std::move(msg));
      }
    }
    if (ps.promise) {
      if (refused.empty()) {
        ps.promise->set_value(Status::ok());
      } else {
        std::string msg = "the broker refused the subscription to " + refused;
        if (auto r = p.properties.text(prop::kReasonString)) msg += ": " + *r;
        ps.promise->set_value(Status::invalidArgument(msg));
      }
    }
  }

  // ---- members ------------------------------------------------------------------------------

  ClientOptions options_;
  asio::io_context io_;  // first: destroyed last
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  asio::ssl::context sslContext_;
  bool sslReady_ = false;
  tcp::resolver resolver_{io_};
  std::unique_ptr<tcp::socket> tcp_;
  std::unique_ptr<asio::ssl::stream<tcp::socket>> tls_;
  std::vector<std::unique_ptr<asio::ssl::stream<tcp::socket>>> retired_;
  std::vector<std::unique_ptr<tcp::socket>> retiredTcp_;
  asio::steady_timer connectTimer_{io_};
  asio::steady_timer reconnectTimer_{io_};
  asio::steady_timer keepAliveTimer_{io_};
  Clock::time_point readStartedAt_ = Clock::now();
  Clock::time_point rateWindowStart_ = Clock::now();  // io thread: the rate window's start
  std::size_t rateWindowPackets_ = 0;                 // io thread: packets read in it
  std::atomic<std::uint64_t> lingers_{0};  // reads that waited a linger first (readLingers())
  double packetRate_ = 0;                             // io thread: packets per second, last full window
  std::thread thread_;

  // io-thread state
  std::uint64_t generation_ = 0;
  bool connecting_ = false;
  bool connected_ = false;
  bool everConnected_ = false;
  bool stopping_ = false;
  int reconnectFailures_ = 0;  // failed connection attempts since the last CONNACK
  std::shared_ptr<std::promise<std::pair<Status, bool>>> connectPromise_;
  MessageHandler handler_;
  BatchHandler batchHandler_;
  std::vector<IncomingMessage> delivered_;  // this socket read's messages, for batchHandler_
  std::string readBuf_;
  std::array<char, 65536> chunk_{};
  static constexpr std::size_t kBehindBytes = 16384;  // TLS: waiting in the socket, read on at once
  static constexpr double kLingerBatch = 64;     // packets a linger aims to gather
  static constexpr double kLingerMinBatch = 8;   // no linger unless readLinger would gather this many
  static constexpr auto kRateWindow = std::chrono::milliseconds(10);  // the packet rate's shortest window
  std::string outBuf_;                      // bytes queued for the next write
  std::vector<std::function<void(bool)>> outCallbacks_;  // of the packets in outBuf_
  std::string spareBuf_;                    // a written batch's buffer, reused
  bool writing_ = false;
  int corked_ = 0;                          // live Corks (write() only queues)
  std::vector<std::uint64_t> ackTaken_;
  std::vector<QueuedPublish> publishTaken_;
  Clock::time_point lastSent_ = Clock::now();
  Clock::time_point lastReceived_ = Clock::now();
  Clock::time_point pingSent_ = Clock::now();
  bool pingOutstanding_ = false;
  std::uint16_t keepAliveS_ = 0;
  std::deque<Incoming> incoming_;
  std::uint64_t sequence_ = 0;
  std::set<std::uint16_t> qos2Received_;
  std::map<std::uint16_t, Outgoing> inflight_;
  std::deque<Outgoing> waiting_;
  std::uint64_t publishSeq_ = 0;
  std::uint16_t nextId_ = 0;
  std::mt19937_64 idGen_;
  bool sessionPresent_ = false;            // CONNACK's flag of the current connection
  // Ids of the broker's QoS>0 messages not yet fully acknowledged: a bit per id (8 KiB), so the
  // per-message bookkeeping allocates nothing.
  std::bitset<65536> inboundHeld_;
  std::bitset<65536> unackedIds_;          // ids in incoming_ (delivered on this connection, not acked)
  std::set<std::uint16_t> refusedIds_;     // ids the broker refused as in use, this connection
  std::shared_ptr<spdlog::logger> log_;
  std::map<std::uint16_t, PendingSub> pendingSubs_;
  std::map<std::string, Subscription> subscriptions_;

  // shared with other threads
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  bool stopped_ = false;
  bool closed_ = false;
  ClientState state_ = ClientState::kDisconnected;
  Status lastError_;
  std::size_t windowUsed_ = 0;          // QoS>0 publishes queued or in flight, not yet complete
  bool roomWanted_ = false;             // hasRoom() said no; complete() calls roomListener_
  std::function<void()> roomListener_;  // set before connect()
  std::function<void(const ConnectionEvent&)> connectionListener_;  // guarded by mu_; set before connect()
  int badPacketStreak_ = 0;      // io thread: connections in a row lost to an unreadable packet
  std::uint64_t badPackets_ = 0; // io thread: such losses since the streak began (for the log)
  bool lostToBadPacket_ = false; // io thread: the loss being torn down is one of those
  std::uint32_t brokerReceiveMax_ = 65535;
  std::size_t pendingAll_ = 0;
  Status firstError_;
  std::atomic<std::size_t> unackedCount_{0};
  std::vector<QueuedPublish> publishQueue_;  // guarded by mu_: publish() calls for the io thread
  std::mutex ackMu_;
  std::vector<std::uint64_t> ackQueue_;      // guarded by ackMu_: ack() calls for the io thread
  std::int64_t lingerFromNs_ = 0;  // io thread: when the linger before the next read began (0: none)
  std::int64_t readAtNs_ = 0;      // io thread: IncomingMessage::receivedNs of this read's messages
  bool lingering_ = false;                   // guarded by ackMu_: the io thread sleeps before a read, then drains ackQueue_
  bool lingerCut_ = false;                   // guarded by ackMu_: a publish ends the linger early
  std::condition_variable lingerCv_;         // with ackMu_: the linger's wait
};

MqttClient::MqttClient(ClientOptions options) : impl_(std::make_shared<Impl>(std::move(options))) {}
MqttClient::~MqttClient() { impl_->close(); }
void MqttClient::setMessageHandler(MessageHandler handler) { impl_->setMessageHandler(std::move(handler)); }
void MqttClient::setBatchHandler(BatchHandler handler) { impl_->setBatchHandler(std::move(handler)); }
Status MqttClient::connect(bool* sessionPresent) { return impl_->connect(sessionPresent); }
Status MqttClient::subscribe(const std::vector<Subscription>& s) { return impl_->subscribe(s); }
void MqttClient::ack(std::uint64_t token) { impl_->ack(token); }
void MqttClient::publish(OutgoingMessage m, PublishCallback done) { impl_->publish(std::move(m), std::move(done)); }
void MqttClient::publishBatch(std::vector<OutgoingMessage>& m, const PublishCallback& done) {
  impl_->publishBatch(m, done);
}
void MqttClient::queueBatch(std::vector<OutgoingMessage>& m, const PublishCallback& done) {
  impl_->queueBatch(m, done);
}
bool MqttClient::hasRoom() { return impl_->hasRoom(); }
void MqttClient::setRoomListener(std::function<void()> listener) { impl_->setRoomListener(std::move(listener)); }
void MqttClient::setConnectionListener(std::function<void(const ConnectionEvent&)> listener) {
  impl_->setConnectionListener(std::move(listener));
}
Status MqttClient::flush(std::chrono::milliseconds timeout) { return impl_->flush(timeout); }
ClientState MqttClient::state() const { return impl_->state(); }
Status MqttClient::lastError() const { return impl_->lastError(); }
std::size_t MqttClient::inflight() const { return impl_->inflight(); }
std::uint64_t MqttClient::readLingers() const { return impl_->readLingers(); }
std::size_t MqttClient::unacked() const { return impl_->unacked(); }
void MqttClient::close() { impl_->close(); }

}  // namespace ferry::mqtt
