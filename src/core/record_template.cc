#include "core/record_template.h"

#include <charconv>
#include <optional>

#include "core/json_bounds.h"

namespace ferry::core {
Result<RecordTemplate> RecordTemplate::parse(std::string_view text, Options options) {
  RecordTemplate t;
  t.text_ = std::string(text);
  t.missingAsEmpty_ = options.missingAsEmpty;
  std::string literal;
  std::size_t i = 0;
  auto fail = [&](const std::string& why) {
    return Status::invalidArgument("template '" + std::string(text) + "': " + why);
  };
  while (i < text.size()) {
    if (text.compare(i, 3, "$${") == 0) {
      literal += "${";
      i += 3;
      continue;
    }
    if (text.compare(i, 2, "${") != 0) {
      literal.push_back(text[i++]);
      continue;
    }
    const std::size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos) return fail("unclosed ${");
    const std::string_view name = text.substr(i + 2, close - i - 2);
    Part p;
    using K = Part::Kind;
    if (name == "topic") p.kind = K::kTopic;
    else if (name == "key") p.kind = K::kKey;
    else if (name == "value") p.kind = K::kValue;
    else if (name == "queue") p.kind = K::kQueue;
    else if (name == "offset") p.kind = K::kOffset;
    else if (name == "timestamp") p.kind = K::kTimestamp;
    else if (name.rfind("header:", 0) == 0 && name.size() > 7) {
      p.kind = K::kHeader;
      p.text = std::string(name.substr(7));
    } else if (name.rfind("value:", 0) == 0 && name.size() > 6) {
      p.kind = K::kValuePath;
      std::string_view path = name.substr(6);
      p.text = std::string(path);
      if (path.rfind("$.", 0) == 0) path.remove_prefix(2);
      // a.b[0].c: names split at '.', each may end in [n] indexes.
      std::size_t j = 0;
      while (j <= path.size()) {
        std::size_t end = j;
        while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
        if (end > j) p.steps.push_back(Step{std::string(path.substr(j, end - j)), false, 0});
        else if (end < path.size() && path[end] == '.') return fail("empty name in JSON path '" + p.text + "'");
        j = end;
        while (j < path.size() && path[j] == '[') {
          const std::size_t rb = path.find(']', j);
          if (rb == std::string_view::npos) return fail("unclosed [ in JSON path '" + p.text + "'");
          std::size_t idx = 0;
          const auto* b = path.data() + j + 1;
          const auto* e = path.data() + rb;
          auto [ptr, ec] = std::from_chars(b, e, idx);
          if (ec != std::errc() || ptr != e || b == e)
            return fail("index in JSON path '" + p.text + "' is not a number");
          p.steps.push_back(Step{"", true, idx});
          j = rb + 1;
        }
        if (j >= path.size()) break;
        if (path[j] != '.') return fail("unexpected '" + std::string(1, path[j]) + "' in JSON path '" + p.text + "'");
        ++j;
        if (j == path.size()) return fail("JSON path '" + p.text + "' ends with '.'");
      }
      if (p.steps.empty()) return fail("empty JSON path");
    } else {
      return fail("unknown placeholder ${" + std::string(name) +
                  "} (use ${topic}, ${key}, ${value}, ${value:<path>}, ${queue}, ${offset}, "
                  "${timestamp} or ${header:<name>})");
    }
    if (!literal.empty()) t.parts_.push_back(Part{K::kText, std::move(literal), {}});
    literal.clear();
    if (p.kind == K::kValue || p.kind == K::kValuePath) t.readsValue_ = true;
    t.parts_.push_back(std::move(p));
    t.constant_ = false;
    i = close + 1;
  }
  if (!literal.empty()) t.parts_.push_back(Part{Part::Kind::kText, std::move(literal), {}});
  return t;
}

Result<std::string> RecordTemplate::render(const Record& record) const {
  std::string out;
  FERRY_RETURN_IF_ERROR(renderTo(record, out));
  return out;
}

Status RecordTemplate::renderTo(const Record& record, std::string& out) const {
  const std::size_t start = out.size();
  std::optional<nlohmann::json> parsed;  // the value, parsed once per render
  auto missing = [&](const std::string& what) {
    if (missingAsEmpty_) return Status::ok();
    out.resize(start);
    return Status::invalidArgument("template '" + text_ + "': " + what);
  };
  using K = Part::Kind;
  for (const Part& p : parts_) {
    switch (p.kind) {
      case K::kText: out += p.text; break;
      case K::kTopic: out += record.topic; break;
      case K::kKey:
        if (record.key.isNull()) {
          FERRY_RETURN_IF_ERROR(missing("the record has no key for ${key}"));
          break;
        }
        out += record.key.view();
        break;
      case K::kValue:
        if (record.value.isNull()) {
          FERRY_RETURN_IF_ERROR(missing("the record has no value for ${value}"));
          break;
        }
        out += record.value.view();
        break;
      case K::kQueue: out += std::to_string(record.queue.value_or(-1)); break;
      case K::kOffset: out += std::to_string(record.offset); break;
      case K::kTimestamp: out += std::to_string(record.timestampMs); break;
      case K::kHeader: {
        const Header* h = record.headers.last(p.text);
        if (h == nullptr || h->value.isNull()) {
          FERRY_RETURN_IF_ERROR(missing("the record has no header '" + p.text + "'"));
          break;
        }
        out += h->value.view();
        break;
      }
      case K::kValuePath: {
        if (!parsed) {
          if (record.value.isNull()) {
            FERRY_RETURN_IF_ERROR(missing("the record has no value for ${value:" + p.text + "}"));
            break;
          }
          auto doc = parseJsonBounded<nlohmann::json>(record.value.view(), kRecordJsonLimits);
          if (!doc.isOk()) {
            FERRY_RETURN_IF_ERROR(missing("${value:" + p.text + "}: the value is not JSON (" +
                                          doc.status().message() + ")"));
            break;
          }
          parsed = std::move(doc).value();
        }
        const nlohmann::json* at = &*parsed;
        for (const Step& s : p.steps) {
          if (s.isIndex) {
            at = at->is_array() && s.index < at->size() ? &(*at)[s.index] : nullptr;
          } else if (at->is_object()) {
            auto it = at->find(s.name);
            at = it == at->end() ? nullptr : &*it;
          } else {
            at = nullptr;
          }
          if (at == nullptr) break;
        }
        if (at == nullptr || at->is_null()) {
          FERRY_RETURN_IF_ERROR(missing("the value has no field '" + p.text + "'"));
          break;
        }
        if (at->is_string()) out += at->get_ref<const std::string&>();
        else out += at->dump();
        break;
      }
    }
  }
  return Status::ok();
}

}  // namespace ferry::core
