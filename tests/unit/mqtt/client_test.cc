// MqttClient against a scripted in-process fake broker (Asio + the codec): the test reads what
// the client sent and decides what the broker answers. No sleeps: every wait is on a condition
// with a timeout.
#include "mqtt/client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <asio.hpp>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "mqtt/codec.h"

namespace ferry::mqtt {
namespace {

using namespace std::chrono_literals;
using tcp = asio::ip::tcp;

// One listening socket; one client connection at a time, read by a thread into a queue.
class FakeBroker {
 public:
  FakeBroker() : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { run(); });
  }
  ~FakeBroker() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    asio::error_code ignored;
    // close() alone does not wake a thread blocked in accept(); shutdown() does (EINVAL).
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    acceptor_.close(ignored);
    drop();
    thread_.join();
  }

  std::uint16_t port() const { return port_; }

  // The next packet the client sent (nullopt on timeout).
  std::optional<Packet> next(std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !packets_.empty(); })) return std::nullopt;
    Packet p = std::move(packets_.front());
    packets_.pop_front();
    return p;
  }
  // Skips PINGREQs.
  std::optional<Packet> nextNonPing(std::chrono::milliseconds timeout = 5s) {
    for (;;) {
      auto p = next(timeout);
      if (!p || p->type != PacketType::kPingreq) return p;
    }
  }
  // True when nothing (but PINGREQ) arrives within `quiet`.
  bool nothingWithin(std::chrono::milliseconds quiet) { return !nextNonPing(quiet).has_value(); }

  void send(const Packet& p) {
    auto bytes = encode(p, version_.load());
    ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
    std::lock_guard lock(writeMu_);
    asio::error_code ec;
    if (socket_) asio::write(*socket_, asio::buffer(*bytes), ec);
  }
  // A PUBACK (or another answer of `type`) for packet `id`.
  void answer(PacketType type, std::uint16_t id) {
    Packet p;
    p.type = type;
    p.packetId = id;
    send(p);
  }
  void sendRaw(const std::string& bytes) {
    std::lock_guard lock(writeMu_);
    asio::error_code ec;
    if (socket_) asio::write(*socket_, asio::buffer(bytes), ec);
  }

  // Expects CONNECT and answers CONNACK (reason 0 unless told).
  Packet accept(bool sessionPresent = false, std::uint8_t reason = 0, Properties props = {}) {
    auto p = nextNonPing();
    EXPECT_TRUE(p.has_value());
    if (!p) return {};
    EXPECT_EQ(p->type, PacketType::kConnect);
    Packet ack;
    ack.type = PacketType::kConnack;
    ack.sessionPresent = sessionPresent;
    ack.reasonCode = reason;
    ack.properties = std::move(props);
    send(ack);
    return *p;
  }

  // Closes the current connection (the client sees EOF).
  void drop() {
    std::lock_guard lock(writeMu_);
    if (socket_) {
      asio::error_code ignored;
      socket_->shutdown(tcp::socket::shutdown_both, ignored);
    }
  }

  int connections() {
    std::lock_guard lock(mu_);
    return connections_;
  }
  bool waitClosed(int connectionNumber, std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return closed_ >= connectionNumber; });
  }

  void publish(std::uint16_t id, std::uint8_t qos, std::string payload, bool dup = false) {
    Packet p;
    p.type = PacketType::kPublish;
    p.topic = "t/in";
    p.packetId = id;
    p.qos = qos;
    p.dup = dup;
    p.payload = std::move(payload);
    send(p);
  }

 private:
  void run() {
    for (;;) {
      auto sock = std::make_shared<tcp::socket>(io_);
      asio::error_code ec;
      acceptor_.accept(*sock, ec);
      if (ec) return;
      {
        std::lock_guard lock(writeMu_);
        socket_ = sock;
      }
      {
        std::lock_guard lock(mu_);
        ++connections_;
      }
      std::string buf;
      std::array<char, 4096> chunk;
      bool gotConnect = false;
      for (;;) {
        std::size_t n = sock->read_some(asio::buffer(chunk), ec);
        if (ec) break;
        buf.append(chunk.data(), n);
        for (;;) {
          Frame f = frame(buf);
          if (f.state != Frame::State::kOk) break;
          Version v = gotConnect ? version_.load() : Version::k5;
          auto p = decode(std::string_view(buf).substr(0, f.size), v);
          buf.erase(0, f.size);
          if (!p.isOk()) {
            ADD_FAILURE() << "fake broker: " << p.status().toString();
            continue;
          }
          if (p->type == PacketType::kConnect) {
            gotConnect = true;
            version_ = p->version;
          }
          std::lock_guard lock(mu_);
          packets_.push_back(std::move(*p));
          cv_.notify_all();
        }
      }
      {
        std::lock_guard lock(writeMu_);
        sock->close(ec);
        socket_.reset();
      }
      std::lock_guard lock(mu_);
      ++closed_;
      cv_.notify_all();
      if (stopping_) return;
    }
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex writeMu_;
  std::shared_ptr<tcp::socket> socket_;
  std::atomic<Version> version_{Version::k5};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Packet> packets_;
  int connections_ = 0;
  int closed_ = 0;
  bool stopping_ = false;
};

// Messages delivered to the handler, waited for by the test.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<IncomingMessage> messages;
  void add(IncomingMessage m) {
    std::lock_guard lock(mu);
    messages.push_back(std::move(m));
    cv.notify_all();
  }
  bool waitFor(std::size_t n, std::chrono::milliseconds t = 5s) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, t, [&] { return messages.size() >= n; });
  }
  IncomingMessage at(std::size_t i) {
    std::lock_guard lock(mu);
    return messages.at(i);
  }
};

