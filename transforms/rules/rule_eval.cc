// Rule compilation and evaluation (see rule_eval.h).
#include "transforms/rules/rule_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <regex>

#include "core/json_bounds.h"
#include "transforms/json_fast.h"
#include "transforms/rules/rule_parser.h"

namespace ferry::transforms::rules {
namespace {

Status at(const Node& n, const std::string& what) {
  return Status::invalidArgument("line " + std::to_string(n.line) + ", column " + std::to_string(n.column) + ": " + what);
}

std::string typeName(const Value& v) {
  switch (v.type()) {
    case Value::value_t::null: return "null";
    case Value::value_t::boolean: return "a boolean";
    case Value::value_t::number_integer:
    case Value::value_t::number_unsigned:
    case Value::value_t::number_float: return "a number";
    case Value::value_t::string: return "a string";
    case Value::value_t::array: return "an array";
    default: return "an object";
  }
}

bool truthy(const Value& v) { return v.is_boolean() ? v.get<bool>() : false; }

std::string text(const Value& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

using Fn = std::function<Result<Value>(const Node& call, std::vector<Value>& args)>;
struct Function {
  int minArgs;
  int maxArgs;
  Fn fn;
};

Result<double> num(const Node& n, const Value& v, const std::string& fn) {
  if (v.is_number()) return v.get<double>();
  return at(n, fn + " needs a number, got " + typeName(v));
}

Result<std::string> str(const Node& n, const Value& v, const std::string& fn) {
  if (v.is_string()) return v.get<std::string>();
  return at(n, fn + " needs a string, got " + typeName(v));
}

// Characters (code points) of UTF-8 text: bytes that do not continue a sequence.
std::int64_t utf8Length(const std::string& s) {
  std::int64_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
  return n;
}

Value numberValue(double d) {
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return Value(static_cast<std::int64_t>(d));
  return Value(d);
}

const std::map<std::string, Function>& functions() {
  static const std::map<std::string, Function> f = [] {
    std::map<std::string, Function> m;
    auto s1 = [](std::function<std::string(std::string)> op, const char* name) {
      return Function{1, 1, [op, name](const Node& c, std::vector<Value>& a) -> Result<Value> {
                        FERRY_ASSIGN_OR_RETURN(auto s, str(c, a[0], name));
                        return Value(op(std::move(s)));
                      }};
    };
    m["upper"] = s1([](std::string s) { for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch))); return s; }, "upper");
    m["lower"] = s1([](std::string s) { for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch))); return s; }, "lower");
    m["trim"] = s1([](std::string s) {
      const auto b = s.find_first_not_of(" \t\r\n");
      if (b == std::string::npos) return std::string();
      return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
    }, "trim");
    m["concat"] = {1, 64, [](const Node&, std::vector<Value>& a) -> Result<Value> {
                     std::string out;
                     for (const auto& v : a) out += text(v);
                     return Value(out);
                   }};
    m["strlen"] = {1, 1, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                     FERRY_ASSIGN_OR_RETURN(auto s, str(c, a[0], "strlen"));
                     return Value(utf8Length(s));
                   }};
    m["length"] = {1, 1, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                     if (a[0].is_array() || a[0].is_object() || a[0].is_string())
                       return Value(a[0].is_string() ? utf8Length(a[0].get_ref<const std::string&>())
                                                     : static_cast<std::int64_t>(a[0].size()));
                     return at(c, "length needs an array, object or string, got " + typeName(a[0]));
                   }};
    m["substr"] = {2, 3, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                     FERRY_ASSIGN_OR_RETURN(auto s, str(c, a[0], "substr"));
                     FERRY_ASSIGN_OR_RETURN(double start, num(c, a[1], "substr"));
                     const auto b = static_cast<std::size_t>(std::clamp(start, 0.0, static_cast<double>(s.size())));
                     std::size_t len = std::string::npos;
                     if (a.size() == 3) {
                       FERRY_ASSIGN_OR_RETURN(double l, num(c, a[2], "substr"));
                       len = static_cast<std::size_t>(std::max(0.0, l));
                     }
                     return Value(s.substr(b, len));
                   }};
    m["replace"] = {3, 3, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                      FERRY_ASSIGN_OR_RETURN(auto s, str(c, a[0], "replace"));
                      FERRY_ASSIGN_OR_RETURN(auto from, str(c, a[1], "replace"));
                      FERRY_ASSIGN_OR_RETURN(auto to, str(c, a[2], "replace"));
                      if (from.empty()) return Value(s);
                      std::string out;
                      for (std::size_t i = 0;;) {
                        const auto j = s.find(from, i);
                        if (j == std::string::npos) return Value(out + s.substr(i));
                        out += s.substr(i, j - i) + to;
                        i = j + from.size();
                      }
                    }};
    m["split"] = {2, 2, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                    FERRY_ASSIGN_OR_RETURN(auto s, str(c, a[0], "split"));
                    FERRY_ASSIGN_OR_RETURN(auto sep, str(c, a[1], "split"));
                    Value out = Value::array();
                    if (sep.empty()) return at(c, "split needs a non-empty separator");
                    for (std::size_t i = 0;;) {  // empty parts are dropped, as in EMQX
                      const auto j = s.find(sep, i);
                      std::string part = s.substr(i, j == std::string::npos ? std::string::npos : j - i);
                      if (!part.empty()) out.push_back(std::move(part));
                      if (j == std::string::npos) return out;
                      i = j + sep.size();
                    }
                  }};
    m["regex_match"] = {2, 2, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                          FERRY_ASSIGN_OR_RETURN(auto s, str(c, a[0], "regex_match"));
                          FERRY_ASSIGN_OR_RETURN(auto re, str(c, a[1], "regex_match"));
                          try {
                            return Value(std::regex_search(s, std::regex(re)));
                          } catch (const std::regex_error& e) {
                            return at(c, "regex_match: bad regular expression '" + re + "': " + e.what());
                          }
                        }};
    auto n1 = [](double (*op)(double), const char* name) {
      return Function{1, 1, [op, name](const Node& c, std::vector<Value>& a) -> Result<Value> {
                        FERRY_ASSIGN_OR_RETURN(double d, num(c, a[0], name));
                        return numberValue(op(d));
                      }};
    };
    m["abs"] = {1, 1, [](const Node& c, std::vector<Value>& a) -> Result<Value> {  // keeps int / float
                  if (a[0].is_number_integer() && a[0].get<std::int64_t>() != INT64_MIN)
                    return Value(std::abs(a[0].get<std::int64_t>()));
                  FERRY_ASSIGN_OR_RETURN(double d, num(c, a[0], "abs"));
                  return Value(std::fabs(d));
                }};
    m["floor"] = n1([](double d) { return std::floor(d); }, "floor");
    m["ceil"] = n1([](double d) { return std::ceil(d); }, "ceil");
    m["round"] = n1([](double d) { return std::round(d); }, "round");
    // sqrt and power give floats (EMQX); a result that is no number is an error, not NaN.
    m["sqrt"] = {1, 1, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                   FERRY_ASSIGN_OR_RETURN(double d, num(c, a[0], "sqrt"));
                   if (d < 0) return at(c, "sqrt of a negative number (" + text(a[0]) + ")");
                   return Value(std::sqrt(d));
                 }};
    m["power"] = {2, 2, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                    FERRY_ASSIGN_OR_RETURN(double x, num(c, a[0], "power"));
                    FERRY_ASSIGN_OR_RETURN(double y, num(c, a[1], "power"));
                    const double r = std::pow(x, y);
                    if (!std::isfinite(r)) return at(c, "power(" + text(a[0]) + ", " + text(a[1]) + ") is not a finite number");
                    return Value(r);
                  }};
    m["str"] = {1, 1, [](const Node&, std::vector<Value>& a) -> Result<Value> { return Value(text(a[0])); }};
    auto toNumber = [](const Node& c, const Value& v, const char* name) -> Result<double> {
      if (v.is_number()) return v.get<double>();
      if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
      if (v.is_string()) {
        const std::string s = v.get<std::string>();
        char* end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size()) return d;
      }
      return at(c, std::string("cannot cast ") + typeName(v) + " " + text(v) + " to " + name);
    };
    m["int"] = {1, 1, [toNumber](const Node& c, std::vector<Value>& a) -> Result<Value> {
                  FERRY_ASSIGN_OR_RETURN(double d, toNumber(c, a[0], "int"));
                  return Value(static_cast<std::int64_t>(std::trunc(d)));
                }};
    m["float"] = {1, 1, [toNumber](const Node& c, std::vector<Value>& a) -> Result<Value> {
                    FERRY_ASSIGN_OR_RETURN(double d, toNumber(c, a[0], "float"));
                    return Value(d);
                  }};
    m["bool"] = {1, 1, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                   if (a[0].is_boolean()) return a[0];
                   if (a[0].is_string() && (a[0] == "true" || a[0] == "false")) return Value(a[0] == "true");
                   if (a[0].is_number()) return Value(a[0].get<double>() != 0);
                   return at(c, "cannot cast " + typeName(a[0]) + " to bool");
                 }};
    m["is_null"] = {1, 1, [](const Node&, std::vector<Value>& a) -> Result<Value> { return Value(a[0].is_null()); }};
    m["is_num"] = {1, 1, [](const Node&, std::vector<Value>& a) -> Result<Value> { return Value(a[0].is_number()); }};
    m["is_str"] = {1, 1, [](const Node&, std::vector<Value>& a) -> Result<Value> { return Value(a[0].is_string()); }};
    m["coalesce"] = {1, 64, [](const Node&, std::vector<Value>& a) -> Result<Value> {
                       for (auto& v : a)
                         if (!v.is_null()) return v;
                       return Value();
                     }};
    m["nth"] = {2, 2, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                  FERRY_ASSIGN_OR_RETURN(double i, num(c, a[0], "nth"));
                  if (!a[1].is_array()) return at(c, "nth needs an array, got " + typeName(a[1]));
                  const auto k = static_cast<std::int64_t>(i);
                  if (k < 1 || k > static_cast<std::int64_t>(a[1].size())) return Value();
                  return a[1][static_cast<std::size_t>(k - 1)];
                }};
    m["json_decode"] = {1, 1, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                          FERRY_ASSIGN_OR_RETURN(auto s, str(c, a[0], "json_decode"));
                          auto j = core::parseJsonBounded<Value>(s, core::kRecordJsonLimits);
                          if (!j.isOk()) return at(c, "json_decode: not JSON (" + j.status().message() + ")");
                          return std::move(*j);
                        }};
    m["json_encode"] = {1, 1, [](const Node&, std::vector<Value>& a) -> Result<Value> {
                          return Value(a[0].dump(-1, ' ', false, Value::error_handler_t::replace));
                        }};
    m["now_timestamp"] = {0, 0, [](const Node&, std::vector<Value>&) -> Result<Value> {
                            return Value(static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch()).count()));
                          }};
    m["unix_ts_to_rfc3339"] = {1, 1, [](const Node& c, std::vector<Value>& a) -> Result<Value> {
                                 FERRY_ASSIGN_OR_RETURN(double ms, num(c, a[0], "unix_ts_to_rfc3339"));
                                 const auto t = static_cast<std::time_t>(std::floor(ms / 1000));
                                 std::tm tm{};
                                 gmtime_r(&t, &tm);
                                 char buf[96];
                                 std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                                               tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                                               static_cast<int>(std::fmod(std::fmod(ms, 1000) + 1000, 1000)));
                                 return Value(std::string(buf));
                               }};
    return m;
  }();
  return f;
}

