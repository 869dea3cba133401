// Cluster events and snapshots come from the cluster log, which any client of the backbone can
// write: decode and fromSnapshot must refuse what is not theirs, never crash, throw or recurse
// without bound. Invariants: an event decoded and encoded decodes and encodes to the same bytes;
// a snapshot read and written reads and writes to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cluster/events.h"
#include "cluster/state_machine.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry::cluster;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto e = decode(bytes); e.isOk()) {
    const std::string once = encode(*e);
    auto again = decode(once);
    if (!again.isOk()) std::abort();
    if (encode(*again) != once) std::abort();
  }
  if (auto s = ClusterState::fromSnapshot(bytes); s.isOk()) {
    const std::string once = s->toSnapshot();
    auto again = ClusterState::fromSnapshot(once);
    if (!again.isOk()) std::abort();
    if (again->toSnapshot() != once) std::abort();
  }
  return 0;
}
