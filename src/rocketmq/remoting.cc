// RocketMQ remoting wire format (see remoting.h and spec §1, §4). Every reader is bounds-checked
// against the slice it was given and reports malformed input as a value: nothing here throws
// (nlohmann is used in its non-throwing modes and guarded by a catch-all at each entry point).
#include "rocketmq/remoting.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>
#include <random>

#include <nlohmann/json.hpp>

#include "rocketmq/fastjson.h"

namespace ferry::rocketmq {
namespace {

using nlohmann::json;

constexpr std::uint32_t kMagicV1 = 0xDAA320A7u;
constexpr std::uint32_t kMagicV2 = 0xDAA320ABu;
constexpr std::int32_t kSysCompressed = 0x1;
constexpr std::int32_t kSysBornV6 = 0x10;
constexpr std::int32_t kSysStoreV6 = 0x20;
constexpr std::int32_t kSysNeedUnwrap = 0x40;
constexpr std::int32_t kSysInnerBatch = 0x80;
constexpr std::size_t kBinaryFixedHeader = 21;
constexpr std::size_t kBatchEntryMin = 22;        // 20 fixed + 2 property length
constexpr std::size_t kStoredMin = 84 + 4 + 1 + 2;  // IPv4 hosts, V1, empty body/topic/props
// Upper bound for a decompressed body: far above the broker's 4 MiB default maxMessageSize, low
// enough that a compression bomb cannot exhaust memory.
constexpr std::size_t kMaxDecompressed = 128u << 20;

// --- big-endian writer / bounds-checked reader -------------------------------------------------

void putU8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }
void putI16(std::string& out, std::int16_t v) {
  auto u = static_cast<std::uint16_t>(v);
  out.push_back(static_cast<char>(u >> 8));
  out.push_back(static_cast<char>(u & 0xFF));
}
void putI32(std::string& out, std::int32_t v) {
  auto u = static_cast<std::uint32_t>(v);
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((u >> s) & 0xFF));
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  std::size_t remaining() const { return data_.size() - pos_; }
  std::size_t position() const { return pos_; }
  bool u8(std::uint8_t& v) {
    if (remaining() < 1) return false;
    v = static_cast<std::uint8_t>(data_[pos_++]);
    return true;
  }
  bool i8(std::int8_t& v) {
    std::uint8_t u = 0;
    if (!u8(u)) return false;
    v = static_cast<std::int8_t>(u);
    return true;
  }
  bool u16(std::uint16_t& v) {
    std::uint64_t u = 0;
    if (!be(2, u)) return false;
    v = static_cast<std::uint16_t>(u);
    return true;
  }
  bool i16(std::int16_t& v) {
    std::uint16_t u = 0;
    if (!u16(u)) return false;
    v = static_cast<std::int16_t>(u);
    return true;
  }
  bool u32(std::uint32_t& v) {
    std::uint64_t u = 0;
    if (!be(4, u)) return false;
    v = static_cast<std::uint32_t>(u);
    return true;
  }
  bool i32(std::int32_t& v) {
    std::uint32_t u = 0;
    if (!u32(u)) return false;
    v = static_cast<std::int32_t>(u);
    return true;
  }
  bool i64(std::int64_t& v) {
    std::uint64_t u = 0;
    if (!be(8, u)) return false;
    v = static_cast<std::int64_t>(u);
    return true;
  }
  bool bytes(std::size_t n, std::string_view& v) {
    if (remaining() < n) return false;
    v = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }

 private:
  bool be(std::size_t n, std::uint64_t& v) {
    if (remaining() < n) return false;
    v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<std::uint8_t>(data_[pos_ + i]);
    pos_ += n;
    return true;
  }
  std::string_view data_;
  std::size_t pos_ = 0;
};

std::uint32_t readU32At(std::string_view d, std::size_t at) {
  return (std::uint32_t{static_cast<std::uint8_t>(d[at])} << 24) |
         (std::uint32_t{static_cast<std::uint8_t>(d[at + 1])} << 16) |
         (std::uint32_t{static_cast<std::uint8_t>(d[at + 2])} << 8) |
         std::uint32_t{static_cast<std::uint8_t>(d[at + 3])};
}

void appendHex(std::string& out, std::string_view raw) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char ch : raw) {
    auto c = static_cast<std::uint8_t>(ch);
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xF]);
  }
}

// --- language names (§1.8) ----------------------------------------------------------------------

constexpr std::array<const char*, 14> kLanguageNames = {
    "JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY",
    "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS"};
constexpr std::int32_t kLanguageOther = 7;

const char* languageName(std::int32_t code) {
  if (code >= 0 && code < static_cast<std::int32_t>(kLanguageNames.size())) {
    return kLanguageNames[static_cast<std::size_t>(code)];
  }
  return "OTHER";
}

std::int32_t languageCode(std::string_view name) {
  for (std::size_t i = 0; i < kLanguageNames.size(); ++i) {
    if (name == kLanguageNames[i]) return static_cast<std::int32_t>(i);
  }
  return kLanguageOther;
}

