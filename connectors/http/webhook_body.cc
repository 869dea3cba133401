// The webhook body parser (see webhook_body.h).
#include "connectors/http/webhook_body.h"

#include <nlohmann/json.hpp>

#include <cctype>

#include "core/cloudevents.h"
#include "core/json_bounds.h"

namespace ferry::connectors::httpc {
namespace {

namespace ce = core::cloudevents;

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

// A CloudEvent as a webhook event: data -> value, attributes -> binary-mode record headers.
Status addCloudEvent(std::vector<WebhookEvent>& out, ce::Event& event, const nlohmann::json* doc,
                     const BodyOptions& options) {
  WebhookEvent e;
  FERRY_RETURN_IF_ERROR(ce::toHeaders(event, e.headers));
  e.hasValue = !event.data.isNull();
  if (e.hasValue) e.value = event.data.str();
  if (options.keyPath != nullptr) {
    if (doc != nullptr)
      if (const nlohmann::json* k = options.keyPath->find(*doc)) e.key = jsonText(*k);
  } else if (options.keyFromPartitionKey) {
    // The Kafka protocol binding: "partitionkey" is the message key.
    if (auto pk = event.extensions.find("partitionkey"); pk != event.extensions.end())
      e.key = pk->second.value;
  }
  out.push_back(std::move(e));
  return Status::ok();
}

Result<std::vector<WebhookEvent>> parseCloudEvents(bool batch, std::string_view body, const BodyOptions& options) {
  ce::ParseOptions parse;
  parse.limits = core::JsonLimits{options.maxDepth, body.size() + 1};
  parse.maxBatchEvents = options.maxEvents;
  std::vector<ce::Event> events;
  if (batch) {
    FERRY_ASSIGN_OR_RETURN(events, ce::parseBatch(body, parse));
  } else {
    FERRY_ASSIGN_OR_RETURN(auto one, ce::parseStructured(body, parse));
    events.push_back(std::move(one));
  }
  // Keys come from the event objects: parsed again only when a key path asks for them.
  std::optional<nlohmann::json> doc;
  if (options.keyPath != nullptr) {
    auto parsed = core::parseJsonBounded<nlohmann::json>(body, parse.limits);
    if (parsed.isOk()) doc = std::move(*parsed);
  }
  std::vector<WebhookEvent> out;
  out.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    const nlohmann::json* element = nullptr;
    if (doc) element = batch ? (doc->is_array() && i < doc->size() ? &(*doc)[i] : nullptr) : &*doc;
    FERRY_RETURN_IF_ERROR(addCloudEvent(out, events[i], element, options));
  }
  return out;
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
  if (type == ce::kStructuredContentType) return BodyKind::kCloudEvent;
  if (type == ce::kBatchContentType) return BodyKind::kCloudEventsBatch;
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
      out.push_back(WebhookEvent{std::string(body), std::nullopt, true, {}});
      return out;
    case BodyKind::kCloudEvent:
    case BodyKind::kCloudEventsBatch:
      return parseCloudEvents(bodyKindOf(contentType) == BodyKind::kCloudEventsBatch, body, options);
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

bool isBinaryCloudEvent(const std::map<std::string, std::string>& headers, std::string_view contentType) {
  if (ce::isStructuredContentType(contentType, /*orBatch=*/true)) return false;
  auto it = headers.lower_bound(std::string(ce::kHttpHeaderPrefix));
  return it != headers.end() && it->first.compare(0, ce::kHttpHeaderPrefix.size(), ce::kHttpHeaderPrefix) == 0;
}

Result<WebhookEvent> parseBinaryCloudEvent(const std::map<std::string, std::string>& headers,
                                           std::string_view contentType, std::string_view body,
                                           const BodyOptions& options) {
  // The HTTP binding's headers as the Kafka binding's, so the codec reads and checks them.
  Headers asRecord;
  for (const auto& [name, value] : headers)
    if (name.size() > ce::kHttpHeaderPrefix.size() && name.compare(0, ce::kHttpHeaderPrefix.size(), ce::kHttpHeaderPrefix) == 0)
      asRecord.add(std::string(ce::kHeaderPrefix) + name.substr(ce::kHttpHeaderPrefix.size()),
                   std::string_view(ce::decodeHttpHeaderValue(value)));
  if (!trim(contentType).empty()) asRecord.add(std::string(ce::kContentTypeHeader), contentType);
  ce::Event event;
  std::optional<std::string> specversion;
  constexpr const char* kWhat = "a binary-mode CloudEvent (ce- headers)";
  FERRY_RETURN_IF_ERROR(ce::readHeaders(asRecord, event, specversion).withContext(kWhat));
  if (!specversion)
    return Status::invalidArgument(std::string(kWhat) + ": required header 'ce-specversion' is missing");
  event.specversion = std::move(*specversion);
  FERRY_RETURN_IF_ERROR(ce::validate(event).withContext(kWhat));
  if (!body.empty()) event.data = Bytes::copyOf(body);
  std::optional<nlohmann::json> doc;
  if (options.keyPath != nullptr && !body.empty() && ce::isJsonContentType(contentType)) {
    auto parsed = core::parseJsonBounded<nlohmann::json>(body, core::JsonLimits{options.maxDepth, body.size() + 1});
    if (parsed.isOk()) doc = std::move(*parsed);
  }
  std::vector<WebhookEvent> out;
  FERRY_RETURN_IF_ERROR(addCloudEvent(out, event, doc ? &*doc : nullptr, options));
  return std::move(out.front());
}

}  // namespace ferry::connectors::httpc
