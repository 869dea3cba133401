// The embedded log's record format (see segment_codec.h).
#include "backbone/embedded/segment_codec.h"

#include <cstring>

namespace ferry::backbone::segment {
namespace {

std::uint32_t getU32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
std::int64_t getI64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return static_cast<std::int64_t>(v);
}

// A bounds-checked reader over one payload.
struct Reader {
  const char* p;
  std::size_t left;
  bool ok = true;
  std::int64_t i64() {
    if (left < 8) return ok = false, 0;
    auto v = getI64(p);
    p += 8;
    left -= 8;
    return v;
  }
  std::int32_t i32() {
    if (left < 4) return ok = false, 0;
    auto v = static_cast<std::int32_t>(getU32(p));
    p += 4;
    left -= 4;
    return v;
  }
  Bytes bytes(bool nullable) {
    const std::int32_t n = i32();
    if (!ok) return {};
    if (n == -1 && nullable) return Bytes();
    if (n < 0 || static_cast<std::size_t>(n) > left) return ok = false, Bytes();
    Bytes b(std::string(p, static_cast<std::size_t>(n)));
    p += n;
    left -= static_cast<std::size_t>(n);
    return b;
  }
};

}  // namespace

std::size_t encodedSize(const Message& m) {
  std::size_t n = kMinFrame + m.key.size() + m.value.size();
  for (const auto& h : m.headers) n += 8 + h.key.size() + h.value.size();
  return n;
}