// --- JSON header helpers ------------------------------------------------------------------------

bool parseInt64(std::string_view s, std::int64_t& v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

// Reads an int32 field: a JSON integer or a decimal string. Absent or null -> fallback.
Status jsonInt32(const json& obj, const char* key, std::int32_t fallback, std::int32_t& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    out = fallback;
    return Status::ok();
  }
  std::int64_t v = 0;
  bool ok = false;
  if (it->is_number_integer()) {
    if (it->is_number_unsigned()) {
      auto u = it->get<std::uint64_t>();
      ok = u <= static_cast<std::uint64_t>(INT32_MAX);
      v = static_cast<std::int64_t>(u);
    } else {
      v = it->get<std::int64_t>();
      ok = true;
    }
  } else if (it->is_string()) {
    ok = parseInt64(it->get_ref<const std::string&>(), v);
  }
  if (!ok || v < INT32_MIN || v > INT32_MAX) {
    return Status::invalidArgument(std::string("header field '") + key + "' is not an int32");
  }
  out = static_cast<std::int32_t>(v);
  return Status::ok();
}

// Text form of a lenient extFields value; nullopt for null (the field is absent).
std::optional<std::string> extValueText(const json& v) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  return v.dump(-1, ' ', false, json::error_handler_t::replace);  // floats, objects, arrays
}

std::string formatHost(std::string_view ip, std::int32_t port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ip.size() == 4) {
    inet_ntop(AF_INET, ip.data(), buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(port);
  }
  inet_ntop(AF_INET6, ip.data(), buf, sizeof buf);
  return "[" + std::string(buf) + "]:" + std::to_string(port);
}

// The messages of one pull share a store host and mostly a born host: the last two formatted are
// kept per thread, so a batch formats each once.
std::string hostString(std::string_view ip, std::int32_t port) {
  struct Memo {
    std::string ip;
    std::int32_t port = -1;
    std::string text;
  };
  thread_local Memo memo[2];
  thread_local unsigned next = 0;
  for (const Memo& m : memo)
    if (m.port == port && m.ip == ip) return m.text;
  Memo& m = memo[next++ & 1u];
  m.ip.assign(ip);
  m.port = port;
  m.text = formatHost(ip, port);
  return m.text;
}

// One stored record (§4.4) from its own slice; appends one message, or several for an inner batch.
Status decodeStoredRecord(std::string_view rec, std::vector<StoredMessage>& out) {
  Reader r(rec);
  StoredMessage m;
  std::int32_t totalSize = 0;
  std::uint32_t magic = 0;
  if (!r.i32(totalSize) || !r.u32(magic)) return Status::invalidArgument("short record");
  if (magic != kMagicV1 && magic != kMagicV2) {
    return Status::invalidArgument("unknown magic code " + std::to_string(magic));
  }
  if (!r.u32(m.bodyCrc) || !r.i32(m.queueId) || !r.i32(m.flag) || !r.i64(m.queueOffset) ||
      !r.i64(m.commitLogOffset) || !r.i32(m.sysFlag) || !r.i64(m.bornTimestamp)) {
    return Status::invalidArgument("record cut in its fixed part");
  }
  std::string_view bornIp, storeIp;
  std::int32_t bornPort = 0, storePort = 0;
  if (!r.bytes((m.sysFlag & kSysBornV6) ? 16 : 4, bornIp) || !r.i32(bornPort) ||
      !r.i64(m.storeTimestamp) || !r.bytes((m.sysFlag & kSysStoreV6) ? 16 : 4, storeIp) ||
      !r.i32(storePort) || !r.i32(m.reconsumeTimes) || !r.i64(m.preparedTransactionOffset)) {
    return Status::invalidArgument("record cut in its hosts");
  }
  m.bornHost = hostString(bornIp, bornPort);
  m.storeHost = hostString(storeIp, storePort);
  std::int32_t bodyLen = 0;
  std::string_view body;
  if (!r.i32(bodyLen) || bodyLen < 0 || !r.bytes(static_cast<std::size_t>(bodyLen), body)) {
    return Status::invalidArgument("bad body length");
  }
  std::size_t topicLen = 0;
  if (magic == kMagicV1) {
    std::int8_t t = 0;
    if (!r.i8(t) || t < 0) return Status::invalidArgument("bad topic length");
    topicLen = static_cast<std::size_t>(t);
  } else {
    std::int16_t t = 0;
    if (!r.i16(t) || t < 0) return Status::invalidArgument("bad topic length");
    topicLen = static_cast<std::size_t>(t);
  }
  std::string_view topic, props;
  std::int16_t propLen = 0;
  if (!r.bytes(topicLen, topic)) return Status::invalidArgument("record cut in its topic");
  if (!r.i16(propLen) || propLen < 0 || !r.bytes(static_cast<std::size_t>(propLen), props)) {
    return Status::invalidArgument("bad properties length");
  }
  m.topic.assign(topic);
  m.properties = decodeProperties(props);
  // §4.4.1: store host IP + port + commit-log offset, uppercase hex.
  std::string idBytes(storeIp);
  putI32(idBytes, storePort);
  putI32(idBytes, static_cast<std::int32_t>(static_cast<std::uint64_t>(m.commitLogOffset) >> 32));
  putI32(idBytes, static_cast<std::int32_t>(m.commitLogOffset & 0xFFFFFFFF));
  appendHex(m.offsetMsgId, idBytes);

  if (m.sysFlag & kSysCompressed) {
    auto plain = decompressBody(body, m.sysFlag);
    if (!plain.isOk()) return plain.status().withContext("record body");
    m.body = std::move(plain).value();
    m.sysFlag &= ~kSysCompressed;
  } else {
    m.body.assign(body);
  }

  if ((m.sysFlag & (kSysInnerBatch | kSysNeedUnwrap)) == (kSysInnerBatch | kSysNeedUnwrap)) {
    auto entries = decodeBatchBody(m.body);
    if (!entries.isOk()) return entries.status().withContext("inner batch");
    std::int64_t i = 0;
    for (auto& e : *entries) {
      StoredMessage inner = m;  // topic, hosts, timestamps, sysFlag, offsets from the outer record
      inner.queueOffset = m.queueOffset + i++;
      inner.flag = e.flag;
      inner.body = std::move(e.body);
      inner.properties = std::move(e.properties);
      inner.bodyCrc = bodyCrc(inner.body);
      out.push_back(std::move(inner));
    }
    return Status::ok();
  }
  out.push_back(std::move(m));
  return Status::ok();
}

}  // namespace

