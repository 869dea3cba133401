// Bounded JSON parsing (see json_bounds.h). nlohmann's exceptions are caught here, at the adapter.
#include "core/json_bounds.h"

#include <exception>
#include <utility>
#include <vector>

namespace ferry::core {
namespace {

// nlohmann's message without the tag and without the token it quotes ("last read: '...'"):
// the token may be a long piece of the body (a string, a secret).
std::string reasonOf(const nlohmann::detail::exception& ex) {
  std::string what = ex.what();
  if (auto close = what.find("] "); !what.empty() && what[0] == '[' && close != std::string::npos)
    what = what.substr(close + 2);
  static constexpr std::string_view kLastRead = "; last read: '";
  if (auto lr = what.find(kLastRead); lr != std::string::npos) {
    static constexpr std::string_view kExpected = "'; expected ";
    std::string tail;
    if (auto ex2 = what.rfind(kExpected); ex2 != std::string::npos && ex2 >= lr + kLastRead.size())
      tail = "; expected " + what.substr(ex2 + kExpected.size());
    what = what.substr(0, lr) + tail;
  }
  return what;
}

// Sees every event of nlohmann's DOM builder first, so it can bound the nesting depth and keep
// the parser's error position.
template <class J>
class BoundedSax {
 public:
  BoundedSax(J& out, int maxDepth) : dom_(out, /*allow_exceptions=*/false), maxDepth_(maxDepth) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(typename J::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(typename J::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(typename J::number_float_t v, const typename J::string_t& s) {
    return dom_.number_float(v, s);
  }
  bool string(typename J::string_t& v) { return dom_.string(v); }
  bool binary(typename J::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return enter() && dom_.start_object(n); }
  bool key(typename J::string_t& v) { return dom_.key(v); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return enter() && dom_.start_array(n); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t position, const std::string& /*lastToken*/,
                   const nlohmann::detail::exception& ex) {
    errorPos_ = position;
    error_ = reasonOf(ex);
    return false;
  }

  bool tooDeep() const { return tooDeep_; }
  const std::string& error() const { return error_; }
  std::size_t errorPos() const { return errorPos_; }

 private:
  bool enter() {
    if (++depth_ > maxDepth_) {
      tooDeep_ = true;
      return false;
    }
    return true;
  }

  nlohmann::detail::json_sax_dom_parser<J> dom_;
  int maxDepth_;
  int depth_ = 0;
  bool tooDeep_ = false;
  std::string error_;
  std::size_t errorPos_ = 0;
};

}  // namespace

int jsonNesting(std::string_view text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool inString = false;
  bool escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > limit) return limit + 1;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::string jsonExcerpt(std::string_view text, std::size_t pos, std::size_t radius) {
  if (pos > text.size()) pos = text.size();
  const std::size_t from = pos > radius ? pos - radius : 0;
  const std::size_t to = std::min(text.size(), pos + radius);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = from; i < to; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

template <class J>
Result<J> parseJsonBounded(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.maxBytes)
    return Status::invalidArgument("JSON text longer than " + std::to_string(limits.maxBytes) +
                                   " bytes");
  if (auto nul = text.find('\0'); nul != std::string_view::npos) {
    // Inside a string it is an unescaped control character, outside it ends nlohmann's input:
    // either way the text is not JSON.
    return Status::invalidArgument("malformed JSON: a NUL byte at byte " + std::to_string(nul));
  }
  J out;
  BoundedSax<J> sax(out, limits.maxDepth);
  bool ok = false;
  try {
    ok = J::sax_parse(text.data(), text.data() + text.size(), &sax);
  } catch (const std::exception&) {
    // Not expected (errors go through parse_error), but nothing may escape this adapter.
    return Status::invalidArgument("malformed JSON");
  } catch (...) {
    return Status::invalidArgument("malformed JSON");
  }
  if (sax.tooDeep())
    return Status::invalidArgument("JSON nesting deeper than " + std::to_string(limits.maxDepth) +
                                   " levels");
  if (!ok) {
    if (sax.error().empty()) return Status::invalidArgument("malformed JSON");
    // nlohmann's position is one past the character it stopped at.
    const std::size_t at = sax.errorPos() > 0 ? sax.errorPos() - 1 : 0;
    return Status::invalidArgument("malformed JSON: " + sax.error() + " near '" +
                                   jsonExcerpt(text, at) + "'");
  }
  return out;
}

template <class J>
int documentDepth(const J& doc) {
  int deepest = 0;
  std::vector<std::pair<const J*, int>> todo{{&doc, 0}};
  while (!todo.empty()) {
    auto [j, depth] = todo.back();
    todo.pop_back();
    if (!j->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    for (const auto& child : *j) todo.emplace_back(&child, depth + 1);
  }
  return deepest;
}

template Result<nlohmann::json> parseJsonBounded<nlohmann::json>(std::string_view,
                                                                const JsonLimits&);
template Result<nlohmann::ordered_json> parseJsonBounded<nlohmann::ordered_json>(
    std::string_view, const JsonLimits&);
template int documentDepth<nlohmann::json>(const nlohmann::json&);
template int documentDepth<nlohmann::ordered_json>(const nlohmann::ordered_json&);

std::optional<std::string> jsonScalarText(const nlohmann::json& v) {
  using J = nlohmann::json;
  switch (v.type()) {
    case J::value_t::string:
      return v.get_ref<const std::string&>();
    case J::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case J::value_t::number_integer:
      return std::to_string(v.get<std::int64_t>());
    case J::value_t::number_unsigned:
      return std::to_string(v.get<std::uint64_t>());
    case J::value_t::number_float:
      return v.dump();
    default:
      return std::nullopt;
  }
}

Result<StringMap> jsonObjectToStringMap(const nlohmann::json& obj, const std::string& what) {
  if (!obj.is_object())
    return Status::invalidArgument("'" + what + "' must be a JSON object of string values, not " +
                                   std::string(obj.type_name()));
  StringMap out;
  for (const auto& [k, v] : obj.items()) {
    auto text = jsonScalarText(v);
    if (!text)
      return Status::invalidArgument("value of '" + k + "' in '" + what +
                                     "' must be a string, number or boolean, not " + std::string(v.type_name()));
    out.emplace(k, std::move(*text));
  }
  return out;
}

}  // namespace ferry::core
