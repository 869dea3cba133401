// The worker's HTTP server: Kafka Connect-compatible resources, RocketMQ Connect paths, /health,
// /metrics and /admin/loggers (see README.md for every route and status code).
//
// Every request is answered by calling the Herder, which is thread-safe and returns promptly, so
// REST never waits for task I/O. Errors always read {"error_code": <status>, "message": "..."}.
//
// Transport: http::HttpServer (http_server.h) — one I/O thread, kRequestThreads handler threads
// behind a bounded queue, per-connection deadlines and size limits, optional TLS.
//
// Threading: start() and stop() are called by the owner (the app's main thread), not
// concurrently. start() binds every listener and returns once the server accepts connections;
// routes run on the handler threads. stop() (also run by the destructor) stops accepting, lets
// requests in flight finish and joins every thread. The Herder must outlive the RestServer.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "control/herder.h"
#include "ferry/status.h"
#include "rest/http_server.h"

namespace ferry::rest {

struct RestOptions {
  std::string host = "127.0.0.1";
  int port = 8082;  // 0 picks a free port (see RestServer::port())
  std::string version;
  std::string commit;
  std::string clusterId = "standalone";
  std::string webRoot;  // optional: static files served under /ui/ (GET / from a browser redirects)
  // Kafka Connect's `listeners` (http://host:port, https://host:port); empty: http://host:port.
  std::vector<std::string> listeners;
  http::TlsOptions tls;  // listeners.https.ssl.*
  http::Limits limits;
  std::size_t maxConnections = 1024;     // rest.max.connections
  std::size_t requestQueueSize = 64;     // rest.request.queue.size
  std::chrono::milliseconds headerTimeout{10000};  // rest.request.header.timeout.ms
  std::chrono::milliseconds bodyTimeout{30000};    // rest.request.body.timeout.ms
  std::chrono::milliseconds idleTimeout{30000};    // rest.keepalive.idle.timeout.ms
  std::chrono::milliseconds writeTimeout{30000};   // rest.response.write.timeout.ms
};

class RestServer {
 public:
  static constexpr int kRequestThreads = 8;

  RestServer(control::Herder& herder, RestOptions options);
  ~RestServer();
  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Binds and starts serving. Unavailable naming host:port when the address cannot be bound;
  // InvalidArgument naming the worker key when a listener or TLS setting is unusable;
  // FailedPrecondition when already started.
  Status start();
  // Stops serving and joins the threads. Idempotent.
  void stop();
  // The first listener's bound port (the chosen one when its port is 0); 0 before start().
  int port() const;
  // Every listener's bound port, in the order of options.listeners.
  std::vector<int> ports() const;
  // The transport's refusal counters (connections over the cap, 503s, deadlines).
  http::ServerStats transportStats() const;

 private:
  class Routes;

  control::Herder& herder_;
  RestOptions options_;
  std::unique_ptr<Routes> routes_;
  std::unique_ptr<http::HttpServer> server_;
  std::vector<int> ports_;
};

}  // namespace ferry::rest