enum NameId { kPayload, kTopic, kLevels, kKey, kHeaders, kTimestamp, kQos, kClientId, kAlias };
const char* const kNames[] = {"payload", "topic", "levels", "key", "headers", "timestamp", "qos", "clientid"};

// Resolves names and functions into the nodes and checks arities; `usesPayload` is set when the
// expression reads the payload.
Status check(Node& n, const std::vector<std::string>& aliases, bool& usesPayload) {
  switch (n.kind) {
    case NodeKind::kName: {
      for (const auto& a : aliases)  // the FOREACH alias shadows the record's names
        if (n.text == a) n.nameId = kAlias;
      for (int i = 0; i < kAlias; ++i)
        if (n.nameId < 0 && n.text == kNames[i]) n.nameId = i;
      if (n.nameId < 0)
        return at(n, "unknown name '" + n.text + "' (payload, topic, levels, key, headers, timestamp, qos, clientid" +
                         (aliases.empty() ? std::string() : ", " + aliases.front()) + ")");
      usesPayload = usesPayload || n.nameId == kPayload;
      return Status::ok();
    }
    case NodeKind::kCall: {
      auto it = functions().find(n.text);
      if (it == functions().end()) return at(n, "unknown function '" + n.text + "'");
      const int argc = static_cast<int>(n.kids.size());
      if (argc < it->second.minArgs || argc > it->second.maxArgs)
        return at(n, n.text + " takes " +
                         (it->second.minArgs == it->second.maxArgs
                              ? std::to_string(it->second.minArgs)
                              : std::to_string(it->second.minArgs) + " to " + std::to_string(it->second.maxArgs)) +
                         " argument(s), not " + std::to_string(argc));
      n.function = &it->second;
      break;
    }
    default:
      break;
  }
  for (auto& k : n.kids) FERRY_RETURN_IF_ERROR(check(*k, aliases, usesPayload));
  return Status::ok();
}

