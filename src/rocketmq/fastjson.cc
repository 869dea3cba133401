// fastjson dialect -> strict JSON. A small recursive-descent rewriter: it checks structure only as
// far as needed to know whether a token sits in key or value position; nlohmann validates the
// rest (numbers, escapes, UTF-8) when it parses the rewritten text.
#include "rocketmq/fastjson.h"

#include <cstdio>
#include <string>

#include "core/json_bounds.h"

namespace ferry::rocketmq {
namespace {

constexpr int kMaxDepth = 256;
// The rewriter bounds the nesting; the strict text's parse repeats the bound (never the size:
// the caller's frame limit is the size bound).
constexpr core::JsonLimits kStrictLimits{kMaxDepth + 1, SIZE_MAX};

class Rewriter {
 public:
  explicit Rewriter(std::string_view in) : in_(in) {}

  bool run(std::string& out) {
    if (!value(out, 0)) return false;
    skipSpace();
    if (pos_ != in_.size()) return fail("trailing characters");
    return true;
  }
  const std::string& error() const { return error_; }
  std::size_t position() const { return pos_; }

 private:
  bool fail(const char* why) {
    if (error_.empty()) error_ = why;
    return false;
  }
  void skipSpace() {
    while (pos_ < in_.size()) {
      char c = in_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        break;
      }
    }
  }
  static bool isDelimiter(char c) {
    return c == ',' || c == ':' || c == '{' || c == '}' || c == '[' || c == ']' || c == '"' ||
           c == '\'' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }
  // A bare token (number, literal or identifier) up to the next delimiter.
  std::string_view bareToken() {
    std::size_t start = pos_;
    while (pos_ < in_.size() && !isDelimiter(in_[pos_])) ++pos_;
    return in_.substr(start, pos_ - start);
  }
  // A quoted string ('"' or '\''), written as a strict double-quoted JSON string. Escapes are
  // copied as they are (nlohmann checks them), except `\'` which strict JSON does not have.
  bool string(std::string& out) {
    char quote = in_[pos_++];
    out.push_back('"');
    while (true) {
      if (pos_ >= in_.size()) return fail("unterminated string");
      char ch = in_[pos_++];
      auto c = static_cast<unsigned char>(ch);
      if (ch == quote) break;
      if (ch == '\\') {
        if (pos_ >= in_.size()) return fail("unterminated escape");
        char e = in_[pos_++];
        if (e == '\'') {
          out.push_back('\'');
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
      } else if (ch == '"') {  // inside a single-quoted string
        out += "\\\"";
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out.push_back(ch);
      }
    }
    out.push_back('"');
    return true;
  }

  bool value(std::string& out, int depth) {
    if (depth > kMaxDepth) return fail("nesting too deep");
    skipSpace();
    if (pos_ >= in_.size()) return fail("unexpected end");
    char c = in_[pos_];
    if (c == '{') return object(out, depth + 1);
    if (c == '[') return array(out, depth + 1);
    if (c == '"' || c == '\'') return string(out);
    std::string_view tok = bareToken();
    if (tok.empty()) return fail("unexpected character");
    char f = tok.front();
    bool numeric = f == '-' || (f >= '0' && f <= '9');
    if (!numeric && tok != "true" && tok != "false" && tok != "null") {
      return fail("bare word in value position");
    }
    out.append(tok);
    return true;
  }

  bool key(std::string& out, int depth) {
    char c = in_[pos_];
    if (c == '"' || c == '\'') return string(out);
    if (c == '{' || c == '[') {
      std::string inner;
      if (!value(inner, depth)) return false;
      // Re-serialise compactly so equal keys compare equal whatever the source spacing was.
      auto parsed = core::parseJsonBounded<nlohmann::json>(inner, kStrictLimits);
      if (!parsed.isOk()) return fail("bad object key");
      appendJsonString(out, parsed->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return true;
    }
    std::string_view tok = bareToken();
    if (tok.empty()) return fail("missing key");
    appendJsonString(out, tok);
    return true;
  }

  bool object(std::string& out, int depth) {
    ++pos_;  // '{'
    out.push_back('{');
    bool first = true;
    while (true) {
      skipSpace();
      if (pos_ >= in_.size()) return fail("unterminated object");
      if (in_[pos_] == '}') {
        ++pos_;
        break;
      }
      if (!first) out.push_back(',');
      first = false;
      if (!key(out, depth)) return false;
      skipSpace();
      if (pos_ >= in_.size() || in_[pos_] != ':') return fail("expected ':'");
      ++pos_;
      out.push_back(':');
      if (!value(out, depth)) return false;
      skipSpace();
      if (pos_ >= in_.size()) return fail("unterminated object");
      if (in_[pos_] == ',') {
        ++pos_;  // a trailing comma before '}' is tolerated by the loop head
      } else if (in_[pos_] != '}') {
        return fail("expected ',' or '}'");
      }
    }
    out.push_back('}');
    return true;
  }

  bool array(std::string& out, int depth) {
    ++pos_;  // '['
    out.push_back('[');
    bool first = true;
    while (true) {
      skipSpace();
      if (pos_ >= in_.size()) return fail("unterminated array");
      if (in_[pos_] == ']') {
        ++pos_;
        break;
      }
      if (!first) out.push_back(',');
      first = false;
      if (!value(out, depth)) return false;
      skipSpace();
      if (pos_ >= in_.size()) return fail("unterminated array");
      if (in_[pos_] == ',') {
        ++pos_;
      } else if (in_[pos_] != ']') {
        return fail("expected ',' or ']'");
      }
    }
    out.push_back(']');
    return true;
  }

  std::string_view in_;
  std::size_t pos_ = 0;
  std::string error_;
};

}  // namespace

Result<std::string> normalizeFastjson(std::string_view text) {
  Rewriter r(text);
  std::string out;
  out.reserve(text.size() + 16);
  if (!r.run(out)) {
    return Status::invalidArgument("malformed JSON: " + r.error() + " at byte " +
                                   std::to_string(r.position()));
  }
  return out;
}

Result<nlohmann::json> parseFastjson(std::string_view text) {
  auto strict = normalizeFastjson(text);
  if (!strict.isOk()) return strict.status();
  return core::parseJsonBounded<nlohmann::json>(*strict, kStrictLimits);
}

void appendJsonString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t run = 0;  // start of the bytes not yet copied
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
    }
  }
  out.append(text.data() + run, text.size() - run);
  out += '"';
}

}  // namespace ferry::rocketmq
