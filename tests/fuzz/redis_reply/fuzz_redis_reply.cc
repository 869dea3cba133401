// Fuzz target: Redis replies as a hostile server would send them (redis/resp.h), fed whole and
// in two pieces; both ways must give the same replies, within the reader's limits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "redis/resp.h"

namespace {

std::vector<std::string> drain(ferry::redis::ReplyReader& r) {
  std::vector<std::string> out;
  for (int i = 0; i < 1000; ++i) {
    auto next = r.next();
    if (!next.isOk()) {
      out.push_back("error");
      break;
    }
    if (!*next) break;
    out.push_back((*next)->describe());
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using ferry::redis::ReplyReader;
  const ReplyReader::Limits limits{1 << 16, 1 << 12};
  const char* bytes = reinterpret_cast<const char*>(data);
  ReplyReader whole(limits);
  std::vector<std::string> a;
  if (whole.feed(bytes, size).isOk()) a = drain(whole);
  else a.push_back("error");
  ReplyReader split(limits);
  std::vector<std::string> b;
  const std::size_t mid = size / 2;
  if (!split.feed(bytes, mid).isOk()) {
    b.push_back("error");
  } else {
    b = drain(split);
    if (b.empty() || b.back() != "error") {
      if (split.feed(bytes + mid, size - mid).isOk()) {
        auto rest = drain(split);
        b.insert(b.end(), rest.begin(), rest.end());
      } else {
        b.push_back("error");
      }
    }
  }
  // Without errors, the same replies whichever way the bytes arrived.
  const bool aErr = !a.empty() && a.back() == "error";
  const bool bErr = !b.empty() && b.back() == "error";
  if (!aErr && !bErr && a != b) std::abort();
  (void)ferry::redis::keySlot(std::string_view(bytes, size));
  return 0;
}