// Publish results, waited for by the test.
struct Results {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Status> statuses;
  MqttClient::PublishCallback callback() {
    return [this](Status s) {
      std::lock_guard lock(mu);
      statuses.push_back(std::move(s));
      cv.notify_all();
    };
  }
  bool waitFor(std::size_t n, std::chrono::milliseconds t = 5s) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, t, [&] { return statuses.size() >= n; });
  }
  std::size_t size() {
    std::lock_guard lock(mu);
    return statuses.size();
  }
};

ClientOptions optionsFor(const FakeBroker& b, Version v = Version::k5) {
  ClientOptions o;
  o.port = b.port();
  o.version = v;
  o.clientId = "unit";
  o.keepAliveS = 60;
  o.connectTimeoutMs = 3000;
  o.reconnectMaxMs = 200;
  return o;
}

// Connects on a helper thread while the broker answers on this one.
Status connectWith(MqttClient& c, FakeBroker& b, bool present = false, Packet* connect = nullptr,
                   bool* sessionPresent = nullptr) {
  Status st;
  std::thread t([&] { st = c.connect(sessionPresent); });
  Packet p = b.accept(present);
  t.join();
  if (connect) *connect = p;
  return st;
}

void subscribeWith(MqttClient& c, FakeBroker& b, const std::string& filter, std::uint8_t qos,
                   std::uint8_t grant) {
  Status st;
  std::thread t([&] { st = c.subscribe({{filter, qos}}); });
  auto sub = b.nextNonPing();
  ASSERT_TRUE(sub.has_value());
  ASSERT_EQ(sub->type, PacketType::kSubscribe);
  Packet ack;
  ack.type = PacketType::kSuback;
  ack.packetId = sub->packetId;
  ack.reasonCodes = {grant};
  b.send(ack);
  t.join();
  if (grant < 0x80) {
    EXPECT_TRUE(st.isOk()) << st.toString();
  } else {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find(filter), std::string::npos) << st.message();
  }
}

TEST(MqttClientTest, ConnectSendsOptionsAndReportsSessionPresent) {
  FakeBroker b;
  auto o = optionsFor(b);
  o.cleanStart = false;
  o.sessionExpiryS = 300;
  o.username = "u";
  o.password = "p";
  o.receiveMaximum = 10;
  MqttClient c(o);
  Packet connect;
  bool present = false;
  ASSERT_TRUE(connectWith(c, b, true, &connect, &present).isOk());
  EXPECT_TRUE(present);
  EXPECT_EQ(connect.clientId, "unit");
  EXPECT_FALSE(connect.cleanStart);
  EXPECT_EQ(connect.username, "u");
  EXPECT_EQ(connect.password, "p");
  EXPECT_EQ(connect.properties.number(prop::kSessionExpiry), 300u);
  EXPECT_EQ(connect.properties.number(prop::kReceiveMaximum), 10u);
  EXPECT_EQ(c.state(), ClientState::kConnected);
  c.close();
  auto d = b.nextNonPing();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->type, PacketType::kDisconnect);
  EXPECT_EQ(c.state(), ClientState::kStopped);
}

TEST(MqttClientTest, ConnackRefusalIsInvalidArgumentWithReason) {
  for (Version v : {Version::k5, Version::k311}) {
    FakeBroker b;
    MqttClient c(optionsFor(b, v));
    Status st;
    std::thread t([&] { st = c.connect(); });
    b.accept(false, v == Version::k5 ? 0x86 : 4);
    t.join();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("bad user name or password"), std::string::npos) << st.message();
  }
}

TEST(MqttClientTest, UnreachableIsUnavailable) {
  std::uint16_t port;
  {
    asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = a.local_endpoint().port();
  }
  ClientOptions o;
  o.port = port;
  MqttClient c(o);
  Status st = c.connect();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.toString();
}

TEST(MqttClientTest, ConnectTimesOutWithoutConnack) {
  FakeBroker b;
  auto o = optionsFor(b);
  o.connectTimeoutMs = 300;
  MqttClient c(o);
  Status st = c.connect();
  EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.toString();
}

TEST(MqttClientTest, SubscribeRefusalNamesFilter) {
  FakeBroker b;
  MqttClient c(optionsFor(b));
  ASSERT_TRUE(connectWith(c, b).isOk());
  subscribeWith(c, b, "a/#", 1, 1);
  subscribeWith(c, b, "secret/#", 1, 0x87);
}

