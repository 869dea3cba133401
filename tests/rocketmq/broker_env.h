// Where the broker tests find their cluster: scripts/services/rocketmq's cluster A (and S for ACL)
// by default; the rocketmq_compat label points the same tests at the 4.9.x and 5.5.x clusters.
#pragma once

#include <cstdlib>
#include <string>

namespace ferry::rocketmq::testenv {

inline std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// The cluster (and broker) name of the plain cluster: topics are created there.
inline std::string cluster() { return envOr("FERRY_ROCKETMQ_CLUSTER", "ferry-a"); }
// The cluster (and broker) name of the secured cluster.
inline std::string secureCluster() { return envOr("FERRY_ROCKETMQ_SECURE_CLUSTER", "ferry-s"); }

}  // namespace ferry::rocketmq::testenv
