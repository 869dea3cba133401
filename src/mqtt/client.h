// MqttClient: one MQTT 3.1.1 / 5 session with one broker over TCP or TLS, on its own io thread.
//
// What it is for: the MQTT connectors, which must acknowledge a received QoS 1/2 message only
// once its record is safe (README.md). So incoming messages are NOT acknowledged when delivered:
// the owner calls ack(token) later, from any thread; the client sends PUBACK (QoS 1) or PUBREC
// (QoS 2, then PUBCOMP when the broker's PUBREL arrives) in the order the PUBLISHes arrived
// (§4.6), holding back acks that would overtake an earlier unacknowledged message. Tokens of a
// previous connection are ignored (the broker re-sends those messages after a reconnect, with a
// persistent session). A QoS 2 message whose PUBREC was sent is not delivered again if re-sent.
//
// Outgoing: publish() is asynchronous; the callback runs once the message is done (QoS 0:
// written; QoS 1: PUBACK; QoS 2: PUBCOMP) or failed (a v5 reason code >= 0x80, the client
// stopping). At most `maxInflight` (and the broker's Receive Maximum) QoS > 0 publishes are
// in flight; publish() and publishBatch() block the caller for room (never call them on the io
// thread with a full window), queueBatch() does not: its overshoot waits in the client, and
// hasRoom() with the room listener lets its owner wait without blocking a thread.
// Unacknowledged publishes are re-sent (dup) after a reconnect when the session was kept, so none
// is lost while the client runs.
//
// Connection: connect() makes the first connection synchronously and reports CONNACK refusals
// and TLS/auth failures as errors naming the cause. Afterwards a lost connection is re-established
// in the background with backoff (100 ms doubling to `reconnectMaxMs`), re-subscribing what was
// subscribed; state() and lastError() tell the owner, and the connection listener hears every
// change (ConnectionEvent). Keep-alive: PINGREQ when idle; a missing
// PINGRESP within the keep-alive closes and reconnects.
//
// Batching: the client moves batches between its io thread and its callers, not single
// messages. The PUBLISHes of one socket read go to a batch handler in one call (when one is set);
// ack() and publish() queue under a lock and post to the io thread only when the queue was empty,
// so one io-thread wake-up serves every call made meanwhile; and what one io-thread turn sends
// (PUBACKs, PUBLISHes) is written to the socket together, in one write.
//
// Threading: every public method is thread-safe; handlers run on the io thread and must not
// block. The destructor disconnects (DISCONNECT, then close) and joins the thread; callbacks of
// publishes still outstanding get kCancelled.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/result.h"
#include "mqtt/codec.h"

namespace ferry::mqtt {

struct TlsOptions {
  bool enabled = false;
  std::string caFile;        // empty: the system's default verify paths
  std::string certFile;      // client certificate (mutual TLS), optional
  std::string keyFile;
  bool verifyPeer = true;    // verify the broker's certificate chain
  bool verifyHostname = true;
};

struct ClientOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 1883;
  Version version = Version::k5;
  std::string clientId;            // empty: generated ("ferry-<random>")
  bool cleanStart = true;          // false + sessionExpiryS > 0 (v5) / false (3.1.1): persistent
  std::uint32_t sessionExpiryS = 0;
  std::uint16_t keepAliveS = 30;
  std::optional<std::string> username;
  std::optional<std::string> password;
  TlsOptions tls;
  std::uint16_t receiveMaximum = 1000;  // v5: how many unacknowledged QoS>0 messages the broker may send
  std::size_t maxInflight = 1000;       // our outgoing QoS>0 window
  std::int64_t connectTimeoutMs = 5000;
  std::int64_t reconnectMaxMs = 5000;
  std::size_t maxPacketBytes = 16u << 20;
  // Read coalescing, the longest wait: when packets arrive densely enough (the rate over 10 ms
  // windows) that this long would gather at least 8 of them, the next read waits until about 64
  // have arrived (at most this long), so that it takes them in one go; acknowledgements queued
  // during the wait leave with it. Fewer thread wake-ups per message at high rates, no added
  // latency at low ones (slower than 8 per readLinger: reads go at once); 0 reads at once always.
  std::chrono::microseconds readLinger{0};
};

struct IncomingMessage {
  std::string topic;
  std::string payload;
  std::uint8_t qos = 0;
  bool retain = false;
  bool dup = false;
  Properties properties;  // v5
  // For ack(): identifies the message within this connection (0 for QoS 0: nothing to ack).
  std::uint64_t token = 0;
  // When the client read it (steady clock ns); after a read linger, when the linger began: the
  // bytes may have waited in the socket that long (Record::receivedNs).
  std::int64_t receivedNs = 0;
  // Not ok for a whole PUBLISH the codec refused (an invalid topic name, bad UTF-8, bad
  // properties) that could still be read far enough to acknowledge it: the reason, `topic` the
  // topic's raw bytes, `payload` empty when the properties could not be skipped. The owner
  // decides (errors.tolerance) and acks it like any other message, so the broker stops re-sending
  // it; before 2026-12-08 such a packet dropped the connection, and the broker re-sent it after
  // every CONNACK, forever.
  Status error;
};