TEST(MqttClientTest, AcksOnlyAfterAckInArrivalOrder) {
  FakeBroker b;
  Inbox inbox;
  MqttClient c(optionsFor(b));
  c.setMessageHandler([&](IncomingMessage m) { inbox.add(std::move(m)); });
  ASSERT_TRUE(connectWith(c, b).isOk());
  b.publish(11, 1, "one");
  b.publish(12, 2, "two");
  b.publish(13, 1, "three");
  b.publish(14, 0, "zero");
  ASSERT_TRUE(inbox.waitFor(4));
  EXPECT_EQ(inbox.at(0).payload, "one");
  EXPECT_EQ(inbox.at(1).qos, 2);
  EXPECT_EQ(inbox.at(3).token, 0u);
  EXPECT_EQ(c.unacked(), 3u);
  // Nothing acknowledged before ack().
  EXPECT_TRUE(b.nothingWithin(100ms));
  // Out of order: the third and second first; nothing may overtake the first.
  c.ack(inbox.at(2).token);
  c.ack(inbox.at(1).token);
  EXPECT_TRUE(b.nothingWithin(100ms));
  c.ack(inbox.at(0).token);
  auto a1 = b.nextNonPing();
  auto a2 = b.nextNonPing();
  auto a3 = b.nextNonPing();
  ASSERT_TRUE(a1 && a2 && a3);
  EXPECT_EQ(a1->type, PacketType::kPuback);
  EXPECT_EQ(a1->packetId, 11);
  EXPECT_EQ(a2->type, PacketType::kPubrec);
  EXPECT_EQ(a2->packetId, 12);
  EXPECT_EQ(a3->type, PacketType::kPuback);
  EXPECT_EQ(a3->packetId, 13);
  // QoS 2: the broker releases, the client completes; a re-sent PUBLISH is not delivered again.
  b.publish(12, 2, "two", true);
  auto rec = b.nextNonPing();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->type, PacketType::kPubrec);
  Packet rel;
  rel.type = PacketType::kPubrel;
  rel.packetId = 12;
  b.send(rel);
  auto comp = b.nextNonPing();
  ASSERT_TRUE(comp);
  EXPECT_EQ(comp->type, PacketType::kPubcomp);
  EXPECT_EQ(comp->packetId, 12);
  EXPECT_EQ(inbox.messages.size(), 4u);
  EXPECT_EQ(c.unacked(), 0u);
  // Double and unknown acks are ignored.
  c.ack(inbox.at(0).token);
  c.ack(0xdeadbeef);
  EXPECT_TRUE(b.nothingWithin(100ms));
}

TEST(MqttClientTest, StaleTokensIgnoredAfterReconnect) {
  FakeBroker b;
  auto o = optionsFor(b);
  o.cleanStart = false;
  o.sessionExpiryS = 300;
  Inbox inbox;
  MqttClient c(o);
  c.setMessageHandler([&](IncomingMessage m) { inbox.add(std::move(m)); });
  ASSERT_TRUE(connectWith(c, b).isOk());
  subscribeWith(c, b, "t/#", 1, 1);
  b.publish(5, 1, "m");
  ASSERT_TRUE(inbox.waitFor(1));
  const auto stale = inbox.at(0).token;
  b.drop();
  ASSERT_TRUE(b.waitClosed(1));
  // The client comes back on its own and re-subscribes.
  Packet connect = b.accept(true);
  EXPECT_FALSE(connect.cleanStart);
  auto sub = b.nextNonPing();
  ASSERT_TRUE(sub);
  ASSERT_EQ(sub->type, PacketType::kSubscribe);
  ASSERT_EQ(sub->subscriptions.size(), 1u);
  EXPECT_EQ(sub->subscriptions[0].filter, "t/#");
  Packet ack;
  ack.type = PacketType::kSuback;
  ack.packetId = sub->packetId;
  ack.reasonCodes = {1};
  b.send(ack);
  EXPECT_EQ(c.unacked(), 0u);
  c.ack(stale);  // of the previous connection: ignored
  EXPECT_TRUE(b.nothingWithin(150ms));
  // The broker re-sends; the new token works.
  b.publish(5, 1, "m", true);
  ASSERT_TRUE(inbox.waitFor(2));
  EXPECT_TRUE(inbox.at(1).dup);
  EXPECT_NE(inbox.at(1).token, stale);
  c.ack(inbox.at(1).token);
  auto puback = b.nextNonPing();
  ASSERT_TRUE(puback);
  EXPECT_EQ(puback->type, PacketType::kPuback);
  EXPECT_EQ(puback->packetId, 5);
  EXPECT_EQ(c.state(), ClientState::kConnected);
}