// A value during evaluation: borrowed (a part of the payload, of a FOREACH element, of a value
// this evaluation already built) or owned (computed). Reading a path, comparing and doing
// arithmetic borrow or build scalars, which nlohmann keeps inline: no allocation.
class Val {
 public:
  Val() = default;
  Val(Value v) : own_(std::move(v)) {}  // NOLINT(google-explicit-constructor)
  static Val ref(const Value& v) {
    Val out;
    out.ref_ = &v;
    return out;
  }
  const Value& operator*() const { return ref_ ? *ref_ : own_; }
  const Value* operator->() const { return &**this; }
  // A part of this value: borrowed when this one is, copied out of it otherwise.
  Val part(const Value& child) const { return ref_ ? ref(child) : Val(child); }
  Value take() && { return ref_ ? *ref_ : std::move(own_); }

 private:
  const Value* ref_ = nullptr;
  Value own_;
};

// One evaluation: the record, the payload (parsed at most once, or handed in parsed), the record
// fields built at most once, the FOREACH element.
class Eval {
 public:
  // `fast`: the payload parsed by simdjson (read-only, no nlohmann document built), used when
  // `payload` is null: paths are looked up in it and only what they find is converted.
  Eval(const Record& r, const Value* payload, const simdjson::dom::element* fast = nullptr)
      : r_(r), payload_(payload), fast_(fast) {}
  const Value* element = nullptr;

