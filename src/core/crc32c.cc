#include "core/crc32c.h"

#include <array>

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

}  // namespace

std::uint32_t crc32c(std::string_view data, std::uint32_t crc) noexcept {
  crc = ~crc;
  for (unsigned char c : data) crc = kTable[(crc ^ c) & 0xff] ^ (crc >> 8);
  return ~crc;
}

}  // namespace ferry::core
