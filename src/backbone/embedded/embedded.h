// The embedded backbone: a durable local log for the standalone worker (see ../README.md).
//
// Thread-safety: the Backbone, its Admin and Producers are thread-safe; a Consumer belongs to
// one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "backbone/backbone.h"

namespace ferry::backbone {

enum class FsyncPolicy { kAlways, kInterval, kNever };  // "always" | "interval" | "never"

struct EmbeddedOptions {
  std::string dir;                         // created if missing
  std::int64_t segmentBytes = 64ll << 20;  // roll a new segment file past this size
  FsyncPolicy fsync = FsyncPolicy::kAlways;  // see ../README.md: what each policy can lose
  std::int64_t fsyncIntervalMs = 1000;        // interval: the sync period; every policy: the checkpoint period
  std::int64_t maxRecordBytes = 16ll << 20;   // a larger record is refused at send
  std::int64_t retentionBytes = -1;                    // per queue; -1 = unlimited
  std::int64_t retentionMs = 7ll * 24 * 3600 * 1000;   // -1 = unlimited
  std::int32_t defaultQueues = 4;                      // for topics auto-created by a send
  bool autoCreateTopics = true;
};

std::optional<FsyncPolicy> parseFsyncPolicy(std::string_view s);
Result<std::unique_ptr<Backbone>> openEmbeddedBackbone(const EmbeddedOptions& options);

}  // namespace ferry::backbone
