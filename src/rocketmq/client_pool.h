// One RocketmqClient per (NameServers, timeouts, header encoding, ACL credentials) in the
// process, shared by everything that only sends requests — producers, admin calls — so the tasks
// of a worker share one connection per broker address.
//
// Consumers do not take their client from here: the broker keys the members of a consumer group
// by connection (one client id per channel), so two members of one group (two tasks of one
// connector) must not share a connection; each PullConsumer keeps its own client.
//
// Thread-safety: sharedClient() is thread-safe. A client lives while someone holds it; the last
// holder destroys it (stopping its io thread) — never from the client's own io thread.
#pragma once

#include <memory>

#include "ferry/result.h"
#include "rocketmq/client.h"

namespace ferry::rocketmq {

// The shared client for `options` (instanceName/clientId are ignored: the pool names its
// clients), created on first use.
Result<std::shared_ptr<RocketmqClient>> sharedClient(const ClientOptions& options);

// Clients alive in the pool now (for tests).
std::size_t sharedClientCount();

}  // namespace ferry::rocketmq
