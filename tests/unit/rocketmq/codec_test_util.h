// Helpers shared by the codec tests: hex <-> bytes and a big-endian writer that builds stored
// messages field by field from the spec's table (§4.4), independently of the decoder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ferry::rocketmq::testing {

// "00 0a ff" (whitespace ignored) -> bytes.
inline std::string fromHex(std::string_view hex) {
  std::string out;
  int hi = -1;
  for (char c : hex) {
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (v < 0) continue;
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<char>(hi * 16 + v));
      hi = -1;
    }
  }
  return out;
}

class BeWriter {
 public:
  BeWriter& u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); return *this; }
  BeWriter& i16(std::int16_t v) { return be(static_cast<std::uint16_t>(v), 2); }
  BeWriter& i32(std::int32_t v) { return be(static_cast<std::uint32_t>(v), 4); }
  BeWriter& u32(std::uint32_t v) { return be(v, 4); }
  BeWriter& i64(std::int64_t v) { return be(static_cast<std::uint64_t>(v), 8); }
  BeWriter& raw(std::string_view s) { out_ += s; return *this; }
  const std::string& bytes() const { return out_; }

 private:
  BeWriter& be(std::uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return *this;
  }
  std::string out_;
};

struct StoredSpec {
  bool v2 = false;
  std::uint32_t bodyCrc = 0;
  std::int32_t queueId = 2;
  std::int32_t flag = 0;
  std::int64_t queueOffset = 7;
  std::int64_t physicalOffset = 4096;
  std::int32_t sysFlag = 0;
  std::int64_t bornTimestamp = 1700000000000;
  std::string bornIp = std::string("\x7f\x00\x00\x01", 4);
  std::int32_t bornPort = 54321;
  std::int64_t storeTimestamp = 1700000000123;
  std::string storeIp = std::string("\x7f\x00\x00\x01", 4);
  std::int32_t storePort = 10911;
  std::int32_t reconsumeTimes = 0;
  std::int64_t preparedOffset = 0;
  std::string body = "hello";
  std::string topic = "TestTopic";
  std::string properties;  // already encoded (§4.1)
};

// One stored record laid out per §4.4 (TOTALSIZE computed from the parts).
inline std::string storedRecord(const StoredSpec& s) {
  BeWriter rest;
  rest.u32(s.v2 ? 0xDAA320ABu : 0xDAA320A7u)
      .u32(s.bodyCrc)
      .i32(s.queueId)
      .i32(s.flag)
      .i64(s.queueOffset)
      .i64(s.physicalOffset)
      .i32(s.sysFlag)
      .i64(s.bornTimestamp)
      .raw(s.bornIp)
      .i32(s.bornPort)
      .i64(s.storeTimestamp)
      .raw(s.storeIp)
      .i32(s.storePort)
      .i32(s.reconsumeTimes)
      .i64(s.preparedOffset)
      .i32(static_cast<std::int32_t>(s.body.size()))
      .raw(s.body);
  if (s.v2) {
    rest.i16(static_cast<std::int16_t>(s.topic.size()));
  } else {
    rest.u8(static_cast<std::uint8_t>(s.topic.size()));
  }
  rest.raw(s.topic).i16(static_cast<std::int16_t>(s.properties.size())).raw(s.properties);
  BeWriter all;
  all.i32(static_cast<std::int32_t>(4 + rest.bytes().size())).raw(rest.bytes());
  return all.bytes();
}

}  // namespace ferry::rocketmq::testing
