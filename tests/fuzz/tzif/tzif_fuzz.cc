// Any bytes as a zone file: refused or read; a zone read answers offsets within a day and maps
// wall-clock times to instants whose offset is one of its own, for instants across its range.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/timezone.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto z = ferry::core::TimeZone::fromTzif("fuzz", std::string_view(reinterpret_cast<const char*>(data), size));
  if (!z.isOk()) return 0;
  for (std::int64_t t = -5000000000LL; t < 5000000000LL; t += 123456789) {
    const std::int32_t off = (*z)->offsetAt(t);
    if (off < -26 * 3600 || off > 26 * 3600) std::abort();
    const std::int64_t u = (*z)->utcOfLocal(t);
    if (u < t - 27 * 3600 || u > t + 27 * 3600) std::abort();
  }
  return 0;
}
