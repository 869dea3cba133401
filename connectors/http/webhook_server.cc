// The webhook server (see webhook_server.h).
#include "connectors/http/webhook_server.h"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <pthread.h>

#include <array>
#include <atomic>
#include <cctype>
#include <thread>

namespace ferry::connectors::httpc {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr std::chrono::milliseconds kLinger{1000};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string errorJson(std::string_view message) {
  std::string out = "{\"error\":\"";
  for (char c : message) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out + "\"}";
}

}  // namespace

// A connection waiting for its handler's answer, as the state keeps it.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void answer(WebhookAnswer a) = 0;
};

struct WebhookServer::State : std::enable_shared_from_this<WebhookServer::State> {
  net::io_context ioc{1};  // first: destroyed last, after everything that holds a socket
  std::optional<net::ssl::context> ssl;
  tcp::acceptor acceptor{ioc};
  WebhookServerOptions options;
  std::shared_ptr<std::atomic<std::size_t>> connections = std::make_shared<std::atomic<std::size_t>>(0);
  std::atomic<int> writing{0};
  std::atomic<bool> stopping{false};
  std::uint64_t nextId = 0;                                        // I/O thread
  std::map<std::uint64_t, std::shared_ptr<SessionBase>> waiting;  // I/O thread: handlers not answered
  std::thread thread;

  void accept();
};

namespace {

template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(WebhookServer::State* state, Stream stream)
      : state_(state), connections_(state->connections), stream_(std::move(stream)) {
    connections_->fetch_add(1);
  }
  ~Session() override { connections_->fetch_sub(1); }

  void run() {
    if constexpr (kTls) {
      lowest().expires_after(state_->options.headerTimeout);
      stream_.async_handshake(net::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->closeNow();
                                self->readHeader(true);
                              });
    } else {
      readHeader(true);
    }
  }

  void answer(WebhookAnswer a) override {
    res_ = {};
    res_.version(version_);
    res_.result(static_cast<unsigned>(a.status));
    res_.set(http::field::server, "ferry");
    res_.set(http::field::content_type, a.contentType);
    for (auto& [name, value] : a.headers) res_.set(name, value);
    res_.body() = std::move(a.body);
    res_.keep_alive(keepAlive_ && !a.close && !state_->stopping.load());
    res_.prepare_payload();
    state_->writing.fetch_add(1);
    lowest().expires_after(state_->options.writeTimeout);
    http::async_write(stream_, res_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      self->state_->writing.fetch_sub(1);
      if (ec) return self->closeNow();
      if (!self->res_.keep_alive()) return self->lingerClose();
      self->readHeader(false);
    });
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void readHeader(bool first) {
    if (state_->stopping.load()) return closeNow();
    parser_.emplace();
    parser_->header_limit(64 * 1024);
    parser_->body_limit(state_->options.maxBodyBytes);
    lowest().expires_after(first ? state_->options.headerTimeout : state_->options.idleTimeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              self->onHeader(ec);
                            });
  }

  void refuse(int status, std::string message) {
    WebhookAnswer a;
    a.status = status;
    a.body = errorJson(message);
    a.close = true;
    answer(std::move(a));
  }

  void onHeader(beast::error_code ec) {
    if (ec == http::error::body_limit) return refuse(413, "request body larger than http.max.body.bytes");
    if (ec == http::error::header_limit) return refuse(431, "request header too large");
    if (ec) {
      // A request that is not HTTP gets a 400; a closed, reset or timed-out connection just closes.
      if (ec != http::error::end_of_stream && ec.category() == make_error_code(http::error::bad_method).category())
        return refuse(400, "malformed HTTP request: " + ec.message());
      return closeNow();
    }
    auto& msg = parser_->get();
    version_ = msg.version();
    keepAlive_ = msg.keep_alive();
    request_ = WebhookRequest{};
    request_.method = std::string(msg.method_string().data(), msg.method_string().size());
    request_.target = std::string(msg.target().data(), msg.target().size());
    request_.path = request_.target.substr(0, request_.target.find('?'));
    for (const auto& field : msg) request_.headers[lower(std::string_view(field.name_string().data(), field.name_string().size()))] =
          std::string(field.value().data(), field.value().size());
    beast::error_code remoteEc;
    auto remote = lowest().socket().remote_endpoint(remoteEc);
    if (!remoteEc) request_.remoteAddr = remote.address().to_string();
    if (auto cl = parser_->content_length(); cl && *cl > state_->options.maxBodyBytes)
      return refuse(413, "request body larger than http.max.body.bytes (" +
                             std::to_string(state_->options.maxBodyBytes) + " bytes)");
    if (state_->options.checkHeader) {
      if (auto refusal = state_->options.checkHeader(request_)) {
        refusal->close = true;  // the body is not read: the connection cannot be reused
        return answer(std::move(*refusal));
      }
    }
    const auto* expect = request_.header("expect");
    if (expect != nullptr && lower(*expect) == "100-continue") {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, version_);
      lowest().expires_after(state_->options.writeTimeout);
      http::async_write(stream_, *cont, [self = this->shared_from_this(), cont](beast::error_code wec, std::size_t) {
        if (wec) return self->closeNow();
        self->readBody();
      });
      return;
    }
    readBody();
  }

  void readBody() {
    lowest().expires_after(state_->options.bodyTimeout);
    http::async_read(stream_, buffer_, *parser_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      self->onBody(ec);
    });
  }

  void onBody(beast::error_code ec) {
    if (ec == http::error::body_limit) return refuse(413, "request body larger than http.max.body.bytes");
    if (ec) return closeNow();
    request_.body = std::move(parser_->get().body());
    keepAlive_ = parser_->get().keep_alive();
    parser_.reset();
    lowest().expires_never();  // the handler's answer is bounded by the handler (its ack timeout)
    const std::uint64_t id = ++state_->nextId;
    state_->waiting[id] = this->shared_from_this();
    std::weak_ptr<WebhookServer::State> weak = state_->shared_from_this();
    Reply reply = [weak, id](WebhookAnswer a) {
      auto state = weak.lock();
      if (!state) return;
      net::post(state->ioc, [weak, id, a = std::move(a)]() mutable {
        auto st = weak.lock();
        if (!st) return;
        auto it = st->waiting.find(id);
        if (it == st->waiting.end()) return;
        auto session = std::move(it->second);
        st->waiting.erase(it);
        session->answer(std::move(a));
      });
    };
    state_->options.handle(std::move(request_), std::move(reply));
  }

  void closeNow() {
    beast::error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    lowest().close();
  }

  // Stop sending, read (and drop) what the client still sends for a while, then close: closing
  // with unread bytes would make the kernel send a reset that can overtake the answer.
  void lingerClose() {
    if constexpr (kTls) {
      lowest().expires_after(kLinger);
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) { self->closeNow(); });
    } else {
      beast::error_code ec;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
      lowest().expires_after(kLinger);
      drain();
    }
  }
  void drain() {
    lowest().async_read_some(net::buffer(discard_), [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->closeNow();
      self->drain();
    });
  }

  WebhookServer::State* state_;  // outlives every session (its waiting map and io_context own them)
  std::shared_ptr<std::atomic<std::size_t>> connections_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  WebhookRequest request_;
  unsigned version_ = 11;
  bool keepAlive_ = true;
  std::array<char, 16384> discard_{};
};

}  // namespace