  std::string_view topic() const { return mqttTopic(r_); }

  Result<Val> name(int id) {
    switch (id) {
      case kAlias: return Val::ref(*element);
      case kPayload:
        if (!payload_ && fast_) {  // the whole payload is asked for: build it once
          ownPayload_.emplace();
          toJson(*fast_, *ownPayload_);
          payload_ = &*ownPayload_;
        }
        if (!payload_) {
          if (r_.value.isNull()) {
            ownPayload_ = Value();
          } else {
            // Text that is not JSON is the payload as a string; JSON nested deeper than the record
            // bound is this record's error (evaluating it would recurse once per level).
            auto j = core::parseJsonBounded<Value>(r_.value.view(), core::kRecordJsonLimits);
            if (!j.isOk() && core::jsonNesting(r_.value.view(), core::kRecordJsonLimits.maxDepth) >
                                 core::kRecordJsonLimits.maxDepth)
              return Status::invalidArgument("the payload is " + j.status().message());
            ownPayload_ = j.isOk() ? std::move(*j) : Value(std::string(r_.value.view()));
          }
          payload_ = &*ownPayload_;
        }
        return Val::ref(*payload_);
      case kTopic: return Val::ref(once(topic_, [&] { return Value(std::string(topic())); }));
      case kLevels:
        return Val::ref(once(levels_, [&] {
          Value out = Value::array();
          for (std::string_view l : topicLevels(topic())) out.push_back(std::string(l));
          return out;
        }));
      case kKey: return r_.key.isNull() ? Val() : Val(Value(std::string(r_.key.view())));
      case kTimestamp: return Val(Value(r_.timestampMs));
      case kHeaders:
        return Val::ref(once(headers_, [&] {
          Value out = Value::object();
          for (const auto& h : r_.headers) out[h.key] = std::string(h.value.view());
          return out;
        }));
      case kQos: {
        const Header* h = r_.headers.last("mqtt.qos");
        if (!h) return Val();
        std::int64_t q = 0;
        for (char c : h->value.view()) {
          if (c < '0' || c > '9') break;
          q = q * 10 + (c - '0');
        }
        return Val(Value(q));
      }
      case kClientId: {
        const Header* h = r_.headers.last("mqtt.client.id");
        if (!h) h = r_.headers.last("clientid");
        return h ? Val(Value(std::string(h->value.view()))) : Val();
      }
    }
    return Status::internal("rule: unresolved name");
  }

