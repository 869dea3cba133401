// The embedded log's record format: round trips, CRC, and every kind of torn or damaged tail.
#include "backbone/embedded/segment_codec.h"

#include "core/crc32c.h"

#include <gtest/gtest.h>

namespace ferry::backbone::segment {
namespace {

Message sample(int i, bool nullKey = false) {
  Message m;
  m.key = nullKey ? Bytes() : Bytes("k" + std::to_string(i));
  m.value = Bytes("value-" + std::to_string(i));
  m.timestampMs = 1700000000000 + i;
  m.headers.add("h1", "x");
  m.headers.add("null", Bytes());
  return m;
}

TEST(SegmentCodec, Crc32cKnownValue) {
  // The CRC32C check value of "123456789" (Castagnoli) is 0xE3069283.
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(core::crc32cPortable("123456789"), 0xE3069283u);
}

TEST(SegmentCodec, Crc32cTheCpuInstructionAndTheTableAgree) {
  // Every length around the 8-byte steps, any alignment, and a checksum continued in two parts.
  std::string data;
  for (int i = 0; i < 300; ++i) data.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  for (std::size_t at = 0; at < 9; ++at)
    for (std::size_t n = 0; at + n <= data.size(); n += (n < 40 ? 1 : 17)) {
      std::string_view v(data.data() + at, n);
      ASSERT_EQ(crc32c(v), core::crc32cPortable(v)) << at << "+" << n;
      ASSERT_EQ(crc32c(v.substr(n / 3), crc32c(v.substr(0, n / 3))), crc32c(v)) << at << "+" << n;
    }
}

TEST(SegmentCodec, RoundTripWithNullsAndHeaders) {
  std::string buf;
  encode(sample(1), 41, buf);
  Message tomb;
  tomb.value = Bytes();  // null value (tombstone), null key
  encode(tomb, 42, buf);
  auto a = decodeOne(buf);
  ASSERT_EQ(a.state, DecodeState::kOk) << a.error;
  EXPECT_EQ(a.message.offset, 41);
  EXPECT_EQ(a.message.key.str(), "k1");
  EXPECT_EQ(a.message.value.str(), "value-1");
  EXPECT_EQ(a.message.timestampMs, 1700000000001);
  ASSERT_EQ(a.message.headers.size(), 2u);
  EXPECT_TRUE(a.message.headers.last("null")->value.isNull());
  auto b = decodeOne(std::string_view(buf).substr(a.consumed));
  ASSERT_EQ(b.state, DecodeState::kOk);
  EXPECT_EQ(b.message.offset, 42);
  EXPECT_TRUE(b.message.key.isNull());
  EXPECT_TRUE(b.message.value.isNull());
  EXPECT_EQ(a.consumed + b.consumed, buf.size());
}

TEST(SegmentCodec, EveryFlippedBitIsDetected) {
  std::string buf;
  encode(sample(7), 7, buf);
  for (std::size_t i = 0; i < buf.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = buf;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      auto d = decodeOne(bad);
      EXPECT_NE(d.state, DecodeState::kOk) << "flip of bit " << bit << " in byte " << i << " went unnoticed";
    }
  }
}

TEST(SegmentCodec, TornTailAtEveryBytePositionStopsTheScan) {
  std::string buf;
  for (int i = 0; i < 3; ++i) encode(sample(i), i, buf);
  std::string two;
  encode(sample(0), 0, two);
  encode(sample(1), 1, two);
  for (std::size_t cut = two.size(); cut < buf.size(); ++cut) {
    auto s = scan(std::string_view(buf).substr(0, cut));
    EXPECT_EQ(s.records, 2u) << "cut at " << cut;
    EXPECT_EQ(s.validBytes, two.size()) << "cut at " << cut;
    if (cut > two.size()) {
      EXPECT_EQ(s.stop, DecodeState::kTruncated) << "cut at " << cut;
    }
  }
  auto whole = scan(buf);
  EXPECT_EQ(whole.records, 3u);
  EXPECT_EQ(whole.stop, DecodeState::kOk);
  EXPECT_EQ(whole.lastOffset, 2);
}

TEST(SegmentCodec, AbsurdLengthsAreCorruptNotAllocations) {
  std::string buf(8, '\xff');  // length 0xffffffff
  buf += std::string(64, '\0');
  EXPECT_EQ(decodeOne(buf).state, DecodeState::kCorrupt);
  EXPECT_EQ(scan(buf).records, 0u);
  EXPECT_EQ(decodeOne("").state, DecodeState::kTruncated);
}

}  // namespace
}  // namespace ferry::backbone::segment
