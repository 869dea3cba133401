// Client: Redis standalone or Redis Cluster behind one interface, for one owner thread.
//
// Standalone: one connection to the first seed that answers. Cluster: the slot map comes from
// CLUSTER SLOTS of any seed; a command goes to the master of its key's slot over a connection per
// master (opened when first needed). A MOVED answer updates that slot and re-sends the command
// there (and the whole map is read again before the next call); ASK re-sends it once to the named
// node behind ASKING; TRYAGAIN and CLUSTERDOWN are retried after a short pause, a few times. A
// connection that fails is dropped and opened again by the next call.
//
// Pipelines: commands are grouped by node, written to every node before any reply is read, and
// their replies returned in the callers' order; redirections are then followed one command at a
// time. An I/O failure fails the whole pipeline with Unavailable: the caller does not know which
// of its commands were done, and re-sends them (at-least-once).
//
// Thread-safety: none; one owner thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ferry/result.h"
#include "redis/connection.h"

namespace ferry::redis {

struct ClientOptions {
  std::vector<std::pair<std::string, std::uint16_t>> seeds;  // host, port
  bool cluster = false;
  ConnectionOptions connection;  // host and port are taken from seeds / the slot map
  int maxRedirects = 5;
};

struct Command {
  std::vector<std::string> args;
  std::string key;  // routes the command in a cluster; empty: any node
};

class Client {
 public:
  // Connects to the first seed that answers (and reads the slot map in a cluster).
  static Result<std::unique_ptr<Client>> connect(ClientOptions options);

  Result<Reply> command(const Command& cmd, std::chrono::milliseconds extra = std::chrono::milliseconds(0));
  Result<std::vector<Reply>> pipeline(const std::vector<Command>& commands,
                                      std::chrono::milliseconds extra = std::chrono::milliseconds(0));
  // A new connection of its own to the node serving `key` (or any node when empty), e.g. for
  // SUBSCRIBE, which takes a connection over.
  Result<std::unique_ptr<Connection>> dedicated(const std::string& key);
  // Standalone only: the server's connection (opened again when it broke), for a caller that
  // writes a pipeline now and reads its replies later (RedisSink keeps one pipeline in flight).
  // FailedPrecondition in a cluster.
  Result<Connection*> server();
  bool cluster() const noexcept { return options_.cluster; }
  // The cluster's masters ("host:port"), or the one server.
  std::vector<std::string> nodes() const;
  // Re-reads the slot map now (cluster; a no-op otherwise).
  Status refreshSlots();
  const ClientOptions& options() const noexcept { return options_; }

 private:
  explicit Client(ClientOptions options) : options_(std::move(options)) {}
  std::string nodeFor(const std::string& key) const;
  Result<Connection*> connectionTo(const std::string& address);
  Result<Reply> redirected(const Command& cmd, Reply reply, std::chrono::milliseconds extra);

  ClientOptions options_;
  std::map<std::string, std::unique_ptr<Connection>> connections_;  // by "host:port"
  std::vector<std::string> slots_;  // cluster: master address per slot (16384), "" unknown
  std::string standalone_;          // standalone: the server's address
  bool refreshWanted_ = false;
};

}  // namespace ferry::redis
