// The webhook body parser (see webhook_body.h).
#include "connectors/http/webhook_body.h"

#include <nlohmann/json.hpp>

#include <cctype>

#include "core/json_bounds.h"

namespace ferry::connectors::httpc {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Compact JSON; invalid UTF-8 cannot come out of the parser, but dump() would throw on it.
std::string compact(const nlohmann::json& v) {
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status addEvent(std::vector<WebhookEvent>& out, std::string value, const nlohmann::json& doc,
                const BodyOptions& options) {
  if (out.size() >= options.maxEvents)
    return Status::invalidArgument("more than " + std::to_string(options.maxEvents) + " events in one request");
  WebhookEvent e;
  e.value = std::move(value);
  if (options.keyPath != nullptr)
    if (const nlohmann::json* k = options.keyPath->find(doc)) e.key = jsonText(*k);
  out.push_back(std::move(e));
  return Status::ok();
}

}  // namespace

Result<JsonPath> JsonPath::parse(std::string_view text) {
  JsonPath path;
  std::string_view s = trim(text);
  if (s == "$" || s.empty()) return path;
  if (s.substr(0, 2) == "$.") s.remove_prefix(2);
  else if (s.substr(0, 2) == "$[") s.remove_prefix(1);
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '.') {
      if (i + 1 >= s.size() || s[i + 1] == '.' || s[i + 1] == '[')
        return Status::invalidArgument("JSON path '" + std::string(text) + "': empty segment");
      ++i;
      continue;
    }
    Segment seg;
    if (s[i] == '[') {
      const std::size_t close = s.find(']', i);
      if (close == std::string_view::npos)
        return Status::invalidArgument("JSON path '" + std::string(text) + "': unclosed '['");
      const std::string_view digits = s.substr(i + 1, close - i - 1);
      if (digits.empty() || digits.size() > 9)
        return Status::invalidArgument("JSON path '" + std::string(text) + "': bad index");
      std::size_t n = 0;
      for (char c : digits) {
        if (c < '0' || c > '9')
          return Status::invalidArgument("JSON path '" + std::string(text) + "': index is not a number");
        n = n * 10 + static_cast<std::size_t>(c - '0');
      }
      seg.index = n;
      i = close + 1;
    } else {
      std::size_t end = i;
      while (end < s.size() && s[end] != '.' && s[end] != '[') ++end;
      seg.name = std::string(s.substr(i, end - i));
      i = end;
    }
    path.segments_.push_back(std::move(seg));
  }
  return path;
}

const nlohmann::json* JsonPath::find(const nlohmann::json& doc) const {
  const nlohmann::json* at = &doc;
  for (const Segment& seg : segments_) {
    if (seg.index) {
      if (!at->is_array() || *seg.index >= at->size()) return nullptr;
      at = &(*at)[*seg.index];
      continue;
    }
    if (at->is_object()) {
      auto it = at->find(seg.name);
      if (it == at->end()) return nullptr;
      at = &*it;
    } else if (at->is_array() && !seg.name.empty() && seg.name.size() <= 9 &&
               seg.name.find_first_not_of("0123456789") == std::string::npos) {
      const std::size_t n = std::stoul(seg.name);
      if (n >= at->size()) return nullptr;
      at = &(*at)[n];
    } else {
      return nullptr;
    }
  }
  return at;
}

std::optional<std::string> jsonText(const nlohmann::json& v) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) return v.get<std::string>();
  return compact(v);
}

BodyKind bodyKindOf(std::string_view contentType) {
  std::string type = lower(trim(contentType.substr(0, contentType.find(';'))));
  if (type == "application/x-ndjson" || type == "application/ndjson" || type == "application/jsonl" ||
      type == "application/x-jsonlines" || type == "application/jsonlines" || type == "application/json-lines")
    return BodyKind::kNdjson;
  if (type == "application/json" || type == "text/json" ||
      (type.size() > 5 && type.compare(type.size() - 5, 5, "+json") == 0))
    return BodyKind::kJson;
  return BodyKind::kRaw;
}

Result<std::vector<WebhookEvent>> parseWebhookBody(std::string_view contentType, std::string_view body,
                                                   const BodyOptions& options) {
  std::vector<WebhookEvent> out;
  const core::JsonLimits limits{options.maxDepth, body.size() + 1};
  switch (bodyKindOf(contentType)) {
    case BodyKind::kRaw:
      out.push_back(WebhookEvent{std::string(body), std::nullopt});
      return out;
    case BodyKind::kJson: {
      const std::string_view text = trim(body);
      if (text.empty()) return Status::invalidArgument("empty JSON body");
      auto doc = core::parseJsonBounded<nlohmann::json>(text, limits);
      if (!doc.isOk()) return doc.status();
      if (doc->is_array()) {
        if (doc->size() > options.maxEvents)
          return Status::invalidArgument("more than " + std::to_string(options.maxEvents) +
                                         " events in one request");
        out.reserve(doc->size());
        for (const auto& element : *doc) FERRY_RETURN_IF_ERROR(addEvent(out, compact(element), element, options));
      } else {
        FERRY_RETURN_IF_ERROR(addEvent(out, std::string(text), *doc, options));
      }
      return out;
    }
    case BodyKind::kNdjson: {
      std::size_t lineNo = 0;
      std::size_t start = 0;
      while (start <= body.size()) {
        std::size_t end = body.find('\n', start);
        if (end == std::string_view::npos) end = body.size();
        ++lineNo;
        const std::string_view line = trim(body.substr(start, end - start));
        start = end + 1;
        if (line.empty()) continue;
        auto doc = core::parseJsonBounded<nlohmann::json>(line, limits);
        if (!doc.isOk())
          return Status::invalidArgument("NDJSON line " + std::to_string(lineNo) + ": " + doc.status().message());
        FERRY_RETURN_IF_ERROR(addEvent(out, std::string(line), *doc, options));
      }
      return out;
    }
  }
  return out;
}

}  // namespace ferry::connectors::httpc