// --- RemotingCommand -----------------------------------------------------------------------------

std::optional<std::string> RemotingCommand::ext(const std::string& key) const {
  auto it = extFields.find(key);
  if (it == extFields.end()) return std::nullopt;
  return it->second;
}

std::optional<std::int64_t> RemotingCommand::extInt(const std::string& key) const {
  auto it = extFields.find(key);
  if (it == extFields.end()) return std::nullopt;
  std::int64_t v = 0;
  if (!parseInt64(it->second, v)) return std::nullopt;
  return v;
}

// --- headers --------------------------------------------------------------------------------------

namespace {

// True when `s` is ASCII (the plain path escapes it itself; other bytes need UTF-8 checks).
bool asciiText(std::string_view s) noexcept {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

void appendJsonInt(std::string& out, std::int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

}  // namespace

std::optional<std::string> encodeJsonHeaderPlain(const RemotingCommand& cmd) {
  const bool remark = cmd.remark && !cmd.remark->empty();
  if (remark && !asciiText(*cmd.remark)) return std::nullopt;
  std::size_t size = 160;
  for (const auto& [k, v] : cmd.extFields) {
    if (!asciiText(k) || !asciiText(v)) return std::nullopt;
    size += k.size() + v.size() + 6;
  }
  if (remark) size += cmd.remark->size();
  // The keys in nlohmann's (std::map's) order, which is also fastjson's: sorted.
  std::string out;
  out.reserve(size);
  out += "{\"code\":";
  appendJsonInt(out, cmd.code);
  if (!cmd.extFields.empty()) {
    out += ",\"extFields\":{";
    bool first = true;
    for (const auto& [k, v] : cmd.extFields) {
      if (!first) out += ',';
      first = false;
      appendJsonString(out, k);
      out += ':';
      appendJsonString(out, v);
    }
    out += '}';
  }
  out += ",\"flag\":";
  appendJsonInt(out, cmd.flag);
  out += ",\"language\":";
  appendJsonString(out, languageName(cmd.language));
  out += ",\"opaque\":";
  appendJsonInt(out, cmd.opaque);
  if (remark) {
    out += ",\"remark\":";
    appendJsonString(out, *cmd.remark);
  }
  out += ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":";
  appendJsonInt(out, cmd.version);
  out += '}';
  return out;
}

std::string encodeJsonHeader(const RemotingCommand& cmd) {
  // Nearly every header is ASCII: written directly, without building a json object.
  if (auto plain = encodeJsonHeaderPlain(cmd)) return std::move(*plain);
  return encodeJsonHeaderFull(cmd);
}

std::string encodeJsonHeaderFull(const RemotingCommand& cmd) {
  try {
    json j = json::object();  // std::map-backed: keys come out sorted, as fastjson writes them
    j["code"] = cmd.code;
    j["language"] = languageName(cmd.language);
    j["version"] = cmd.version;
    j["opaque"] = cmd.opaque;
    j["flag"] = cmd.flag;
    j["serializeTypeCurrentRPC"] = "JSON";
    if (cmd.remark && !cmd.remark->empty()) j["remark"] = *cmd.remark;
    if (!cmd.extFields.empty()) {
      json ext = json::object();
      for (const auto& [k, v] : cmd.extFields) ext[k] = v;
      j["extFields"] = std::move(ext);
    }
    // Control characters become \u00XX; invalid UTF-8 is replaced by U+FFFD instead of throwing.
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const std::exception&) {  // allocation failure only
    return {};
  }
}

namespace {

// A scalar of the fast path: kind plus its text (a string's contents, an integer's digits).
struct FastValue {
  enum class Kind { kString, kInt, kTrue, kFalse, kNull } kind = Kind::kNull;
  std::string_view text;
  std::int64_t number = 0;
};

class FastHeaderScanner {
 public:
  explicit FastHeaderScanner(std::string_view s) : s_(s) {}

  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ >= s_.size() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool peek(char c) {
    ws();
    return i_ < s_.size() && s_[i_] == c;
  }
  bool atEnd() {
    ws();
    return i_ == s_.size();
  }
  // A string of printable ASCII without escapes.
  bool string(std::string_view& out) {
    if (!eat('"')) return false;
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c < 0x20 || c >= 0x80 || c == '\\') return false;
      ++i_;
    }
    if (i_ >= s_.size()) return false;
    out = s_.substr(start, i_ - start);
    ++i_;
    return true;
  }
  bool word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  bool scalar(FastValue& v) {
    ws();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '"') {
      v.kind = FastValue::Kind::kString;
      return string(v.text);
    }
    if (c == 't') { v.kind = FastValue::Kind::kTrue; return word("true") && delimited(); }
    if (c == 'f') { v.kind = FastValue::Kind::kFalse; return word("false") && delimited(); }
    if (c == 'n') { v.kind = FastValue::Kind::kNull; return word("null") && delimited(); }
    // An integer as JSON writes it: no '+', no leading zero, no "-0", no fraction or exponent.
    const std::size_t start = i_;
    if (c == '-') ++i_;
    const std::size_t digits = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    if (i_ == digits || (s_[digits] == '0' && i_ - digits > 1)) return false;
    if (c == '-' && s_[digits] == '0') return false;
    if (!delimited()) return false;
    v.kind = FastValue::Kind::kInt;
    v.text = s_.substr(start, i_ - start);
    auto [p, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), v.number);
    return ec == std::errc() && p == v.text.data() + v.text.size();
  }

 private:
  // What may follow a number or a literal: whitespace, ',' or '}'.
  bool delimited() {
    if (i_ >= s_.size()) return true;
    const char c = s_[i_];
    return c == ',' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }
  std::string_view s_;
  std::size_t i_ = 0;
};

