// Position records are read from a topic (Kafka Connect's offsets topic format) that other
// workers and tools write. The same bytes as a key and as a value: decoded or refused, never a
// crash. Invariants: decode(encode(decode(x))) == decode(x); and names and values taken from
// the input (split at NUL bytes) encode without throwing and, when valid UTF-8, decode back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/log_position_store.h"

namespace {

bool validUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    std::uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using ferry::StringMap;
  using ferry::runtime::LogPositionStore;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);

  if (auto key = LogPositionStore::decodeKey(bytes)) {
    auto again = LogPositionStore::decodeKey(LogPositionStore::encodeKey(key->first, key->second));
    if (!again || *again != *key) std::abort();
  }
  if (auto value = LogPositionStore::decodeValue(bytes)) {
    auto again = LogPositionStore::decodeValue(LogPositionStore::encodeValue(*value));
    if (!again || *again != *value) std::abort();
  }

  // connector \0 k1 \0 v1 \0 k2 \0 v2 ...
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (std::size_t i = 0; i <= bytes.size(); ++i)
    if (i == bytes.size() || bytes[i] == '\0') {
      parts.emplace_back(bytes.substr(from, i - from));
      from = i + 1;
    }
  StringMap map;
  for (std::size_t i = 1; i + 1 < parts.size(); i += 2) map[parts[i]] = parts[i + 1];
  const std::string key = LogPositionStore::encodeKey(parts[0], map);
  const std::string value = LogPositionStore::encodeValue(map);
  bool valid = validUtf8(parts[0]);
  for (const auto& [k, v] : map) valid = valid && validUtf8(k) && validUtf8(v);
  if (valid) {
    auto k = LogPositionStore::decodeKey(key);
    if (!k || k->first != parts[0] || k->second != map) std::abort();
    auto v = LogPositionStore::decodeValue(value);
    if (!v || *v != map) std::abort();
  }
  return 0;
}
