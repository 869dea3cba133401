// The REST transport's defences: header/body/target limits, the bounded handler queue, the
// connection cap, per-connection deadlines (with short configured timeouts and bounded waits),
// keep-alive, HEAD/OPTIONS/HTTP/1.0, graceful stop and static file confinement.
#include "rest/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <mutex>
#include <thread>

#include "http_test_client.h"

namespace ferry::rest::http {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using rest::testing::HttpAnswer;
using rest::testing::httpRequest;
using rest::testing::TestConnection;
using namespace std::chrono_literals;

// A gate the handler can wait on, so tests control when a handler finishes.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;
  void enterAndWait() {
    std::unique_lock<std::mutex> lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait_for(lock, 30s, [&] { return open; });
  }
  bool waitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 10s, [&] { return entered >= n; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

class HttpServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions o = {}) {
    if (o.listeners.empty()) o.listeners.push_back(Listener{false, "127.0.0.1", 0});
    server_ = std::make_unique<HttpServer>(o, [this](const Request& req, Response& res) {
      ++calls_;
      if (req.path == "/block") gate_.enterAndWait();
      res.status = 200;
      res.set_content("{\"path\":\"" + req.path + "\",\"bytes\":" + std::to_string(req.body.size()) +
                          "}",
                      "application/json");
    });
    ASSERT_TRUE(server_->start().isOk());
    port_ = server_->ports().at(0);
  }
  void TearDown() override {
    gate_.release();
    if (server_) server_->stop();
  }

  // Waits (bounded) until the server's counters satisfy `pred`.
  template <class Pred>
  bool eventually(Pred pred, std::chrono::milliseconds limit = 5s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (pred(server_->stats())) return true;
      std::this_thread::sleep_for(5ms);
    }
    return pred(server_->stats());
  }

  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::atomic<int> calls_{0};
  Gate gate_;
};