  Result<Val> eval(const Node& n) {
    switch (n.kind) {
      case NodeKind::kNull: return Val();
      case NodeKind::kBool: return Val(Value(n.boolean));
      case NodeKind::kNumber: return Val(n.integral ? Value(n.integer) : Value(n.number));
      case NodeKind::kString: return Val(Value(n.text));
      case NodeKind::kName: return name(n.nameId);
      case NodeKind::kField: {
        if (fast_ && !payload_) {
          FERRY_ASSIGN_OR_RETURN(Fast f, fastLookup(n));
          if (f.applies) return f.found ? converted(f.el) : Val();
        }
        FERRY_ASSIGN_OR_RETURN(Val base, eval(*n.kids[0]));
        if (!base->is_object()) return Val();  // a missing path is null (WHERE on it is false)
        auto it = base->find(n.text);
        return it == base->end() ? Val() : base.part(*it);
      }
      case NodeKind::kIndex: {
        if (fast_ && !payload_) {
          FERRY_ASSIGN_OR_RETURN(Fast f, fastLookup(n));
          if (f.applies) return f.found ? converted(f.el) : Val();
        }
        FERRY_ASSIGN_OR_RETURN(Val base, eval(*n.kids[0]));
        FERRY_ASSIGN_OR_RETURN(Val idx, eval(*n.kids[1]));
        if (base->is_array() && idx->is_number_integer()) {
          const auto i = idx->get<std::int64_t>();  // 1-based, as in EMQX
          if (i < 1 || i > static_cast<std::int64_t>(base->size())) return Val();
          return base.part((*base)[static_cast<std::size_t>(i - 1)]);
        }
        if (base->is_object() && idx->is_string()) {
          auto it = base->find(idx->get_ref<const std::string&>());
          return it == base->end() ? Val() : base.part(*it);
        }
        return Val();
      }
      case NodeKind::kCall: {
        std::vector<Value> args;
        args.reserve(n.kids.size());
        for (const auto& k : n.kids) {
          FERRY_ASSIGN_OR_RETURN(Val v, eval(*k));
          args.push_back(std::move(v).take());
        }
        FERRY_ASSIGN_OR_RETURN(Value out, static_cast<const Function*>(n.function)->fn(n, args));
        return Val(std::move(out));
      }
      case NodeKind::kUnary: {
        FERRY_ASSIGN_OR_RETURN(Val v, eval(*n.kids[0]));
        if (n.text == "not") return Val(Value(!truthy(*v)));
        if (v->is_number_integer()) return Val(Value(-v->get<std::int64_t>()));
        if (v->is_number()) return Val(Value(-v->get<double>()));
        return at(n, "cannot negate " + typeName(*v));
      }
      case NodeKind::kBinary: return binary(n);
      case NodeKind::kCase: {
        std::size_t i = 0;
        Val subject;
        if (n.hasSubject) {
          FERRY_ASSIGN_OR_RETURN(subject, eval(*n.kids[0]));
          i = 1;
        }
        const std::size_t pairsEnd = n.kids.size() - (n.hasElse ? 1 : 0);
        for (; i + 1 < pairsEnd; i += 2) {
          FERRY_ASSIGN_OR_RETURN(Val w, eval(*n.kids[i]));
          if (n.hasSubject ? *w == *subject : truthy(*w)) return eval(*n.kids[i + 1]);
        }
        if (n.hasElse) return eval(*n.kids.back());
        return Val();
      }
    }
    return Val();
  }

