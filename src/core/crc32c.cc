#include "core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ferry::core {
namespace {

constexpr std::array<std::uint32_t, 256> makeTable() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = makeTable();

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32cSse42(std::string_view data, std::uint32_t crc) noexcept {
  const char* p = data.data();
  std::size_t n = data.size();
  std::uint64_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
  }
  auto c32 = static_cast<std::uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = _mm_crc32_u8(c32, static_cast<unsigned char>(*p));
  return ~c32;
}

// Asked once (before main, or false until then: a checksum taken earlier uses the table, the same
// value).
const bool kHaveSse42 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
}();
#endif

}  // namespace

std::uint32_t crc32cPortable(std::string_view data, std::uint32_t crc) noexcept {
  crc = ~crc;
  for (unsigned char c : data) crc = kTable[(crc ^ c) & 0xff] ^ (crc >> 8);
  return ~crc;
}

std::uint32_t crc32c(std::string_view data, std::uint32_t crc) noexcept {
#if defined(__x86_64__)
  if (kHaveSse42) return crc32cSse42(data, crc);
#endif
  return crc32cPortable(data, crc);
}

}  // namespace ferry::core