// jsonInt32 on a fast-path scalar: false when the full path would decide (an error or a quirk).
bool fastInt32(const FastValue& v, std::int32_t& out) {
  std::int64_t n = 0;
  if (v.kind == FastValue::Kind::kNull) {
    out = 0;
    return true;
  }
  if (v.kind == FastValue::Kind::kInt) {
    n = v.number;
  } else if (v.kind == FastValue::Kind::kString) {
    if (!parseInt64(v.text, n)) return false;
  } else {
    return false;
  }
  if (n < INT32_MIN || n > INT32_MAX) return false;
  out = static_cast<std::int32_t>(n);
  return true;
}

// extValueText on a fast-path scalar; nullopt for null.
std::optional<std::string> fastText(const FastValue& v) {
  switch (v.kind) {
    case FastValue::Kind::kNull: return std::nullopt;
    case FastValue::Kind::kTrue: return std::string("true");
    case FastValue::Kind::kFalse: return std::string("false");
    case FastValue::Kind::kInt: return std::to_string(v.number);
    case FastValue::Kind::kString: break;
  }
  return std::string(v.text);
}

}  // namespace

bool decodeJsonHeaderFast(std::string_view header, RemotingCommand& out) {
  FastHeaderScanner sc(header);
  RemotingCommand cmd;
  cmd.language = 0;  // JAVA when absent
  cmd.version = 0;   // as the other absent numbers
  if (!sc.eat('{')) return false;
  std::vector<std::string_view> seen;  // top-level keys: a repeated one goes to the full parser
  bool first = true;
  while (!sc.peek('}')) {
    if (!first && !sc.eat(',')) return false;
    first = false;
    std::string_view key;
    if (!sc.string(key) || !sc.eat(':')) return false;
    for (std::string_view k : seen)
      if (k == key) return false;
    seen.push_back(key);
    if (key == "extFields") {
      FastValue v;
      if (sc.peek('{')) {
        sc.eat('{');
        bool firstField = true;
        while (!sc.peek('}')) {
          if (!firstField && !sc.eat(',')) return false;
          firstField = false;
          std::string_view name;
          if (!sc.string(name) || !sc.eat(':') || !sc.scalar(v)) return false;
          auto text = fastText(v);
          if (!text) {
            if (cmd.extFields.count(std::string(name)) != 0) return false;
            continue;
          }
          if (!cmd.extFields.try_emplace(std::string(name), std::move(*text)).second) return false;
        }
        sc.eat('}');
        continue;
      }
      if (!sc.scalar(v) || v.kind != FastValue::Kind::kNull) return false;  // not an object
      continue;
    }
    FastValue v;
    if (!sc.scalar(v)) return false;
    if (key == "code") {
      if (!fastInt32(v, cmd.code)) return false;
    } else if (key == "version") {
      if (!fastInt32(v, cmd.version)) return false;
    } else if (key == "opaque") {
      if (!fastInt32(v, cmd.opaque)) return false;
    } else if (key == "flag") {
      if (!fastInt32(v, cmd.flag)) return false;
    } else if (key == "language") {
      if (v.kind == FastValue::Kind::kString) {
        cmd.language = languageCode(v.text);
      } else {
        if (!fastInt32(v, cmd.language)) return false;
        if (cmd.language < 0 || cmd.language >= static_cast<std::int32_t>(kLanguageNames.size()))
          cmd.language = kLanguageOther;
      }
    } else if (key == "remark") {
      auto text = fastText(v);
      if (text && !text->empty()) cmd.remark = std::move(*text);
    }
  }
  sc.eat('}');
  if (!sc.atEnd()) return false;
  out = std::move(cmd);
  return true;
}