void WebhookServer::State::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == net::error::operation_aborted || stopping.load()) return;
      // Out of descriptors and the like: try again shortly rather than spin.
      auto timer = std::make_shared<net::steady_timer>(ioc, std::chrono::milliseconds(100));
      timer->async_wait([this, timer](beast::error_code) {
        if (!stopping.load()) accept();
      });
      return;
    }
    if (connections->load() >= options.maxConnections) {
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      if (ssl) {
        std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
            this, beast::ssl_stream<beast::tcp_stream>(std::move(socket), *ssl))
            ->run();
      } else {
        std::make_shared<Session<beast::tcp_stream>>(this, beast::tcp_stream(std::move(socket)))->run();
      }
    }
    accept();
  });
}

WebhookServer::WebhookServer(WebhookServerOptions options) : options_(std::move(options)) {}

WebhookServer::~WebhookServer() { stop(); }

Status WebhookServer::start() {
  stop();
  auto state = std::make_shared<State>();
  state->options = options_;
  if (!options_.certPem.empty() || !options_.keyPem.empty()) {
    if (options_.certPem.empty() || options_.keyPem.empty())
      return Status::invalidArgument("http.ssl.cert and http.ssl.key go together");
    state->ssl.emplace(net::ssl::context::tls_server);
    beast::error_code ec;
    state->ssl->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                                net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                                net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use,
                            ec);
    state->ssl->use_certificate_chain(net::buffer(options_.certPem), ec);
    if (ec) return Status::invalidArgument("http.ssl.cert: not a usable PEM certificate chain: " + ec.message());
    state->ssl->use_private_key(net::buffer(options_.keyPem), net::ssl::context::pem, ec);
    if (ec) return Status::invalidArgument("http.ssl.key: not a usable PEM private key: " + ec.message());
  }
  beast::error_code ec;
  std::string host = options_.host.empty() ? "0.0.0.0" : options_.host;
  auto address = net::ip::make_address(host, ec);
  if (ec) {
    tcp::resolver resolver(state->ioc);
    auto results = resolver.resolve(host, std::to_string(options_.port), ec);
    if (ec || results.empty()) return Status::invalidArgument("http.listen: cannot resolve host '" + host + "'");
    address = results.begin()->endpoint().address();
  }
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(options_.port));
  state->acceptor.open(endpoint.protocol(), ec);
  if (!ec) state->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) state->acceptor.bind(endpoint, ec);
  if (!ec) state->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::unavailable("http.listen: cannot listen on " + host + ":" + std::to_string(options_.port) + ": " +
                               ec.message());
  port_ = state->acceptor.local_endpoint(ec).port();
  state->accept();
  State* raw = state.get();
  state->thread = std::thread([raw] {
    pthread_setname_np(pthread_self(), "http-src-io");
    for (;;) {
      try {
        raw->ioc.run();
        return;
      } catch (...) {
        // A handler threw (it must not); keep serving the other connections.
      }
    }
  });
  state_ = std::move(state);
  return Status::ok();
}

void WebhookServer::stop() {
  if (!state_) return;
  auto state = std::move(state_);
  state->stopping.store(true);
  // Answers already handed over (the 503s of a stopping task, say) were posted before this and
  // run first; once the marker ran they are being written and get a moment to leave.
  auto marker = std::make_shared<std::atomic<bool>>(false);
  net::post(state->ioc, [raw = state.get(), marker] {
    beast::error_code ec;
    raw->acceptor.close(ec);
    marker->store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while ((!marker->load() || state->writing.load() > 0) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  state->ioc.stop();
  if (state->thread.joinable()) state->thread.join();
  state->waiting.clear();  // their connections close
}

}  // namespace ferry::connectors::httpc
