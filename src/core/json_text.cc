// JSON text written by hand (json_text.h).
#include "core/json_text.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ferry::core {
namespace {

// Eight bytes at a time (SWAR): a word holding none of the bytes the loops below stop at is
// skipped whole. Each test is exact as a whole-word answer (it may mark a byte wrongly only above
// a byte it marks rightly).
constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
constexpr std::uint64_t zeroByte(std::uint64_t x) { return (x - kOnes) & ~x & kHighs; }
// A byte >= 0xF0: the lead byte of a 4-byte UTF-8 sequence.
constexpr std::uint64_t leadOf4(std::uint64_t v) { return zeroByte((v & (kOnes * 0xf0)) ^ (kOnes * 0xf0)); }
// A byte a JSON string escapes ('"', '\\', below 0x20).
constexpr std::uint64_t escaped(std::uint64_t v) {
  return ((v - kOnes * 0x20) & ~v & kHighs) | zeroByte(v ^ (kOnes * '"')) | zeroByte(v ^ (kOnes * '\\'));
}
// The same or a lead of 4.
constexpr std::uint64_t special(std::uint64_t v) { return escaped(v) | leadOf4(v); }
std::uint64_t word(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The index of the first byte at or after `i` that a JSON string escapes ('"', '\\', below 0x20)
// or, with `lead4`, that is >= 0xF0; text.size() when there is none. Sixteen bytes at a time
// with SSE2 (part of every x86-64), then eight (SWAR), then one.
std::size_t firstSpecial(std::string_view text, std::size_t i, bool lead4) {
  const char* p = text.data();
  const std::size_t n = text.size();
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i control = _mm_set1_epi8(0x1f);
  const __m128i high = _mm_set1_epi8(static_cast<char>(0xf0));
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i m = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(_mm_min_epu8(v, control), v));  // v <= 0x1f
    if (lead4) m = _mm_or_si128(m, _mm_cmpeq_epi8(_mm_max_epu8(v, high), v));  // v >= 0xf0
    if (const int bits = _mm_movemask_epi8(m); bits != 0) return i + static_cast<std::size_t>(__builtin_ctz(bits));
  }
#endif
  for (; i + 8 <= n; i += 8)
    if ((lead4 ? special(word(p + i)) : escaped(word(p + i))) != 0) break;
  for (; i < n; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c == '"' || c == '\\' || c < 0x20 || (lead4 && c >= 0xf0)) break;
  }
  return i;
}

constexpr char kHex[] = "0123456789ABCDEF";

void appendU16(std::string& out, unsigned v) {
  out += "\\u";
  out.push_back(kHex[(v >> 12) & 0xf]);
  out.push_back(kHex[(v >> 8) & 0xf]);
  out.push_back(kHex[(v >> 4) & 0xf]);
  out.push_back(kHex[v & 0xf]);
}

// A 4-byte UTF-8 sequence at text[i] (a character outside the BMP) as Jackson writes it: two
// \uXXXX escapes of its UTF-16 surrogates. False (nothing appended) when the bytes there are not
// one such sequence.
bool appendSurrogates(std::string& out, std::string_view text, std::size_t i) {
  if (i + 3 >= text.size()) return false;
  const auto b0 = static_cast<unsigned char>(text[i]);
  const auto b1 = static_cast<unsigned char>(text[i + 1]);
  const auto b2 = static_cast<unsigned char>(text[i + 2]);
  const auto b3 = static_cast<unsigned char>(text[i + 3]);
  if ((b0 & 0xf8) != 0xf0 || (b1 & 0xc0) != 0x80 || (b2 & 0xc0) != 0x80 || (b3 & 0xc0) != 0x80) return false;
  const unsigned cp = ((b0 & 0x07u) << 18) | ((b1 & 0x3fu) << 12) | ((b2 & 0x3fu) << 6) | (b3 & 0x3fu);
  if (cp < 0x10000 || cp > 0x10ffff) return false;
  const unsigned v = cp - 0x10000;
  appendU16(out, 0xd800 + (v >> 10));
  appendU16(out, 0xdc00 + (v & 0x3ff));
  return true;
}

}  // namespace

std::size_t plainJsonStringBytes(std::string_view text) { return firstSpecial(text, 0, false); }

bool hasNonBmp(std::string_view text) {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i high = _mm_set1_epi8(static_cast<char>(0xf0));
  for (; i + 16 <= text.size(); i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + i));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(v, high), v)) != 0) return true;
  }
#endif
  for (; i + 8 <= text.size(); i += 8)
    if (leadOf4(word(text.data() + i)) != 0) return true;
  for (; i < text.size(); ++i)
    if (static_cast<unsigned char>(text[i]) >= 0xf0) return true;
  return false;
}

std::string escapeNonBmp(std::string_view json) {
  std::string out;
  out.reserve(json.size() + 16);
  for (std::size_t i = 0; i < json.size(); ++i) {
    if (static_cast<unsigned char>(json[i]) >= 0xf0 && appendSurrogates(out, json, i)) {
      i += 3;
      continue;
    }
    out.push_back(json[i]);
  }
  return out;
}

void appendJsonString(std::string& out, std::string_view text) {
  // Runs of characters that need no escape (nearly all of them) are appended whole.
  out.reserve(out.size() + text.size() + 2);
  out.push_back('"');
  std::size_t run = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    i = firstSpecial(text, i, /*lead4=*/true);
    if (i >= text.size()) break;
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0xf0) continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    if (c >= 0xf0) {
      if (appendSurrogates(out, text, i)) {
        i += 3;
        run = i + 1;
      } else {
        out.push_back(static_cast<char>(c));
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: appendU16(out, c);
    }
  }
  out.append(text.data() + run, text.size() - run);
  out.push_back('"');
}

}  // namespace ferry::core