Status decodeJsonHeader(std::string_view header, RemotingCommand& out) {
  if (decodeJsonHeaderFast(header, out)) return Status::ok();
  return decodeJsonHeaderFull(header, out);
}

Status decodeJsonHeaderFull(std::string_view header, RemotingCommand& out) {
  try {
    auto parsed = parseFastjson(header);
    if (!parsed.isOk()) return parsed.status().withContext("JSON header");
    const json& j = *parsed;
    if (!j.is_object()) return Status::invalidArgument("JSON header is not an object");
    RemotingCommand cmd;
    FERRY_RETURN_IF_ERROR(jsonInt32(j, "code", 0, cmd.code));
    FERRY_RETURN_IF_ERROR(jsonInt32(j, "version", 0, cmd.version));
    FERRY_RETURN_IF_ERROR(jsonInt32(j, "opaque", 0, cmd.opaque));
    FERRY_RETURN_IF_ERROR(jsonInt32(j, "flag", 0, cmd.flag));
    cmd.language = 0;  // JAVA when absent
    if (auto it = j.find("language"); it != j.end() && !it->is_null()) {
      if (it->is_string()) {
        cmd.language = languageCode(it->get_ref<const std::string&>());
      } else {
        FERRY_RETURN_IF_ERROR(jsonInt32(j, "language", 0, cmd.language));
        if (cmd.language < 0 || cmd.language >= static_cast<std::int32_t>(kLanguageNames.size())) {
          cmd.language = kLanguageOther;  // what the name of an unknown code would decode to
        }
      }
    }
    if (auto it = j.find("remark"); it != j.end() && !it->is_null()) {
      auto text = extValueText(*it);
      if (text && !text->empty()) cmd.remark = std::move(*text);
    }
    if (auto it = j.find("extFields"); it != j.end() && !it->is_null()) {
      if (!it->is_object()) return Status::invalidArgument("extFields is not an object");
      for (auto e = it->begin(); e != it->end(); ++e) {
        if (auto text = extValueText(e.value())) cmd.extFields[e.key()] = std::move(*text);
      }
    }
    out = std::move(cmd);
    return Status::ok();
  } catch (const std::exception& e) {
    return Status::invalidArgument(std::string("JSON header: ") + e.what());
  }
}

std::string encodeBinaryHeader(const RemotingCommand& cmd) {
  std::string out;
  putI16(out, static_cast<std::int16_t>(cmd.code));
  putU8(out, static_cast<std::uint8_t>(cmd.language));
  putI16(out, static_cast<std::int16_t>(cmd.version));
  putI32(out, cmd.opaque);
  putI32(out, cmd.flag);
  if (cmd.remark && !cmd.remark->empty()) {
    putI32(out, static_cast<std::int32_t>(cmd.remark->size()));
    out += *cmd.remark;
  } else {
    putI32(out, 0);
  }
  std::string map;
  for (const auto& [k, v] : cmd.extFields) {
    // A zero length reads back as null (§1.5), and keys are limited to int16 lengths.
    if (k.empty() || v.empty() || k.size() > 0x7FFF) continue;
    putI16(map, static_cast<std::int16_t>(k.size()));
    map += k;
    putI32(map, static_cast<std::int32_t>(v.size()));
    map += v;
  }
  putI32(out, static_cast<std::int32_t>(map.size()));
  out += map;
  return out;
}