// What the connection listener hears (setConnectionListener).
struct ConnectionEvent {
  enum class Kind {
    kConnected,  // CONNACK accepted, and after a reconnect every re-SUBSCRIBE granted
    kLost,       // the connection was lost, or a (re)connect failed; `reason` says why
    kDegraded,   // connected but not working: a refused re-SUBSCRIBE, or the broker sent an
                 // unreadable packet on kBadPacketRepeats connections in a row
  };
  Kind kind = Kind::kConnected;
  std::string reason;
};

// A broker that sends a packet the client cannot read right after each CONNACK makes the client
// reconnect forever; after this many such connections in a row it says kDegraded.
inline constexpr int kBadPacketRepeats = 3;

struct OutgoingMessage {
  std::string topic;
  std::string payload;
  std::uint8_t qos = 1;
  bool retain = false;
  Properties properties;  // v5
};

enum class ClientState { kConnecting, kConnected, kDisconnected, kStopped };

class MqttClient {
 public:
  using MessageHandler = std::function<void(IncomingMessage)>;
  // The PUBLISHes of one socket read, in arrival order; the handler may move them out.
  using BatchHandler = std::function<void(std::vector<IncomingMessage>&)>;
  using PublishCallback = std::function<void(Status)>;

  explicit MqttClient(ClientOptions options);
  ~MqttClient();
  MqttClient(const MqttClient&) = delete;
  MqttClient& operator=(const MqttClient&) = delete;

  // Set before connect(); runs on the io thread for every PUBLISH received.
  void setMessageHandler(MessageHandler handler);
  // Instead of the message handler: one call per socket read with all its PUBLISHes.
  void setBatchHandler(BatchHandler handler);

  // Connects (TCP/TLS, CONNECT, CONNACK) within connectTimeoutMs. Errors: kUnavailable (cannot
  // reach the broker, or it is busy/unavailable: retriable), kInvalidArgument (refused by CONNACK
  // — bad user name or password, not authorized, bad client id — or a TLS handshake/verification
  // failure, with the reason; retrying the same fails again), kTimeout. On success the client keeps the session up
  // until close(). `sessionPresent` (optional) gets CONNACK's flag.
  Status connect(bool* sessionPresent = nullptr);
  // SUBSCRIBE and wait for SUBACK (timeout connectTimeoutMs); kInvalidArgument naming the filter
  // when the broker refused one (reason >= 0x80). Remembered and re-sent after reconnects.
  // kUnavailable when the connection was lost (after the first connect()) before the SUBACK:
  // the filters are then remembered too, and subscribed at the next CONNACK (the connection
  // listener hears kConnected, or kDegraded if that SUBACK refuses them).
  Status subscribe(const std::vector<Subscription>& subscriptions);
  // Acknowledges a delivered message (see the class comment). Unknown/stale tokens are ignored.
  void ack(std::uint64_t token);
  void publish(OutgoingMessage message, PublishCallback done);
  // publish() of each message in order, `done` called once per message: the messages that fit in
  // the window are queued under one lock with one hand-off to the io thread. When the window is
  // full it blocks until a quarter of it (or the rest of the batch) is free, then queues the next
  // chunk the same way. Leaves `messages` empty.
  void publishBatch(std::vector<OutgoingMessage>& messages, const PublishCallback& done);
  // As publishBatch, but never blocks: what does not fit in the window waits inside the client,
  // in order, and goes out as acknowledgements free room. For an owner that asks hasRoom()
  // before each batch and waits for the room listener when it says no, so that what waits
  // beyond the window is at most one batch (MQTTSink, through the runtime's readyForPut()).
  void queueBatch(std::vector<OutgoingMessage>& messages, const PublishCallback& done);
  // True when fewer QoS>0 publishes than the window are outstanding (or the client stopped).
  // When false, the room listener is called once, when a quarter of the window is free again.
  bool hasRoom();
  // Set before connect(). Runs on the io thread (or the thread closing the client); must not
  // block or call into the client.
  void setRoomListener(std::function<void()> listener);
  // Set before connect(). Called on the io thread with every change of the connection (see
  // ConnectionEvent), from the first connect() on; must not block or call into the client.
  // Not called for close().
  void setConnectionListener(std::function<void(const ConnectionEvent&)> listener);
  // Blocks until every publish so far completed (or `timeout`); the first failure since the
  // last flush, kTimeout, or ok.
  Status flush(std::chrono::milliseconds timeout);

  ClientState state() const;
  Status lastError() const;            // why the connection was last lost / refused
  std::size_t inflight() const;        // outgoing QoS>0 publishes not yet complete
  std::size_t unacked() const;         // delivered messages not yet acked
  std::uint64_t readLingers() const;   // socket reads that waited a read linger first (see readLinger)
  // DISCONNECT (normal), close, stop the io thread. Idempotent.
  void close();

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace ferry::mqtt
