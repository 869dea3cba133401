// The rocketmq backbone: source tasks write into RocketMQ topics, each sink connector reads
// through its own consumer group; offsets live in the broker (see README.md, "Backbone").
//
// Thread-safety: as backbone.h says (Backbone, Admin, Producer thread-safe; a Consumer belongs to
// one thread).
#pragma once

#include <memory>
#include <string>

#include "backbone/backbone.h"

namespace ferry::backbone {

struct RocketmqBackboneOptions {
  std::string namesrv = "127.0.0.1:9876";  // "host:port;host:port"
  std::string cluster;                     // where topics are created; empty = every cluster
  std::int32_t defaultQueues = 4;
  std::int64_t requestTimeoutMs = 3000;
  // Unacknowledged sends per producer (one per source task); send() blocks while this many are
  // outstanding. <= 0: no cap. See README.md ("Delivery") for why and the figures.
  std::int64_t maxInflight = 1024;
  std::string accessKey;  // ACL: every request signed when set
  std::string secretKey;
};

Result<std::unique_ptr<Backbone>> openRocketmqBackbone(const RocketmqBackboneOptions& options);

// RocketMQ allows [%|a-zA-Z0-9_-] in topic and group names: other bytes become '_'.
std::string rocketmqSafeName(const std::string& name);

}  // namespace ferry::backbone
