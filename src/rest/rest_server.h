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
#include <condition_variable>
#include <mutex>
#include <thread>
#include <span>
#include <vector>

#include "control/herder.h"
#include "ferry/status.h"
#include "rest/console.h"
#include "rest/metrics_history.h"
#include "rest/http_server.h"
#include "rest/request_policy.h"

namespace ferry::rest {

struct RestOptions {
  std::string host = "127.0.0.1";
  int port = 8082;  // 0 picks a free port (see RestServer::port())
  std::string version;
  std::string commit;
  std::string clusterId = "standalone";
  std::string mode = "standalone";  // or "distributed": GET / says which
  // How often the per-connector history (GET /connectors/{name}/metrics/history) is sampled, and
  // how many samples it keeps (metrics_history.h).
  std::chrono::milliseconds historyInterval{5000};
  std::size_t historyPoints = 120;
  std::string webRoot;  // optional: static files served under /ui/ instead of `console` (development)
  // The web console compiled into the binary (web/console_assets.h), served under /ui/; empty in a
  // build without it, and then /ui/ answers 404 with `consoleMissing` (why it is not included).
  std::span<const ConsoleAsset> console;
  std::string consoleMissing = "this program was built without it";
  // RocketMQ Connect's dialect with writes (worker key rest.rocketmq.compat.enabled): GET-verb
  // stop/pause/resume/restart, bulk */all, POST /connectors/{name}, /plugin/config[/validate].
  bool rocketmqCompat = false;
  // Authentication, roles, Host/CORS/Content-Type checks (request_policy.h); its bindHosts are
  // the listeners' hosts and clientCertRequired follows listeners.https.ssl.client.authentication
  // (listenerHosts(), clientCertsRequired()).
  PolicySettings security;
  // Kafka Connect's `listeners` (http://host:port, https://host:port); empty: http://host:port.
  std::vector<std::string> listeners;
  // The transport's settings: tls (listeners.https.ssl.*), limits, maxConnections
  // (rest.max.connections), queueCapacity (rest.request.queue.size) and the deadlines
  // (rest.request.header/body.timeout.ms, rest.keepalive.idle.timeout.ms,
  // rest.response.write.timeout.ms). start() fills its listeners from `listeners` (or host/port)
  // and its handlerThreads with kRequestThreads.
  http::ServerOptions transport;
};

// One row of the route table: "/connectors/*/pause" and the least role that may call it.
struct RouteSpec {
  std::string method;
  std::string pattern;
  Role role;
};

// The hosts the REST listeners bind (options.listeners, else options.host).
std::vector<std::string> listenerHosts(const RestOptions& options);
// True when an https listener requires client certificates (then authentication is on).
bool clientCertsRequired(const RestOptions& options);

class RestServer {
 public:
  static constexpr int kRequestThreads = 8;

  RestServer(control::Herder& herder, RestOptions options);
  ~RestServer();
  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Binds and starts serving. Unavailable naming host:port when the address cannot be bound;
  // FailedPrecondition when already started or when the listener policy refuses the address
  // (checkListenerPolicy: a non-loopback bind without authentication); InvalidArgument naming the
  // worker key when a listener, TLS setting or credential file is unusable. The policy checks run
  // before binding.
  Status start();
  // Stops serving and joins the threads. Idempotent.
  void stop();
  // The first listener's bound port (the chosen one when its port is 0); 0 before start().
  int port() const;
  // Every route with its method and role (the auth matrix and README check use it).
  std::vector<RouteSpec> routeTable() const;
  // Every listener's bound port, in the order of options.listeners.
  std::vector<int> ports() const;
  // The transport's refusal counters (connections over the cap, 503s, deadlines).
  http::ServerStats transportStats() const;

 private:
  class Routes;

  control::Herder& herder_;
  RestOptions options_;
  std::unique_ptr<RequestPolicy> policy_;
  std::unique_ptr<Routes> routes_;
  std::unique_ptr<http::HttpServer> server_;
  std::vector<int> ports_;
  std::unique_ptr<MetricsHistory> history_;
  // Samples the herder's metrics into history_ every options_.historyInterval until stop().
  std::thread sampler_;
  std::mutex samplerMu_;
  std::condition_variable samplerWake_;
  bool samplerStop_ = false;
};

}  // namespace ferry::rest