Status decodeBinaryHeader(std::string_view header, RemotingCommand& out) {
  Reader r(header);
  RemotingCommand cmd;
  std::int16_t code = 0, version = 0;
  std::uint8_t language = 0;
  std::int32_t remarkLen = 0, extLen = 0;
  if (!r.i16(code) || !r.u8(language) || !r.i16(version) || !r.i32(cmd.opaque) ||
      !r.i32(cmd.flag) || !r.i32(remarkLen)) {
    return Status::invalidArgument("binary header shorter than 21 bytes");
  }
  cmd.code = code;
  cmd.language = language;
  cmd.version = version;
  std::string_view remark;
  if (remarkLen < 0 || !r.bytes(static_cast<std::size_t>(remarkLen), remark)) {
    return Status::invalidArgument("binary header: remark length out of bounds");
  }
  if (!remark.empty()) cmd.remark = std::string(remark);
  std::string_view map;
  if (!r.i32(extLen) || extLen < 0 || !r.bytes(static_cast<std::size_t>(extLen), map)) {
    return Status::invalidArgument("binary header: extFields length out of bounds");
  }
  Reader m(map);
  while (m.remaining() > 0) {
    std::int16_t keyLen = 0;
    std::int32_t valLen = 0;
    std::string_view key, val;
    if (!m.i16(keyLen) || keyLen < 0 || !m.bytes(static_cast<std::size_t>(keyLen), key) ||
        !m.i32(valLen) || valLen < 0 || !m.bytes(static_cast<std::size_t>(valLen), val)) {
      return Status::invalidArgument("binary header: malformed extFields entry");
    }
    if (key.empty() || val.empty()) continue;  // zero length = null: the field is absent
    cmd.extFields[std::string(key)] = std::string(val);
  }
  out = std::move(cmd);
  return Status::ok();
}

// --- frames -----------------------------------------------------------------------------------------

std::string encodeFrame(const RemotingCommand& cmd, SerializeType type) {
  std::string header =
      type == SerializeType::kRocketmq ? encodeBinaryHeader(cmd) : encodeJsonHeader(cmd);
  std::string out;
  out.reserve(8 + header.size() + cmd.body.size());
  putI32(out, static_cast<std::int32_t>(4 + header.size() + cmd.body.size()));
  putI32(out, static_cast<std::int32_t>((static_cast<std::uint32_t>(type) << 24) |
                                        (header.size() & 0xFFFFFF)));
  out += header;
  out += cmd.body;
  return out;
}

FrameDecode decodeFrame(std::string_view data) {
  FrameDecode d;
  auto invalid = [&d](std::string why) {
    d.state = FrameDecode::State::kInvalid;
    d.error = std::move(why);
    return d;
  };
  if (data.size() < 4) return d;  // kNeedMore
  auto frameLength = static_cast<std::int32_t>(readU32At(data, 0));
  if (frameLength < 4) return invalid("frame length " + std::to_string(frameLength) + " < 4");
  if (4 + static_cast<std::size_t>(frameLength) > kMaxFrameBytes) {
    return invalid("frame of " + std::to_string(frameLength) + " bytes exceeds the 16 MiB limit");
  }
  if (data.size() >= 5) {
    auto t = static_cast<std::uint8_t>(data[4]);
    if (t > 1) return invalid("unknown serialize type " + std::to_string(t));
    d.type = static_cast<SerializeType>(t);
  }
  if (data.size() < 8) return d;
  std::size_t headerLength = readU32At(data, 4) & 0xFFFFFF;
  if (headerLength > static_cast<std::size_t>(frameLength) - 4) {
    return invalid("header length " + std::to_string(headerLength) + " exceeds the frame");
  }
  std::size_t total = 4 + static_cast<std::size_t>(frameLength);
  if (data.size() < total) return d;
  std::string_view header = data.substr(8, headerLength);
  Status s = d.type == SerializeType::kRocketmq ? decodeBinaryHeader(header, d.command)
                                                : decodeJsonHeader(header, d.command);
  if (!s.isOk()) return invalid(s.message());
  try {
    d.command.body.assign(data.substr(8 + headerLength, total - 8 - headerLength));
  } catch (const std::exception&) {
    return invalid("out of memory for the body");
  }
  d.state = FrameDecode::State::kOk;
  d.consumed = total;
  return d;
}

// --- properties (§4.1) -------------------------------------------------------------------------------

std::string encodeProperties(const std::map<std::string, std::string>& props) {
  std::string out;
  for (const auto& [k, v] : props) {
    // Empty values never survive a parse, and a separator inside a pair would corrupt the rest
    // (a 0x01 inside a value is harmless: readers split a pair at its first 0x01).
    if (k.empty() || v.empty() || k.find_first_of("\x01\x02") != std::string::npos ||
        v.find('\x02') != std::string::npos) {
      continue;
    }
    out += k;
    out.push_back('\x01');
    out += v;
    out.push_back('\x02');
  }
  return out;
}

std::map<std::string, std::string> decodeProperties(std::string_view data) {
  std::map<std::string, std::string> out;
  while (!data.empty()) {
    std::size_t end = data.find('\x02');
    std::string_view pair = data.substr(0, end);
    data = end == std::string_view::npos ? std::string_view() : data.substr(end + 1);
    std::size_t sep = pair.find('\x01');
    if (sep == std::string_view::npos || sep == 0 || sep + 1 >= pair.size()) continue;
    auto [it, fresh] = out.try_emplace(std::string(pair.substr(0, sep)), pair.substr(sep + 1));
    if (!fresh) it->second.assign(pair.substr(sep + 1));  // the last duplicate wins
  }
  return out;
}

// --- stored messages (§4.4) ------------------------------------------------------------------------