void encode(const Message& m, std::int64_t offset, std::string& out) {
  // Sized once and written in place: an append per field cost more than the bytes it copied.
  const std::size_t start = out.size();
  out.resize(start + encodedSize(m));
  char* p = out.data() + start + kFrameHeader;
  const auto u32 = [&p](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) *p++ = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  const auto i64 = [&p](std::int64_t v) {
    const auto u = static_cast<std::uint64_t>(v);
    for (int i = 0; i < 8; ++i) *p++ = static_cast<char>((u >> (8 * i)) & 0xff);
  };
  const auto raw = [&p](const char* data, std::size_t n) {
    if (n != 0) std::memcpy(p, data, n);
    p += n;
  };
  const auto bytes = [&](const Bytes& b) {
    if (b.isNull()) {
      u32(0xffffffffu);
      return;
    }
    u32(static_cast<std::uint32_t>(b.size()));
    raw(b.data(), b.size());
  };
  i64(offset);
  i64(m.timestampMs);
  bytes(m.key);
  bytes(m.value);
  u32(static_cast<std::uint32_t>(m.headers.size()));
  for (const auto& h : m.headers) {
    u32(static_cast<std::uint32_t>(h.key.size()));
    raw(h.key.data(), h.key.size());
    bytes(h.value);
  }
  const std::size_t payload = static_cast<std::size_t>(p - (out.data() + start + kFrameHeader));
  const std::uint32_t crc = crc32c(std::string_view(out).substr(start + kFrameHeader, payload));
  for (int i = 0; i < 4; ++i) {
    out[start + i] = static_cast<char>((payload >> (8 * i)) & 0xff);
    out[start + 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  }
}

std::size_t checkFrame(std::string_view data, DecodeState& state, std::int64_t* offset) {
  if (data.size() < kFrameHeader) {
    state = DecodeState::kTruncated;
    return 0;
  }
  const std::uint32_t len = getU32(data.data());
  const std::uint32_t crc = getU32(data.data() + 4);
  if (len < 16 + 4 + 4 + 4 || len > kMaxPayload) {
    state = DecodeState::kCorrupt;
    return 0;
  }
  if (data.size() - kFrameHeader < len) {
    state = DecodeState::kTruncated;
    return 0;
  }
  if (crc32c(data.substr(kFrameHeader, len)) != crc) {
    state = DecodeState::kCorrupt;
    return 0;
  }
  if (offset) *offset = getI64(data.data() + kFrameHeader);
  state = DecodeState::kOk;
  return kFrameHeader + len;
}

Decoded decodeOne(std::string_view data) {
  Decoded d;
  const std::size_t size = checkFrame(data, d.state);
  if (size == 0) {
    d.error = d.state == DecodeState::kTruncated ? "record cut short" : "bad length or CRC mismatch";
    return d;
  }
  Reader r{data.data() + kFrameHeader, size - kFrameHeader};
  d.message.offset = r.i64();
  d.message.timestampMs = r.i64();
  d.message.key = r.bytes(true);
  d.message.value = r.bytes(true);
  const std::int32_t headers = r.i32();
  if (r.ok && (headers < 0 || static_cast<std::size_t>(headers) > r.left / 8)) r.ok = false;
  for (std::int32_t i = 0; r.ok && i < headers; ++i) {
    Bytes k = r.bytes(false);
    Bytes v = r.bytes(true);
    if (r.ok) d.message.headers.add(k.str(), std::move(v));
  }
  if (!r.ok || r.left != 0) {
    d.state = DecodeState::kCorrupt;
    d.error = "payload lengths do not add up";
    d.message = Message();
    return d;
  }
  d.consumed = size;
  return d;
}

std::size_t findNextFrame(std::string_view data, std::size_t from, std::int64_t after, std::int64_t* offset,
                          std::int64_t gapSlack) {
  const std::size_t n = data.size();
  for (std::size_t q = from; q + kMinFrame <= n; ++q) {
    const std::uint32_t len = getU32(data.data() + q);
    if (len < kMinFrame - kFrameHeader || len > kMaxPayload || len > n - q - kFrameHeader) continue;
    const std::int64_t off = getI64(data.data() + q + kFrameHeader);
    const auto most = static_cast<std::int64_t>((q - std::min(q, from)) / kMinFrame) + 1 + gapSlack;
    if (off <= after || static_cast<std::uint64_t>(off) - static_cast<std::uint64_t>(after) >
                            static_cast<std::uint64_t>(most))
      continue;
    if (crc32c(data.substr(q + kFrameHeader, len)) != getU32(data.data() + q + 4)) continue;
    if (offset) *offset = off;
    return q;
  }
  return n;
}

Recovered recoverSegment(std::string_view data, std::int64_t base, std::size_t indexEvery) {
  Recovered r;
  r.lastOffset = base - 1;
  if (indexEvery == 0) indexEvery = 1;
  std::size_t pos = 0;
  while (pos < data.size()) {
    DecodeState st;
    std::int64_t off = 0;
    const std::size_t sz = checkFrame(data.substr(pos), st, &off);
    if (sz != 0 && off > r.lastOffset) {
      if (r.records % indexEvery == 0) r.index.emplace_back(off, pos);
      if (r.firstOffset < 0) r.firstOffset = off;
      r.lastOffset = off;
      ++r.records;
      pos += sz;
      r.goodEnd = pos;
      continue;
    }
    Damage d;
    d.pos = pos;
    d.afterOffset = r.lastOffset;
    d.error = sz != 0 ? "offset " + std::to_string(off) + " does not follow " + std::to_string(r.lastOffset)
              : st == DecodeState::kTruncated ? "record cut short"
                                              : "bad length or CRC mismatch";
    std::int64_t nextOff = -1;
    const std::size_t next = findNextFrame(data, pos + 1, r.lastOffset, &nextOff);
    d.len = next - pos;
    if (next >= data.size()) {
      r.tail = std::move(d);
      break;
    }
    d.nextOffset = nextOff;
    r.damage.push_back(std::move(d));
    pos = next;
  }
  return r;
}

ScanResult scan(std::string_view data) {
  ScanResult s;
  std::size_t pos = 0;
  while (pos < data.size()) {
    Decoded d = decodeOne(data.substr(pos));
    if (d.state != DecodeState::kOk) {
      s.stop = d.state;
      s.error = d.error;
      break;
    }
    if (s.firstOffset < 0) s.firstOffset = d.message.offset;
    s.lastOffset = d.message.offset;
    ++s.records;
    pos += d.consumed;
  }
  s.validBytes = pos;
  return s;
}

}  // namespace ferry::backbone::segment
