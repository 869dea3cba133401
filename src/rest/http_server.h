// The worker's HTTP/1.1 transport (Boost.Beast over Boost.Asio, TLS through boost::asio::ssl):
// bounded in every dimension an outside client controls. See README.md for why it replaced
// cpp-httplib.
//
// Model: one I/O thread runs an io_context with every accept, read and write (asynchronous, so a
// slow client holds no thread). A complete request is handed to a fixed pool of handler threads
// through a bounded queue; when the queue is full the I/O thread answers 503 (Retry-After: 1)
// without running the handler. Connections beyond maxConnections are closed at once (counted).
// Each connection has deadlines: the TLS handshake and the whole request header within
// headerTimeout (counted from the request's first byte; a new connection from accept), the body
// within bodyTimeout, the next request's first byte within idleTimeout, each answer within
// writeTimeout; a client that misses one is closed and nobody else notices. Limits: header bytes
// (431), header lines (431), request target length (414), body bytes for Content-Length and
// chunked alike (413), body bytes held by all connections together (503). Error answers are {"error_code": N, "message": "..."} and never echo the
// request. Every accepted socket gets TCP_NODELAY; listeners set SO_REUSEADDR, not SO_REUSEPORT.
//
// Threading: start()/stop() belong to the owner (not concurrent with each other). The handler is
// called on the handler threads, concurrently; it must be thread-safe. stop() stops accepting,
// closes connections that wait for (or are reading) a request, lets handlers in flight finish and
// their answers be written (bounded by writeTimeout), then joins every thread. Failure: start()
// returns Unavailable when a port cannot be bound and InvalidArgument naming the worker key when
// a listener or TLS setting is unusable; nothing throws out of this class.
#pragma once

#include <optional>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/result.h"
#include "ferry/status.h"

namespace ferry::rest::http {

// Case-insensitive header name order.
struct HeaderLess {
  bool operator()(const std::string& a, const std::string& b) const;
};

// One request as the handler sees it. Member names follow what the route handlers use.
struct Request {
  std::string method;   // as sent ("GET", "POST", ...)
  std::string target;   // raw request target, query included, not decoded
  std::string path;     // target without the query, not decoded
  int version = 11;     // 10 or 11
  std::string body;
  std::multimap<std::string, std::string, HeaderLess> headers;
  std::multimap<std::string, std::string> params;  // decoded query parameters
  std::string remote_addr;  // the peer's IP address
  bool is_tls = false;
  std::string peer_name;  // the verified client certificate's subject CN; empty otherwise

  bool has_header(const std::string& name) const { return headers.count(name) > 0; }
  std::string get_header_value(const std::string& name, std::size_t i = 0) const;
  bool has_param(const std::string& name) const { return params.count(name) > 0; }
  std::string get_param_value(const std::string& name, std::size_t i = 0) const;
  std::size_t get_param_value_count(const std::string& name) const { return params.count(name); }
};

// A response that goes on after its head, for server-sent events (text/event-stream): the
// connection's I/O thread calls next() every `interval` and writes what it returns. next() runs on
// the I/O thread and must return at once (no waiting, no I/O): "" sends nothing this time, nullopt
// ends the response. The response also ends when the client closes the connection (noticed at
// once: the connection is read meanwhile), when a write does not finish within the write
// timeout, after `maxDuration`, or when the server stops; the object is destroyed then, so its
// destructor releases what it holds. Every `keepAliveEvery` ticks without data a comment line is
// sent, so proxies keep the connection. The connection is closed after it (Connection: close).
class EventStream {
 public:
  virtual ~EventStream() = default;
  virtual std::optional<std::string> next() = 0;
  std::chrono::milliseconds interval{500};
  std::chrono::milliseconds maxDuration{std::chrono::minutes(30)};
  int keepAliveEvery = 20;
};

struct Response {
  int status = -1;  // -1: the handler set nothing (answered 500)
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Set: the body is this stream's output instead (see EventStream); `body` is sent first.
  std::shared_ptr<EventStream> stream;

