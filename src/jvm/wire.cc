// The channel's encoding (wire.h).
#include "jvm/wire.h"

#include <cstring>

namespace ferry::jvm {

namespace {
void putU32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
  out.append(b, 4);
}
std::uint32_t getU32(const char* p) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(p[0])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(p[1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(p[2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(p[3]));
}
}  // namespace

Writer::Writer(std::uint32_t id, std::uint8_t type) {
  out_.reserve(64);
  putU32(out_, 0);
  putU32(out_, id);
  out_.push_back(static_cast<char>(type));
}
Writer& Writer::u8(std::uint8_t v) {
  out_.push_back(static_cast<char>(v));
  return *this;
}
Writer& Writer::i32(std::int32_t v) {
  putU32(out_, static_cast<std::uint32_t>(v));
  return *this;
}
Writer& Writer::i64(std::int64_t v) {
  putU32(out_, static_cast<std::uint32_t>(static_cast<std::uint64_t>(v) >> 32));
  putU32(out_, static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)));
  return *this;
}
Writer& Writer::str(std::string_view s) {
  i32(static_cast<std::int32_t>(s.size()));
  out_.append(s);
  return *this;
}
Writer& Writer::nullStr() { return i32(-1); }
Writer& Writer::map(const StringMap& m) {
  i32(static_cast<std::int32_t>(m.size()));
  for (const auto& [k, v] : m) str(k).str(v);
  return *this;
}
Writer& Writer::bytes(const Bytes& b) {
  if (b.isNull()) return nullStr();
  return str(b.view());
}
Writer& Writer::optMap(const std::optional<StringMap>& m) {
  if (!m) return i32(-1);
  return map(*m);
}
Writer& Writer::strings(const std::vector<std::string>& v) {
  i32(static_cast<std::int32_t>(v.size()));
  for (const auto& s : v) str(s);
  return *this;
}
std::string Writer::finish() {
  const auto length = static_cast<std::uint32_t>(out_.size() - 4);
  const char b[4] = {static_cast<char>(length >> 24), static_cast<char>(length >> 16), static_cast<char>(length >> 8),
                     static_cast<char>(length)};
  std::memcpy(out_.data(), b, 4);
  return std::move(out_);
}

Result<std::uint8_t> Reader::u8() {
  if (in_.empty()) return Status::invalidArgument("JVM host answer: cut short (a byte missing)");
  const auto v = static_cast<std::uint8_t>(in_[0]);
  in_.remove_prefix(1);
  return v;
}
Result<bool> Reader::boolean() {
  FERRY_ASSIGN_OR_RETURN(auto b, u8());
  if (b > 1) return Status::invalidArgument("JVM host answer: a flag is neither 0 nor 1");
  return b == 1;
}
Result<std::int32_t> Reader::i32() {
  if (in_.size() < 4) return Status::invalidArgument("JVM host answer: cut short (4 bytes missing)");
  const auto v = static_cast<std::int32_t>(getU32(in_.data()));
  in_.remove_prefix(4);
  return v;
}
Result<std::int64_t> Reader::i64() {
  if (in_.size() < 8) return Status::invalidArgument("JVM host answer: cut short (8 bytes missing)");
  const std::uint64_t v = (static_cast<std::uint64_t>(getU32(in_.data())) << 32) | getU32(in_.data() + 4);
  in_.remove_prefix(8);
  return static_cast<std::int64_t>(v);
}
Result<std::optional<std::string>> Reader::optStr() {
  FERRY_ASSIGN_OR_RETURN(auto n, i32());
  if (n == -1) return std::optional<std::string>{};
  if (n < 0 || static_cast<std::size_t>(n) > in_.size())
    return Status::invalidArgument("JVM host answer: a string of " + std::to_string(n) + " bytes with " +
                                   std::to_string(in_.size()) + " left");
  std::string s(in_.substr(0, static_cast<std::size_t>(n)));
  in_.remove_prefix(static_cast<std::size_t>(n));
  return std::optional<std::string>{std::move(s)};
}
Result<std::string> Reader::str(const char* what) {
  FERRY_ASSIGN_OR_RETURN(auto s, optStr());
  if (!s) return Status::invalidArgument(std::string("JVM host answer: ") + what + " is null");
  return std::move(*s);
}
Result<std::int32_t> Reader::count(const char* what) {
  FERRY_ASSIGN_OR_RETURN(auto n, i32());
  // Every item takes at least 4 bytes: a count beyond that cannot be true.
  if (n < 0 || static_cast<std::size_t>(n) > in_.size() / 4)
    return Status::invalidArgument(std::string("JVM host answer: ") + what + " count " + std::to_string(n) +
                                   " with " + std::to_string(in_.size()) + " bytes left");
  return n;
}
Result<StringMap> Reader::map(const char* what) {
  FERRY_ASSIGN_OR_RETURN(auto n, count(what));
  StringMap m;
  for (std::int32_t i = 0; i < n; ++i) {
    FERRY_ASSIGN_OR_RETURN(auto k, str(what));
    FERRY_ASSIGN_OR_RETURN(auto v, str(what));
    m[std::move(k)] = std::move(v);
  }
  return m;
}
Result<std::optional<StringMap>> Reader::optMap(const char* what) {
  if (in_.size() >= 4 && in_.substr(0, 4) == std::string_view("\xff\xff\xff\xff", 4)) {
    in_.remove_prefix(4);
    return std::optional<StringMap>{};
  }
  FERRY_ASSIGN_OR_RETURN(auto m, map(what));
  return std::optional<StringMap>{std::move(m)};
}
Result<Bytes> Reader::bytes() {
  FERRY_ASSIGN_OR_RETURN(auto s, optStr());
  if (!s) return Bytes();
  return Bytes(std::move(*s));
}
Result<std::vector<std::string>> Reader::strings(const char* what) {
  FERRY_ASSIGN_OR_RETURN(auto n, count(what));
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i) {
    FERRY_ASSIGN_OR_RETURN(auto s, str(what));
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::pair<FrameHead, std::string_view>> splitFrame(std::string_view body) {
  if (body.size() < 5) return Status::invalidArgument("JVM host frame of " + std::to_string(body.size()) + " bytes");
  FrameHead h{getU32(body.data()), static_cast<std::uint8_t>(body[4])};
  return std::make_pair(h, body.substr(5));
}

Result<JavaFailure> readFailure(std::string_view payload) {
  Reader r(payload);
  JavaFailure f;
  FERRY_ASSIGN_OR_RETURN(f.exceptionClass, r.str("exception class"));
  FERRY_ASSIGN_OR_RETURN(f.message, r.str("exception message"));
  FERRY_ASSIGN_OR_RETURN(f.stackTrace, r.str("stack trace"));
  if (r.left() > 0) {  // the worker's own failures (to the host's OFFSETS_READ) carry no flag
    FERRY_ASSIGN_OR_RETURN(f.retriable, r.boolean());
  }
  return f;
}

}  // namespace ferry::jvm