TEST(MqttClientTest, OutgoingQos0And1And2) {
  FakeBroker b;
  Results r;
  MqttClient c(optionsFor(b));
  ASSERT_TRUE(connectWith(c, b).isOk());
  OutgoingMessage m0{"o/0", std::string("\0\1\2", 3), 0, false, {}};
  c.publish(m0, r.callback());
  auto p0 = b.nextNonPing();
  ASSERT_TRUE(p0);
  EXPECT_EQ(p0->payload, std::string("\0\1\2", 3));
  EXPECT_EQ(p0->qos, 0);
  ASSERT_TRUE(r.waitFor(1));

  OutgoingMessage m1{"o/1", "q1", 1, false, {}};
  m1.properties.addUser("k", "v");
  c.publish(m1, r.callback());
  auto p1 = b.nextNonPing();
  ASSERT_TRUE(p1);
  EXPECT_EQ(p1->qos, 1);
  EXPECT_EQ(p1->properties.userProperties().at(0).first, "k");
  EXPECT_EQ(c.inflight(), 1u);
  EXPECT_EQ(r.size(), 1u);
  Packet ack;
  ack.type = PacketType::kPuback;
  ack.packetId = p1->packetId;
  b.send(ack);
  ASSERT_TRUE(r.waitFor(2));

  c.publish(OutgoingMessage{"o/2", "q2", 2, false, {}}, r.callback());
  auto p2 = b.nextNonPing();
  ASSERT_TRUE(p2);
  Packet rec;
  rec.type = PacketType::kPubrec;
  rec.packetId = p2->packetId;
  b.send(rec);
  auto rel = b.nextNonPing();
  ASSERT_TRUE(rel);
  EXPECT_EQ(rel->type, PacketType::kPubrel);
  EXPECT_EQ(r.size(), 2u);
  Packet comp;
  comp.type = PacketType::kPubcomp;
  comp.packetId = p2->packetId;
  b.send(comp);
  ASSERT_TRUE(r.waitFor(3));
  EXPECT_TRUE(c.flush(2s).isOk());
  EXPECT_EQ(c.inflight(), 0u);

  // A refusal (v5 reason >= 0x80) fails the publish and the next flush.
  c.publish(OutgoingMessage{"o/3", "x", 1, false, {}}, r.callback());
  auto p3 = b.nextNonPing();
  ASSERT_TRUE(p3);
  Packet nack;
  nack.type = PacketType::kPuback;
  nack.packetId = p3->packetId;
  nack.reasonCode = 0x87;
  b.send(nack);
  ASSERT_TRUE(r.waitFor(4));
  Status f = c.flush(2s);
  EXPECT_EQ(f.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(c.flush(2s).isOk());
}

TEST(MqttClientTest, ReconnectResendsUnackedWithDup) {
  FakeBroker b;
  auto o = optionsFor(b);
  o.cleanStart = false;
  o.sessionExpiryS = 300;
  Results r;
  MqttClient c(o);
  ASSERT_TRUE(connectWith(c, b).isOk());
  c.publish(OutgoingMessage{"o/a", "a", 1, false, {}}, r.callback());
  c.publish(OutgoingMessage{"o/b", "b", 2, false, {}}, r.callback());
  auto pa = b.nextNonPing();
  auto pb = b.nextNonPing();
  ASSERT_TRUE(pa && pb);
  EXPECT_FALSE(pa->dup);
  b.drop();
  ASSERT_TRUE(b.waitClosed(1));
  b.accept(true);
  auto ra = b.nextNonPing();
  auto rb = b.nextNonPing();
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(ra->type, PacketType::kPublish);
  EXPECT_TRUE(ra->dup);
  EXPECT_EQ(ra->packetId, pa->packetId);
  EXPECT_EQ(ra->payload, "a");
  EXPECT_TRUE(rb->dup);
  EXPECT_EQ(rb->payload, "b");
  EXPECT_EQ(r.size(), 0u);
  Packet ack;
  ack.type = PacketType::kPuback;
  ack.packetId = ra->packetId;
  b.send(ack);
  Packet rec;
  rec.type = PacketType::kPubrec;
  rec.packetId = rb->packetId;
  b.send(rec);
  auto rel = b.nextNonPing();
  ASSERT_TRUE(rel);
  EXPECT_EQ(rel->type, PacketType::kPubrel);
  // Lost again after PUBREC: the PUBREL is what is re-sent.
  b.drop();
  ASSERT_TRUE(b.waitClosed(2));
  b.accept(true);
  auto rel2 = b.nextNonPing();
  ASSERT_TRUE(rel2);
  EXPECT_EQ(rel2->type, PacketType::kPubrel);
  EXPECT_EQ(rel2->packetId, rb->packetId);
  Packet comp;
  comp.type = PacketType::kPubcomp;
  comp.packetId = rb->packetId;
  b.send(comp);
  ASSERT_TRUE(r.waitFor(2));
  EXPECT_TRUE(c.flush(2s).isOk());
}

TEST(MqttClientTest, PublishWhileDisconnectedIsSentAfterReconnect) {
  FakeBroker b;
  Results r;
  MqttClient c(optionsFor(b));
  ASSERT_TRUE(connectWith(c, b).isOk());
  b.drop();
  ASSERT_TRUE(b.waitClosed(1));
  c.publish(OutgoingMessage{"o/w", "w", 1, false, {}}, r.callback());
  b.accept(false);
  auto p = b.nextNonPing();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->payload, "w");
  Packet ack;
  ack.type = PacketType::kPuback;
  ack.packetId = p->packetId;
  b.send(ack);
  ASSERT_TRUE(r.waitFor(1));
}

// Closes the client (which ends a publish waiting for room) and joins the thread when a test
// returns, also through a failed ASSERT: a joinable thread must not be destroyed.
struct CloseAndJoin {
  MqttClient& c;
  std::thread& t;
  ~CloseAndJoin() {
    c.close();
    if (t.joinable()) t.join();
  }
};

// Runs `body` with a client connected to a fake broker, its window `window` publishes wide.
void withWindow(std::size_t window, const std::function<void(FakeBroker&, MqttClient&, Results&)>& body) {
  FakeBroker b;
  auto o = optionsFor(b);
  o.maxInflight = window;
  Results r;
  MqttClient c(o);
  ASSERT_TRUE(connectWith(c, b).isOk());
  body(b, c, r);
}

void withWindowOfTwo(const std::function<void(FakeBroker&, MqttClient&, Results&)>& body) { withWindow(2, body); }

// With a window of 2, `publishAll` (run on a thread of its own) publishes "1", "2" and "3": the
// third waits for a PUBACK, then goes out under an id not in use.
void checkWindowBlocksTheThird(const std::function<void(MqttClient&, Results&)>& publishAll) {
  withWindowOfTwo([&](FakeBroker& b, MqttClient& c, Results& r) {
    std::atomic<bool> returned{false};
    std::thread t([&] {
      publishAll(c, r);
      returned = true;
    });
    CloseAndJoin guard{c, t};
    auto p1 = b.nextNonPing();
    auto p2 = b.nextNonPing();
    ASSERT_TRUE(p1 && p2);
    EXPECT_TRUE(b.nothingWithin(100ms));
    EXPECT_FALSE(returned.load());
    b.answer(PacketType::kPuback, p1->packetId);
    auto p3 = b.nextNonPing();
    ASSERT_TRUE(p3);
    EXPECT_EQ(p3->payload, "3");
    t.join();
    EXPECT_TRUE(returned.load());
    // Ids in use are skipped.
    EXPECT_NE(p3->packetId, p2->packetId);
  });
}