 private:
  // A path into the simdjson payload: `applies` when the path starts at payload, `found` when
  // every step exists (a missing step gives null, as on a document).
  struct Fast {
    bool applies = false;
    bool found = false;
    simdjson::dom::element el;
  };
  Result<Fast> fastLookup(const Node& n) {
    Fast f;
    if (n.kind == NodeKind::kName) {
      if (n.nameId == kPayload) f = Fast{true, true, *fast_};
      return f;
    }
    if (n.kind != NodeKind::kField && n.kind != NodeKind::kIndex) return f;
    FERRY_ASSIGN_OR_RETURN(Fast base, fastLookup(*n.kids[0]));
    if (!base.applies) return f;
    f.applies = true;
    if (!base.found) return f;
    auto field = [&](std::string_view name) {  // the last of duplicate keys, as nlohmann keeps it
      const simdjson::dom::object obj = base.el.get_object().value_unsafe();
      for (simdjson::dom::key_value_pair kv : obj)
        if (kv.key == name) f = Fast{true, true, kv.value};
    };
    if (n.kind == NodeKind::kField) {
      if (base.el.is_object()) field(n.text);
      return f;
    }
    FERRY_ASSIGN_OR_RETURN(Val idx, eval(*n.kids[1]));
    if (base.el.is_array() && idx->is_number_integer()) {
      const auto i = idx->get<std::int64_t>();  // 1-based, as in EMQX
      const simdjson::dom::array arr = base.el.get_array().value_unsafe();
      if (i >= 1 && static_cast<std::uint64_t>(i) <= arr.size()) {
        auto at = arr.at(static_cast<std::size_t>(i - 1));
        if (!at.error()) f = Fast{true, true, at.value_unsafe()};
      }
    } else if (base.el.is_object() && idx->is_string()) {
      field(idx->get_ref<const std::string&>());
    }
    return f;
  }
  static Val converted(simdjson::dom::element e) {
    Value v;
    toJson(e, v);
    return Val(std::move(v));
  }

  template <typename Make>
  const Value& once(std::optional<Value>& slot, Make make) {
    if (!slot) slot = make();
    return *slot;
  }

