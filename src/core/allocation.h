// Allocation of queues to the members of a consumer group: RocketMQ's "averagely" strategy.
// Members sorted by id, queues by (topic, queue); member i gets a contiguous share and the first
// n % m members one extra. Pure function, shared by the embedded backbone and the RocketMQ consumer.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ferry/record.h"

namespace ferry::core {

std::map<std::string, std::vector<TopicQueue>> allocateAveragely(std::vector<std::string> members,
                                                                  std::vector<TopicQueue> queues);

}  // namespace ferry::core