TEST(MqttClientTest, WindowBlocksPublishUntilAcked) {
  checkWindowBlocksTheThird([](MqttClient& c, Results& r) {
    for (const char* p : {"1", "2", "3"})
      c.publish(OutgoingMessage{"o/w", p, 1, false, {}}, r.callback());
  });
}

TEST(MqttClientTest, PublishBatchBlocksWhileTheWindowIsFull) {
  checkWindowBlocksTheThird([](MqttClient& c, Results& r) {
    std::vector<OutgoingMessage> batch;
    for (const char* p : {"1", "2", "3"}) batch.push_back(OutgoingMessage{"o/w", p, 1, false, {}});
    c.publishBatch(batch, r.callback());
  });
}

TEST(MqttClientTest, PublishBatchKeepsOrderAndWaitsForTheWindow) {
  withWindowOfTwo([](FakeBroker& b, MqttClient& c, Results& r) {
    std::vector<OutgoingMessage> batch;
    for (int i = 0; i < 5; ++i) {
      const std::uint8_t qos = i == 2 ? 0 : 1;
      batch.push_back(OutgoingMessage{"o/" + std::to_string(i), std::to_string(i), qos, false, {}});
    }
    batch.push_back(OutgoingMessage{"o/bad", "x", 3, false, {}});  // invalid QoS: its callback says so
    std::atomic<bool> returned{false};
    std::thread t([&] {
      c.publishBatch(batch, r.callback());
      returned = true;
    });
    CloseAndJoin guard{c, t};
    // Two QoS 1 fill the window and the QoS 0 one after them goes out too; the rest wait for room.
    std::vector<std::string> seen;
    for (int i = 0; i < 5; ++i) {
      auto p = b.nextNonPing();
      if (!p) break;
      seen.push_back(p->payload);
      if (p->qos == 1) b.answer(PacketType::kPuback, p->packetId);
    }
    t.join();
    EXPECT_TRUE(returned.load());
    EXPECT_TRUE(batch.empty());
    EXPECT_EQ(seen, (std::vector<std::string>{"0", "1", "2", "3", "4"}));
    ASSERT_TRUE(r.waitFor(6));
    std::lock_guard lock(r.mu);
    std::size_t ok = 0, invalid = 0;
    for (const Status& s : r.statuses) {
      if (s.isOk()) ++ok;
      else if (s.code() == StatusCode::kInvalidArgument) ++invalid;
    }
    EXPECT_EQ(ok, 5u);
    EXPECT_EQ(invalid, 1u);
  });
}

// A full window is refilled in chunks of a quarter of it: with 8 in flight and 12 waiting, one
// PUBACK lets nothing out (one message per acknowledgement would wake the publishing thread and
// the io thread once per message); the second lets two out; every message still goes out once,
// in order.
TEST(MqttClientTest, PublishBatchRefillsAFullWindowInChunks) {
  withWindow(8, [](FakeBroker& b, MqttClient& c, Results& r) {
    std::vector<OutgoingMessage> batch;
    for (int i = 0; i < 20; ++i) batch.push_back(OutgoingMessage{"o/c", std::to_string(i), 1, false, {}});
    std::thread t([&] { c.publishBatch(batch, r.callback()); });
    CloseAndJoin guard{c, t};
    std::vector<Packet> sent;
    for (int i = 0; i < 8; ++i) {
      auto p = b.nextNonPing();
      ASSERT_TRUE(p);
      sent.push_back(*p);
    }
    EXPECT_TRUE(b.nothingWithin(100ms));
    b.answer(PacketType::kPuback, sent[0].packetId);
    EXPECT_TRUE(b.nothingWithin(200ms)) << "a single free slot was refilled at once";
    b.answer(PacketType::kPuback, sent[1].packetId);
    for (int i = 0; i < 2; ++i) {
      auto p = b.nextNonPing();
      ASSERT_TRUE(p);
      sent.push_back(*p);
    }
    EXPECT_TRUE(b.nothingWithin(100ms));
    // Acknowledge everything as it comes: the rest goes out.
    std::size_t acked = 2;
    while (sent.size() < 20) {
      while (acked < sent.size()) b.answer(PacketType::kPuback, sent[acked++].packetId);
      auto p = b.nextNonPing();
      ASSERT_TRUE(p) << sent.size() << " of 20 sent";
      sent.push_back(*p);
    }
    while (acked < sent.size()) b.answer(PacketType::kPuback, sent[acked++].packetId);
    t.join();
    ASSERT_EQ(sent.size(), 20u);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(sent[static_cast<std::size_t>(i)].payload, std::to_string(i));
    ASSERT_TRUE(r.waitFor(20));
  });
}