StoredDecode decodeStoredMessages(std::string_view body) {
  StoredDecode d;
  try {
    std::size_t pos = 0;
    while (pos < body.size()) {
      if (body.size() - pos < 4) {
        d.complete = false;
        d.error = "truncated record size at byte " + std::to_string(pos);
        break;
      }
      auto totalSize = static_cast<std::int32_t>(readU32At(body, pos));
      if (totalSize < static_cast<std::int32_t>(kStoredMin) ||
          static_cast<std::size_t>(totalSize) > body.size() - pos) {
        d.complete = false;
        d.error = "record at byte " + std::to_string(pos) + " has size " +
                  std::to_string(totalSize) + " (" + std::to_string(body.size() - pos) +
                  " bytes left)";
        break;
      }
      Status s = decodeStoredRecord(body.substr(pos, static_cast<std::size_t>(totalSize)),
                                    d.messages);
      if (!s.isOk()) {
        d.complete = false;
        d.error = "record at byte " + std::to_string(pos) + ": " + s.message();
        break;
      }
      pos += static_cast<std::size_t>(totalSize);
    }
  } catch (const std::exception& e) {
    d.complete = false;
    d.error = e.what();
  }
  return d;
}

// --- batch body (§4.6) -------------------------------------------------------------------------------

std::string encodeBatchBody(const std::vector<OutgoingMessage>& messages) {
  std::string out;
  for (const auto& m : messages) {
    std::string props = encodeProperties(m.properties);
    putI32(out, static_cast<std::int32_t>(20 + m.body.size() + 2 + props.size()));
    putI32(out, 0);  // magic: unused
    putI32(out, 0);  // body CRC: the broker computes it
    putI32(out, m.flag);
    putI32(out, static_cast<std::int32_t>(m.body.size()));
    out += m.body;
    putI16(out, static_cast<std::int16_t>(props.size()));
    out += props;
  }
  return out;
}

Result<std::vector<OutgoingMessage>> decodeBatchBody(std::string_view body) {
  try {
    std::vector<OutgoingMessage> out;
    Reader r(body);
    while (r.remaining() > 0) {
      std::size_t at = r.position();
      std::int32_t total = 0;
      std::string_view entry;
      if (!r.i32(total) || total < static_cast<std::int32_t>(kBatchEntryMin) ||
          !r.bytes(static_cast<std::size_t>(total) - 4, entry)) {
        return Status::invalidArgument("batch entry at byte " + std::to_string(at) +
                                       ": bad total size");
      }
      Reader e(entry);
      std::int32_t magic = 0, crc = 0, bodyLen = 0;
      std::int16_t propLen = 0;
      std::string_view b, p;
      OutgoingMessage m;
      if (!e.i32(magic) || !e.i32(crc) || !e.i32(m.flag) || !e.i32(bodyLen) || bodyLen < 0 ||
          !e.bytes(static_cast<std::size_t>(bodyLen), b) || !e.i16(propLen) || propLen < 0 ||
          !e.bytes(static_cast<std::size_t>(propLen), p)) {
        return Status::invalidArgument("batch entry at byte " + std::to_string(at) +
                                       ": fields overrun the entry");
      }
      m.body.assign(b);
      m.properties = decodeProperties(p);
      out.push_back(std::move(m));
    }
    return out;
  } catch (const std::exception& e) {
    return Status::invalidArgument(std::string("batch body: ") + e.what());
  }
}

// --- compression (§4.8), CRC, tag hash, ids ------------------------------------------------------

Result<std::string> decompressBody(std::string_view body, std::int32_t sysFlag) {
  int type = (sysFlag >> 8) & 0x7;
  if (type == 1) return Status::incompatible("LZ4-compressed message bodies are not supported");
  if (type == 2) return Status::incompatible("ZSTD-compressed message bodies are not supported");
  if (type != 0 && type != 3) {
    return Status::incompatible("unknown compression type " + std::to_string(type));
  }
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) return Status::internal("inflateInit failed");
  std::string out;
  try {
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
    zs.avail_in = static_cast<uInt>(body.size());
    int rc = Z_OK;
    char chunk[16384];
    while (rc != Z_STREAM_END) {
      zs.next_out = reinterpret_cast<Bytef*>(chunk);
      zs.avail_out = sizeof chunk;
      rc = inflate(&zs, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END) break;
      out.append(chunk, sizeof chunk - zs.avail_out);
      if (out.size() > kMaxDecompressed) {
        inflateEnd(&zs);
        return Status::invalidArgument("decompressed body exceeds 128 MiB");
      }
      if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
        rc = Z_BUF_ERROR;  // input ended before the stream did
        break;
      }
    }
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) {
      return Status::invalidArgument("corrupt zlib body (" + std::to_string(rc) + ")");
    }
  } catch (const std::exception& e) {
    inflateEnd(&zs);
    return Status::internal(std::string("decompress: ") + e.what());
  }
  return out;
}