  Result<Val> binary(const Node& n) {
    const std::string& op = n.text;
    if (op == "and" || op == "or") {  // short-circuit
      FERRY_ASSIGN_OR_RETURN(Val l, eval(*n.kids[0]));
      if (op == "and" && !truthy(*l)) return Val(Value(false));
      if (op == "or" && truthy(*l)) return Val(Value(true));
      FERRY_ASSIGN_OR_RETURN(Val r, eval(*n.kids[1]));
      return Val(Value(truthy(*r)));
    }
    FERRY_ASSIGN_OR_RETURN(Val lv, eval(*n.kids[0]));
    FERRY_ASSIGN_OR_RETURN(Val rv, eval(*n.kids[1]));
    const Value& l = *lv;
    const Value& r = *rv;
    if (op == "=" || op == "!=") {
      // A null (a missing field) against a value makes both false: the record is filtered out.
      if (l.is_null() != r.is_null()) return Val(Value(false));
      bool eq = (l.is_number() && r.is_number()) ? l.get<double>() == r.get<double>() : l == r;
      return Val(Value(op == "=" ? eq : !eq));
    }
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int c;
      if (l.is_number() && r.is_number()) {
        const double a = l.get<double>(), b = r.get<double>();
        c = a < b ? -1 : a > b ? 1 : 0;
      } else if (l.is_string() && r.is_string()) {
        c = l.get_ref<const std::string&>().compare(r.get_ref<const std::string&>());
      } else {
        return Val(Value(false));  // null or mixed types compare false (a missing field filters out)
      }
      return Val(Value(op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0));
    }
    if (op == "+" && l.is_string() && r.is_string())
      return Val(Value(l.get_ref<const std::string&>() + r.get_ref<const std::string&>()));
    if (!l.is_number() || !r.is_number())
      return at(n, "'" + op + "' needs numbers, got " + typeName(l) + " and " + typeName(r));
    const bool ints = l.is_number_integer() && r.is_number_integer();
    if (op == "+") return Val(ints ? Value(l.get<std::int64_t>() + r.get<std::int64_t>()) : Value(l.get<double>() + r.get<double>()));
    if (op == "-") return Val(ints ? Value(l.get<std::int64_t>() - r.get<std::int64_t>()) : Value(l.get<double>() - r.get<double>()));
    if (op == "*") return Val(ints ? Value(l.get<std::int64_t>() * r.get<std::int64_t>()) : Value(l.get<double>() * r.get<double>()));
    if (op == "/") {
      if (r.get<double>() == 0) return at(n, "division by zero");
      return Val(Value(l.get<double>() / r.get<double>()));
    }
    if (!ints) return at(n, "'" + op + "' needs integers");
    if (r.get<std::int64_t>() == 0) return at(n, "division by zero");
    if (op == "div") return Val(Value(l.get<std::int64_t>() / r.get<std::int64_t>()));
    return Val(Value(l.get<std::int64_t>() % r.get<std::int64_t>()));
  }

  const Record& r_;
  const Value* payload_;
  const simdjson::dom::element* fast_;
  std::optional<Value> ownPayload_, topic_, levels_, headers_;
};

// A part of a rule that reads nothing of the record (and not the clock) has one value for every
// record: compute it once at compile time, so a type error in it ('a' + 1, upper(5), 1/0) is
// reported with its position when the rule is validated, not at the first record.
bool constant(const Node& n) {
  if (n.kind == NodeKind::kName) return false;
  if (n.kind == NodeKind::kCall && n.text == "now_timestamp") return false;
  for (const auto& k : n.kids)
    if (!constant(*k)) return false;
  return true;
}

Status checkConstants(const Node& n) {
  if (constant(n)) {
    static const Record kNoRecord;
    Eval e(kNoRecord, nullptr);
    auto v = e.eval(n);
    return v.isOk() ? Status::ok() : v.status();
  }
  for (const auto& k : n.kids) FERRY_RETURN_IF_ERROR(checkConstants(*k));
  return Status::ok();
}