// queueBatch never blocks: with a window of 4, ten messages (a QoS 0 one among them) are queued
// at once; the broker still sees at most 4 unacknowledged, each PUBACK lets the next out, in
// order, the QoS 0 one behind the QoS 1 ones before it. hasRoom() says no while the window is
// full and the room listener is called once, when a quarter of the window is free.
TEST(MqttClientTest, QueueBatchNeverBlocksAndKeepsTheWindow) {
  FakeBroker b;
  auto o = optionsFor(b);
  o.maxInflight = 4;
  Results r;
  MqttClient c(o);
  std::atomic<int> roomCalls{0};
  c.setRoomListener([&] { ++roomCalls; });
  ASSERT_TRUE(connectWith(c, b).isOk());
  std::vector<OutgoingMessage> batch;
  for (int i = 0; i < 10; ++i) {
    batch.push_back(OutgoingMessage{"o/q", std::to_string(i), static_cast<std::uint8_t>(i == 6 ? 0 : 1), false, {}});
  }
  c.queueBatch(batch, r.callback());  // returns at once: this thread would hang otherwise
  EXPECT_TRUE(batch.empty());
  EXPECT_FALSE(c.hasRoom());
  std::vector<Packet> sent;
  for (int i = 0; i < 4; ++i) {
    auto p = b.nextNonPing();
    ASSERT_TRUE(p);
    sent.push_back(*p);
  }
  EXPECT_TRUE(b.nothingWithin(100ms)) << "more than the window went out";
  EXPECT_EQ(roomCalls.load(), 0);
  std::size_t acked = 0;
  while (sent.size() < 10) {
    ASSERT_LT(acked, sent.size());
    if (sent[acked].qos == 1) b.answer(PacketType::kPuback, sent[acked].packetId);
    ++acked;
    std::size_t inFlight = 0;
    for (std::size_t i = acked; i < sent.size(); ++i) inFlight += sent[i].qos == 1 ? 1 : 0;
    // The next one comes (the QoS 0 one together with the QoS 1 one after it).
    while (sent.size() < 10 && inFlight < 4) {
      auto p = b.nextNonPing();
      ASSERT_TRUE(p) << sent.size() << " of 10 sent";
      sent.push_back(*p);
      inFlight += p->qos == 1 ? 1 : 0;
    }
    EXPECT_LE(inFlight, 4u);
  }
  while (acked < sent.size()) {
    if (sent[acked].qos == 1) b.answer(PacketType::kPuback, sent[acked].packetId);
    ++acked;
  }
  ASSERT_TRUE(r.waitFor(10));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(sent[static_cast<std::size_t>(i)].payload, std::to_string(i));
  EXPECT_EQ(sent[6].qos, 0);
  EXPECT_TRUE(c.hasRoom());
  EXPECT_EQ(roomCalls.load(), 1);
  EXPECT_TRUE(c.flush(2s).isOk());
}

TEST(MqttClientTest, KeepAlivePingsAndReconnectsWithoutPingresp) {
  FakeBroker b;
  auto o = optionsFor(b);
  o.keepAliveS = 1;
  MqttClient c(o);
  ASSERT_TRUE(connectWith(c, b).isOk());
  auto ping = b.next(3s);
  ASSERT_TRUE(ping);
  EXPECT_EQ(ping->type, PacketType::kPingreq);
  Packet resp;
  resp.type = PacketType::kPingresp;
  b.send(resp);
  auto ping2 = b.next(3s);
  ASSERT_TRUE(ping2);
  EXPECT_EQ(ping2->type, PacketType::kPingreq);
  // No answer this time: the client gives up on the connection and comes back.
  ASSERT_TRUE(b.waitClosed(1, 4s));
  b.accept(false);
  EXPECT_NE(c.lastError().message().find("PINGRESP"), std::string::npos) << c.lastError().toString();
}

TEST(MqttClientTest, CloseCancelsOutstandingPublishes) {
  FakeBroker b;
  Results r;
  {
    MqttClient c(optionsFor(b));
    ASSERT_TRUE(connectWith(c, b).isOk());
    c.publish(OutgoingMessage{"o/1", "1", 1, false, {}}, r.callback());
    ASSERT_TRUE(b.nextNonPing());
  }
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r.statuses[0].code(), StatusCode::kCancelled);
}

TEST(MqttClientTest, Version311Flows) {
  FakeBroker b;
  Inbox inbox;
  MqttClient c(optionsFor(b, Version::k311));
  c.setMessageHandler([&](IncomingMessage m) { inbox.add(std::move(m)); });
  Packet connect;
  ASSERT_TRUE(connectWith(c, b, false, &connect).isOk());
  EXPECT_EQ(connect.version, Version::k311);
  subscribeWith(c, b, "t/#", 2, 2);
  b.publish(3, 2, "x");
  ASSERT_TRUE(inbox.waitFor(1));
  c.ack(inbox.at(0).token);
  auto rec = b.nextNonPing();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->type, PacketType::kPubrec);
}


// Issue 18: mochi-mqtt keeps one packet-identifier space per session for both directions and,
// after a resumed session, numbers the messages it holds for the client 1, 2, 3, ... A SUBSCRIBE
// under one of those ids is refused (0x91). The client must not pick the id of a message the
// broker sent it and has not had acknowledged.
TEST(MqttClientTest, ResumedSessionSubscribeAvoidsIdsOfUnackedMessages) {
  for (Version v : {Version::k5, Version::k311}) {
    SCOPED_TRACE(v == Version::k5 ? "v5" : "v3.1.1");
    FakeBroker b;
    Inbox inbox;
    auto o = optionsFor(b, v);
    o.cleanStart = false;
    o.sessionExpiryS = 300;
    MqttClient c(o);
    c.setMessageHandler([&](IncomingMessage m) { inbox.add(std::move(m)); });
    ASSERT_TRUE(connectWith(c, b, true).isOk());
    // The resumed session's in-flight messages, as the broker re-sends them before anything else.
    constexpr std::uint16_t kHeld = 2000;
    for (std::uint16_t id = 1; id <= kHeld; ++id) b.publish(id, 1, std::to_string(id), true);
    ASSERT_TRUE(inbox.waitFor(kHeld));
    Status st;
    std::jthread t([&] { st = c.subscribe({{"t/#", 1}}); });  // joins on any exit
    auto sub = b.nextNonPing();
    ASSERT_TRUE(sub.has_value());
    ASSERT_EQ(sub->type, PacketType::kSubscribe);
    EXPECT_GT(sub->packetId, kHeld) << "SUBSCRIBE under the id of an unacknowledged message";
    Packet ack;
    ack.type = PacketType::kSuback;
    ack.packetId = sub->packetId;
    ack.reasonCodes = {1};
    b.send(ack);
    t.join();
    EXPECT_TRUE(st.isOk()) << st.toString();
  }
}

