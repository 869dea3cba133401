// Averaged allocation (see allocation.h).
#include "core/allocation.h"

#include <algorithm>

namespace ferry::core {

std::map<std::string, std::vector<TopicQueue>> allocateAveragely(std::vector<std::string> members,
                                                                  std::vector<TopicQueue> queues) {
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  std::sort(queues.begin(), queues.end());
  queues.erase(std::unique(queues.begin(), queues.end()), queues.end());
  std::map<std::string, std::vector<TopicQueue>> out;
  if (members.empty()) return out;
  const std::size_t m = members.size();
  const std::size_t base = queues.size() / m;
  const std::size_t extra = queues.size() % m;
  std::size_t next = 0;
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t n = base + (i < extra ? 1 : 0);
    auto& mine = out[members[i]];
    mine.assign(queues.begin() + static_cast<std::ptrdiff_t>(next), queues.begin() + static_cast<std::ptrdiff_t>(next + n));
    next += n;
  }
  return out;
}

}  // namespace ferry::core
