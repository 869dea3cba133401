// JSON strings written by hand (src/core/json_text.h): the eight-bytes-at-a-time scans must
// escape (and stop at) exactly what a byte-by-byte writer does, wherever in a word the byte falls.
#include "core/json_text.h"

#include <gtest/gtest.h>

#include <string>

namespace ferry::core {
namespace {

// The byte-by-byte writer the fast one must match (Jackson's escapes; non-BMP as surrogates).
std::string reference(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  auto u16 = [&](std::string& out, unsigned v) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out.push_back(hex[(v >> shift) & 0xf]);
  };
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0xf0 && i + 3 < text.size()) {
      const auto b1 = static_cast<unsigned char>(text[i + 1]), b2 = static_cast<unsigned char>(text[i + 2]),
                 b3 = static_cast<unsigned char>(text[i + 3]);
      const unsigned cp = ((c & 0x07u) << 18) | ((b1 & 0x3fu) << 12) | ((b2 & 0x3fu) << 6) | (b3 & 0x3fu);
      if ((c & 0xf8) == 0xf0 && (b1 & 0xc0) == 0x80 && (b2 & 0xc0) == 0x80 && (b3 & 0xc0) == 0x80 && cp >= 0x10000 &&
          cp <= 0x10ffff) {
        u16(out, 0xd800 + ((cp - 0x10000) >> 10));
        u16(out, 0xdc00 + ((cp - 0x10000) & 0x3ff));
        i += 3;
        continue;
      }
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) u16(out, c);
        else out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

std::string written(std::string_view text) {
  std::string out;
  appendJsonString(out, text);
  return out;
}

// Every special byte (and a 4-byte character, a lone lead byte, bytes next to the specials'
// values) at every position of texts up to 40 bytes, on a background of plain ASCII and of
// 2- and 3-byte UTF-8.
TEST(JsonText, EscapesTheSameAsByteByByteAtEveryPositionOfAWord) {
  const std::string inserts[] = {"\"", "\\", std::string(1, '\0'), "\x01", "\x1f", "\n", "\t", " ", "!", "#",
                                 "[", "]", "\xf0\x9f\x98\x80", "\xf0", "\xef\xbf\xbf", "\xc3\xa9", "\x7f", "\xe0"};
  for (const std::string background : {"abcdefghijklmnopqrstuvwxyz0123456789ABCD", "\xc3\xa9\xe2\x82\xac"}) {
    for (std::size_t len = 0; len <= 40; ++len) {
      std::string base;
      while (base.size() < len) base += background;
      base.resize(len);
      EXPECT_EQ(written(base), reference(base)) << len;
      for (std::size_t at = 0; at <= len; ++at)
        for (const auto& ins : inserts) {
          std::string text = base;
          text.insert(at, ins);
          ASSERT_EQ(written(text), reference(text)) << "len " << len << " at " << at;
          const std::size_t plain = text.find_first_of(std::string("\"\\\0\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r"
                                                                   "\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f", 34));
          ASSERT_EQ(plainJsonStringBytes(text), plain == std::string::npos ? text.size() : plain)
              << "len " << len << " at " << at;
          EXPECT_EQ(hasNonBmp(text), text.find_first_of(std::string("\xf0\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8\xf9\xfa\xfb\xfc\xfd\xfe\xff", 16)) != std::string::npos);
        }
    }
  }
}

TEST(JsonText, AppendsAfterWhatIsThere) {
  std::string out = "{\"a\":";
  appendJsonString(out, "x\"y");
  EXPECT_EQ(out, "{\"a\":\"x\\\"y\"");
  EXPECT_EQ(written(std::string(1000, 'x')), "\"" + std::string(1000, 'x') + "\"");
  EXPECT_EQ(written("\xf0\x9f\x98\x80"), "\"\\uD83D\\uDE00\"");
}

}  // namespace
}  // namespace ferry::core
