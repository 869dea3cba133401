// The worker's HTTP server: Kafka Connect-compatible resources, RocketMQ Connect paths, /health,
// /metrics and /admin/loggers (see README.md for every route and status code).
//
// Every request is answered by calling the Herder, which is thread-safe and returns promptly, so
// REST never waits for task I/O. Errors always read {"error_code": <status>, "message": "..."}.
//
// Threading: start() and stop() are called by the owner (the app's main thread), not
// concurrently. start() binds the socket, starts the listener thread and returns once the server
// accepts connections; requests are served by a pool of kRequestThreads threads owned by the
// listener. stop() (also run by the destructor) stops accepting, lets requests in flight finish
// and joins every thread. The Herder must outlive the RestServer.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "control/herder.h"
#include "ferry/status.h"
#include "rest/request_policy.h"

namespace httplib {
class Server;
}

namespace ferry::rest {

struct RestOptions {
  std::string host = "127.0.0.1";
  int port = 8082;  // 0 picks a free port (see RestServer::port())
  std::string version;
  std::string commit;
  std::string clusterId = "standalone";
  std::string webRoot;  // optional: static files served under /ui/ (GET / from a browser redirects)
  // RocketMQ Connect's dialect with writes (worker key rest.rocketmq.compat.enabled): GET-verb
  // stop/pause/resume/restart, bulk */all, POST /connectors/{name}, /plugin/config[/validate].
  bool rocketmqCompat = false;
  // Authentication, roles, Host/CORS/Content-Type checks (request_policy.h); bindHost is `host`.
  PolicySettings security;
};

// One row of the route table: "/connectors/*/pause" and the least role that may call it.
struct RouteSpec {
  std::string method;
  std::string pattern;
  Role role;
};

class RestServer {
 public:
  static constexpr int kRequestThreads = 8;

  RestServer(control::Herder& herder, RestOptions options);
  ~RestServer();
  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Binds and starts serving. Unavailable naming host:port when the address cannot be bound;
  // FailedPrecondition when already started or when the listener policy refuses the address
  // (checkListenerPolicy: a non-loopback bind without authentication); InvalidArgument when a
  // credential file cannot be parsed. The policy checks run before binding.
  Status start();
  // Stops serving and joins the threads. Idempotent.
  void stop();
  // The bound port (the chosen one when options.port is 0); 0 before start().
  int port() const;
  // Every route with its method and role (the auth matrix and README check use it).
  std::vector<RouteSpec> routeTable() const;

 private:
  class Routes;

  control::Herder& herder_;
  RestOptions options_;
  std::unique_ptr<RequestPolicy> policy_;
  std::unique_ptr<Routes> routes_;
  std::unique_ptr<httplib::Server> server_;
  std::thread listener_;
  std::atomic<int> port_{0};
};

}  // namespace ferry::rest