  void set_content(std::string content, std::string contentType);
  // Replaces a header of the same name. CR and LF are removed from the value (no injection).
  void set_header(const std::string& name, std::string value);
  // Adds one more header line even when one of the same name exists (WWW-Authenticate may carry
  // several challenges, one per line). CR and LF are removed as by set_header.
  void add_header(const std::string& name, std::string value);
  void set_redirect(const std::string& url, int code = 302);
  std::string get_header_value(const std::string& name) const;
};

using Handler = std::function<void(const Request&, Response&)>;

// A listener as Kafka Connect writes it: http://host:port or https://host:port (an empty host
// means every interface).
struct Listener {
  bool tls = false;
  std::string host;
  int port = 0;  // 0 picks a free port
};
// Parses one `listeners` entry; InvalidArgument naming the entry otherwise.
Result<Listener> parseListener(std::string_view text);

// listeners.https.ssl.* (Kafka Connect's names), PEM files only.
struct TlsOptions {
  std::string keystoreLocation;    // private key + certificate chain, PEM
  std::string keystoreType = "PEM";
  std::string keyPassword;         // for an encrypted private key
  std::string truststoreLocation;  // PEM CA bundle that client certificates must chain to
  std::string clientAuthentication = "none";  // none | requested | required
  std::vector<std::string> enabledProtocols{"TLSv1.2", "TLSv1.3"};
};

struct Limits {
  std::size_t maxHeaderBytes = 64 * 1024;  // whole header block incl. request line -> 431
  std::size_t maxHeaderCount = 100;        // header lines -> 431
  std::size_t maxTargetBytes = 8 * 1024;   // request target -> 414
  std::uint64_t maxBodyBytes = 8 * 1024 * 1024;  // Content-Length or chunked total -> 413
};

struct ServerOptions {
  std::vector<Listener> listeners;
  TlsOptions tls;  // used by tls listeners
  Limits limits;
  int handlerThreads = 8;
  std::size_t queueCapacity = 64;     // requests waiting for a handler thread; beyond: 503
  std::size_t maxConnections = 1024;  // open connections; beyond: closed at accept
  // Body bytes all connections may hold at once (declared lengths; a chunked body counts as
  // limits.maxBodyBytes until done); a request that would pass it is answered 503 unread.
  std::uint64_t maxBodyBytesInFlight = 256ull << 20;
  std::chrono::milliseconds headerTimeout{10000};
  std::chrono::milliseconds bodyTimeout{30000};
  std::chrono::milliseconds idleTimeout{30000};
  std::chrono::milliseconds writeTimeout{30000};
};

// What the server has refused so far (monotonic counters, readable from any thread).
struct ServerStats {
  std::uint64_t connectionsRejected = 0;  // over maxConnections
  std::uint64_t requestsRejected = 0;     // 503: the queue was full or the body budget spent
  std::uint64_t timeouts = 0;             // connections closed for a missed deadline
  std::uint64_t tlsReloads = 0;           // keystore reloads that took effect
  std::uint64_t openConnections = 0;      // now
  std::uint64_t bodyBytesInFlight = 0;    // now, reserved against maxBodyBytesInFlight
};

// The result of reading requests out of a byte stream without a socket (what the I/O path does
// with each connection's bytes); used by the fuzz target and tests.
struct ParsedRequest {
  int errorStatus = 0;  // 0: a complete request; otherwise the status the server answers
  std::string errorMessage;
  Request request;
  bool keepAlive = false;
};
// Parses as many requests as `bytes` holds, in order, stopping after the first error or at an
// incomplete one (which is not reported).
std::vector<ParsedRequest> parseRequestStream(std::string_view bytes, const Limits& limits);

// Serialises an answer (HEAD: headers only, Content-Length of the body that GET would send).
std::string serializeResponse(const Response& res, const std::string& requestMethod,
                              bool keepAlive, int requestVersion);

// The error body every failure answer uses.
std::string errorBody(int status, std::string_view message);

// Serves files under `root` for request paths below `urlPrefix` (e.g. "/ui"): GET and HEAD only
// (else 405), confined to root after resolving symlinks and "..", no listings (a folder serves
// its index.html or 404), content type by extension. Returns false when the path is not below
// urlPrefix (the caller routes it elsewhere).
bool serveStatic(const std::string& root, std::string_view urlPrefix, const Request& req,
                 Response& res);

class HttpServer {
 public:
  HttpServer(ServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  Status start();
  void stop();  // idempotent
  // Bound ports, one per listener in order (the chosen ones for port 0); empty before start().
  std::vector<int> ports() const;
  ServerStats stats() const;

  class Impl;  // http_server.cc only

 private:
  std::unique_ptr<Impl> impl_;
};

// %XX decoding (a malformed escape stays as it is); with plusIsSpace '+' is a space (query
// components). The routes decode path segments with it one by one, after splitting.
std::string percentDecode(std::string_view s, bool plusIsSpace);

}  // namespace ferry::rest::http
