// CRC32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of the embedded log's frames
// and of the state files (stores, group offsets). Our own few lines: no Debian package offers it
// as a small C or C++ library. On x86-64 with SSE4.2 (every x86-64 server of the last decade) the
// CPU's crc32 instruction does it, 8 bytes at a time; elsewhere a byte table. The embedded log
// checksums every frame it writes and reads, so this is on every record's path (the table version
// was a fifth of a JDBC source's CPU in a profile of bench/run --scenarios jdbc).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace ferry::core {

// `crc` continues an earlier checksum (0 to start).
std::uint32_t crc32c(std::string_view data, std::uint32_t crc = 0) noexcept;

// The byte-table version, whatever the CPU (tests compare the two).
std::uint32_t crc32cPortable(std::string_view data, std::uint32_t crc = 0) noexcept;

}  // namespace ferry::core