Result<std::string> compressZlib(std::string_view body, int level) {
  uLongf cap = compressBound(static_cast<uLong>(body.size()));
  std::string out(cap, '\0');
  int rc = compress2(reinterpret_cast<Bytef*>(out.data()), &cap,
                     reinterpret_cast<const Bytef*>(body.data()), static_cast<uLong>(body.size()),
                     level);
  if (rc != Z_OK) return Status::invalidArgument("zlib compress2 failed (" + std::to_string(rc) + ")");
  out.resize(cap);
  return out;
}

std::uint32_t bodyCrc(std::string_view body) {
  uLong crc = crc32(0L, Z_NULL, 0);
  std::size_t pos = 0;
  while (pos < body.size()) {  // crc32 takes uInt lengths
    std::size_t n = std::min<std::size_t>(body.size() - pos, 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(body.data() + pos), static_cast<uInt>(n));
    pos += n;
  }
  return static_cast<std::uint32_t>(crc) & 0x7FFFFFFFu;
}

std::int64_t tagHash(std::string_view tag) {
  // Java String.hashCode over UTF-16 code units; the tag arrives as UTF-8. Invalid sequences
  // count as U+FFFD, as Java's decoder would have produced.
  std::uint32_t h = 0;
  auto unit = [&h](std::uint32_t u) { h = 31 * h + u; };
  std::size_t i = 0;
  while (i < tag.size()) {
    auto c = static_cast<std::uint8_t>(tag[i]);
    std::uint32_t cp = 0xFFFD;
    std::size_t len = 1;
    if (c < 0x80) {
      cp = c;
    } else {
      std::size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
      if (need != 0 && i + need <= tag.size()) {
        std::uint32_t v = c & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07);
        bool ok = true;
        for (std::size_t k = 1; k < need; ++k) {
          auto cc = static_cast<std::uint8_t>(tag[i + k]);
          if ((cc & 0xC0) != 0x80) ok = false;
          v = (v << 6) | (cc & 0x3F);
        }
        bool overlong = (need == 3 && v < 0x800) || (need == 4 && v < 0x10000);
        if (ok && !overlong && v <= 0x10FFFF && !(v >= 0xD800 && v <= 0xDFFF)) {
          cp = v;
          len = need;
        }
      }
    }
    if (cp >= 0x10000) {
      unit(0xD800 + ((cp - 0x10000) >> 10));
      unit(0xDC00 + ((cp - 0x10000) & 0x3FF));
    } else {
      unit(cp);
    }
    i += len;
  }
  return static_cast<std::int32_t>(h);
}

namespace {

// IP(4) | pid(2) | random(4): fixed for the process, computed once (§4.7).
std::string uniqPrefix() {
  std::string raw;
  std::uint32_t ip = 0x7F000001;  // 127.0.0.1 unless a non-loopback IPv4 interface exists
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
      std::uint32_t v = ntohl(reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
      if ((v >> 24) == 127) continue;
      ip = v;
      break;
    }
    freeifaddrs(list);
  }
  putI32(raw, static_cast<std::int32_t>(ip));
  putI16(raw, static_cast<std::int16_t>(getpid() & 0xFFFF));
  std::random_device rd;
  putI32(raw, static_cast<std::int32_t>(rd()));
  std::string hex;
  appendHex(hex, raw);
  return hex;
}

}  // namespace

std::string mqVersionName(std::int32_t ordinal) {
  if (ordinal < 0) return "unknown";
  if (ordinal < kVersion4_0_0Snapshot) return "3.x";
  if (ordinal >= kVersionHigher) return "newer than 5.9.9";
  // From V4_0_0_SNAPSHOT on, every x.y.z (y, z in 0..9) has a SNAPSHOT ordinal and the release
  // right after it.
  const std::int32_t n = (ordinal - kVersion4_0_0Snapshot) / 2;
  std::string out = std::to_string(4 + n / 100) + "." + std::to_string(n / 10 % 10) + "." +
                    std::to_string(n % 10);
  if ((ordinal - kVersion4_0_0Snapshot) % 2 == 0) out += "-SNAPSHOT";
  return out;
}

std::string newUniqKey() {
  static const std::string prefix = uniqPrefix();
  static std::atomic<std::uint32_t> counter{0};
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t t = system_clock::to_time_t(now);
  // gmtime_r takes glibc's time-zone lock: once per second per thread, not once per message.
  thread_local std::time_t cachedSecond = -1;
  thread_local std::int64_t cachedMs = 0;  // ms since the month's start at cachedSecond
  if (t != cachedSecond) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    cachedMs = (static_cast<std::int64_t>(tm.tm_mday - 1) * 86400 + tm.tm_hour * 3600 +
                tm.tm_min * 60 + tm.tm_sec) * 1000;
    cachedSecond = t;
  }
  std::int64_t sinceMonthStart =
      cachedMs + duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::string raw;
  putI32(raw, static_cast<std::int32_t>(sinceMonthStart));
  putI16(raw, static_cast<std::int16_t>(counter.fetch_add(1, std::memory_order_relaxed) & 0xFFFF));
  std::string key = prefix;
  appendHex(key, raw);
  return key;
}

}  // namespace ferry::rocketmq