Result<Value> selectRow(Eval& e, const std::vector<SelectItem>& items) {
  Value row = Value::object();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& item = items[i];
    if (!item.expr) {  // '*': the event's fields
      for (int id : {kPayload, kTopic, kLevels, kKey, kHeaders, kTimestamp, kQos, kClientId}) {
        FERRY_ASSIGN_OR_RETURN(Val v, e.name(id));
        row[kNames[id]] = std::move(v).take();
      }
      continue;
    }
    FERRY_ASSIGN_OR_RETURN(Val v, e.eval(*item.expr));
    row[item.alias.empty() ? "col" + std::to_string(i + 1) : item.alias] = std::move(v).take();
  }
  return row;
}

}  // namespace

Result<CompiledRule> CompiledRule::compile(std::string_view text) {
  FERRY_ASSIGN_OR_RETURN(Rule r, parseRule(text));
  const std::vector<std::string> none;
  const std::vector<std::string> alias{r.foreachAlias};
  bool usesPayload = false;
  for (auto& item : r.select) {
    if (item.expr) FERRY_RETURN_IF_ERROR(check(*item.expr, r.foreach ? alias : none, usesPayload));
    else usesPayload = true;  // '*'
  }
  if (r.foreachExpr) FERRY_RETURN_IF_ERROR(check(*r.foreachExpr, none, usesPayload));
  if (r.incase) FERRY_RETURN_IF_ERROR(check(*r.incase, alias, usesPayload));
  if (r.where) FERRY_RETURN_IF_ERROR(check(*r.where, none, usesPayload));
  for (const auto& item : r.select)
    if (item.expr) FERRY_RETURN_IF_ERROR(checkConstants(*item.expr));
  for (const Node* n : {r.foreachExpr.get(), r.incase.get(), r.where.get()})
    if (n) FERRY_RETURN_IF_ERROR(checkConstants(*n));
  CompiledRule c;
  c.rule_ = std::make_shared<const Rule>(std::move(r));
  c.usesPayload_ = usesPayload;
  return c;
}

Result<RuleOutput> CompiledRule::evaluate(const Record& record, const Value* payload) const {
  RuleOutput out;
  for (const auto& f : rule_->from) out.fromMatched = out.fromMatched || topicMatches(f, mqttTopic(record));
  if (!out.fromMatched) return out;
  // No parsed payload handed in: simdjson reads it (no document is built for the paths the rule
  // reads); text that is not JSON, or that simdjson refuses, takes the document path below.
  thread_local simdjson::dom::parser parser = boundedFastParser();
  simdjson::dom::element fast;
  bool haveFast = false;
  if (!payload && usesPayload_ && !record.value.isNull()) {
    auto doc = parser.parse(record.value.data(), record.value.size());
    if (!doc.error()) {
      fast = doc.value_unsafe();
      haveFast = true;
    }
  }
  Eval e(record, payload, haveFast ? &fast : nullptr);
  if (rule_->where) {
    FERRY_ASSIGN_OR_RETURN(Val w, e.eval(*rule_->where));
    if (!truthy(*w)) return out;
  }
  out.matched = true;
  if (!rule_->foreach) {
    FERRY_ASSIGN_OR_RETURN(Value row, selectRow(e, rule_->select));
    out.rows.push_back(std::move(row));
    return out;
  }
  FERRY_ASSIGN_OR_RETURN(Val list, e.eval(*rule_->foreachExpr));
  if (!list->is_array()) return at(*rule_->foreachExpr, "FOREACH needs an array, got " + typeName(*list));
  for (const auto& el : *list) {
    e.element = &el;
    if (rule_->incase) {
      FERRY_ASSIGN_OR_RETURN(Val keep, e.eval(*rule_->incase));
      if (!truthy(*keep)) continue;
    }
    if (rule_->select.empty()) {
      out.rows.push_back(el);
      continue;
    }
    FERRY_ASSIGN_OR_RETURN(Value row, selectRow(e, rule_->select));
    out.rows.push_back(std::move(row));
  }
  return out;
}

}  // namespace ferry::transforms::rules