void expectErrorShape(const HttpAnswer& a, int status) {
  EXPECT_EQ(a.status, status) << a.body;
  auto j = nlohmann::json::parse(a.body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << a.body;
  EXPECT_EQ(j.value("error_code", 0), status);
  EXPECT_FALSE(j.value("message", "").empty());
}

TEST_F(HttpServerTest, TooManyHeaderLinesIs431) {
  start();
  std::string headers;
  for (int i = 0; i < 101; ++i) headers += "X-H" + std::to_string(i) + ": v\r\n";
  auto a = httpRequest(port_, "GET", "/x", "", headers);
  expectErrorShape(a, 431);
  EXPECT_EQ(calls_.load(), 0);
  headers.clear();
  for (int i = 0; i < 90; ++i) headers += "X-H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(httpRequest(port_, "GET", "/x", "", headers).status, 200);  // under the cap
}

TEST_F(HttpServerTest, TooManyHeaderBytesIs431AndTheConnectionEnds) {
  start();
  TestConnection c(port_);
  // An endless header: the server must answer once 64 KiB arrived, not keep buffering.
  std::string line = "X-Flood: " + std::string(1000, 'a') + "\r\n";
  c.send("GET /x HTTP/1.1\r\nHost: h\r\n");
  for (int i = 0; i < 70; ++i) c.send(line);
  auto a = c.read(10s);
  expectErrorShape(a, 431);
  EXPECT_EQ(a.header("Connection"), "close");
  EXPECT_TRUE(c.closedByPeer(5s));
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(HttpServerTest, LongTargetIs414) {
  start();
  expectErrorShape(httpRequest(port_, "GET", "/" + std::string(9000, 'a')), 414);
}

TEST_F(HttpServerTest, ChunkedBodyOverTheLimitIs413AndNotEchoed) {
  ServerOptions o;
  o.limits.maxBodyBytes = 4096;
  start(o);
  TestConnection c(port_);
  c.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
         "Transfer-Encoding: chunked\r\n\r\n");
  const std::string chunk(1000, 'S');  // "SSSS..." must never come back
  std::string body;
  for (int i = 0; i < 64; ++i) body += "3e8\r\n" + chunk + "\r\n";
  body += "0\r\n\r\n";
  c.send(body);
  auto a = c.read(10s);
  expectErrorShape(a, 413);
  EXPECT_THAT(a.body, Not(HasSubstr("SSSS")));
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(HttpServerTest, DeclaredLengthOverTheLimitIs413BeforeTheBody) {
  ServerOptions o;
  o.limits.maxBodyBytes = 4096;
  start(o);
  TestConnection c(port_);
  c.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100000000\r\n\r\n");
  expectErrorShape(c.read(10s), 413);
  // Under the limit, chunked, is read and handed over whole.
  auto ok = httpRequest(port_, "POST", "/x", std::string(4000, 'b'));
  EXPECT_EQ(ok.status, 200);
  EXPECT_THAT(ok.body, HasSubstr("\"bytes\":4000"));
}

TEST_F(HttpServerTest, MalformedRequestIs400WithoutEcho) {
  start();
  TestConnection c(port_);
  c.send("BROKEN\x01LINE SECRETMARKER\r\n\r\n");
  auto a = c.read(10s);
  expectErrorShape(a, 400);
  EXPECT_THAT(a.body, Not(HasSubstr("SECRETMARKER")));
}

TEST_F(HttpServerTest, FullQueueAnswers503WithRetryAfterWithoutRunningTheHandler) {
  ServerOptions o;
  o.handlerThreads = 1;
  o.queueCapacity = 1;
  start(o);
  TestConnection busy(port_), second(port_), third(port_);
  busy.send("GET /block HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_TRUE(gate_.waitEntered(1));
  // One of these two waits in the queue (capacity 1), the other is refused at once.
  second.send("GET /second HTTP/1.1\r\nHost: h\r\n\r\n");
  third.send("GET /third HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_TRUE(eventually([](const ServerStats& s) { return s.requestsRejected == 1; }));
  gate_.release();
  EXPECT_EQ(busy.read(10s).status, 200);
  HttpAnswer a = second.read(10s), b = third.read(10s);
  HttpAnswer& refused = a.status == 503 ? a : b;
  HttpAnswer& served = a.status == 503 ? b : a;
  expectErrorShape(refused, 503);
  EXPECT_EQ(refused.header("Retry-After"), "1");
  EXPECT_EQ(served.status, 200);
  EXPECT_EQ(calls_.load(), 2);  // the refused request never reached the handler
  // The refused connection stays usable.
  TestConnection& again = a.status == 503 ? second : third;
  again.send("GET /again HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(again.read(10s).status, 200);
}

TEST_F(HttpServerTest, BodiesBeyondTheInFlightBudgetAre503Unread) {
  ServerOptions o;
  o.limits.maxBodyBytes = 8000;
  o.maxBodyBytesInFlight = 10000;
  start(o);
  TestConnection holder(port_), second(port_);
  holder.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 6000\r\n\r\n" + std::string(10, 'a'));
  // The holder's 6000 bytes are reserved once its header is read; then 6000 more do not fit.
  ASSERT_TRUE(eventually([](const ServerStats& s) { return s.bodyBytesInFlight == 6000; }));
  expectErrorShape(httpRequest(port_, "POST", "/x", std::string(6000, 'c')), 503);
  second.send("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
  auto refused = second.read(5s);  // a chunked body counts as the whole limit
  expectErrorShape(refused, 503);
  EXPECT_EQ(refused.header("Retry-After"), "1");
  holder.send(std::string(5990, 'a'));
  EXPECT_EQ(holder.read(10s).status, 200);
  // Released once handled (the answer may reach the client a moment before the release): the
  // same body fits again.
  ASSERT_TRUE(eventually([](const ServerStats& s) { return s.bodyBytesInFlight == 0; }));
  EXPECT_EQ(httpRequest(port_, "POST", "/x", std::string(6000, 'b')).status, 200);
  EXPECT_EQ(calls_.load(), 2);
}

TEST_F(HttpServerTest, ConnectionsBeyondTheCapAreClosedAtOnce) {
  ServerOptions o;
  o.maxConnections = 2;
  start(o);
  auto a = std::make_unique<TestConnection>(port_);
  TestConnection b(port_);
  for (auto* c : {a.get(), &b}) {
    c->send("GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_EQ(c->read(10s).status, 200);
  }
  TestConnection third(port_);
  third.send("GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_TRUE(third.closedByPeer(5s));
  EXPECT_GE(server_->stats().connectionsRejected, 1u);
  a.reset();  // room again
  ASSERT_TRUE(eventually([](const ServerStats& s) { return s.openConnections < 2; }));
  EXPECT_EQ(httpRequest(port_, "GET", "/x").status, 200);
}

TEST_F(HttpServerTest, SlowHeaderIsClosedAtTheDeadlineAndOthersAreServed) {
  ServerOptions o;
  o.headerTimeout = 300ms;
  start(o);
  TestConnection slow(port_);
  slow.send("GET /x HTTP/1.1\r\n");
  // Trickling a byte every 50 ms does not extend the deadline: the whole header counts.
  bool closed = false;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!closed && std::chrono::steady_clock::now() < deadline) {
    if (!slow.send("X")) break;
    closed = slow.closedByPeer(50ms);
    EXPECT_EQ(httpRequest(port_, "GET", "/probe").status, 200);
  }
  EXPECT_TRUE(closed || !slow.send("X"));
  EXPECT_TRUE(eventually([](const ServerStats& s) { return s.timeouts >= 1; }));
}

TEST_F(HttpServerTest, SlowBodyIsClosedAtTheDeadline) {
  ServerOptions o;
  o.bodyTimeout = 300ms;
  start(o);
  TestConnection slow(port_);
  slow.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n0123456789");
  EXPECT_TRUE(slow.closedByPeer(5s));
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
  ServerOptions o;
  o.idleTimeout = 300ms;
  start(o);
  TestConnection c(port_);
  c.send("GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(c.read(10s).status, 200);
  EXPECT_TRUE(c.closedByPeer(5s));
}

TEST_F(HttpServerTest, KeepAliveServesManyRequestsAndPipelinedOnesInOrder) {
  start();
  TestConnection c(port_);
  for (int i = 0; i < 50; ++i) {
    c.send("GET /n" + std::to_string(i) + " HTTP/1.1\r\nHost: h\r\n\r\n");
    auto a = c.read(10s);
    ASSERT_EQ(a.status, 200);
    EXPECT_THAT(a.body, HasSubstr("/n" + std::to_string(i)));
    EXPECT_EQ(a.header("Connection"), "");
  }
  c.send("GET /p1 HTTP/1.1\r\nHost: h\r\n\r\nGET /p2 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_THAT(c.read(10s).body, HasSubstr("/p1"));
  EXPECT_THAT(c.read(10s).body, HasSubstr("/p2"));
}

TEST_F(HttpServerTest, HeadHasNoBodyAndConnectionCloseAndHttp10End) {
  start();
  TestConnection c(port_);
  c.send("HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n");
  auto head = c.read(10s, /*head=*/true);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("Content-Length"), std::to_string(std::string("{\"path\":\"/x\",\"bytes\":0}").size()));
  c.send("GET /after HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  auto after = c.read(10s);  // parses cleanly: HEAD sent no body bytes
  EXPECT_THAT(after.body, HasSubstr("/after"));
  EXPECT_EQ(after.header("Connection"), "close");
  EXPECT_TRUE(c.closedByPeer(5s));

  TestConnection old(port_);
  old.send("GET /old HTTP/1.0\r\n\r\n");
  EXPECT_EQ(old.read(10s).status, 200);
  EXPECT_TRUE(old.closedByPeer(5s));
  TestConnection oldKeep(port_);
  oldKeep.send("GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  auto k = oldKeep.read(10s);
  EXPECT_EQ(k.header("Connection"), "keep-alive");
  oldKeep.send("GET /old2 HTTP/1.0\r\n\r\n");
  EXPECT_THAT(oldKeep.read(10s).body, HasSubstr("/old2"));
}

TEST_F(HttpServerTest, ExpectContinueGetsAnInterimAnswer) {
  start();
  TestConnection c(port_);
  c.send("PUT /x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
  c.send("abc");
  auto a = c.read(10s);
  EXPECT_EQ(a.status, 200);
  EXPECT_THAT(a.body, HasSubstr("\"bytes\":3"));
}

TEST_F(HttpServerTest, StopLetsAHandlerInFlightAnswer) {
  start();
  TestConnection c(port_);
  TestConnection idle(port_);
  c.send("GET /block HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_TRUE(gate_.waitEntered(1));
  std::thread stopper([&] { server_->stop(); });
  EXPECT_TRUE(idle.closedByPeer(5s));  // an idle connection is closed at once
  gate_.release();
  auto a = c.read(10s);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.header("Connection"), "close");
  stopper.join();
  EXPECT_FALSE(TestConnection(port_).connected());
}

TEST(HttpValues, HeaderValuesCannotInjectLinesAndQueryIsDecoded) {
  Response res;
  res.set_header("Location", "/connectors/a\r\nSet-Cookie: x=1");
  EXPECT_EQ(res.get_header_value("location"), "/connectors/aSet-Cookie: x=1");
  auto parsed = parseRequestStream(
      "GET /c?expand=status&expand=info&x=a%20b+c HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n", Limits{});
  ASSERT_EQ(parsed.size(), 1u);
  const Request& r = parsed[0].request;
  EXPECT_EQ(r.get_param_value_count("expand"), 2u);
  EXPECT_EQ(r.get_param_value("expand", 1), "info");
  EXPECT_EQ(r.get_param_value("x"), "a b c");
  EXPECT_EQ(r.get_header_value("x-a"), "1");
  EXPECT_EQ(r.path, "/c");
}

TEST(HttpValues, ParseStreamStopsAtTheChunkedLimit) {
  Limits l;
  l.maxBodyBytes = 10;
  auto parsed = parseRequestStream(
      "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n",
      l);
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0].errorStatus, 413);
}

// Found by fuzzing: a chunked body's trailer added header fields after the count was checked.
TEST(HttpValues, ChunkedTrailerFieldsCountTowardsTheHeaderCap) {
  Limits l;
  l.maxHeaderCount = 3;
  auto parsed = parseRequestStream(
      "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"
      "T1: a\r\nT2: b\r\nT3: c\r\n\r\n",
      l);
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0].errorStatus, 431);
}

TEST(HttpListeners, ParsesKafkaConnectListeners) {
  auto a = parseListener("https://127.0.0.1:8443");
  ASSERT_TRUE(a.isOk());
  EXPECT_TRUE(a->tls);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8443);
  auto b = parseListener("http://:8083");
  ASSERT_TRUE(b.isOk());
  EXPECT_EQ(b->host, "");
  EXPECT_FALSE(parseListener("ftp://h:1").isOk());
  EXPECT_FALSE(parseListener("http://h").isOk());
  EXPECT_FALSE(parseListener("http://h:99999").isOk());
}

TEST(HttpTls, MissingKeystoreIsRefusedNamingTheKey) {
  ServerOptions o;
  o.listeners.push_back(Listener{true, "127.0.0.1", 0});
  o.tls.keystoreLocation = "/nonexistent/ferry-keystore.pem";
  HttpServer s(o, [](const Request&, Response&) {});
  Status st = s.start();
  ASSERT_FALSE(st.isOk());
  EXPECT_THAT(st.message(), HasSubstr("listeners.https.ssl.keystore.location"));
  o.tls.keystoreType = "JKS";
  HttpServer jks(o, [](const Request&, Response&) {});
  Status st2 = jks.start();
  ASSERT_FALSE(st2.isOk());
  EXPECT_THAT(st2.message(), HasSubstr("listeners.https.ssl.keystore.type"));
}

// Static files: confined to the root after symlinks and "..", no listings, GET/HEAD only.
class StaticFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = std::filesystem::temp_directory_path() /
            ("ferry-static-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(base_);
    std::filesystem::create_directories(base_ / "web" / "assets");
    std::filesystem::create_directories(base_ / "web" / "empty");
    std::ofstream(base_ / "web" / "index.html") << "<html>console</html>";
    std::ofstream(base_ / "web" / "assets" / "app.js") << "console.log(1)";
    std::ofstream(base_ / "secret.txt") << "TOP-SECRET";
    std::filesystem::create_symlink(base_ / "secret.txt", base_ / "web" / "link.txt");
    std::filesystem::create_directory_symlink(base_, base_ / "web" / "up");
    root_ = (base_ / "web").string();
  }
  void TearDown() override { std::filesystem::remove_all(base_); }

  Response get(const std::string& target, const std::string& method = "GET") {
    auto parsed = parseRequestStream(method + " " + target + " HTTP/1.1\r\nHost: h\r\n\r\n", Limits{});
    Response res;
    EXPECT_EQ(parsed.size(), 1u);
    if (parsed.empty()) return res;
    EXPECT_TRUE(serveStatic(root_, "/ui", parsed[0].request, res)) << target;
    return res;
  }

  std::filesystem::path base_;
  std::string root_;
};

TEST_F(StaticFilesTest, ServesFilesWithTheirTypes) {
  auto index = get("/ui/");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.body, "<html>console</html>");
  EXPECT_THAT(index.get_header_value("Content-Type"), HasSubstr("text/html"));
  auto js = get("/ui/assets/app.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_THAT(js.get_header_value("Content-Type"), HasSubstr("javascript"));
  EXPECT_EQ(get("/ui/assets/app.js", "HEAD").status, 200);
  EXPECT_EQ(get("/ui").status, 302);
  Response other;
  auto parsed = parseRequestStream("GET /uix HTTP/1.1\r\n\r\n", Limits{});
  EXPECT_FALSE(serveStatic(root_, "/ui", parsed.at(0).request, other));
}

TEST_F(StaticFilesTest, NothingOutsideTheRootIsServed) {
  for (const char* t : {"/ui/../secret.txt", "/ui/%2e%2e/secret.txt", "/ui/assets/%2E%2E/%2E%2E/secret.txt",
                        "/ui/link.txt", "/ui/up/secret.txt", "/ui/%2fetc/passwd", "/ui/nothing"}) {
    auto r = get(t);
    EXPECT_EQ(r.status, 404) << t;
    EXPECT_THAT(r.body, Not(HasSubstr("TOP-SECRET"))) << t;
  }
}

TEST_F(StaticFilesTest, NoListingsAndOnlyGetOrHead) {
  EXPECT_EQ(get("/ui/empty/").status, 404);  // a folder without index.html: no listing
  EXPECT_EQ(get("/ui/assets/").status, 404);
  auto post = get("/ui/index.html", "POST");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.get_header_value("Allow"), "GET, HEAD");
  EXPECT_EQ(get("/ui/index.html", "DELETE").status, 405);
}

}  // namespace
}  // namespace ferry::rest::http

// ---- streamed responses (EventStream): server-sent events

namespace ferry::rest::http {
namespace {

struct StreamProbe {
  std::mutex mu;
  std::condition_variable cv;
  bool destroyed = false;
  int calls = 0;
  bool waitDestroyed(std::chrono::milliseconds limit) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, limit, [&] { return destroyed; });
  }
};

class ScriptedStream final : public EventStream {
 public:
  ScriptedStream(std::shared_ptr<StreamProbe> probe, std::vector<std::optional<std::string>> script)
      : probe_(std::move(probe)), script_(std::move(script)) {
    interval = std::chrono::milliseconds(10);
  }
  ~ScriptedStream() override {
    std::lock_guard lock(probe_->mu);
    probe_->destroyed = true;
    probe_->cv.notify_all();
  }
  std::optional<std::string> next() override {
    std::lock_guard lock(probe_->mu);
    const int i = probe_->calls++;
    if (i < static_cast<int>(script_.size())) return script_[i];
    return std::string();  // nothing more to say, for ever
  }

 private:
  std::shared_ptr<StreamProbe> probe_;
  std::vector<std::optional<std::string>> script_;
};

// Everything the server sends on one connection until it closes it (or `limit` passes).
std::string readUntilClosed(int fd, std::chrono::milliseconds limit) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return out;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return out;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out + "<closed>";
    out.append(buf, static_cast<std::size_t>(n));
  }
}

int connectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Connects, asks for the stream and waits for the first bytes of its answer (the stream runs
// then); the socket, or -1.
int openStream(int port) {
  int fd = connectTo(port);
  if (fd < 0) return -1;
  const std::string req = "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  char buf[256];
  pollfd p{fd, POLLIN, 0};
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()) ||
      ::poll(&p, 1, 10000) <= 0 || ::recv(fd, buf, sizeof buf, 0) <= 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

struct StreamServer {
  explicit StreamServer(std::function<std::shared_ptr<EventStream>()> make) {
    ServerOptions o;
    o.listeners.push_back(Listener{false, "127.0.0.1", 0});
    server = std::make_unique<HttpServer>(o, [make](const Request&, Response& res) {
      res.status = 200;
      res.set_header("Content-Type", "text/event-stream");
      res.body = "retry: 1\n\n";
      res.stream = make();
    });
    ok = server->start().isOk();
    port = ok ? server->ports().at(0) : 0;
  }
  std::unique_ptr<HttpServer> server;
  bool ok = false;
  int port = 0;
};

TEST(HttpServerStream, SendsTheHeadThenEachChunkAndEndsWhenTheStreamDoes) {
  auto probe = std::make_shared<StreamProbe>();
  StreamServer s([&] {
    return std::make_shared<ScriptedStream>(probe, std::vector<std::optional<std::string>>{
                                                       "data: one\n\n", "", "data: two\n\n", std::nullopt});
  });
  ASSERT_TRUE(s.ok);
  int fd = connectTo(s.port);
  ASSERT_GE(fd, 0);
  const std::string req = "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  std::string got = readUntilClosed(fd, 10s);
  ::close(fd);
  EXPECT_THAT(got, ::testing::StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(got, ::testing::HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(got, ::testing::Not(::testing::HasSubstr("Content-Length")));
  EXPECT_THAT(got, ::testing::EndsWith("\r\n\r\nretry: 1\n\ndata: one\n\ndata: two\n\n<closed>"));
  EXPECT_TRUE(probe->waitDestroyed(5s));
  s.server->stop();
}

TEST(HttpServerStream, AClientGoingAwayEndsTheStreamAtOnce) {
  auto probe = std::make_shared<StreamProbe>();
  StreamServer s([&] { return std::make_shared<ScriptedStream>(probe, std::vector<std::optional<std::string>>{}); });
  ASSERT_TRUE(s.ok);
  int fd = openStream(s.port);
  ASSERT_GE(fd, 0);  // the head arrived: the stream runs
  EXPECT_FALSE(probe->waitDestroyed(0ms));
  ::close(fd);  // the page is closed
  // The stream itself would go on for 30 minutes; the closed connection ends it.
  EXPECT_TRUE(probe->waitDestroyed(5s));
  s.server->stop();
}

TEST(HttpServerStream, StoppingTheServerEndsOpenStreams) {
  auto probe = std::make_shared<StreamProbe>();
  StreamServer s([&] { return std::make_shared<ScriptedStream>(probe, std::vector<std::optional<std::string>>{}); });
  ASSERT_TRUE(s.ok);
  int fd = openStream(s.port);
  ASSERT_GE(fd, 0);
  s.server->stop();
  EXPECT_TRUE(probe->waitDestroyed(5s));
  EXPECT_THAT(readUntilClosed(fd, 5s), ::testing::EndsWith("<closed>"));
  ::close(fd);
}

}  // namespace
}  // namespace ferry::rest::http
