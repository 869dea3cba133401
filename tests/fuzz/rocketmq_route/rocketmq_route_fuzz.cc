// Topic route and cluster info bodies (fastjson's dialect: bare integer keys, objects as keys,
// single quotes) as a name server sends them: parsed or refused, never a crash or a recursion
// without bound. Invariants: parseFastjson's strict text parses to the same document again
// (normalising is idempotent); a parsed route answers its queue questions.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rocketmq/fastjson.h"
#include "rocketmq/routes.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry::rocketmq;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  if (auto strict = normalizeFastjson(body); strict.isOk()) {
    auto again = normalizeFastjson(*strict);
    if (!again.isOk()) std::abort();
    auto a = parseFastjson(*strict);
    auto b = parseFastjson(*again);
    if (a.isOk() != b.isOk()) std::abort();
    if (a.isOk() && *a != *b && *a == *a) std::abort();
  }
  if (auto route = parseTopicRoute("TopicTest", body); route.isOk()) {
    for (const auto& q : route->publishQueues()) (void)route->masterAddress(q.brokerName);
    (void)route->subscribeQueues();
  }
  (void)parseClusterInfo(body);
  return 0;
}