// A SUBSCRIBE refused because the broker holds its id is sent again under another id; MQTT 5
// says so with 0x91, mochi on 3.1.1 with 0x80 for every filter (retried only on a resumed session).
TEST(MqttClientTest, SubscribeRefusedAsIdInUseIsRetriedWithAnotherId) {
  struct Case {
    Version v;
    bool present;
    std::uint8_t refusal;
  };
  for (Case k : {Case{Version::k5, false, 0x91}, Case{Version::k5, true, 0x91},
                 Case{Version::k311, true, 0x80}}) {
    SCOPED_TRACE(std::string(k.v == Version::k5 ? "v5" : "v3.1.1") +
                 (k.present ? " resumed" : " new"));
    FakeBroker b;
    MqttClient c(optionsFor(b, k.v));
    ASSERT_TRUE(connectWith(c, b, k.present).isOk());
    Status st;
    std::jthread t([&] { st = c.subscribe({{"a/#", 1}, {"b/#", 1}}); });  // joins on any exit
    std::set<std::uint16_t> ids;
    for (int round = 0; round < 3; ++round) {  // refused twice, granted the third time
      auto sub = b.nextNonPing();
      ASSERT_TRUE(sub.has_value()) << "no SUBSCRIBE in round " << round;
      ASSERT_EQ(sub->type, PacketType::kSubscribe);
      ASSERT_EQ(sub->subscriptions.size(), 2u);
      EXPECT_EQ(sub->subscriptions[0].filter, "a/#");
      EXPECT_TRUE(ids.insert(sub->packetId).second) << "id " << sub->packetId << " sent again";
      Packet ack;
      ack.type = PacketType::kSuback;
      ack.packetId = sub->packetId;
      ack.reasonCodes = round < 2 ? std::vector<std::uint8_t>{k.refusal, k.refusal}
                                  : std::vector<std::uint8_t>{1, 1};
      b.send(ack);
    }
    t.join();
    EXPECT_TRUE(st.isOk()) << st.toString();
  }
}

// Bounded: a broker that refuses every id ends with the refusal reported, naming the code; a
// 3.1.1 failure on a new session is a plain refusal, not retried.
TEST(MqttClientTest, SubscribeIdRetriesAreBounded) {
  {
    FakeBroker b;
    MqttClient c(optionsFor(b));
    ASSERT_TRUE(connectWith(c, b, true).isOk());
    Status st;
    std::jthread t([&] { st = c.subscribe({{"a/#", 1}}); });  // joins on any exit
    int sent = 0;
    while (auto sub = b.nextNonPing(500ms)) {
      ASSERT_EQ(sub->type, PacketType::kSubscribe);
      ++sent;
      Packet ack;
      ack.type = PacketType::kSuback;
      ack.packetId = sub->packetId;
      ack.reasonCodes = {0x91};
      b.send(ack);
    }
    t.join();
    EXPECT_EQ(sent, 9);  // the first and 8 more
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("0x91"), std::string::npos) << st.message();
  }
  {
    FakeBroker b;
    MqttClient c(optionsFor(b, Version::k311));
    ASSERT_TRUE(connectWith(c, b, false).isOk());
    subscribeWith(c, b, "secret/#", 1, 0x80);
    EXPECT_TRUE(b.nothingWithin(200ms));
  }
}

// What the connection listener heard, waited for by the test.
struct Events {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ConnectionEvent> events;
  std::function<void(const ConnectionEvent&)> listener() {
    return [this](const ConnectionEvent& e) {
      std::lock_guard lock(mu);
      events.push_back(e);
      cv.notify_all();
    };
  }
  bool waitFor(std::size_t n, std::chrono::milliseconds t = 5s) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, t, [&] { return events.size() >= n; });
  }
  std::size_t size() {
    std::lock_guard lock(mu);
    return events.size();
  }
  ConnectionEvent at(std::size_t i) {
    std::lock_guard lock(mu);
    return events.at(i);
  }
};

Packet subackFor(const Packet& sub, std::uint8_t code) {
  Packet ack;
  ack.type = PacketType::kSuback;
  ack.packetId = sub.packetId;
  ack.reasonCodes.assign(sub.subscriptions.size(), code);
  return ack;
}

// Connected at CONNACK; a loss with its reason; after the reconnect, connected only once the
// re-SUBSCRIBE was granted (a source receives nothing before).
TEST(MqttClientTest, ConnectionListenerHearsLossAndConnectedAfterResubscribe) {
  FakeBroker b;
  Events ev;
  MqttClient c(optionsFor(b));
  c.setConnectionListener(ev.listener());
  ASSERT_TRUE(connectWith(c, b).isOk());
  ASSERT_TRUE(ev.waitFor(1));
  EXPECT_EQ(ev.at(0).kind, ConnectionEvent::Kind::kConnected);
  subscribeWith(c, b, "t/#", 1, 1);
  b.drop();
  ASSERT_TRUE(ev.waitFor(2));
  EXPECT_EQ(ev.at(1).kind, ConnectionEvent::Kind::kLost);
  EXPECT_NE(ev.at(1).reason.find("closed by the broker"), std::string::npos) << ev.at(1).reason;
  b.accept();
  auto sub = b.nextNonPing();
  ASSERT_TRUE(sub && sub->type == PacketType::kSubscribe);
  EXPECT_FALSE(ev.waitFor(3, 150ms)) << "connected before the re-SUBSCRIBE was granted";
  b.send(subackFor(*sub, 1));
  ASSERT_TRUE(ev.waitFor(3));
  EXPECT_EQ(ev.at(2).kind, ConnectionEvent::Kind::kConnected);
}

