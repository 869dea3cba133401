// CRC32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of the embedded log's frames
// and of the state files (stores, group offsets). A table-driven function of a few lines: no
// Debian package offers it as a small library worth a dependency.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string_view>

namespace ferry::core {

// `crc` continues an earlier checksum (0 to start).
std::uint32_t crc32c(std::string_view data, std::uint32_t crc = 0) noexcept;

}  // namespace ferry::core
