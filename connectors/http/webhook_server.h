// A small asynchronous HTTP/1.1 server (Boost.Beast over Asio, TLS through OpenSSL) for
// HttpSource's webhook mode. Unlike the worker's REST transport (src/rest/http_server.h, which a
// connector may not use: it sits above the runtime) a request is answered whenever its handler
// calls Reply, from any thread: an answer that waits until the request's records are safe holds
// no thread, only its connection.
//
// Per connection: the header must arrive within headerTimeout of the request's first byte (or of
// the accept), the body within bodyTimeout, the next request within idleTimeout, each answer be
// written within writeTimeout; a connection that misses one is closed. Beyond maxConnections a
// new connection is closed at once. A Content-Length above maxBodyBytes (or a chunked body that
// grows past it) is answered 413 without reading it; `Expect: 100-continue` is answered after
// the header was checked. After an answer that closes the connection the server stops sending and
// reads what the client still sends for up to a second (a lingering close), so the client reads
// the answer instead of a reset.
//
// Threading: one I/O thread ("http-src-io") runs every accept, read and write. `checkHeader` and
// `handle` run on it and must not block. Reply may be called from any thread, exactly once.
// start()/stop() belong to the owner. stop() closes the listener, gives answers being written up
// to a second, then stops the I/O thread and joins it; a Reply called later is dropped (its
// connection closes).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ferry/result.h"

namespace ferry::connectors::httpc {

struct WebhookRequest {
  std::string method;
  std::string target;  // as sent, query included
  std::string path;    // target without the query
  std::map<std::string, std::string> headers;  // lower-case names; a repeated header: the last one
  std::string body;
  std::string remoteAddr;
  const std::string* header(const std::string& lowerName) const {
    auto it = headers.find(lowerName);
    return it == headers.end() ? nullptr : &it->second;
  }
};

struct WebhookAnswer {
  int status = 200;
  std::string body;
  std::string contentType = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;  // close the connection after this answer
};

using Reply = std::function<void(WebhookAnswer)>;

struct WebhookServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;          // 0: a free port (see port())
  std::string certPem;   // both set: TLS
  std::string keyPem;
  std::uint64_t maxBodyBytes = 10u << 20;
  std::size_t maxConnections = 1024;
  std::chrono::milliseconds headerTimeout{10000};
  std::chrono::milliseconds bodyTimeout{30000};
  std::chrono::milliseconds idleTimeout{60000};
  std::chrono::milliseconds writeTimeout{30000};
  // Called with the request's head (body empty) before the body is read: an answer refuses the
  // request at once (401, 404, 405, ...), nullopt lets it go on.
  std::function<std::optional<WebhookAnswer>(const WebhookRequest&)> checkHeader;
  // Called with the whole request; must call the Reply once, now or later.
  std::function<void(WebhookRequest&&, Reply)> handle;
};

class WebhookServer {
 public:
  explicit WebhookServer(WebhookServerOptions options);
  ~WebhookServer();
  WebhookServer(const WebhookServer&) = delete;
  WebhookServer& operator=(const WebhookServer&) = delete;

  // Unavailable when the address cannot be bound; InvalidArgument for a bad host or TLS material.
  Status start();
  void stop();  // idempotent
  int port() const noexcept { return port_; }

  struct State;  // webhook_server.cc

 private:
  WebhookServerOptions options_;
  std::shared_ptr<State> state_;
  int port_ = 0;
};

}  // namespace ferry::connectors::httpc