// A re-SUBSCRIBE refused after a reconnect was dropped silently before 2026-12-08.
TEST(MqttClientTest, RefusedResubscribeIsDegraded) {
  FakeBroker b;
  Events ev;
  MqttClient c(optionsFor(b));
  c.setConnectionListener(ev.listener());
  ASSERT_TRUE(connectWith(c, b).isOk());
  subscribeWith(c, b, "t/#", 1, 1);
  b.drop();
  b.accept();
  auto sub = b.nextNonPing();
  ASSERT_TRUE(sub && sub->type == PacketType::kSubscribe);
  b.send(subackFor(*sub, 0x87));
  ASSERT_TRUE(ev.waitFor(3));
  const auto e = ev.at(2);
  EXPECT_EQ(e.kind, ConnectionEvent::Kind::kDegraded);
  EXPECT_NE(e.reason.find("refused the re-subscription"), std::string::npos) << e.reason;
  EXPECT_NE(e.reason.find("'t/#' (0x87)"), std::string::npos) << e.reason;
}

// A broker that sends an unreadable packet after every CONNACK: lost twice, then degraded (not
// connected) from the third; a readable packet later says connected again.
TEST(MqttClientTest, UnreadablePacketAfterEveryConnackIsDegradedAfterBoundedRepeats) {
  FakeBroker b;
  Events ev;
  MqttClient c(optionsFor(b));
  c.setConnectionListener(ev.listener());
  ASSERT_TRUE(connectWith(c, b).isOk());
  const std::string bad("\x30\xff\xff\xff\xff\x7f", 6);  // a remaining length of five bytes
  b.sendRaw(bad);
  for (int i = 2; i <= kBadPacketRepeats; ++i) {
    ASSERT_TRUE(b.waitClosed(i - 1));
    b.accept();
    b.sendRaw(bad);
  }
  ASSERT_TRUE(b.waitClosed(kBadPacketRepeats));
  using K = ConnectionEvent::Kind;
  // connected, lost, connected, lost, connected, degraded
  ASSERT_TRUE(ev.waitFor(2 * kBadPacketRepeats));
  for (int i = 0; i + 1 < 2 * kBadPacketRepeats; ++i) {
    EXPECT_EQ(ev.at(i).kind, i % 2 == 0 ? K::kConnected : K::kLost) << i;
  }
  const auto d = ev.at(2 * kBadPacketRepeats - 1);
  EXPECT_EQ(d.kind, K::kDegraded);
  EXPECT_NE(d.reason.find("remaining length"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("3 connection(s) in a row"), std::string::npos) << d.reason;
  // Still degraded at the next CONNACK; a readable packet ends it.
  b.accept();
  EXPECT_FALSE(ev.waitFor(2 * kBadPacketRepeats + 1, 150ms));
  b.publish(3, 0, "fine");
  ASSERT_TRUE(ev.waitFor(2 * kBadPacketRepeats + 1));
  EXPECT_EQ(ev.at(2 * kBadPacketRepeats).kind, K::kConnected);
}

// A whole QoS 1 PUBLISH whose topic is not UTF-8 is delivered with its error, the connection
// stays, and ack() sends its PUBACK (it used to drop the connection; the broker re-sent it after
// every CONNACK).
TEST(MqttClientTest, MalformedPublishIsDeliveredForAcknowledgement) {
  FakeBroker b;
  Inbox inbox;
  Events ev;
  MqttClient c(optionsFor(b, Version::k311));
  c.setMessageHandler([&](IncomingMessage m) { inbox.add(std::move(m)); });
  c.setConnectionListener(ev.listener());
  ASSERT_TRUE(connectWith(c, b).isOk());
  const std::string topic("bad/\xff/t", 7);
  std::string body;
  body += static_cast<char>(0);
  body += static_cast<char>(topic.size());
  body += topic;
  body += std::string("\x00\x09", 2);  // packet id 9
  body += "payload";
  std::string pkt;
  pkt += static_cast<char>(0x32);
  appendVarint(pkt, static_cast<std::uint32_t>(body.size()));
  pkt += body;
  b.sendRaw(pkt);
  ASSERT_TRUE(inbox.waitFor(1));
  auto m = inbox.at(0);
  EXPECT_FALSE(m.error.isOk());
  EXPECT_NE(m.error.message().find("UTF-8"), std::string::npos) << m.error.toString();
  EXPECT_EQ(m.topic, topic);
  EXPECT_EQ(m.payload, "payload");
  EXPECT_EQ(m.qos, 1);
  c.ack(m.token);
  auto puback = b.nextNonPing();
  ASSERT_TRUE(puback);
  EXPECT_EQ(puback->type, PacketType::kPuback);
  EXPECT_EQ(puback->packetId, 9);
  EXPECT_EQ(b.connections(), 1);
  EXPECT_EQ(ev.size(), 1u);  // connected, nothing lost
  EXPECT_EQ(c.state(), ClientState::kConnected);
}
}  // namespace
}  // namespace ferry::mqtt
